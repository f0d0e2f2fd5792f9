"""The chaos soak, short (issue 16): the clustered stack (3 NATS nodes with streams at 3 replicas,
2 gateways, 2 agents, 2 authz-caches, Valkey with AOF) under questions over HTTP and SSE from
three askers and a stream of alerts, while an agent, a gateway, the NATS node leading JOBS, an
authz-cache, Valkey and kube-mcp fail in turn. Nothing accepted is lost, nothing is answered
twice, no answer names another tenant's objects, and every fault is recovered from. Latency is
printed, never asserted (``make soak`` runs the long one).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from sleuth.embedded.procs import NatsClusterMember
from sleuth.embedded.stack import Stack, StackSpec
from sleuth.soak import SoakPlan, soak
from sleuth.soak.load import Question, forbidden_names
from sleuth.soak.report import Phase, rows

# ~15 s start, 135 s of load, the drain and the alerts' last window, the stop.
SHORT = SoakPlan(minutes=2.25, rate=0.6, alert_every=4.0, alert_window=3.0, down=3.0, pause=5.0)


def _q(user: str, sent: float, outcome: str, *, results: int = 1, jobs: tuple[str, ...] = ("j1",),
       finished: float | None = None) -> Question:
    q = Question(user, "what is failing in team-a?", "http", f"r-{sent}", sent, accepted=outcome != "refused",
                 outcome=outcome, finished=finished, results=results)
    q.job_ids.update(jobs)
    return q


def test_the_figures_count_what_went_wrong_per_fault() -> None:
    questions = [
        _q("alice", 1.0, "ok", finished=1.5),
        _q("alice", 11.0, "ok", results=2, jobs=("j2",), finished=12.0),  # two answers to the asker
        _q("bob", 12.0, "ok", jobs=("j3",), finished=13.0),  # answered twice on the bus
        _q("bob", 13.0, "lost", jobs=("j4",)),
        _q("carol", 14.0, "ok", jobs=("j5", "j6"), finished=20.0),  # two jobs for one question
        _q("carol", 16.0, "ok", jobs=("j7",), finished=16.4),
    ]
    table = rows([Phase("quiet", 0.0, 0.0), Phase("agent_kill", 10.0, 15.0)], 30.0, questions,
                 Counter({"j3": 2, "j7": 1}), Counter())
    quiet, fault = table
    assert (quiet.asked, quiet.answered_once, quiet.duplicated, quiet.lost) == (1, 1, 0, 0)
    assert (fault.asked, fault.accepted, fault.lost, fault.duplicated, fault.answered_once) == (5, 5, 1, 3, 1)
    assert fault.recover_from_begin == 2.0 and fault.recover_from_end == 1.4


def test_names_other_tenants_own_are_what_an_answer_must_not_carry(demo_snapshot: Path) -> None:
    alice = forbidden_names(demo_snapshot, {"team-a"})
    assert {"inventory-db-0", "billing-api", "coredns", "search-indexer"} <= alice
    assert not any(n.startswith("checkout-api") for n in alice)
    assert forbidden_names(demo_snapshot, None) == set()


def test_the_clustered_topology_hands_every_node_to_the_services_and_lists_every_gateway(
    tmp_path: Path, demo_snapshot: Path
) -> None:
    """What ``sleuth up --nats-cluster 3 --gateways 3`` writes and prints, with stand-ins for the
    running servers (the short soak below runs the real thing)."""
    spec = StackSpec(snapshot=demo_snapshot, state_dir=tmp_path, nats_cluster=3, gateways=3,
                     gateway_ports=(9081, 9082))
    stack = Stack(spec)
    stack.nats_nodes = [SimpleNamespace(url=f"nats://127.0.0.1:{p}") for p in (4222, 4223, 4224)]  # type: ignore[misc]
    stack.nats = stack.nats_nodes[0]
    stack.valkey = SimpleNamespace(url="redis://127.0.0.1:6379/0")  # type: ignore[assignment]
    stack.sim_info = {"url": "https://127.0.0.1:6443", "ca_file": "/sim/ca.crt", "kubeconfigs": {}}
    stack._write_config()
    config = yaml.safe_load(stack.config_path.read_text())
    assert config["nats"]["url"] == "nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224"
    assert config["jetstream"]["replicas"] == 3 and config["gateway"]["publish_timeout"] == 10.0
    assert yaml.safe_load((tmp_path / "audit.yaml").read_text())["nats"]["url"] == config["nats"]["url"]
    banner = stack.banner()
    assert all(f"http://127.0.0.1:{p}/" in banner for p in (8080, 9081, 9082)), banner

    single = Stack(StackSpec(snapshot=demo_snapshot, state_dir=tmp_path / "one"))
    single.nats = stack.nats
    single.valkey, single.sim_info = stack.valkey, stack.sim_info
    single._write_config()
    assert "jetstream" not in yaml.safe_load(single.config_path.read_text()), "one node: streams as before"


def test_a_cluster_nodes_config_names_it_and_routes_to_every_node_with_a_password() -> None:
    member = NatsClusterMember("sleuth-1", 6223, (6222, 6223, 6224), "s3cret/+")
    text = member.config_text("127.0.0.1")
    assert 'server_name: "sleuth-1"' in text and 'listen: "127.0.0.1:6223"' in text
    assert text.count("nats-route://route:s3cret%2F%2B@127.0.0.1:") == 3
    assert 'authorization { user: "route", password: "s3cret/+" }' in text


@pytest.mark.e2e
@pytest.mark.timeout(330)
def test_a_short_soak_loses_nothing_answers_once_and_leaks_nothing(tmp_path: Path, demo_snapshot: Path) -> None:
    t0 = time.monotonic()
    result = soak(demo_snapshot, tmp_path / "stack", SHORT, tmp_path / "soak.json")
    print(f"\nshort soak in {time.monotonic() - t0:.0f} s\n{result.markdown()}")
    assert not result.failures, result.failures
    faults = {r.fault: r for r in result.table}
    assert set(SHORT.faults) <= set(faults)
    for r in result.table:  # every window was really under load, and answered
        assert r.accepted > 0 and r.answered_once > 0, r
    assert "(led SLEUTH_JOBS)" in faults["nats_leader_kill"].detail, faults["nats_leader_kill"].detail
    assert result.extra["replicas"] and set(result.extra["replicas"].values()) == {3}
    assert result.alerts.accepted > 0 and result.alerts.batches_investigated > 0
    assert result.alerts.posted_alerts == result.alerts.ingested.get("queued", 0) > 0
    assert (tmp_path / "stack" / "valkey" / "appendonlydir").is_dir(), "Valkey keeps an append-only file"
    assert (tmp_path / "soak.json").is_file()
