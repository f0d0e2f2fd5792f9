"""Credentials recognisable by their own shape, whatever name they sit under: vendor tokens with a
fixed prefix (``ghp_``, ``glpat-``, ``xoxb-``, ``AKIA``, ``sk_live_`` …), JWTs, PEM private keys,
base64-encoded PEM private keys and Docker config, passwords in URLs (an empty user included),
Oracle-style ``user/password@host`` and Go MySQL ``user:password@tcp(…)`` DSNs."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

from sleuth_common.redact._base import Memo, Rule, Span, looks_random, regex_rule
from sleuth_common.redact._names import looks_like_placeholder

__all__ = ["SHAPE_RULES"]


def _boundary_before(text: str, low: str, m: re.Match[str]) -> bool:
    return m.start() == 0 or not (low[m.start() - 1].isalnum() or low[m.start() - 1] in "_-")


def _digits_before(text: str, low: str, m: re.Match[str]) -> bool:
    return low[max(0, m.start() - 8) : m.start()].isdigit()


def _random_group1(text: str, low: str, m: re.Match[str]) -> bool:
    return looks_random(text[m.start(1) : m.end(1)])


def _not_placeholder1(text: str, low: str, m: re.Match[str]) -> bool:
    return not looks_like_placeholder(text[m.start(1) : m.end(1)])


def _sql_password(text: str, low: str, m: re.Match[str]) -> bool:
    """``ALTER USER app WITH PASSWORD 'x'``, ``CREATE ROLE … PASSWORD 'x'``."""
    head = low[max(0, m.start() - 200) : m.start()]
    return ("user" in head or "role" in head) and _not_placeholder1(text, low, m)


def _sql_identified_by(text: str, low: str, m: re.Match[str]) -> bool:
    """``CREATE USER 'app'@'%' IDENTIFIED BY 'x'``, ``GRANT … IDENTIFIED BY 'x'``: a SQL statement
    about an account, not any "identified by '…'" (alembic's "revision identified by '3f2a'")."""
    head = low[max(0, m.start() - 200) : m.start()]
    return any(w in head for w in ("user", "role", "grant", "@", "password")) and _not_placeholder1(text, low, m)


def _token_user(text: str, low: str, m: re.Match[str]) -> bool:
    user = text[m.start("u") : m.end("u")]
    if "%40" in user or "." in user or looks_like_placeholder(user):
        return False  # an e-mail address or a dotted name is a user
    mixed = any(c.isdigit() for c in user) and any(c.isupper() for c in user) and any(c.islower() for c in user)
    return mixed or len(user) >= 32 or user.lower().startswith(("ghp_", "gho_", "ghs_", "github_pat_", "glpat-"))


def _url_password_ok(text: str, low: str, m: re.Match[str]) -> bool:
    return not looks_like_placeholder(text[m.start("pw") : m.end("pw")])


_B64_RUN = re.compile(r"[A-Za-z0-9+/=]+")


def _b64_pem(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``LS0tLS1CRUdJTi…`` is base64 for ``-----BEGIN``: a private key is replaced, a certificate
    (public) is kept."""
    m = _B64_RUN.match(text, at, at + 120)
    if m is None:
        return ()
    head = m.group()
    head = head[: len(head) - len(head) % 4]
    try:
        decoded = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return ()
    first = decoded.split(b"\n", 1)[0].upper()
    if b"PRIVATE" in first or (b"KEY" in first and b"PUBLIC" not in first):
        run = _B64_RUN.match(text, at)  # the whole key: read only once it is known to be one
        return (Span(at, run.end() if run is not None else m.end()),)
    return ()


def _b64_run(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """A base64 Docker config (``{"auths": …``): every byte of it is a credential."""
    m = _B64_RUN.match(text, at)
    return (Span(m.start(), m.end()),) if m is not None and m.end() - m.start() >= 16 else ()


def _dsn_before(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """Go MySQL DSN ``user:password@tcp(host:3306)/db``: the password ends at the trigger."""
    j = at
    lo = max(0, at - 300)
    while j > lo and low[j - 1] not in " \t\r\n\"'=,;`(|<>\\":
        j -= 1
    colon = low.find(":", j, at)
    if colon < 0 or colon + 1 >= at or looks_like_placeholder(text[colon + 1 : at]):
        return ()
    return (Span(colon + 1, at),)


_PEM_HEAD = re.compile(r"-----begin [a-z0-9 ]{0,40}private key(?: block)?-----")
_PEM_END = re.compile(r"-----end [a-z0-9 ]{0,40}private key(?: block)?-----")
_PEM_BODY = re.compile(r"[a-z0-9+/=\s\\:,\-]*")
_PEM_MAX = 20000  # an 8192-bit RSA key is about 6.5 kB


def _private_key(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """A PEM private key, from its header to its footer; without a footer, as far as the base64
    body runs (a key cut off by a log line limit)."""
    h = _PEM_HEAD.match(low, at)
    if h is None:
        return ()
    # The next footer after the header, shared by every header before it (linear on many headers).
    cached = memo.get("pem_end")
    if cached is not None and cached[0] <= h.end() and (cached[1] < 0 or cached[1] >= h.end()):
        end = cached[1]
    else:
        found = _PEM_END.search(low, h.end())
        end = found.start() if found is not None else -1
        memo["pem_end"] = (h.end(), end)
    if 0 <= end - h.end() <= _PEM_MAX and low.find('"', h.end(), end) < 0:
        m = _PEM_END.match(low, end)
        return (Span(at, m.end() if m is not None else end),)
    body = _PEM_BODY.match(low, h.end())
    stop = body.end() if body is not None else h.end()
    return (Span(at, stop),) if stop - h.end() >= 16 else ()

SHAPE_RULES: tuple[Rule, ...] = (
    Rule("private_key", "-----begin ", _private_key),
    Rule("base64_pem_private_key", "ls0tls1crudjt", _b64_pem),
    Rule("base64_docker_config", "eyjhdxrocyi6", _b64_run),  # {"auths":
    Rule("base64_docker_config_pretty", "ewogicjhdxrocyi6", _b64_run),  # {\n  "auths":
    Rule("base64_docker_config_spaced", "eyaiyxv0ahmio", _b64_run),  # { "auths":
    Rule("base64_docker_config_tab", "ewojimf1dghzij", _b64_run),  # {\n\t"auths":
    regex_rule("jwt", "eyj", r"[a-z0-9_\-]{8,}\.eyj[a-z0-9_\-]{8,}\.[a-z0-9_\-]*", 0, _boundary_before),
    regex_rule("bearer", "bearer", r"\s+([a-z0-9\-._~+/]{12,}=*)", 1, _random_group1),
    regex_rule("basic_auth_header", "basic", r"\s+([a-z0-9+/]{12,}={0,2})(?![a-z0-9+/=])", 1, _random_group1),
    regex_rule("token_header", "token ", r"([a-z0-9\-._~+/]{20,}=*)", 1, _random_group1),
    regex_rule("url_credentials", "://",
               r"[^\s:/@\"'\\]{0,128}:(?P<pw>[^\s/\"'\\]{1,256})@(?=[^\s@/\"'\\])", "pw", _url_password_ok),
    # `https://<token>@github.com/…`: a long random user part is a token, `git@`, `deploy@` are not
    regex_rule("url_token_user", "://", r"(?P<u>[^\s:/@\"'\\]{12,256})@(?=[^\s@/\"'\\])", "u", _token_user),
    regex_rule("oracle_jdbc", "jdbc:oracle:", r"[a-z]+:@?(?:[^/@\s\"'\\]{1,128})/(?P<pw>[^@\s\"'\\]{1,256})@",
               "pw", _url_password_ok),
    regex_rule("sqlplus", "sqlplus", r"(?:\s+-\w+)*\s+[^/@\s\"'\\]{1,128}/(?P<pw>[^@\s\"'\\]{1,256})@", "pw",
               _url_password_ok),
    Rule("go_mysql_dsn_tcp", "@tcp(", _dsn_before),
    Rule("go_mysql_dsn_unix", "@unix(", _dsn_before),
    regex_rule("aws_access_key", "akia", r"[a-z0-9]{16}(?![a-z0-9])", 0, _boundary_before),
    regex_rule("aws_session_key", "asia", r"[a-z0-9]{16}(?![a-z0-9])", 0, _boundary_before),
    regex_rule("gcp_api_key", "aiza", r"[0-9a-z_\-]{35}(?![a-z0-9_\-])"),
    regex_rule("azure_account_key", "accountkey=", r"([a-z0-9%+/=]{20,})", 1),
    regex_rule("azure_shared_access_key", "sharedaccesskey=", r"([a-z0-9%+/=]{20,})", 1),
    regex_rule("azure_sas", "sig=", r"([a-z0-9%+/=]{20,})", 1),
    regex_rule("presigned_url_signature", "-signature=", r"([a-z0-9%+/=]{20,})", 1),
    regex_rule("github_token", "gh", r"(?:[pousr]_[a-z0-9]{36,255}|ithub_pat_[a-z0-9_]{22,255})", 0, _boundary_before),
    regex_rule("github_fine_grained", "github_pat_", r"[a-z0-9_]{22,255}"),
    regex_rule("gitlab_token", "gl",
               r"(?:pat|ptt|dt|rt|soat|cbt|ffct|oas|imt|agent|ft|wt)-[a-z0-9_\-]{20,}", 0, _boundary_before),
    regex_rule("gitlab_runner_registration", "gr1348941", r"[a-z0-9_\-]{20,}", 0, _boundary_before),
    regex_rule("slack_token", "xox", r"[abposre]-[a-z0-9-]{10,}"),
    regex_rule("slack_app_token", "xapp-", r"\d-[a-z0-9-]{10,}"),
    regex_rule("slack_webhook", "hooks.slack.com/", r"(?:services|workflows|triggers)/[a-z0-9/_\-]+"),
    regex_rule("stripe_or_openai_key", "sk",
               r"(?:_(?:live|test)_[a-z0-9]{16,}|-(?:proj-|ant-(?:api|admin)\d{2}-|svcacct-)?[a-z0-9_\-]{32,})",
               0, _boundary_before),
    regex_rule("twilio_key", "sk", r"[0-9a-f]{32}(?![a-z0-9])", 0, _boundary_before),
    regex_rule("stripe_restricted_key", "rk_", r"(?:live|test)_[a-z0-9]{16,}"),
    regex_rule("stripe_webhook_secret", "whsec_", r"[a-z0-9]{24,}"),
    regex_rule("sendgrid_key", "sg.", r"[a-z0-9_\-]{22}\.[a-z0-9_\-]{43}"),
    regex_rule("npm_token", "npm_", r"[a-z0-9]{36}(?![a-z0-9])"),
    regex_rule("pypi_token", "pypi-", r"age[a-z0-9_\-]{50,}"),
    regex_rule("docker_pat", "dckr_pat_", r"[a-z0-9_\-]{20,}"),
    regex_rule("hashicorp_vault", "hv", r"[sb]\.[a-z0-9_\-]{24,}", 0, _boundary_before),
    regex_rule("digitalocean", "dop_v1_", r"[a-f0-9]{64}"),
    regex_rule("digitalocean_oauth", "doo_v1_", r"[a-f0-9]{64}"),
    regex_rule("digitalocean_refresh", "dor_v1_", r"[a-f0-9]{64}"),
    regex_rule("shopify", "shp", r"(?:at|ss|ca|pa)_[a-f0-9]{32}"),
    regex_rule("mailgun", "key-", r"[0-9a-f]{32}(?![a-z0-9])"),
    regex_rule("google_oauth_token", "ya29.", r"[a-z0-9_\-]{20,}"),
    regex_rule("google_oauth_secret", "gocspx-", r"[a-z0-9_\-]{20,}"),
    regex_rule("atlassian", "atatt", r"[a-z0-9_\-=]{40,}"),
    regex_rule("telegram_bot", ":aa", r"[a-z0-9_\-]{33}(?![a-z0-9_\-])", 0, _digits_before),
    regex_rule("kubeconfig_data", "client-key-data", r"\\*\"?\s*:\s*\\*\"?([a-z0-9+/=]{16,})", 1),
    regex_rule("gcp_private_key_id", "private_key_id", r"\\*\"?\s*:\s*\\*\"?([0-9a-f]{40})", 1),
    # config files and statements that put the password after a keyword and a space
    regex_rule("netrc", "machine ", r"\S+\s+login\s+\S+\s+password\s+([^\s\"'\\]+)", 1, _not_placeholder1),
    regex_rule("redis_requirepass", "requirepass", r"[ \t]+(?:\\*[\"'])?([^\s\"'\\]+)", 1, _not_placeholder1),
    regex_rule("redis_masterauth", "masterauth", r"[ \t]+(?:\\*[\"'])?([^\s\"'\\]+)", 1, _not_placeholder1),
    regex_rule("sql_identified_by", "identified by", r"\s+(?:password\s+)?'([^'\\]{1,256})'", 1, _sql_identified_by),
    regex_rule("sql_with_password", "password", r"\s+'([^'\\]{1,256})'", 1, _sql_password),
    regex_rule("crypt_hash", "$", r"(?:2[aby]|apr1|5|6|y)\$[./a-z0-9$]{20,}", 0, _boundary_before),
    regex_rule("huggingface", "hf_", r"[a-z0-9]{34,}(?![a-z0-9])", 0, _boundary_before),
    regex_rule("age_secret_key", "age-secret-key-1", r"[0-9a-z]{58}"),
)
