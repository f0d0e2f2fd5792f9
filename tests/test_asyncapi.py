"""docs/asyncapi/<service>.json is what the code makes (``sleuth asyncapi``): a change of a
subject, a subscriber or a message model fails here until the documents are made again."""

from __future__ import annotations

import json

import pytest

from sleuth.asyncapi import documents
from sleuth.cli import main
from sleuth.commands.asyncapi import DEFAULT_DIR


@pytest.fixture(scope="module")
def made() -> dict[str, str]:
    return documents()


def test_the_committed_documents_are_what_the_code_makes(made: dict[str, str]) -> None:
    stale = [name for name, text in made.items()
             if not (DEFAULT_DIR / f"{name}.json").is_file() or (DEFAULT_DIR / f"{name}.json").read_text() != text]
    assert not stale, f"docs/asyncapi out of date for {stale}: run `sleuth asyncapi` and commit the result"


def test_channels_come_from_the_routers_and_payloads_from_the_models(made: dict[str, str]) -> None:
    docs = {name: json.loads(text) for name, text in made.items()}
    by_address = {name: {c["address"]: c for c in doc["channels"].values()} for name, doc in docs.items()}
    # A real router's subscriber, with its queue group.
    assert by_address["agent"]["sleuth.agent.diagnostics"]["bindings"]["nats"]["queue"] == "agent"
    assert by_address["authz-cache"]["sleuth.authz.scope"]["bindings"]["nats"]["queue"] == "authz"
    assert by_address["scheduler"]["sleuth.schedules.*"]["bindings"]["nats"]["queue"] == "scheduler"
    # A declared consumer's payload is the message model (its fields, from code).
    job = docs["agent"]["components"]["schemas"]["InvestigationJob"]
    assert {"requester", "origin", "question"} <= set(job["properties"])
    # Everything asked of a service is answered by it: each request the gateway sends has a subscriber.
    for subject, service in [("sleuth.authz.authenticate", "authz-cache"), ("sleuth.alerts.channels.*", "alerts"),
                             ("sleuth.schedules.*", "scheduler"), ("sleuth.reports.*", "reporter"),
                             ("sleuth.agent.diagnostics", "agent")]:
        assert subject in by_address["gateway"] and subject in by_address[service], subject


def test_check_exits_1_on_a_stale_document(made, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sleuth.asyncapi.documents", lambda: made)  # made once per module
    assert main(["asyncapi", "--out", str(tmp_path)]) == 0
    assert main(["asyncapi", "--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "alerts.json").write_text("{}\n")
    assert main(["asyncapi", "--check", "--out", str(tmp_path)]) == 1
    assert "alerts.json" in capsys.readouterr().err
