"""Redaction against the corpus in data/redaction_corpus.yaml: credential shapes must be replaced
(recall), look-alikes must survive untouched (false positives). Both rates are printed, overall
and per class of rule."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
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
    assert len(CREDS) >= 250 and len(LOOKALIKES) >= 150
    classes = Counter(c["class"] for c in CREDS)
    for cls in ("url", "connection_string", "env_abbreviation", "split_argument", "short_flag", "text_keys",
                "json_scalar", "last_applied", "authorization", "base64_pem", "secret_data_text", "docker_config",
                "vendor_token", "jwt", "private_key", "config_keyword"):
        assert classes[cls] >= 3, f"corpus class {cls} has {classes[cls]} entries"


def test_recall_and_false_positives(capsys: pytest.CaptureFixture[str]) -> None:
    missed = [c for c in CREDS if c["secret"] in redact_text(c["text"])[0]]
    touched = [x for x in LOOKALIKES if redact_text(x["text"])[0] != x["text"]]
    recall = 1 - len(missed) / len(CREDS)
    fp_rate = len(touched) / len(LOOKALIKES)
    with capsys.disabled():
        print(f"\nredaction: recall {recall:.1%} ({len(CREDS) - len(missed)}/{len(CREDS)}), "
              f"false positives {fp_rate:.1%} ({len(touched)}/{len(LOOKALIKES)})")
        per = Counter(c["class"] for c in CREDS)
        miss = Counter(c["class"] for c in missed)
        print("  recall by class: " + ", ".join(f"{k} {per[k] - miss[k]}/{per[k]}" for k in sorted(per)))
        per_l = Counter(x["class"] for x in LOOKALIKES)
        hit = Counter(x["class"] for x in touched)
        print("  look-alikes kept by class: " + ", ".join(f"{k} {per_l[k] - hit[k]}/{per_l[k]}" for k in sorted(per_l)))
    assert not missed, f"credentials that survived: {[c['shape'] for c in missed]}"
    assert not touched, f"look-alikes that were changed: {[x['kind'] for x in touched]}"


@pytest.mark.parametrize("case", CREDS, ids=[f"{c['class']}: {c['shape']}" for c in CREDS])
def test_redacted_inside_json_results_too(case: dict[str, Any]) -> None:
    """The same shapes inside a structured result (serialized JSON) are gone from data and text,
    and the result is still valid JSON. (A blob that is itself a Kubernetes object may be filtered
    by scope rather than redacted: either way the secret is gone.)"""
    doc = {"items": [{"metadata": {"namespace": "team-a", "name": "x"}, "data": {"blob": case["text"]}}]}
    out = filter_result(json.dumps(doc), Scope.of(["team-a"]), pinned=True, pinned_namespaces=["team-a"])
    assert out.outcome in ("kept", "filtered") and (out.redacted >= 1 or out.removed >= 1)
    assert case["secret"] not in out.text and case["secret"] not in json.dumps(out.data)
    json.loads(out.text)


@pytest.mark.parametrize("case", LOOKALIKES, ids=[f"{x['class']}: {x['kind']}" for x in LOOKALIKES])
def test_lookalikes_survive_serialised_as_json(case: dict[str, Any]) -> None:
    """Serialised as a JSON string (escaped quotes and newlines), a look-alike is still kept."""
    text = json.dumps({"log": case["text"]})
    assert redact_text(text) == (text, 0)


def test_structured_secret_keys_and_env_pairs() -> None:
    doc = [{"namespace": "team-a", "password": "p@ss", "secretName": "keep-me",
            "env": [{"name": "API_KEY", "value": "abc"}, {"name": "MODE", "value": "fast"}],
            "token": {"value": "nested"}}]
    out = filter_result(json.dumps(doc), Scope.of(["team-a"]))
    rec = out.data[0]
    assert rec["password"] == REDACTED and rec["secretName"] == "keep-me"
    assert rec["env"] == [{"name": "API_KEY", "value": REDACTED}, {"name": "MODE", "value": "fast"}]
    assert rec["token"] == {"value": REDACTED}


@dataclass(frozen=True)
class Key:
    key: str
    secret: bool


KEYS = [
    Key("password", True), Key("dbPassword", True), Key("client_secret", True), Key("apiKey", True),
    Key("token", True), Key("DB_PASS", True), Key("ADMIN_PW", True), Key("MYSQL_PWD", True), Key("PGPASS", True),
    Key("PGPASSWORD", True), Key("SSH_PASSPHRASE", True), Key("DJANGO_SECRET_KEY", True),
    Key("GCP_CREDENTIALS", True), Key("pass", True), Key("passwd", True), Key("pwd", True), Key("auth", True),
    Key("_auth", True), Key(".dockerconfigjson", True), Key("tls.key", True), Key("x-api-key", True),
    Key("Authorization", True), Key("basic_auth", True), Key("identitytoken", True), Key("secret_id", True),
    Key("DATABASE_URL", True), Key("API_KEYS", True),
    Key("secretName", False), Key("secretKeyRef", False), Key("passwordFile", False),
    Key("PASSWORD_FILE", False), Key("tokenExpirationSeconds", False), Key("PASSWORD_MIN_LENGTH", False),
    Key("serviceAccountName", False), Key("name", False), Key("key", False), Key("keys", False),
    Key("max_tokens", False), Key("tokenizer", False), Key("bypass", False), Key("compass", False),
    Key("oauth", False), Key("AUTH_URL", False), Key("OAUTH_CLIENT_ID", False), Key("token_type", False),
    Key("aws_access_key_id", False), Key("partitionKey", False), Key("cacheKey", False), Key("publicKey", False),
    Key("SSH_AUTH_SOCK", False), Key("passwordless", False), Key("secrets", False),
]


@pytest.mark.parametrize("case", KEYS, ids=[k.key for k in KEYS])
def test_secret_keys(case: Key) -> None:
    assert is_secret_key(case.key) is case.secret


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_redaction_never_breaks_json_or_grows_secrets(text: str) -> None:
    """Arbitrary text inside JSON stays valid JSON after redaction, and redacting twice is a no-op."""
    once, _ = redact_text(json.dumps({"v": text}))
    json.loads(once)
    assert redact_text(once)[0] == once
