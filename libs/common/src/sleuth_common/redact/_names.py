"""Which names say "my value is a credential", and which values are no credential whatever the
name says. Used by the text rules (``DB_PASS=…``, ``--client-secret X``, ``"password": …``) and by
the scope filter's walk for structured data (``{"password": …}``, env ``name``/``value`` pairs).

A name is judged on its lower-cased, separator-free form (``DB_PASSWORD``, ``dbPassword`` and
``db-password`` are all ``dbpassword``):

* it is secret when it contains a long credential word (``password``, ``secret``, ``token``,
  ``credential``, ``apikey`` …), ends with a short one (``…pass``, ``…pw``, ``…pwd``, ``…auth``),
  or ends with a compound ``…key`` whose first half says secret (``secretkey``, ``signingkey`` …);
* it is not secret when it only names, points at or describes one: it ends with a reference
  word (``secretName``, ``passwordFile``, ``tokenExpirationSeconds``, ``PASSWORD_MIN_LENGTH``), or
  is a plural collection (``max_tokens``, ``secrets``).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["REDACTED", "is_secret_env_name", "is_secret_key", "is_status_word", "looks_like_placeholder"]

REDACTED = "[REDACTED]"

# Contained anywhere in the flat name.
_LONG_WORDS = (
    "password", "passwd", "passphrase", "passcode", "secret", "token", "credential", "apikey",
    "privatekey", "privkey", "accesskey", "secretkey", "signingkey", "encryptionkey", "masterkey",
    "sessionkey", "clientkey", "connectionstring", "connstr", "databaseurl", "dburl", "webhookurl",
    "cookie", "bearer", "pgpass", "dockerconfigjson", "dockercfg", "authorization", "xapikey",
)
# The flat name ends with one of these (``DB_PASS``, ``ADMIN_PW``, ``MYSQL_PWD``, npm ``_auth``).
_SHORT_ENDINGS = ("pass", "pw", "pwd", "auth", "dsn")
# English words ending like a short credential word; not credentials.
_SHORT_EXCEPTIONS = frozenset({
    "bypass", "compass", "encompass", "overpass", "underpass", "surpass", "trespass", "oauth",
    "preauth", "noauth", "unauth", "skipauth",
})
# ``…key`` compounds that hold a key, not name one (``partitionKey``, ``cacheKey`` do not).
_KEY_PREFIXES = (
    "api", "access", "secret", "private", "priv", "signing", "sign", "encryption", "encrypt", "crypt",
    "master", "session", "app", "auth", "client", "account", "shared", "sharedaccess", "license",
    "admin", "root", "storage", "hmac", "jwt", "webhook", "aes", "cipher", "subscription", "service",
    "deploy", "ssh", "gpg", "pgp", "consumer", "x-api", "xapi", "write", "read", "ingest", "sas",
)
# The flat name ends with one of these: it names, points at or describes a secret.
_REFERENCE_ENDINGS = (
    "name", "names", "ref", "keyref", "secretref", "file", "files", "path", "paths", "dir", "mount",
    "mountpath", "seconds", "count", "id", "ids", "kind", "type", "expiration", "expiry", "expires",
    "expiresat", "expiresin", "ttl", "length", "len", "minlength", "maxlength", "policy", "provider",
    "source", "hash", "version", "env", "keyid", "namespace", "field", "label", "labels", "selector",
    "enabled", "disabled", "required", "mode", "format", "header", "headers", "audience", "audiences",
    "issuer", "uritemplate", "rotation", "age", "maxage", "lifetime", "url", "uri", "endpoint",
    "endpoints", "host", "hosts", "port", "user", "username", "login", "method", "methods", "scheme",
    "schemes", "scope", "scopes", "store", "volume", "volumes", "template", "prefix", "suffix",
    "size", "limit", "limits", "timeout", "interval", "retries", "attempts", "strength", "rules",
    "validation", "pattern", "regex", "reset", "reuse", "history", "changed", "updated", "created",
    "status", "state", "config", "class", "annotation", "annotations", "keys", "items", "list",
    "generator", "manager", "backend", "server", "service", "handler", "plugin", "driver",
    "stdin", "prompt", "command", "cmd", "script", "helper", "helpers", "program",
    "algorithm", "algorithms", "algo", "rounds", "iterations", "cost", "complexity", "strategy", "encoding",
    "charset", "level", "kdf",
)
_EXACT_SECRET = frozenset({
    "auth", "pass", "pw", "pwd", "token", "password", "secret", "apikey", "secretid", "databaseurl",
    "webhookurl", "dburl", "keypem", "tlskey", "privatekey",
})
# Collections and counters (``max_tokens``, ``secrets``) and English words that contain a
# credential word (``tokenizer``).
_NOT_SECRET_ENDINGS = ("tokens", "secrets", "passwords", "cookies", "tokenizer", "tokenizers",
                       "tokenization", "secretary", "passwordless",
                       # the key *name* inside a Secret (Helm's existingSecretPasswordKey, passwordKey)
                       "passwordkey", "usernamekey", "tokenkey", "userkey",
                       # pagination and sync cursors
                       "pagetoken", "continuetoken", "resumetoken", "synctoken", "cursortoken", "nexttoken")
# Helm's `existingSecret: db-creds`, `existingSecretPassword…`: the name of a Secret to use.
_NOT_SECRET_PREFIXES = ("existing",)

_SEPARATORS = str.maketrans("", "", "_-. /:[]'\"")


@lru_cache(maxsize=8192)
def is_secret_key(key: str) -> bool:
    """True when a mapping key or variable name says its value is a credential (``password``,
    ``DB_PASS``, ``apiKey``, ``client_secret``, ``PGPASSWORD``, ``.dockerconfigjson``) but not
    when it only names or points at one (``secretName``, ``secretKeyRef``, ``passwordFile``,
    ``tokenExpirationSeconds``, ``PASSWORD_MIN_LENGTH``)."""
    low = key.lower()
    flat = low.translate(_SEPARATORS)
    if not flat or len(flat) > 100:
        return False
    if flat in _EXACT_SECRET:
        return True
    if flat.endswith(_NOT_SECRET_ENDINGS) or flat.startswith(_NOT_SECRET_PREFIXES):
        return False
    secret = any(w in flat for w in _LONG_WORDS)
    if not secret:
        secret = any(flat.endswith(s) for s in _SHORT_ENDINGS) and not any(
            flat.endswith(e) for e in _SHORT_EXCEPTIONS)
    if not secret and flat.endswith("key") and len(flat) > 3:
        head = flat[:-3]
        secret = any(head.endswith(p.replace("-", "")) for p in _KEY_PREFIXES)
    if not secret:
        return False
    for e in _REFERENCE_ENDINGS:
        if flat.endswith(e):
            # ``databaseurl``/``webhookurl`` hold credentials themselves; ``secretid`` (Vault AppRole) too.
            return flat.endswith(("databaseurl", "webhookurl", "dburl", "secretid", "passwordhash", "apikeys"))
    return True


def is_secret_env_name(name: str) -> bool:
    """True for environment variable names that say they hold a secret (``DB_PASSWORD``,
    ``STRIPE_API_KEY``, ``GITHUB_TOKEN``, ``PGPASS``), false for ``SECRET_NAME`` or ``TOKEN_FILE``."""
    return is_secret_key(name)


_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([A-Za-z_][A-Za-z0-9_]*\)|%[A-Za-z_][A-Za-z0-9_]*%|<[^>]*>|"
    r"\*+|x+|X+|\.\.\.|…|null|none|nil|true|false|yes|no|on|off|undefined|empty|"
    r"redacted|\[redacted\]|<redacted>|\*\*\*redacted\*\*\*|hidden|masked|\{\{.*\}\}|-|\d{1,3}|"
    r"[A-Za-z][A-Za-z0-9+.\-]*://[^:@\s]+|"
    # an absolute path in lower case: a file that holds the secret, not the secret
    r"/(?:[a-z0-9._\-]+/)*[a-z0-9._\-]+/?)$",
    re.IGNORECASE,
)
_PATH = re.compile(r"/(?:[a-z0-9._\-]+/)*[a-z0-9._\-]+/?")


def looks_like_placeholder(value: str) -> bool:
    """Values that are no credential whatever their name says: references (``${DB_PASSWORD}``,
    ``$(TOKEN)``), masks (``****``, ``<redacted>``), booleans and null, numbers of up to three
    digits, plain URLs and lower-case file paths."""
    v = value.strip("\"'")
    if v.startswith("/"):
        return _PATH.fullmatch(v) is not None  # case-sensitive: base64 starting with '/' is mixed case
    return _PLACEHOLDER.match(v) is not None


STATUS_WORDS = frozenset({
    "expired", "invalid", "missing", "empty", "unknown", "required", "unauthorized", "denied", "forbidden",
    "rejected", "revoked", "malformed", "incorrect", "wrong", "bad", "ok", "valid", "set", "unset", "present",
    "absent", "found", "notfound", "failed", "error", "refreshed", "expiring", "disabled", "enabled",
    "not", "no", "none", "is", "was", "has", "for", "the", "a", "an", "unexpected", "could", "cannot",
    "can't", "failure", "mismatch", "accepted", "verified", "ignored", "rotated", "changed", "updated",
    "redacted", "hidden", "omitted", "removed", "supplied", "provided", "needed", "too", "must", "should",
})


def is_status_word(value: str) -> bool:
    """``token: expired``, ``password: invalid`` — a word about the credential, not the credential."""
    return value.lower() in STATUS_WORDS
