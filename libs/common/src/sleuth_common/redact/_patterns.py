"""The credential shapes and the rules that keep look-alikes (digests, UUIDs, resource names,
``secretKeyRef`` names) intact. The corpus in ``libs/common/tests/data/redaction_corpus.yaml``
is the specification: add a shape there first, then a pattern here.

Speed: each pattern is guarded by a cheap substring test on the text (``str.__contains__`` runs
at memory speed), so a 5 MB result without credentials costs a few scans, not a regex per value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["REDACTED", "is_secret_env_name", "is_secret_key", "redact_text"]

REDACTED = "[REDACTED]"

# Characters a value may not contain when it sits inside serialized JSON: a pattern stops at the
# closing quote or at an escape, so redacting serialized JSON always leaves valid JSON.
_V = r"[^\s\"'\\,;<>{}\[\]]"

_SECRET_WORDS = (
    "password", "passwd", "passphrase", "pwd", "secret", "token", "apikey", "api_key", "api-key",
    "accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key",
    "credential", "credentials", "auth_token", "authtoken", "client_secret", "clientsecret",
    "secret_key", "secretkey", "signing_key", "signingkey", "encryption_key", "encryptionkey",
    "connection_string", "connectionstring", "conn_str", "database_url", "dsn", "webhook_url",
    "session_key", "sessionkey", "cookie", "master_key", "masterkey", "sas", "bearer",
)
# A key or env name ending like this names a secret without holding one.
_REFERENCE_SUFFIXES = (
    "name", "names", "ref", "keyref", "secretref", "file", "path", "dir", "mount", "seconds",
    "count", "id", "kind", "type", "expiration", "expirationseconds", "ttl", "length", "len",
    "policy", "provider", "source", "hash", "version", "url_env", "env", "key_id", "keyid",
    "namespace", "field", "label", "selector", "enabled", "required", "mode", "format", "header",
    "audience", "audiences", "issuer", "uri_template", "rotation", "age", "lifetime",
)


@lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """True when a mapping key says its value is a credential (``password``, ``apiKey``,
    ``client_secret`` …) but not when it only names or points at one (``secretName``,
    ``secretKeyRef``, ``passwordFile``, ``tokenExpirationSeconds``)."""
    k = key.lower().replace("-", "_")
    flat = k.replace("_", "")
    if not any(w.replace("-", "_") in k or w.replace("-", "").replace("_", "") in flat for w in _SECRET_WORDS):
        return False
    if k in ("pwd",) or flat in ("token", "password", "secret"):
        return True
    return not any(flat.endswith(s.replace("_", "")) for s in _REFERENCE_SUFFIXES) and flat not in (
        "tokens", "secrets", "sas",
    )


def is_secret_env_name(name: str) -> bool:
    """True for environment variable names that say they hold a secret (``DB_PASSWORD``,
    ``STRIPE_API_KEY``, ``GITHUB_TOKEN``), false for ``SECRET_NAME`` or ``TOKEN_FILE``."""
    return is_secret_key(name)


@dataclass(frozen=True)
class _Rule:
    name: str
    guards: tuple[str, ...]  # lower-case substrings, at least one must occur (empty = always)
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]


def _whole(_m: re.Match[str]) -> str:
    return REDACTED


def _group(n: int) -> Callable[[re.Match[str]], str]:
    def sub(m: re.Match[str]) -> str:
        start, end = m.span(n)
        if start < 0:
            return m.group(0)
        base = m.start(0)
        text = m.group(0)
        return text[: start - base] + REDACTED + text[end - base :]

    return sub


def _env_assignment(m: re.Match[str]) -> str:
    name, value = m.group("name"), m.group("value")
    if not is_secret_env_name(name) or value in ("", REDACTED) or _looks_like_placeholder(value):
        return m.group(0)
    start, end = m.span("value")
    base = m.start(0)
    text = m.group(0)
    return text[: start - base] + REDACTED + text[end - base :]


_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([A-Za-z_][A-Za-z0-9_]*\)|<[^>]*>|\*+|x+|null|none|nil|true|false|"
    r"redacted|\[redacted\]|\{\{.*\}\}|-|\d{1,5}|[A-Za-z]+://[^:@\s]+)$",
    re.IGNORECASE,
)


def _looks_like_placeholder(value: str) -> bool:
    """Env-style values that are no credential: references, masks, booleans, small numbers,
    resource names (``billing-api-secrets``)."""
    return bool(_PLACEHOLDER.match(value.strip("\"'")))


def _r(name: str, guards: tuple[str, ...], pattern: str, replace: Callable[[re.Match[str]], str] = _whole,
       flags: int = 0) -> _Rule:
    return _Rule(name, guards, re.compile(pattern, flags), replace)


_SECRET_NAME = r"[A-Za-z0-9_.\-]*(?:" + "|".join(
    re.escape(w) for w in sorted(_SECRET_WORDS, key=len, reverse=True)
) + r")[A-Za-z0-9_.\-]*"

_RULES: tuple[_Rule, ...] = (
    _r("private_key", ("-----begin",),
       r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[^\"]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
    _r("private_key_unterminated", ("-----begin",),
       r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s\\n]{16,}"),
    _r("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _r("bearer", ("bearer", "token "),
       r"(?i)\b(?:bearer|token)\s+([A-Za-z0-9\-._~+/]{16,}=*)", _group(1)),
    _r("basic_auth_header", ("basic ",), r"(?i)\bbasic\s+([A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])", _group(1)),
    _r("url_credentials", ("://",),
       r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://([^\s:/@\"'\\]{1,128}):([^\s@/\"'\\]{1,256})@", _group(2)),
    _r("aws_access_key", ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
       r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
    _r("aws_secret_key", ("aws",),
       r"(?i)(aws[_\-]?secret[_\-]?(?:access[_\-]?)?key[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
       _group(2)),
    _r("gcp_api_key", ("aiza",), r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    _r("gcp_service_account_key", ("private_key_id",),
       r"(\"?private_key_id\"?\s*:\s*\"?)([0-9a-f]{40})", _group(2)),
    _r("azure_storage_key", ("accountkey=", "sharedaccesssignature", "sig="),
       r"(?i)(?:AccountKey|SharedAccessKey|sig)=([A-Za-z0-9%+/=]{20,})", _group(1)),
    _r("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
       r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    _r("gitlab_token", ("glpat-", "glptt-", "gldt-", "glrt-"), r"\bgl(?:pat|ptt|dt|rt)-[A-Za-z0-9_\-]{20,}\b"),
    _r("slack_token", ("xox",), r"\bxox[abposre]-[A-Za-z0-9-]{10,}\b"),
    _r("slack_webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+"),
    _r("stripe_key", ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
       r"\b(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})\b"),
    _r("openai_key", ("sk-",), r"\bsk-(?:proj-|ant-(?:api|admin)\d{2}-|svcacct-)?[A-Za-z0-9_\-]{32,}\b"),
    _r("sendgrid_key", ("sg.",), r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b"),
    _r("twilio_key", ("sk", "ac"), r"\b(?:SK|AC)[0-9a-f]{32}\b"),
    _r("npm_token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    _r("pypi_token", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    _r("docker_pat", ("dckr_pat_",), r"\bdckr_pat_[A-Za-z0-9_\-]{20,}"),
    _r("hashicorp_vault", ("hvs.", "hvb.", "s."), r"\b(?:hv[sb]\.[A-Za-z0-9_\-]{24,}|s\.[A-Za-z0-9]{24})\b"),
    _r("digitalocean", ("dop_v1_", "doo_v1_"), r"\bdo[op]_v1_[a-f0-9]{64}\b"),
    _r("shopify", ("shpat_", "shpss_", "shpca_", "shppa_"), r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    _r("mailgun", ("key-",), r"\bkey-[0-9a-f]{32}\b"),
    _r("datadog", ("dd_api_key", "dd_app_key", "datadog"),
       r"(?i)(d(?:d|atadog)_?(?:api|app)_?key[\"']?\s*[:=]\s*[\"']?)([a-f0-9]{32,40})", _group(2)),
    _r("google_oauth", ("ya29.", "gocspx-"), r"\b(?:ya29\.[A-Za-z0-9_\-]{20,}|GOCSPX-[A-Za-z0-9_\-]{20,})"),
    _r("atlassian", ("atatt",), r"\bATATT[A-Za-z0-9_\-=]{40,}"),
    _r("telegram_bot", (":aa",), r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b"),
    _r("k8s_sa_token_secret", ("kubernetes.io/service-account-token",), r"(?!x)x"),  # structured only
    _r("kubeconfig_credentials", ("client-key-data", "client-certificate-data", "token:", "password:",
                                  "id-token", "refresh-token", "auth-provider"),
       r"(?i)\b(client-key-data|token|password|id-token|refresh-token|access-token)(\"?\s*:\s*\"?)("
       + _V + r"{8,})", _group(3)),
    _r("connection_string_password", ("password=", "pwd=", "password =", "pwd ="),
       r"(?i)\b(?:password|pwd)\s*=\s*([^;\"'\\\s]{1,256})", _group(1)),
    _r("yaml_env_pair", ("value:",),
       r"(?i)\bname:\s*\"?(?P<name>" + _SECRET_NAME + r")\"?[ \t]*\r?\n[ \t]*-?[ \t]*value:[ \t]*\"?(?P<value>"
       + _V + r"{1,512})",
       _env_assignment),
    _r("json_env_pair", ("\"value\"",),
       r"(?i)\"name\"\s*:\s*\"(?P<name>" + _SECRET_NAME + r")\"\s*,\s*\"value\"\s*:\s*\"(?P<value>[^\"\\]{1,512})",
       _env_assignment),
    _r("env_assignment", (),
       r"(?i)(?<![A-Za-z0-9_.\-])(?P<name>" + _SECRET_NAME + r")[\"']?[ \t]*(?:=|:)[ \t]*[\"']?(?P<value>"
       + _V + r"{3,512})",
       _env_assignment),
)

_NEEDS_GUARD_KEYWORDS = tuple(w for w in _SECRET_WORDS)


def redact_text(text: str) -> tuple[str, int]:
    """Replace every credential-shaped value in ``text``; returns the new text and how many
    values were replaced."""
    if not text:
        return text, 0
    lower = text.lower()
    has_secret_word = any(w in lower for w in _NEEDS_GUARD_KEYWORDS)
    count = 0
    for rule in _RULES:
        if rule.guards:
            if not any(g in lower for g in rule.guards):
                continue
        elif not has_secret_word:
            continue
        hits = 0

        def sub(m: re.Match[str], _rule: _Rule = rule) -> str:
            nonlocal hits
            out = _rule.replace(m)
            if out != m.group(0):
                hits += 1
            return out

        new = rule.pattern.sub(sub, text)
        if hits:
            text = new
            lower = text.lower()
            count += hits
    return text, count
