"""``sleuth filter`` reads the whole scope an operator can state in SCOPE.json — cluster-scoped
kinds, Secret namespaces, the inventory of object names — and ``--namespace`` pins the call.
Runs the real CLI as a process, as an operator would."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BASE = {"namespaces": ["team-a"], "cluster_wide": False}
NODE = {"kind": "Node", "metadata": {"name": "node-7", "uid": "1"}}
SECRET = {"kind": "Secret", "metadata": {"namespace": "team-a", "name": "db-creds"}, "data": {"pw": "aHVudGVy"}}
LOGS = "GET /orders 200\ncalling payments-db-0 failed\nGET /health 200\n"


def run(tmp_path: Path, stdin: str, scope: dict[str, Any], *args: str) -> dict[str, Any]:
    path = tmp_path / "scope.json"
    path.write_text(json.dumps(scope))
    proc = subprocess.run(
        [sys.executable, "-m", "sleuth.cli", "filter", "--scope", str(path), *args],
        input=stdin.encode(), capture_output=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


@dataclass(frozen=True)
class Case:
    name: str
    stdin: str
    scope: dict[str, Any]
    outcome: str
    args: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()


CASES = [
    Case("a Node without cluster_kinds", json.dumps([NODE]), BASE, "withheld", hidden=("node-7",)),
    Case("a Node with cluster_kinds", json.dumps([NODE]), {**BASE, "cluster_kinds": ["nodes"]}, "kept", shown=("node-7",)),
    Case("a Secret without secret_namespaces", json.dumps([SECRET]), BASE, "withheld", hidden=("db-creds", "aHVudGVy")),
    Case("a Secret with secret_namespaces: values redacted", json.dumps([SECRET]),
         {**BASE, "secret_namespaces": ["team-a"]}, "kept", shown=("db-creds",), hidden=("aHVudGVy",)),
    Case("--namespace attributes records naming none", json.dumps([{"name": "api-0"}]), BASE, "kept",
         ("--namespace", "team-a"), shown=("api-0",)),
    Case("a foreign --namespace pins nothing", json.dumps([{"name": "pay-1"}]), BASE, "withheld",
         ("--namespace", "team-b"), hidden=("pay-1",)),
    Case("the inventory withholds lines naming foreign objects", LOGS,
         {**BASE, "inventory": {"team-a": ["orders-api"], "team-b": ["payments-db-0"]}}, "filtered",
         ("--namespace", "team-a"), shown=("GET /orders 200", "GET /health 200"), hidden=("payments-db-0",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_scope_keys(tmp_path: Path, case: Case) -> None:
    body = run(tmp_path, case.stdin, case.scope, *case.args)
    assert body["outcome"] == case.outcome, body["reason"]
    shown = json.dumps(body["result"])
    for token in case.shown:
        assert token in shown
    for token in case.hidden:
        assert token not in json.dumps(body)


def test_a_bad_inventory_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "scope.json"
    path.write_text(json.dumps({**BASE, "inventory": {"team-b": "pay-1"}}))
    proc = subprocess.run([sys.executable, "-m", "sleuth.cli", "filter", "--scope", str(path)],
                          input=b"[]", capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("sleuth filter:") and "inventory" in err and err.count("\n") == 1
