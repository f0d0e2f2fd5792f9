"""Values whose *name* says secret: assignments (``DB_PASS=…``, ``password: …``,
``"apiKey": "…"``, ``--password=…``), split arguments (``--db-password X``, ``--token X``,
``--client-secret "X"``), ``Authorization`` headers with or without a scheme, and command lines
whose short flags carry passwords (``mysql -pX``, ``docker login -p X``, ``sshpass -p X``,
``redis-cli -a X``, ``curl -u user:X``).

Kept: names that only point at a secret (``PASSWORD_FILE=/run/secrets/db``, ``secretName:``),
English after the name (``oauth token: unexpected status 401``, ``token: expired``,
``auth: invalid username/password``), placeholders (``${DB_PASSWORD}``, ``****``, ``<redacted>``),
booleans, null and small numbers.

A value that is a bare JSON scalar under a quoted key (``"password": 12345678``) is replaced by a
quoted placeholder, so JSON stays JSON.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sleuth_common.redact._base import Memo, Rule, Span, json_like, looks_random
from sleuth_common.redact._escapes import backslashes_before, closing_quote, line_end
from sleuth_common.redact._names import REDACTED, is_secret_key, is_status_word, looks_like_placeholder

__all__ = ["ASSIGN_RULES"]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_TAIL = re.compile(r"[a-z0-9_.\-]{0,60}")
# after the name: its closing quote, the operator, the value's opening quote
_SEP = re.compile(r"(?P<kq>\\*[\"'])?(?P<sp>[ \t]*)(?P<op>=>|:=|=|:)[ \t]*(?P<vq>\\*[\"'])?")
_FLAG_SEP = re.compile(
    r"(?:[ \t]+|(?P<kq>\\*\")\s*,\s*(?=\\*\")|[\"']?[ \t]*(?:\r?\n|(?:\\+r)?\\+n)[ \t]*-[ \t]+)(?P<vq>\\*[\"'])?"
)
_UNQUOTED = re.compile(r"[^\s\"'\\,;<>{}\[\]&|`]+")
_WORD_AFTER = re.compile(r" +(?:[a-z]|\[redacted\])")
_VERSION_TAG = re.compile(r"(?:v?\d+(?:\.\d+)+(?:[-+][\w.]+)?|latest|stable)(?=$|[\s\"'@,\\])")
_HEX_TAG = re.compile(r"(?:(?:git|sha)-)?[0-9a-f]{7,40}(?=$|[\s\"'@,\\])")
_SCALAR = re.compile(r"-?\d[\d.eE+\-]*")


def _quoted_value(text: str, low: str, vs: int, vq: str) -> int:
    """End of a quoted value opening with ``vq`` at ``vs - len(vq)``; -1 if it does not close on
    the line."""
    limit = min(len(low), vs + 2048)
    if vq.endswith("'"):
        end = low.find("'", vs, limit)
        nl = low.find("\n", vs, end if end >= 0 else limit)
        return end if end >= 0 and nl < 0 else -1
    return closing_quote(low, vs, len(vq) - 1, limit)


def _prose(low: str, value: str, end: int) -> bool:
    """``token: expired``, ``auth: invalid username/password``, ``token: unexpected status …``,
    ``tls.key: 1679 bytes`` (``kubectl describe secret``)."""
    if value.isdigit():
        return _WORD_AFTER.match(low, end) is not None
    if not value.isalpha():
        return False
    return is_status_word(value) or (len(value) <= 20 and _WORD_AFTER.match(low, end) is not None)


def value_spans(text: str, low: str, vs: int, vq: str | None, *, kq: str = "", min_len: int = 3,
                prose: bool = True) -> Sequence[Span]:
    """The value starting at ``vs`` (after its opening quote ``vq``, if any) as a span to replace,
    or nothing when it is a placeholder, a status word or English."""
    if vq and kq and vq[-1] == '"' and kq[-1] == '"' and len(vq) != len(kq):
        return ()  # the key's quote and the value's are at different JSON levels
    if vq == '"' and kq != '"' and json_like(low):
        # In a JSON document a raw quote delimits strings: after `PASSWORD=` inside one string it
        # is that string's end, not a value's start (`["PASSWORD=", "null"]`).
        return ()
    if vq:
        end = _quoted_value(text, low, vs, vq)
        if end < 0:
            return ()
        value = text[vs:end]
        if not value or looks_like_placeholder(value) or is_status_word(value) or value == REDACTED:
            return ()
        return (Span(vs, end),)
    m = _UNQUOTED.match(text, vs)
    if m is None:
        return ()
    value = m.group()
    if len(value) < min_len or looks_like_placeholder(value) or value == REDACTED or value.endswith("("):
        return ()
    if low.startswith("[redacted]", m.end()):
        return ()  # what follows was replaced already: this is the part before it
    if prose and _prose(low, value.lower(), m.end()):
        return ()
    if not prose and is_status_word(value):
        return ()
    wrap = ""
    if kq.endswith('"') or kq.endswith("'"):
        # a bare scalar under a quoted key: JSON (or a Python/YAML flow mapping); quote the placeholder
        wrap = kq
        sm = _SCALAR.match(value)
        if sm is not None and sm.end() < len(value):
            return (Span(vs, vs + sm.end(), wrap),)
    return (Span(vs, m.end(), wrap),)


def _closes_name(low: str, name_start: int, kq: str, vq: str | None) -> bool:
    """In ``["Secret=", "null"]`` the quote after ``=`` closes the string the name is in; it
    opens no value."""
    if not vq or kq or vq[-1] != '"' or name_start == 0:
        return False
    j = name_start
    while j > 0 and low[j - 1] in "-_":
        j -= 1
    return j > 0 and low[j - 1] == '"' and backslashes_before(low, j - 1) == len(vq) - 1


def _name_bounds(low: str, at: int) -> tuple[int, int]:
    i = at
    lo = max(0, at - 80)
    while i > lo and low[i - 1] in _NAME_CHARS:
        i -= 1
    m = _NAME_TAIL.match(low, at)
    end = m.end() if m is not None else at
    return i, end


def _assignment(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    start, end = _name_bounds(low, at)
    raw = low[start:end]
    name = raw.lstrip("-").rstrip(".-")
    dashes = len(raw) - len(raw.lstrip("-"))
    end = start + dashes + len(name)
    if not name or name.endswith("authorization") or not is_secret_key(name):
        return ()  # Authorization headers have their own rule
    before = low[start - 1] if start > 0 else ""
    if before in "/$%{@" and before:
        return ()  # a path (/oauth/token:), a reference (${TOKEN}), a template, an email
    m = _SEP.match(low, end)
    if m is not None:
        kq, vq = m.group("kq") or "", m.group("vq") or ""
        if kq and m.group("sp") and not vq and m.group("op") == ":" and kq[-1] == '"':
            # `volume "api-keys" : secret "frontend-api-keys" not found`: prose, not a key
            if low[m.end() : m.end() + 1].isalpha():
                return ()
        if kq and start > 0 and low[start - 1] not in "\"'\\":
            kq = ""  # the quote closes something else (`name="x" token: …`)
        if not vq and low.startswith("//", m.end()):
            return ()  # `redis:///…`: a URL scheme, not a name
        if m.group("op") == ":" and m.end() == end + 1 and (_VERSION_TAG.match(low, m.end()) or (
                _HEX_TAG.match(low, m.end()) and "image" in low[max(0, start - 40) : start])):
            return ()  # `image: token-exchange:v1.2.0`: an image and its tag
        if _closes_name(low, start, kq, vq):
            return ()
        if not vq and m.group("op") == ":":
            block = _block_scalar(low, start, m.end())
            if block is not None:
                return block
        return value_spans(text, low, m.end(), vq or None, kq=kq)
    if dashes:
        # `--token X`, `["--token", "X"]`, YAML `- --token` then `- X`
        f = _FLAG_SEP.match(low, end)
        if f is None or low.startswith("-", f.end()):
            return ()
        vq = f.group("vq")
        if f.group("kq") and vq:
            # `["--token", "X"]`: X must be the next element, not the next object key
            ve = _quoted_value(text, low, f.end(), vq)
            after = ve + len(vq)
            while 0 <= ve and after < len(low) and low[after] in " \t\r\n":
                after += 1
            if ve < 0 or low.startswith(":", after):
                return ()
        return value_spans(text, low, f.end(), vq, kq=f.group("kq") or "", prose=False)
    return ()


_BLOCK_HEAD = re.compile(r"[|>][-+]?[1-9]?[ \t]*(?:#[^\n\\]*)?(?P<nl>\r?\n|\\+n)")


def _block_scalar(low: str, key_start: int, vs: int) -> list[Span] | None:
    """``password: |`` (or ``>-`` …) then more-indented lines: every line of the block; None
    when the value is not a block scalar. Raw or escaped newlines."""
    h = _BLOCK_HEAD.match(low, vs)
    if h is None:
        return None
    nl = h.group("nl")
    nl = "\n" if nl.endswith("\n") and not nl.startswith("\\") else nl
    raw = nl == "\n"
    k = low.rfind(nl, 0, key_start)
    line_start = k + len(nl) if k >= 0 else 0
    head = low[line_start:key_start]
    key_indent = len(head) - len(head.lstrip(" -"))
    spans: list[Span] = []
    pos = h.end()
    while pos < len(low):
        e = low.find(nl, pos)
        e = len(low) if e < 0 else e
        line = low[pos:e]
        body = line.lstrip(" ")
        if body.strip():
            if len(line) - len(body) <= key_indent:
                break
            end = e if raw else min(e, line_end(low, pos, e))
            spans.append(Span(pos + len(line) - len(body), end, raw_quotes=raw))
        pos = e + len(nl)
    return spans


_PAIR_NAME = re.compile(
    r"(?:name\\*\"\s*:\s*\\*\"|name:[ \t]*[\"']?)(?P<name>[a-z0-9_.\-]{2,80})"
    r"(?:\\*\"\s*,\s*\\*\"|[\"']?[ \t]*(?:\r?\n|(?:\\+r)?\\+n)[ \t]*-?[ \t]*)$"
)
_PAIR_VALUE = re.compile(r"value(?P<kq>\\*\")?\s*:[ \t]*(?P<vq>\\*[\"'])?")


def _pair(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``value`` of a ``name``/``value`` pair whose name says secret: Kubernetes env in JSON, in
    escaped JSON (an annotation, a log line) and in YAML."""
    m = _PAIR_VALUE.match(low, at)
    if m is None or (at > 0 and low[at - 1] not in "\"' \t\n{,-\\"):
        return ()
    before = _PAIR_NAME.search(low, max(0, at - 120), at)
    if before is None or not is_secret_key(before.group("name")):
        return ()
    kq = m.group("kq") or ""
    return value_spans(text, low, m.end(), m.group("vq"), kq=kq, min_len=1, prose=False)


_ASSIGN_TRIGGERS = ("pass", "pw", "secret", "token", "key", "auth", "dsn", "conn", "credential", "cookie",
                    "bearer", "dockercfg", "dockerconfigjson", "database_url", "databaseurl", "database-url",
                    "db_url", "webhook_url", "webhookurl", "webhook-url")

# ---- Authorization headers ----------------------------------------------------------------------

_SCHEMES_ONE_TOKEN = frozenset({"basic", "bearer", "token", "jwt", "dpop", "apikey", "api-key", "key", "sso-key",
                                "splunk", "gitlab-token", "oauth", "otp", "session", "ghp", "pat", "negotiate",
                                "ntlm", "kerberos", "sharedkey", "gnap"})
# schemes with parameters: the credential is the response/signature parameter
_SCHEMES_PARAMS = frozenset({"digest", "hoba", "mutual", "aws4-hmac-sha256", "sharedaccesssignature", "signature",
                             "hmac", "mac", "vapid", "goog4-rsa-sha256", "osc"})
_PARAM = re.compile(r"(?:response|signature|sig|mac|k|t)\s*=\s*(?:\\*\")?([^\s\"\\,;]+)")
_AUTH_SEP = re.compile(r"(?P<kq>\\*[\"'])?[ \t]*(?:=|:)[ \t]*(?P<vq>\\*[\"'])?")
_WORD = re.compile(r"[a-z0-9][a-z0-9\-]*")
_TOKEN = re.compile(r"[^\s\"'\\,;{}\[\]]+")


def _authorization(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``Authorization: <anything>``: the credential after the scheme (or the whole value)."""
    end = at + len("authorization")
    if low[end : end + 1] in _NAME_CHARS and low[end : end + 1]:
        return ()  # authorizationMode, authorization_url …
    m = _AUTH_SEP.match(low, end)
    if m is None:
        return ()
    vs = m.end()
    vq = m.group("vq")
    name_start = at
    while name_start > 0 and low[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    if _closes_name(low, name_start, m.group("kq") or "", vq):
        return ()
    ve = _quoted_value(text, low, vs, vq) if vq else min(len(low), vs + 2048)
    if ve < 0:
        return ()
    w = _WORD.match(low, vs, ve)
    cs = vs
    one_token = not vq
    if w is not None and low[w.end() : w.end() + 1] in (" ", "\t"):
        scheme = w.group()
        if scheme in _SCHEMES_PARAMS:
            hi = line_end(low, w.end(), min(len(low), w.end() + 2048), quotes=bool(vq))
            return [Span(p.start(1), p.end(1)) for p in _PARAM.finditer(low, w.end(), hi)
                    if not looks_like_placeholder(p.group(1))]
        if scheme in _SCHEMES_ONE_TOKEN:
            cs = w.end()
            while cs < ve and low[cs] in " \t":
                cs += 1
            one_token = True
        elif _prose(low, scheme, w.end()):
            return ()
    if cs == vs and not vq:
        # no scheme, unquoted: a bare JSON scalar gets a quoted placeholder
        return value_spans(text, low, vs, None, kq=m.group("kq") or "")
    if cs >= ve:
        return ()
    if one_token:
        t = _TOKEN.match(low, cs, ve)
        if t is None:
            return ()
        ce = t.end()
    else:
        ce = ve if vq else line_end(low, cs, ve)
    value = text[cs:ce]
    if len(value) < 3 or looks_like_placeholder(value) or is_status_word(value) or value == REDACTED:
        return ()
    if value.isalpha() and not looks_random(value):
        return ()  # `Authorization: required`, `Authorization: none`
    return (Span(cs, ce),)


# ---- command lines with password flags ---------------------------------------------------------

_SHORT_FLAG = {
    # command word -> (flag, attached value allowed, separate value allowed)
    "mysql": ("-p", True, False),  # `mysql -p db` prompts; db is no password
    "mariadb": ("-p", True, False),
    "mysqldump": ("-p", True, False),
    "mysqladmin": ("-p", True, False),
    "mysqlimport": ("-p", True, False),
    "mysqlcheck": ("-p", True, False),
    "mysqlsh": ("-p", True, False),
    "sshpass": ("-p", True, True),
    "redis-cli": ("-a", True, True),
    "valkey-cli": ("-a", True, True),
}
_LOGIN_TOOLS = ("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "oc", "regctl",
                "cosign", "finch", "az", "argocd", "cf")
_ARG = re.compile(r"(?P<vq>\\*[\"'])?")


def _flag_values(text: str, low: str, lo: int, hi: int, flag: str, attached: bool, separate: bool) -> list[Span]:
    out: list[Span] = []
    i = lo
    n = len(flag)
    while True:
        k = low.find(flag, i, hi)
        if k < 0:
            return out
        i = k + n
        if k > 0 and low[k - 1] not in " \t":
            continue
        if text[k + 1] != flag[1]:
            continue  # case matters: mysql -P is the port
        nxt = low[k + n : k + n + 1]
        if nxt in (" ", "\t"):
            if not separate:
                continue
            j = k + n
            while j < hi and low[j] in " \t":
                j += 1
            if low.startswith("-", j):
                continue
            vq = _ARG.match(low, j)
            q = vq.group("vq") if vq is not None else None
            out.extend(value_spans(text, low, j + len(q or ""), q, min_len=1, prose=False))
        elif attached and nxt and nxt not in "=\\":
            q = _ARG.match(low, k + n)
            vq_s = q.group("vq") if q is not None else None
            if vq_s == '"' and json_like(low):
                continue
            out.extend(value_spans(text, low, k + n + len(vq_s or ""), vq_s, min_len=1, prose=False))
    return out


def _command(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``mysql -uroot -pX``, ``sshpass -p X``, ``redis-cli -a X``: the password flag of that command."""
    if at > 0 and (low[at - 1].isalnum() or low[at - 1] in "_"):
        return ()
    w = _WORD.match(low, at)
    if w is None or w.group() not in _SHORT_FLAG:
        return ()
    flag, attached, separate = _SHORT_FLAG[w.group()]
    hi = _segment_end(low, w.end(), w.group())
    return _flag_values(text, low, w.end(), hi, flag, attached, separate)


def _segment_end(low: str, start: int, word: str) -> int:
    """Where the command line that starts before ``start`` ends: its line's end, or the next
    occurrence of the same command (which gets its own look)."""
    hi = line_end(low, start, min(len(low), start + 1000))
    nxt = low.find(word, start, hi)
    return nxt if nxt >= 0 else hi


def _login(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``docker login -u me -p X registry``: ``-p`` means password only after ``login``."""
    j = at
    while j > 0 and low[j - 1] in " \t":
        j -= 1
    head = low[max(0, j - 40) : j]
    if not any(head.endswith(t) or head.endswith(t + " registry") for t in _LOGIN_TOOLS):
        return ()
    hi = _segment_end(low, at + 5, "login")
    return _flag_values(text, low, at + 5, hi, "-p", False, True)


_CURL_USER = re.compile(r"(?:-u|--user|--proxy-user|-U)[ \t=]+(?P<vq>\\*[\"'])?[^\s:\"'\\]{1,128}:")


def _curl(text: str, low: str, at: int, memo: Memo) -> Sequence[Span]:
    """``curl -u user:password``: the part after the colon."""
    if at > 0 and (low[at - 1].isalnum() or low[at - 1] in "_-"):
        return ()
    hi = _segment_end(low, at + 4, low[at : at + 4])
    out: list[Span] = []
    for m in _CURL_USER.finditer(low, at, hi):
        vq = m.group("vq")
        if vq:
            end = _quoted_value(text, low, m.end(), vq)
            if end > m.end() and not looks_like_placeholder(text[m.end() : end]):
                out.append(Span(m.end(), end))
        else:
            out.extend(value_spans(text, low, m.end(), None, min_len=1, prose=False))
    return out


ASSIGN_RULES: tuple[Rule, ...] = (
    *(Rule(f"assignment_{t}", t, _assignment) for t in _ASSIGN_TRIGGERS),
    Rule("env_pair_value", "value", _pair),
    Rule("authorization_header", "authorization", _authorization),
    *(Rule(f"command_{c}", c, _command) for c in _SHORT_FLAG),
    Rule("registry_login", "login", _login),
    Rule("curl_user", "curl", _curl),
    Rule("wget_user", "wget", _curl),
)
