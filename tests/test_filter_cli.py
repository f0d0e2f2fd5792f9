"""``sleuth filter``: the operator's view of what a user would be shown (issue 3, item 8).
Runs the real CLI as a process, as an operator would."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SCOPE = {"namespaces": ["team-a"], "cluster_wide": False, "ips": {"10.1.2.3": "team-a", "10.9.9.9": "team-b"}}


def run(tmp_path: Path, stdin: str, *args: str, scope: Any = SCOPE) -> tuple[int, dict[str, Any] | None, str]:
    path = tmp_path / "scope.json"
    path.write_text(scope if isinstance(scope, str) else json.dumps(scope))
    proc = subprocess.run(
        [sys.executable, "-m", "sleuth.cli", "filter", "--scope", str(path), *args],
        input=stdin.encode(), capture_output=True, timeout=60,
    )
    out = proc.stdout.decode()
    return proc.returncode, (json.loads(out) if proc.returncode == 0 else None), proc.stderr.decode()


@dataclass(frozen=True)
class Case:
    name: str
    stdin: str
    outcome: str
    removed: int = 0
    args: tuple[str, ...] = ()
    must_show: tuple[str, ...] = ()
    must_hide: tuple[str, ...] = ("team-b", "pay-1")


PODS = {"items": [{"metadata": {"namespace": "team-a", "name": "api-1"}},
                  {"metadata": {"namespace": "team-b", "name": "pay-1"}}]}
YAML_EVENTS = """# The following events (YAML format) were found:
- InvolvedObject:
    Kind: Pod
    Name: api-1
  Message: Back-off restarting failed container
  Namespace: team-a
- InvolvedObject:
    Kind: Pod
    Name: pay-1
  Message: Successfully assigned team-b/pay-1 to node-1
  Namespace: team-b
"""
CASES = [
    Case("json list", json.dumps(PODS), "filtered", 1, must_show=("api-1",)),
    Case("yaml events", YAML_EVENTS, "filtered", 1, must_show=("api-1", "Back-off")),
    Case("aggregate keys", json.dumps({"restarts": {"team-a/api-1": 3, "team-b/pay-1": 9}}), "filtered", 1,
         must_show=("team-a/api-1",)),
    Case("flows by IP", json.dumps([{"src": "10.1.2.3", "dst": "10.9.9.9", "id": "f1"},
                                    {"src": "10.9.9.9", "dst": "10.9.9.9", "id": "pay-1"}]), "filtered", 2,
         must_show=("f1", "10.1.2.3"), must_hide=("pay-1", "10.9.9.9")),  # alice's flow, its team-b side withheld
    Case("unresolvable IP", json.dumps([{"src": "10.7.7.7", "dst": "10.9.9.9"}]), "withheld"),
    Case("foreign document", json.dumps({"metadata": {"namespace": "team-b", "name": "pay-1"}}), "withheld"),
    Case("all allowed", json.dumps({"items": [{"namespace": "team-a", "name": "api-1"}]}), "kept", 0,
         must_show=("api-1",)),
    Case("unpinned text", "2026-11-30T09:00:00Z boom at pay-1\n", "withheld"),
    Case("pinned text", "2026-11-30T09:00:00Z boom\n", "kept", 0, ("--namespace", "team-a"), must_show=("boom",)),
    Case("text pinned elsewhere", "pay-1 logs\n", "withheld", 0, ("--namespace", "team-b")),
    Case("redaction", json.dumps([{"namespace": "team-a", "env": [{"name": "DB_PASSWORD", "value": "hunter2hunter2"}]}]),
         "kept", 0, must_show=("[REDACTED]",), must_hide=("hunter2hunter2",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_filter_outcomes(tmp_path: Path, case: Case) -> None:
    rc, body, err = run(tmp_path, case.stdin, *case.args)
    assert rc == 0, err
    assert body is not None and set(body) >= {"outcome", "result", "removed", "reason"}
    assert body["outcome"] == case.outcome and body["removed"] == case.removed
    shown = json.dumps(body["result"])
    for text in case.must_show:
        assert text in shown
    for text in case.must_hide:
        assert text not in json.dumps(body)
    if case.outcome == "withheld":
        assert body["result"] is None and "team-a" in body["reason"]
    elif case.stdin.lstrip()[:1] in "[{#-":
        assert not isinstance(body["result"], str)  # structured input gives JSON
    else:
        assert isinstance(body["result"], str)


@pytest.mark.parametrize(("query", "outcome", "expect"), [
    ('rate(http_requests_total[5m])', "rewritten", 'namespace=~"team-a"'),
    ('up{namespace="team-a"}', "kept", 'up{namespace="team-a"}'),
    ('sum(up{namespace="team-b"}) + up', "refused", ""),
    ('up{namespace!="team-a"} / on() max_over_time(x[5m:1m])', "rewritten", 'x{namespace=~"team-a"}[5m:1m]'),
])
def test_promql(tmp_path: Path, query: str, outcome: str, expect: str) -> None:
    rc, body, err = run(tmp_path, "", "--promql", query)
    assert rc == 0, err
    assert body is not None and body["outcome"] == outcome and expect in body["query"]
    if outcome == "refused":
        assert body["reason"]


@pytest.mark.parametrize(("scope", "stdin"), [
    ("{not json", "{}"),
    ({"namespaces": "team-a"}, "{}"),
    ({"namespaces": [], "ips": ["10.0.0.1"]}, "{}"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, scope: Any, stdin: str) -> None:
    rc, _body, err = run(tmp_path, stdin, scope=scope)
    assert rc == 2 and err.startswith("sleuth filter:") and err.count("\n") == 1
