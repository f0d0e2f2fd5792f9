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

import ahocorasick_rs

__all__ = ["REDACTED", "is_secret_env_name", "is_secret_key", "redact_text"]

REDACTED = "[REDACTED]"


_SECRET_WORDS = (
    "password", "passwd", "passphrase", "pwd", "secret", "token", "apikey", "api_key", "api-key",
    "accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key",
    "credential", "credentials", "auth_token", "authtoken", "client_secret", "clientsecret",
    "secret_key", "secretkey", "signing_key", "signingkey", "encryption_key", "encryptionkey",
    "connection_string", "connectionstring", "conn_str", "database_url", "dsn", "webhook_url",
    "session_key", "sessionkey", "cookie", "master_key", "masterkey", "sas", "bearer", "app_key", "appkey",
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
    if k == "auth":
        return True
    if not any(w.replace("-", "_") in k or w.replace("-", "").replace("_", "") in flat for w in _SECRET_WORDS):
        return False
    if k in ("pwd", "auth") or flat in ("token", "password", "secret", "auth", "apikey"):
        return True
    return not any(flat.endswith(s.replace("_", "")) for s in _REFERENCE_SUFFIXES) and flat not in (
        "tokens", "secrets", "sas",
    )


def is_secret_env_name(name: str) -> bool:
    """True for environment variable names that say they hold a secret (``DB_PASSWORD``,
    ``STRIPE_API_KEY``, ``GITHUB_TOKEN``), false for ``SECRET_NAME`` or ``TOKEN_FILE``."""
    return is_secret_key(name)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# Every pattern runs on a lower-cased copy of the text (same length: only ASCII letters change)
# and begins with a literal, so the regex engine skips ahead at memory speed to the few places
# worth a closer look. The spans found are then replaced in the original text.
_V = r"[^\s\"'\\,;<>{}\[\]]"
_SECRET_NAME = r"[a-z0-9_.\-]*"


@dataclass(frozen=True)
class _Rule:
    name: str
    trigger: str  # lower-case literal the pattern starts with
    pattern: re.Pattern[str]
    group: int | str = 0
    check: Callable[[str, re.Match[str]], bool] | None = None


def _r(name: str, trigger: str, rest: str, group: int | str = 0,
       check: Callable[[str, re.Match[str]], bool] | None = None) -> _Rule:
    return _Rule(name, trigger, re.compile(re.escape(trigger) + rest), group, check)


def _assignment_ok(low: str, m: re.Match[str]) -> bool:
    sep = low[m.end("tail") : m.start("value")]
    if sep[:1] in "\"'\\" and sep.lstrip("\\\"'")[:1] in " \t" and sep[-1:] not in "\"'":
        # A quoted name, a space, then a bare word: prose such as Kubernetes' own
        # `for volume "api-keys" : secret "frontend-api-keys" not found`, not an assignment.
        return False
    value = m.group("value")
    if value.isalpha() and (value in _STATUS_WORDS or (
            len(value) <= 20 and low[m.end("value") : m.end("value") + 2].startswith(" ")
            and low[m.end("value") + 1 : m.end("value") + 2].isalpha())):
        # English, not a credential: `oauth token: unexpected status from ...`, `token: expired`.
        return False
    head = _name_before(low, m.start())
    name = low[head : m.end("tail")]
    return is_secret_env_name(name) and not _looks_like_placeholder(value) and value != REDACTED.lower()


_STATUS_WORDS = frozenset(
    {"expired", "invalid", "missing", "empty", "unknown", "required", "unauthorized", "denied", "forbidden",
     "rejected", "revoked", "malformed", "incorrect", "wrong", "bad", "ok", "valid", "set", "unset", "present",
     "absent", "found", "notfound", "failed", "error", "refreshed", "expiring", "disabled", "enabled"}
)


_PAIR_NAME = re.compile(
    r"(?:name\\*\"\s*:\s*\\*\"|name:[ \t]*[\"']?)(?P<name>[a-z0-9_.\-]{2,80})(?:\\*\"\s*,\s*\\*\"|[\"']?[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*-?[ \t]*)$"
)


def _pair_ok(low: str, m: re.Match[str]) -> bool:
    """``value`` of a ``name``/``value`` pair whose name says secret (JSON, escaped JSON, YAML)."""
    before = _PAIR_NAME.search(low, max(0, m.start() - 120), m.start())
    if before is None:
        return False
    value = m.group("value")
    return is_secret_env_name(before.group("name")) and not _looks_like_placeholder(value)


def _digits_before(low: str, m: re.Match[str]) -> bool:
    return low[max(0, m.start() - 8) : m.start()].isdigit()


def _boundary_before(low: str, m: re.Match[str]) -> bool:
    return m.start() == 0 or not (low[m.start() - 1].isalnum() or low[m.start() - 1] in "_-")


def _word(w: str) -> _Rule:
    """``...word... = value`` / ``...word...: value`` / ``"..word..": "value"`` / ``--word value``;
    the whole name (``_name_before`` + the word + its tail) is judged by ``is_secret_env_name``."""
    return _r(
        f"assignment_{w}", w,
        r"(?P<tail>[a-z0-9_.\-]{0,40})\\*[\"']?[ \t]*(?:=|:)[ \t]*(?:\\*[\"'])?(?P<value>" + _V + r"{3,512})",
        "value", _assignment_ok,
    )


_RULES: tuple[_Rule, ...] = (
    _r("private_key", "-----begin ",
       r"[a-z0-9 ]*private key(?: block)?-----[^\"]*?-----end [a-z0-9 ]*private key(?: block)?-----"),
    _r("private_key_unterminated", "-----begin ", r"[a-z0-9 ]*private key(?: block)?-----[a-z0-9+/=\s\\]{16,}"),
    _r("jwt", "eyj", r"[a-z0-9_\-]{8,}\.eyj[a-z0-9_\-]{8,}\.[a-z0-9_\-]{8,}", 0, _boundary_before),
    _r("bearer", "bearer", r"\s+([a-z0-9\-._~+/]{12,}=*)", 1),
    _r("basic_auth_header", "basic", r"\s+([a-z0-9+/]{12,}={0,2})(?![a-z0-9+/=])", 1),
    _r("url_credentials", "://", r"([^\s:/@\"'\\]{1,128}):([^\s@/\"'\\]{1,256})@", 2),
    _r("aws_access_key", "akia", r"[a-z0-9]{16}(?![a-z0-9])", 0, _boundary_before),
    _r("aws_session_key", "asia", r"[a-z0-9]{16}(?![a-z0-9])", 0, _boundary_before),
    _r("gcp_api_key", "aiza", r"[0-9a-z_\-]{35}(?![a-z0-9_\-])"),
    _r("azure_account_key", "accountkey=", r"([a-z0-9%+/=]{20,})", 1),
    _r("azure_shared_access_key", "sharedaccesskey=", r"([a-z0-9%+/=]{20,})", 1),
    _r("azure_sas", "sig=", r"([a-z0-9%+/=]{20,})", 1),
    _r("github_token", "gh", r"(?:[pousr]_[a-z0-9]{36,255}|ithub_pat_[a-z0-9_]{22,255})", 0, _boundary_before),
    _r("github_fine_grained", "github_pat_", r"[a-z0-9_]{22,255}"),
    _r("token_header", "token ", r"([a-z0-9\-._~+/]{20,}=*)", 1),
    _r("gitlab_token", "gl", r"(?:pat|ptt|dt|rt)-[a-z0-9_\-]{20,}", 0, _boundary_before),
    _r("slack_token", "xox", r"[abposre]-[a-z0-9-]{10,}"),
    _r("slack_webhook", "hooks.slack.com/", r"(?:services|workflows)/[a-z0-9/_\-]+"),
    _r("stripe_or_openai_key", "sk",
       r"(?:_(?:live|test)_[a-z0-9]{16,}|-(?:proj-|ant-(?:api|admin)\d{2}-|svcacct-)?[a-z0-9_\-]{32,})", 0, _boundary_before),
    _r("twilio_key", "sk", r"[0-9a-f]{32}(?![a-z0-9])", 0, _boundary_before),
    _r("stripe_restricted_key", "rk_", r"(?:live|test)_[a-z0-9]{16,}"),
    _r("stripe_webhook_secret", "whsec_", r"[a-z0-9]{24,}"),
    _r("sendgrid_key", "sg.", r"[a-z0-9_\-]{22}\.[a-z0-9_\-]{43}"),
    _r("npm_token", "npm_", r"[a-z0-9]{36}(?![a-z0-9])"),
    _r("pypi_token", "pypi-", r"age[a-z0-9_\-]{50,}"),
    _r("docker_pat", "dckr_pat_", r"[a-z0-9_\-]{20,}"),
    _r("hashicorp_vault", "hv", r"[sb]\.[a-z0-9_\-]{24,}", 0, _boundary_before),
    _r("digitalocean", "dop_v1_", r"[a-f0-9]{64}"),
    _r("digitalocean_oauth", "doo_v1_", r"[a-f0-9]{64}"),
    _r("digitalocean_refresh", "dor_v1_", r"[a-f0-9]{64}"),
    _r("shopify", "shp", r"(?:at|ss|ca|pa)_[a-f0-9]{32}"),
    _r("mailgun", "key-", r"[0-9a-f]{32}(?![a-z0-9])"),
    _r("google_oauth_token", "ya29.", r"[a-z0-9_\-]{20,}"),
    _r("google_oauth_secret", "gocspx-", r"[a-z0-9_\-]{20,}"),
    _r("atlassian", "atatt", r"[a-z0-9_\-=]{40,}"),
    _r("telegram_bot", ":aa", r"[a-z0-9_\-]{33}(?![a-z0-9_\-])", 0, _digits_before),
    _r("kubeconfig_data", "client-key-data", r"\\?\"?\s*:\s*\\?\"?([a-z0-9+/=]{16,})", 1),
    _r("gcp_private_key_id", "private_key_id", r"\\?\"?\s*:\s*\\?\"?([0-9a-f]{40})", 1),
    _r("pair_json", "value", r"\\*\"\s*:\s*\\*\"(?P<value>[^\"\\]{1,512})", "value", _pair_ok),
    _r("pair_yaml", "value:", r"[ \t]*[\"']?(?P<value>" + _V + r"{1,512})", "value", _pair_ok),
    *(_word(w) for w in ("pass", "secret", "token", "key", "auth", "pwd", "dsn", "conn", "credential",
                         "cookie", "bearer")),
)

_BY_TRIGGER: dict[str, list[_Rule]] = {}
for _rule in _RULES:
    _BY_TRIGGER.setdefault(_rule.trigger, []).append(_rule)
_TRIGGERS = list(_BY_TRIGGER)
_TRIGGER_RULES = [_BY_TRIGGER[t] for t in _TRIGGERS]
_MATCHER = ahocorasick_rs.AhoCorasick(_TRIGGERS)
_BYTES_MATCHER = ahocorasick_rs.BytesAhoCorasick([t.encode() for t in _TRIGGERS])


_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([A-Za-z_][A-Za-z0-9_]*\)|<[^>]*>|\*+|x+|null|none|nil|true|false|"
    r"redacted|\[redacted\]|\{\{.*\}\}|-|\d{1,5}|[A-Za-z]+://[^:@\s]+)$",
    re.IGNORECASE,
)


def _looks_like_placeholder(value: str) -> bool:
    """Values that are no credential: references, masks, booleans, small numbers, plain URLs."""
    return bool(_PLACEHOLDER.match(value.strip("\"'")))


def _name_before(low: str, start: int) -> int:
    """Start of the identifier that ends at ``start`` (the part of a name before the keyword)."""
    i = start
    lo = max(0, start - 80)
    while i > lo and (low[i - 1].isalnum() or low[i - 1] in "_.-"):
        i -= 1
    return i


def redact_text(text: str) -> tuple[str, int]:
    """Replace every credential-shaped value in ``text``; returns the new text and how many
    values were replaced.

    One Aho-Corasick pass over a lower-cased copy finds every place a rule's literal occurs;
    each rule's pattern is then tried only there.
    """
    if not text:
        return text, 0
    if text.isascii():
        low = text.lower()
        # On bytes the matcher runs ~4x faster; for ASCII, byte offsets are character offsets.
        hits = _BYTES_MATCHER.find_matches_as_indexes(low.encode("ascii"), overlapping=True)
    else:
        low = text.translate(_ASCII_LOWER)
        hits = _MATCHER.find_matches_as_indexes(low, overlapping=True)
    spans: list[tuple[int, int]] = []
    for idx, start, _end in hits:
        for rule in _TRIGGER_RULES[idx]:
            m = rule.pattern.match(low, start)
            if m is None or (rule.check is not None and not rule.check(low, m)):
                continue
            s0, s1 = m.span(rule.group)
            if s0 < s1:
                spans.append((s0, s1))
    if not spans:
        return text, 0
    spans.sort()
    out: list[str] = []
    pos = 0
    count = 0
    for start, end in spans:
        if start < pos:  # overlaps what was already replaced
            pos = max(pos, end)
            continue
        if text[start:end] == REDACTED:
            pos = end
            continue
        out.append(text[pos:start])
        out.append(REDACTED)
        pos = end
        count += 1
    out.append(text[pos:])
    return "".join(out), count
