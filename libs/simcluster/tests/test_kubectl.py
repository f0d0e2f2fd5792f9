"""Conformance: the real kubectl (1.32) against simcluster, each command with its own HOME/KUBECACHEDIR."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sleuth_simcluster import SimCluster

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")

API_POD = "api-7d9f8b6c5d-xyz12"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Kubectl = Callable[..., Result]


@pytest.fixture
def kubectl(sim: SimCluster, tmp_path: Path) -> Kubectl:
    """`kubectl("alice", "get", "pods")` with alice's kubeconfig and a private HOME and cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "HTTP", "HTTPS", "NO_PROXY"))}
    env.update(HOME=str(tmp_path / "home"), KUBECACHEDIR=str(tmp_path / "cache"))

    def run(user: str, *args: str) -> Result:
        proc = subprocess.run([KUBECTL, "--kubeconfig", str(sim.kubeconfig(user)), *args],
                              env=env, capture_output=True, text=True, timeout=60, check=False)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run


def _table(text: str) -> dict[str, list[str]]:
    lines = text.strip().splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]}


def test_get_pods_shows_kubectl_status_column(kubectl: Kubectl) -> None:
    res = kubectl("alice", "get", "pods", "-n", "shop")
    assert res.code == 0, res.err
    assert res.out.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    rows = _table(res.out)
    assert rows[API_POD][1:3] == ["1/2", "CrashLoopBackOff"]
    assert " ".join(rows[API_POD][3:6]) == "7 (3m ago)"
    assert rows["worker-0"][1:3] == ["0/1", "Pending"]
    assert rows["puller"][2] == "ImagePullBackOff"
    assert rows["migrate-8xk2p"][2] == "Completed"
    assert rows["web-6d4cf56db6-abcde"][1:5] == ["1/1", "Running", "0", "24h"]
    wide = kubectl("alice", "get", "pods", "-n", "shop", "-o", "wide")
    assert "NOMINATED NODE" in wide.out and "10.1.0.11" in wide.out


def test_tenant_cannot_list_all_namespaces(kubectl: Kubectl) -> None:
    res = kubectl("alice", "get", "pods", "-A")
    assert res.code != 0
    assert ('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" '
            'in API group "" at the cluster scope') in res.err
    other = kubectl("alice", "get", "pods", "-n", "pay")
    assert ('pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "pay"'
            in other.err)


def test_describe_pod(kubectl: Kubectl) -> None:
    res = kubectl("alice", "describe", "pod", API_POD, "-n", "shop")
    assert res.code == 0, res.err
    for expected in ("Reason:       CrashLoopBackOff", "Reason:       OOMKilled", "Exit Code:    137",
                     "Restart Count:  7", "Controlled By:  ReplicaSet/api-7d9f8b6c5d", "Back-off restarting failed"):
        assert expected in res.out
    assert "ledger" not in res.out


def test_logs(kubectl: Kubectl) -> None:
    current = kubectl("alice", "logs", API_POD, "-n", "shop")  # default-container annotation picks "api"
    assert current.code == 0, current.err
    assert current.out.splitlines() == ["starting api 2.4.1", "connected to postgres://db:5432/shop",
                                        "loading product catalogue into memory"]
    previous = kubectl("alice", "logs", API_POD, "-n", "shop", "-c", "api", "--previous", "--tail", "1")
    assert previous.out == "java.lang.OutOfMemoryError: Java heap space\n"
    stamped = kubectl("alice", "logs", API_POD, "-n", "shop", "-c", "log-shipper", "--timestamps")
    assert stamped.out.startswith("2026-11-30T07:00:03")
    waiting = kubectl("alice", "logs", "puller", "-n", "shop")
    assert "is waiting to start: trying and failing to pull image" in waiting.err
    denied = kubectl("dave", "logs", "web-6d4cf56db6-abcde", "-n", "shop")
    assert 'cannot get resource "pods/log" in API group "" in the namespace "shop"' in denied.err


def test_events_by_field_selector(kubectl: Kubectl) -> None:
    res = kubectl("alice", "get", "events", "-n", "shop", "--field-selector", "involvedObject.name=worker-0")
    assert res.code == 0, res.err
    lines = res.out.strip().splitlines()
    assert lines[0].split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"] and len(lines) == 2
    assert "FailedScheduling" in lines[1] and "pod/worker-0" in lines[1] and "Insufficient memory" in lines[1]


def test_auth_can_i(kubectl: Kubectl) -> None:
    own = kubectl("alice", "auth", "can-i", "get", "pods", "-n", "shop")
    assert (own.code, own.out.strip()) == (0, "yes")
    other = kubectl("alice", "auth", "can-i", "get", "pods", "-n", "pay")
    assert (other.code, other.out.strip()) == (1, "no")
    logs = kubectl("alice", "auth", "can-i", "get", "pods", "--subresource=log", "-n", "shop")
    assert logs.out.strip() == "yes"
    no_logs = kubectl("dave", "auth", "can-i", "get", "pods", "--subresource=log", "-n", "shop")
    assert no_logs.out.strip() == "no"
    # `pods/log` on kubectl's command line means the pod named "log" (kubectl parses TYPE/NAME)
    assert kubectl("dave", "auth", "can-i", "get", "pods/log", "-n", "shop").out.strip() == "yes"
    assert kubectl("carol", "auth", "can-i", "list", "nodes").out.strip() == "yes"
    assert kubectl("alice", "auth", "can-i", "list", "nodes").out.strip() == "no"


def test_get_deployment_yaml_and_whoami(kubectl: Kubectl) -> None:
    res = kubectl("alice", "get", "deploy", "api", "-n", "shop", "-o", "yaml")
    assert res.code == 0, res.err
    doc = yaml.safe_load(res.out)
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]["name"]) == ("apps/v1", "Deployment", "api")
    assert doc["status"]["conditions"][0]["reason"] == "MinimumReplicasUnavailable"
    table = kubectl("alice", "get", "deploy", "-n", "shop")
    assert _table(table.out)["api"][1:4] == ["0/1", "1", "0"]
    who = kubectl("bob", "auth", "whoami")
    assert "bob" in who.out and "pay-devs" in who.out


def test_impersonation_with_as_and_as_group(kubectl: Kubectl, sim: SimCluster) -> None:
    """kube-mcp's way of reading: the reader's own credentials, authorized as the asker."""
    sim.audit.clear()
    own = kubectl("reader", "--as", "alice", "--as-group", "shop-devs", "get", "pods", "-n", "shop")
    assert own.code == 0, own.err
    assert "worker-0" in _table(own.out)
    other = kubectl("reader", "--as", "alice", "--as-group", "shop-devs", "get", "pods", "-n", "pay")
    assert other.code == 1
    assert 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "pay"' \
        in other.err
    who = kubectl("reader", "--as", "alice", "--as-group", "shop-devs", "auth", "whoami", "-o", "json")
    info = yaml.safe_load(who.out)["status"]["userInfo"]
    assert (info["username"], info["groups"]) == ("alice", ["shop-devs", "system:authenticated"])
    can = kubectl("reader", "--as", "alice", "--as-group", "shop-devs", "auth", "can-i", "get", "pods", "-n", "pay")
    assert can.out.strip() == "no"
    refused = kubectl("alice", "--as", "bob", "--as-group", "pay-devs", "get", "pods", "-n", "pay")
    assert refused.code == 1
    assert ('users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" '
            "at the cluster scope") in refused.err
    reads = [r for r in sim.audit.records() if r.resource == "pods" and r.verb == "list"]
    assert {(r.user, r.impersonated_user, r.namespace, r.code) for r in reads} == {
        ("reader", "alice", "shop", 200), ("reader", "alice", "pay", 403)}


def test_chunked_list_pages_through_continue(kubectl: Kubectl, sim: SimCluster) -> None:
    """`--chunk-size` makes kubectl send `limit` and follow `metadata.continue`: same rows, several requests."""
    whole = kubectl("root", "get", "pods", "-A", "--chunk-size=0")
    assert whole.code == 0, whole.err
    sim.audit.clear()
    chunked = kubectl("root", "get", "pods", "-A", "--chunk-size=2")
    assert chunked.code == 0, chunked.err
    assert chunked.out == whole.out
    rows = len(whole.out.strip().splitlines()) - 1
    lists = [r for r in sim.audit.records() if r.resource == "pods" and r.verb == "list" and r.code == 200]
    assert len(lists) == -(-rows // 2)
