"""Redaction against the corpus in data/redaction_corpus.yaml: credential shapes must be replaced
(recall), look-alikes must survive untouched (false positives). Both rates are printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth_common.redact import REDACTED, is_secret_key, redact_text
from sleuth_common.scope import Scope, filter_result

CORPUS = yaml.safe_load((Path(__file__).parent / "data" / "redaction_corpus.yaml").read_text())
CREDS: list[dict[str, Any]] = CORPUS["credentials"]
LOOKALIKES: list[dict[str, Any]] = CORPUS["lookalikes"]


def test_corpus_is_big_enough() -> None:
    assert len(CREDS) >= 80 and len(LOOKALIKES) >= 40


def test_recall_and_false_positives(capsys: pytest.CaptureFixture[str]) -> None:
    missed = [c["shape"] for c in CREDS if c["secret"] in redact_text(c["text"])[0]]
    touched = [x["kind"] for x in LOOKALIKES if redact_text(x["text"])[0] != x["text"]]
    recall = 1 - len(missed) / len(CREDS)
    fp_rate = len(touched) / len(LOOKALIKES)
    with capsys.disabled():
        print(f"\nredaction: recall {recall:.1%} ({len(CREDS) - len(missed)}/{len(CREDS)}), "
              f"false positives {fp_rate:.1%} ({len(touched)}/{len(LOOKALIKES)})")
    assert not missed, f"credentials that survived: {missed}"
    assert not touched, f"look-alikes that were changed: {touched}"


@pytest.mark.parametrize("case", CREDS, ids=[c["shape"] for c in CREDS])
def test_redacted_inside_json_results_too(case: dict[str, Any]) -> None:
    """The same shapes inside a structured result (serialized JSON) are gone from data and text."""
    doc = {"items": [{"metadata": {"namespace": "team-a", "name": "x"}, "data": {"blob": case["text"]}}]}
    out = filter_result(json.dumps(doc), Scope.of(["team-a"]))
    assert out.outcome == "kept" and out.redacted >= 1
    assert case["secret"] not in out.text and case["secret"] not in json.dumps(out.data)
    json.loads(out.text)  # still valid JSON


def test_structured_secret_keys_and_env_pairs() -> None:
    doc = [{"namespace": "team-a", "password": "p@ss", "secretName": "keep-me",
            "env": [{"name": "API_KEY", "value": "abc"}, {"name": "MODE", "value": "fast"}],
            "token": {"value": "nested"}}]
    out = filter_result(json.dumps(doc), Scope.of(["team-a"]))
    rec = out.data[0]
    assert rec["password"] == REDACTED and rec["secretName"] == "keep-me"
    assert rec["env"] == [{"name": "API_KEY", "value": REDACTED}, {"name": "MODE", "value": "fast"}]
    assert rec["token"] == {"value": REDACTED}


@pytest.mark.parametrize(("key", "secret"), [
    ("password", True), ("dbPassword", True), ("client_secret", True), ("apiKey", True), ("token", True),
    ("secretName", False), ("secretKeyRef", False), ("passwordFile", False), ("tokenExpirationSeconds", False),
    ("serviceAccountName", False), ("name", False), ("key", False),
])
def test_secret_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_redaction_never_breaks_json_or_grows_secrets(text: str) -> None:
    """Arbitrary text inside JSON stays valid JSON after redaction, and redacting twice is a no-op."""
    once, _ = redact_text(json.dumps({"v": text}))
    json.loads(once)
    assert redact_text(once)[0] == once
