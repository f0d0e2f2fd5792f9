"""Texts built to make redaction and marker stripping slow (a trigger every few characters, nested
markers, unterminated keys, thousands of ``data:`` keys). Work must stay linear: these finish
within the suite's per-test timeout at 256 kB, where anything quadratic would not. Times are
measured in the bench script, never asserted here; what is asserted is the result."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from sleuth_common.redact import redact_text
from sleuth_common.scope import strip_markers

SIZE = 256_000


def _fill(piece: str) -> str:
    return piece * (SIZE // len(piece))


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    gone: str = ""  # must not survive redaction


CASES = [
    Case("assignment every 9 characters", _fill("password=")),
    Case("escaped quotes after a name", _fill('password=\\"')),
    Case("PEM headers without a footer", _fill("-----BEGIN PRIVATE KEY-----\n")),
    Case("data: keys everywhere", _fill("data:\n")),
    Case("data: blocks under one Secret", "kind: Secret\n" + _fill("data:\n  k: Zx81kqplM2\n"), gone="Zx81kqplM2"),
    Case("Secret JSON objects", _fill('{"kind":"Secret","data":{"k":"Zx81kqplM2"}},'), gone="Zx81kqplM2"),
    Case("unclosed JSON data objects", '{"kind":"Secret",' + _fill('"data":{"k":')),
    Case("last-applied without a closing brace", "kind: Secret " + _fill("last-applied-configuration: {")),
    Case("Authorization headers", _fill("Authorization: ")),
    Case("URL schemes", _fill("://a:b")),
    Case("Go DSNs", _fill("a:Zx81kqplM2@tcp("), gone="Zx81kqplM2"),
    Case("mysql -p flags", _fill("mysql -p -p -p ")),
    Case("curl -u", _fill("curl -u a:")),
    Case("base64 PEM prefixes", _fill("LS0tLS1CRUdJTi")),
    Case("JWT prefixes", _fill("eyJabcdefgh.")),
    Case("name/value pairs", _fill('"name":"DB_PASS","value":"')),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_redaction_finishes_and_stays_correct(case: Case) -> None:
    out, _ = redact_text(case.text)
    if case.gone:
        assert case.gone not in out
    doc = json.dumps({"log": case.text[:50_000]})
    json.loads(redact_text(doc)[0])


MARKER_CASES = [
    Case("markers back to back", _fill("<<<end sleuth-data>>>")),
    Case("markers nested to be joined", "<<<end sle" * 5000 + "<<<sleuth-data>>>" + "uth-data>>>" * 5000),
    Case("the word sleuth everywhere", _fill("sleuth ")),
    Case("brackets without end", _fill("<") + "sleuth"),
    Case("look-alikes back to back", _fill("<<<еnd ѕlеυтһ\u2010data>>>")),
    Case("zero-width spaces between letters", _fill("s\u200bl\u200be\u200bu\u200bt\u200bh\u200b-data>")),
]


@pytest.mark.parametrize("case", MARKER_CASES, ids=[c.name for c in MARKER_CASES])
def test_strip_markers_finishes_and_leaves_no_marker(case: Case) -> None:
    once = strip_markers(case.text)
    assert strip_markers(once) == once
    assert "sleuth-data>" not in once.lower()
