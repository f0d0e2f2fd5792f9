"""Redaction: credential-shaped values are replaced before any result leaves the scope filter
(DESIGN §2 step 4).

``redact_text(text) -> (text, count)`` works on raw text (logs, YAML) and on serialized JSON alike:
given valid JSON it returns valid JSON (no replacement crosses a string's closing quote or cuts an
escape; a bare number under a secret key becomes a quoted placeholder). ``is_secret_key(key)`` and
``is_secret_env_name(name)`` decide structured cases (``{"password": ...}``, env
``{"name": "DB_PASSWORD", "value": ...}``) where the value itself has no recognisable shape.
What was replaced is counted, never shown.

Layout: ``_names`` (which names say secret, which values are placeholders), ``_shapes``
(credentials with a shape of their own), ``_assign`` (values under secret names, split
arguments, Authorization headers, password flags), ``_blocks`` (Secret data and
last-applied-configuration written as text), ``_escapes`` (JSON quoting levels), ``_engine``.
"""

from sleuth_common.redact._engine import redact_text
from sleuth_common.redact._names import REDACTED, is_secret_env_name, is_secret_key

__all__ = ["REDACTED", "is_secret_env_name", "is_secret_key", "redact_text"]
