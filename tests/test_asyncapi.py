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


def test_wire_subscriptions_are_matched_against_receive_channels(made: dict[str, str]) -> None:
    """tests/bus_wire.py, which test_e2e_stack runs against the live stack's /connz."""
    from tests.bus_wire import Sub, covers, receive_channels, undocumented

    assert covers("sleuth.jobs.done.*", "sleuth.jobs.done.4f2a") and covers("sleuth.jobs.done.{job_id}", "sleuth.jobs.done.x")
    assert covers("sleuth.schedules.*", "sleuth.schedules.*") and covers("sleuth.>", "sleuth.jobs.done.x")
    assert not covers("sleuth.jobs.done.*", "sleuth.jobs.done.>"), "a wider subscription than declared"
    assert not covers("sleuth.jobs.done.*", "sleuth.jobs.done") and not covers("sleuth.jobs.*", "sleuth.jobs.done.x")
    assert not covers("sleuth.>", "sleuth") and not covers("sleuth.jobs.done.*", "sleuth.jobs.progress.x")
    docs = {name: json.loads(text) for name, text in made.items()}
    assert ("sleuth.jobs.done.*", "scheduler") in receive_channels(docs["scheduler"])
    assert not any(a == "sleuth.audit.*" for a, _ in receive_channels(docs["gateway"])), "publish-only"
    subs = {Sub("scheduler", "sleuth.jobs.done.j1", "scheduler"), Sub("gateway", "_INBOX.gateway.x1.*"),
            Sub("gateway", "$JS.API.CONSUMER.INFO.X"), Sub("gateway", "sleuth.jobs.done.j2"),
            Sub("scheduler", "sleuth.jobs.done.j3"), Sub("gateway", "sleuth.audit.job_started")}
    assert undocumented(subs, docs) == [Sub("gateway", "sleuth.audit.job_started"),
                                        Sub("scheduler", "sleuth.jobs.done.j3")], "wrong queue group, publish-only"
