"""The investigator over lists kube-mcp cut at its listing limit (issue 16: big clusters): it says
which lists were partial and does not call a namespace healthy from part of it. The real path:
simcluster over HTTPS, kube-mcp reading as the asker with ``max_items`` 2, the agent's
``investigate()``."""

from __future__ import annotations

from pathlib import Path

from sleuth.scenarios import investigate_offline, offline_cluster


async def test_a_partial_namespace_is_not_called_healthy(demo_snapshot: Path) -> None:
    with offline_cluster(demo_snapshot, kube_mcp={"max_items": 2, "page_size": 1}) as oc:
        result = await investigate_offline(oc, "carol", "is anything wrong in kube-system?")
    answer = result.answer_markdown
    # with every pod read, the demo's kube-system is healthy (5 pods): here only two were
    assert result.status == "insufficient_evidence", answer
    assert result.root_cause is None or result.root_cause.family != "healthy"
    assert "only the first 2 of 5 pods in kube-system were read" in answer, answer
    assert "Nothing is failing in kube-system:" not in answer
    assert "cannot say the rest is healthy" in answer
    assert any("the first 2 pod(s) read in kube-system (more exist)" in e.summary for e in result.evidence)
