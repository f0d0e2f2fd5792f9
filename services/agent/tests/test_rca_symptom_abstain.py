"""A question that asserts a current problem (5xx, timeouts, "keeps restarting", "getting
killed") over pods that are all running and ready with no current signal is not answered
"healthy": the answer abstains, says what was checked and what to look at next. Exit code 137
with reason Error (not OOMKilled) is a SIGKILL from outside the container's own memory limit."""

from __future__ import annotations

from sleuth_agent.rca._cluster import ClusterOutcome
from sleuth_agent.rca._evidence import EvidenceLog
from sleuth_agent.rca._observe import WorkloadObservation
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca._report import build_result
from sleuth_agent.rca._symptoms import asserted_symptoms, ongoing, request_level


def _pod(name: str, restarts: int = 0, exit_code: int | None = None, reason: str = "Error") -> PodView:
    status = {"name": "indexer", "ready": True, "restartCount": restarts, "state": {"running": {"startedAt": "2031-05-01T03:00:00Z"}}}
    if exit_code is not None:
        status["lastState"] = {"terminated": {"reason": reason, "exitCode": exit_code,
                                              "startedAt": "2031-05-01T01:00:00Z", "finishedAt": "2031-05-01T02:59:58Z"}}
    return PodView.parse({
        "metadata": {"namespace": "search", "name": name, "ownerReferences": [{"kind": "ReplicaSet", "name": "indexer-6c5b4a3d2e"}]},
        "spec": {"containers": [{"name": "indexer", "resources": {"limits": {"memory": "8Gi"}}}]},
        "status": {"phase": "Running", "containerStatuses": [status]},
    })


def _result(question: str, *pods: PodView, history: list[str] | None = None, minutes: str = ""):
    obs = WorkloadObservation("search", "Deployment", "indexer", pods=list(pods) or [_pod("indexer-6c5b4a3d2e-aaaaa")], named=True)
    for h in history or []:
        obs.derive("history", h)
    if minutes:
        obs.derive("history_minutes", minutes)
    out = ClusterOutcome("c1", namespaces=["search"], healthy=[obs], symptoms=asserted_symptoms(question))
    return build_result([out], EvidenceLog(), scope_text="search")


def test_symptom_words_in_statements_not_in_yes_no_questions() -> None:
    assert asserted_symptoms("indexer giving 503s since 9am, pods look green?") == ["503s"]
    assert asserted_symptoms("is the indexer down?") == []
    assert asserted_symptoms("any errors in search? the team said it was flaky") == []
    assert request_level(["timeouts"]) and not request_level(["restarted"])
    assert ongoing(asserted_symptoms("why does indexer keep restarting")) or ongoing(["restarting"])
    assert not ongoing(asserted_symptoms("indexer restarted once last night, anything to do?"))


def test_reported_5xx_over_green_pods_abstains_with_what_was_checked_and_next_steps() -> None:
    r = _result("indexer is returning 503s to the api since this morning")
    assert r.status == "insufficient_evidence"
    assert "Checked" in r.answer_markdown and "Look next" in r.answer_markdown and "NetworkPolic" in r.answer_markdown


def test_an_old_unrelated_blip_does_not_explain_a_reported_outage_but_a_recent_one_does() -> None:
    old = _result("indexer is returning 503s", history=["pod x: Unhealthy last seen 13 h ago: recovered"], minutes="780")
    assert old.status == "insufficient_evidence"
    recent = _result("saw a burst of 503s on indexer, is it ok now?", history=["pod x: 1 restart: recovered"], minutes="25")
    assert recent.status == "healthy" and "recovered" in recent.answer_markdown


def test_no_asserted_symptom_or_a_past_restart_stays_healthy() -> None:
    assert _result("is anything wrong with indexer?").status == "healthy"
    assert _result("indexer restarted once last night, do I need to do anything?").status == "healthy"


def test_ongoing_restarts_over_green_pods_abstain() -> None:
    assert _result("why does indexer keep restarting").status == "insufficient_evidence"


def test_exit_137_reason_error_is_an_outside_sigkill_and_abstains() -> None:
    pod = _pod("indexer-6c5b4a3d2e-bbbbb", restarts=3, exit_code=137)
    r = _result("indexer restarted 3 times overnight, why?", pod)
    assert r.status == "insufficient_evidence"
    text = r.answer_markdown
    assert "137" in text and "SIGKILL" in text and "OOMKilled" in text and "node" in text and "8Gi" in text


def test_exit_137_oomkilled_is_not_the_sigkill_case() -> None:
    pod = _pod("indexer-6c5b4a3d2e-ccccc", restarts=1, exit_code=137, reason="OOMKilled")
    r = _result("is indexer ok?", pod)
    assert r.status == "healthy"
