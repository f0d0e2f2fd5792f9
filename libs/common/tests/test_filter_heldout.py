"""Classes found by an independent attack on the filter (one who never read it), kept as
regressions: each case is the smallest form of its class."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

from sleuth_common.scope import Scope, filter_result

INVENTORY = {"team-b": ["billing-api", "ledger-db"], "team-a": ["checkout-api"]}
ALICE = Scope.of(["team-a"], inventory=INVENTORY)
ALICE_NODES = Scope.of(["team-a"], cluster_kinds=["nodes", "persistentvolumes"], inventory=INVENTORY)
ALICE_SECRETS = Scope.of(["team-a"], secret_namespaces=["team-a"], inventory=INVENTORY)


@dataclass(frozen=True)
class Case:
    name: str
    scope: Scope
    doc: object
    never: tuple[str, ...]
    keep: tuple[str, ...] = ()


CASES = [
    Case("another API's kind named like a cluster kind, in team-b", ALICE_NODES,
         {"apiVersion": "longhorn.io/v1beta2", "kind": "Node", "metadata": {"name": "ledger-db", "namespace": "team-b"},
          "spec": {"disks": {"d1": {"path": "/var/lib/ledger"}}}}, ("ledger", "team-b")),
    Case("a cluster kind with a namespace is judged by it", ALICE_NODES,
         {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-ledger", "namespace": "team-b"}},
         ("pv-ledger",)),
    Case("an argv password item", ALICE,
         {"kind": "Pod", "metadata": {"name": "checkout-api", "namespace": "team-a"},
          "spec": {"containers": [{"name": "db", "args": ["mysql", "-uroot", "-phunter2"]}]}},
         ("hunter2",), ("checkout-api", "mysql")),
    Case("a separate-item password flag", ALICE,
         {"namespace": "team-a", "command": ["redis-cli", "-a", "s3cretpw", "ping"]}, ("s3cretpw",), ("ping",)),
    Case("Key/Value pairs in other spellings", ALICE,
         {"namespace": "team-a", "kv": [{"Key": "DB_PASSWORD", "Value": "hunter2"}],
          "config": [{"key": "API_TOKEN", "value": "tok-abcdef"}]}, ("hunter2", "tok-abcdef"), ("DB_PASSWORD",)),
    Case("a Secret's data as a list of items", ALICE_SECRETS,
         {"kind": "Secret", "metadata": {"name": "checkout-db", "namespace": "team-a"},
          "data": [{"key": "password", "value": "aHVudGVyMg=="}]}, ("aHVudGVyMg==",), ("checkout-db", "password")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_held_out_class(case: Case) -> None:
    out = filter_result(json.dumps(case.doc), case.scope)
    shown = out.text or ""
    assert not [w for w in case.never if w in shown], shown
    assert all(w in shown for w in case.keep), shown


def test_a_call_pinned_to_any_foreign_namespace_is_not_pinned() -> None:
    text = "payments-v2 restarted 9 times\n"
    assert filter_result(text, ALICE, pinned=True, pinned_namespaces=["team-a", "team-b"]).outcome == "withheld"
    assert filter_result(text, ALICE, pinned=True, pinned_namespaces=["team-a"]).outcome == "kept"


def test_a_lone_surrogate_is_an_outcome_not_a_traceback(tmp_path) -> None:
    scope = tmp_path / "scope.json"
    scope.write_text(json.dumps({"namespaces": ["team-a"]}))
    doc = '{"metadata":{"namespace":"team-a","name":"checkout-api"},"note":"\\ud800"}'
    proc = subprocess.run([sys.executable, "-m", "sleuth", "filter", "--scope", str(scope)], input=doc.encode(),
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["outcome"] == "kept"


def test_a_foreign_workload_is_found_under_its_pods_generated_names() -> None:
    scope = Scope.of(["team-a"], inventory={"team-b": ["billing-api", "ledger-db"],
                                            "team-a": ["checkout-api", "billing-api-v2"], "monitoring": ["prom-k8s"]})
    text = ("[pod/billing-api-6d9f7-x7k2p/app] charge failed\nledger-db-1 replication lag 30s\n"
            "billing-api-v2 is fine\nmonitoring disabled for this run\n")
    out = filter_result(text, scope, pinned=True, pinned_namespaces=["team-a"])
    assert "billing-api-6d9f7" not in out.text and "ledger-db-1" not in out.text
    # the caller's own billing-api-v2, and an ordinary word that is also a namespace, stay
    assert "billing-api-v2 is fine" in out.text and "monitoring disabled" in out.text
