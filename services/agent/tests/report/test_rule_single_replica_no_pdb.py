"""single_replica_no_pdb: one replica and no PodDisruptionBudget selecting its pods."""

from __future__ import annotations

from report_objects import findings, hpa, inventory, pdb, run, workload


def test_one_replica_without_pdb_gets_scale_and_pdb_commands_with_its_selector() -> None:
    (f,) = findings("single_replica_no_pdb", workload(replicas=1))
    assert (f.rule, f.severity, f.ref) == ("single_replica_no_pdb", "medium", "Deployment/team-a/web")
    assert "kubectl scale deployment/web -n team-a --replicas=2" in f.fix
    assert "kubectl create poddisruptionbudget web -n team-a --selector=app=web --max-unavailable=1" in f.fix


def test_replicas_unset_means_one() -> None:
    assert len(findings("single_replica_no_pdb", workload(replicas=None))) == 1


def test_a_statefulset_is_told_to_scale_only_if_it_can_replicate() -> None:
    (f,) = findings("single_replica_no_pdb", workload("StatefulSet", "db", replicas=1))
    assert "only if the software runs replicated" in f.fix


def test_not_flagged_with_a_pdb_more_replicas_zero_replicas_or_an_hpa_keeping_two() -> None:
    assert findings("single_replica_no_pdb", workload(replicas=1), pdb(maxUnavailable=1)) == []
    assert findings("single_replica_no_pdb", workload(replicas=3)) == []
    assert findings("single_replica_no_pdb", workload(replicas=0)) == []
    assert findings("single_replica_no_pdb", workload(replicas=1), hpa(low=2)) == []
    # a PDB of another app, and an HPA that may go down to one, do not count
    other = pdb("other", selector={"matchLabels": {"app": "other"}}, maxUnavailable=1)
    assert len(findings("single_replica_no_pdb", workload(replicas=1), other, hpa(low=1))) == 1


def test_skipped_with_a_note_where_pdbs_could_not_be_listed() -> None:
    out = run("single_replica_no_pdb", inventory(workload(replicas=1), unlisted=(("PodDisruptionBudget", "team-a"),)))
    assert out.findings == [] and out.not_checked == []
    assert any("skipped in team-a" in n and "PodDisruptionBudget" in n for n in out.notes)


def test_odd_replicas_is_not_checked_rather_than_guessed() -> None:
    dep = workload(replicas=1)
    dep["spec"]["replicas"] = "one"
    out = run("single_replica_no_pdb", inventory(dep))
    assert out.findings == []
    assert [(n.rule, n.name) for n in out.not_checked] == [("single_replica_no_pdb", "web")]
    assert "spec.replicas" in out.not_checked[0].reason
