"""Redaction runs over serialised JSON: given valid JSON it must return valid JSON. A bare number
under a secret key becomes a quoted placeholder, escapes are never cut, escaped quotes inside a
value are part of the value, JSON inside JSON strings (any depth) is handled at its own level."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.redact import REDACTED, redact_text
from sleuth_common.scope import Scope, filter_result


@dataclass(frozen=True)
class Case:
    name: str
    doc: Any
    expect: Any  # the document after redaction


CASES = [
    Case("number under password", {"password": 12345678}, {"password": REDACTED}),
    Case("negative float under token", {"token": -1234.5e3}, {"token": REDACTED}),
    Case("number in escaped JSON", {"log": json.dumps({"pass": 98765432})}, {"log": json.dumps({"pass": REDACTED})}),
    Case("true, false, null and small numbers stay", {"token": True, "password": None, "secret": False, "pwd": 7},
         {"token": True, "password": None, "secret": False, "pwd": 7}),
    Case("escaped quote inside the value", {"password": 'ab"cd\\ef'}, {"password": REDACTED}),
    Case("unicode escape inside the value", {"token": "tök€n-Zx81kq"}, {"token": REDACTED}),
    Case("value that ends in a backslash", {"password": "Zx81kqpl\\"}, {"password": REDACTED}),
    Case("secret key in an array of flags", {"args": ["--token", "Zx81kqplM2"]}, {"args": ["--token", REDACTED]}),
    Case("a quote after `=` closes the name's string", ["Secret=", "null"], ["Secret=", "null"]),
    Case("doubly escaped pair", {"a": json.dumps({"b": json.dumps({"name": "DB_PASS", "value": "Zx81kq"})})},
         {"a": json.dumps({"b": json.dumps({"name": "DB_PASS", "value": REDACTED})})}),
    Case("Authorization null", {"Authorization": None}, {"Authorization": None}),
    Case("Authorization number", {"authorization": 123456789}, {"authorization": REDACTED}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("dump", [{}, {"separators": (",", ":")}, {"indent": 2}, {"ensure_ascii": False}],
                         ids=["default", "compact", "indented", "utf8"])
def test_json_stays_json(case: Case, dump: dict[str, Any]) -> None:
    out, _ = redact_text(json.dumps(case.doc, **dump))
    assert json.loads(out) == case.expect


def test_filter_result_survives_numbers_under_secret_keys() -> None:
    """The reported failure: a number under a secret-looking key made filter_result raise."""
    doc = [{"metadata": {"namespace": "team-a", "name": "x"},
            "log": json.dumps({"password": 12345678, "token": True, "apiKey": None})}]
    out = filter_result(json.dumps(doc), Scope.of(["team-a"]))
    assert out.outcome == "kept"
    inner = json.loads(out.data[0]["log"])
    assert inner == {"password": REDACTED, "token": True, "apiKey": None}


# ---- properties ---------------------------------------------------------------------------------

SECRET_KEYS = st.sampled_from([
    "password", "token", "apiKey", "DB_PASS", "secret", "auth", "Authorization", "pwd", "pass", "client_secret",
    "PGPASSWORD", ".dockerconfigjson", "tls.key", "x-api-key", "data", "stringData", "kind", "name", "value",
    "args", "env", "kubectl.kubernetes.io/last-applied-configuration", "--password", "secretName",
])
KEYS = SECRET_KEYS | st.text(max_size=8)
PIECES = st.sampled_from([
    "Secret", "DB_PASSWORD", "--token", "-p", "mysql -pX", "Bearer abcDEF123456789", "\\", '"', '\\"', "\n", "\\u00e9",
    'password: x"y', "token=ab\\cd", 'redis://:p"w@h', "data:\n  k: v\nkind: Secret", "Authorization: Basic QUJDREVGR0hJSktM",
    "-----BEGIN PRIVATE KEY-----\nabc\"def\n", "é", "\u200b", "{", "}", "[", "]", ":", ",", " ", "=", "'", "LS0tLS1CRUdJTiBQUklWQVRF",
    "last-applied-configuration", "kind: Secret", '"kind":"Secret"', "@tcp(", "://", "-----END PRIVATE KEY-----",
])
STRINGS = st.lists(PIECES | st.text(max_size=6), max_size=10).map("".join)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | STRINGS
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                      max_leaves=20)
# documents whose strings may hold JSON again (annotations, logs), to any depth
DOCUMENTS = st.recursive(VALUES, lambda inner: st.builds(json.dumps, inner) | st.dictionaries(KEYS, inner, max_size=4)
                         | st.lists(inner, max_size=3), max_leaves=12)
DUMPS = st.sampled_from([{}, {"separators": (",", ":")}, {"indent": 2}, {"ensure_ascii": False}])


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(DOCUMENTS, DUMPS)
def test_valid_json_stays_valid(doc: Any, dump: dict[str, Any]) -> None:
    out, _ = redact_text(json.dumps(doc, **dump))
    json.loads(out)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(SECRET_KEYS, SCALARS, min_size=1, max_size=6), DUMPS)
def test_secret_keys_with_any_value_type(doc: dict[str, Any], dump: dict[str, Any]) -> None:
    """Every scalar type under every secret-looking key: valid JSON, same keys, same types or the
    placeholder string."""
    out, _ = redact_text(json.dumps(doc, **dump))
    back = json.loads(out)
    assert back.keys() == doc.keys()
    for k, v in back.items():
        assert v == REDACTED or type(v) is type(doc[k]) or (isinstance(v, str) and isinstance(doc[k], str))
