"""Redaction: credential-shaped values are replaced before any result leaves the scope filter
(DESIGN §2 step 4).

``redact_text(text) -> (text, count)`` works on raw text (logs, YAML) and on serialized JSON alike
(no pattern crosses a JSON string's closing quote). ``is_secret_key(key)`` and
``is_secret_env_name(name)`` decide structured cases (``{"password": ...}``, env
``{"name": "DB_PASSWORD", "value": ...}``) where the value itself has no recognisable shape.
What was replaced is counted, never shown.
"""

from sleuth_common.redact._patterns import (
    REDACTED,
    is_secret_env_name,
    is_secret_key,
    redact_text,
)

__all__ = ["REDACTED", "is_secret_env_name", "is_secret_key", "redact_text"]
