"""``docker compose up``, without Docker: every service of docker-compose.yml started here from
its own command, environment, mounts and healthcheck (tests/deploy/runner.py says what is
rewritten and why), in ``depends_on`` order; then a question is asked end to end through the
published gateway port and an alert is posted to the published alerts port."""

from __future__ import annotations

import re
import time
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.deploy.runner import (
    ROOT,
    Mount,
    Runner,
    Unit,
    assert_alice_is_answered_from_team_a_only,
    shell_words,
)

pytestmark = pytest.mark.e2e

COMPOSE = ROOT / "docker-compose.yml"


def _interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}``, ``${VAR:?error}`` and ``$$``."""

    def sub(m: re.Match[str]) -> str:
        name, op, arg = m["name"], m["op"], m["arg"] or ""
        have = env.get(name, "")
        if op == ":-":
            return have or arg
        if op == ":?":
            assert have, f"compose needs ${name}: {arg}"
        return have

    out = re.sub(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:-|:\?|-|\?)(?P<arg>[^}]*))?\}", sub, value)
    return out.replace("$$", "$")


def _image(svc: dict[str, Any]) -> str:
    image = str(svc.get("image", ""))
    if "build" in svc or image.startswith("sleuth"):
        return "sleuth"
    if image.startswith("nats"):
        return "nats"
    if "valkey" in image or "redis" in image:
        return "valkey"
    if image.startswith("busybox"):
        return "busybox"
    raise AssertionError(f"no local stand-in for image {image!r}")


def _env(svc: dict[str, Any], dotenv: dict[str, str]) -> dict[str, str]:
    raw = svc.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) if "=" in item else (item, dotenv.get(item, "")) for item in raw)
    return {k: _interpolate(str(v), dotenv) for k, v in raw.items() if v is not None}


def _mounts(name: str, svc: dict[str, Any], work: Path) -> list[Mount]:
    mounts: list[Mount] = []
    for v in svc.get("volumes") or []:
        if isinstance(v, str):
            source, target = v.split(":")[:2]
        else:
            source, target = str(v.get("source", "")), str(v["target"])
        if source.startswith((".", "/")):
            host = (ROOT / source).resolve()
            assert host.exists(), f"{name}: bind mount {source} does not exist"
            if host.is_file():
                mounts.append(Mount(target, work / "files" / name / host.name, file_text=host.read_text()))
            else:
                mounts.append(Mount(target, host))
        else:  # a named volume: one host directory, shared by every service mounting it
            mounts.append(Mount(target, work / "volumes" / source))
    tmpfs = svc.get("tmpfs") or []
    for t in [tmpfs] if isinstance(tmpfs, str) else tmpfs:
        mounts.append(Mount(t.split(":")[0], work / "tmpfs" / name / t.strip("/").replace("/", "_")))
    return mounts


def compose_units(doc: dict[str, Any], work: Path, dotenv: dict[str, str]) -> list[list[tuple[bool, list[Unit]]]]:
    """The services in ``depends_on`` levels (a level depends only on earlier ones), each
    (run once?, a unit per replica). A service others wait for with
    ``service_completed_successfully`` is run to completion."""
    services: dict[str, dict[str, Any]] = doc["services"]
    deps = {n: list((s.get("depends_on") or {}).keys() if isinstance(s.get("depends_on"), dict)
                    else s.get("depends_on") or []) for n, s in services.items()}
    one_shot = {d for s in services.values() if isinstance(s.get("depends_on"), dict)
                for d, c in s["depends_on"].items() if c.get("condition") == "service_completed_successfully"}
    level: dict[str, int] = {}
    for name in TopologicalSorter(deps).static_order():
        level[name] = 1 + max((level[d] for d in deps[name]), default=-1)
    out: list[list[tuple[bool, list[Unit]]]] = [[] for _ in range(max(level.values()) + 1)]
    for name in level:
        svc = services[name]
        image = _image(svc)
        argv = [_interpolate(a, dotenv) for a in shell_words(svc.get("command") or [])]
        if image == "valkey" and (not argv or argv[0] != "valkey-server"):
            argv = ["valkey-server", *argv]
        health = (svc.get("healthcheck") or {}).get("test")
        ready_command = ready_tcp = None
        if isinstance(health, list) and health[0] == "CMD" and image == "sleuth":
            ready_command = health[1:]
        elif image == "nats":
            ready_tcp = 4222
        elif image == "valkey":
            ready_tcp = 6379
        replicas = int(((svc.get("deploy") or {}).get("replicas")) or 1)
        units = []
        for i in range(replicas):
            unit = name if replicas == 1 else f"{name}-{i}"
            units.append(Unit(
                name=unit, image=image, argv=argv, env=_env(svc, dotenv),
                mounts=_mounts(unit, svc, work), hostnames=[name] if i == 0 else [],
                ready_command=ready_command, ready_tcp=ready_tcp, working_dir=svc.get("working_dir"),
            ))
        out[level[name]].append((name in one_shot, units))
    return out


@pytest.fixture(scope="module")
def compose_stack(tmp_path_factory: pytest.TempPathFactory):
    doc = yaml.safe_load(COMPOSE.read_text())
    work = tmp_path_factory.mktemp("compose")
    dotenv = {"SLEUTH_DEMO_ALERTS_TOKEN": "compose-run-alerts-token", "SLEUTH_AUTHZ_CACHE_KEY": "compose-run-cache-key"}
    runner = Runner(work)
    levels = compose_units(doc, work, dotenv)
    for level in levels:  # every name exists before anything that reaches it starts
        for _once, units in level:
            for u in units:
                runner.place(u)
    t0 = time.monotonic()
    try:
        for level in levels:
            for once, units in level:
                for u in units if once else []:
                    runner.run_to_completion(u)
            runner.start_together([u for once, units in level if not once for u in units])
        up = time.monotonic() - t0
        yield runner, doc, dotenv, up
    finally:
        runner.stop_all()


def test_every_compose_service_runs_and_a_question_is_answered_end_to_end(compose_stack) -> None:
    runner, doc, _dotenv, up = compose_stack
    once = {n for n, s in doc["services"].items() if s.get("restart") == "no"}
    assert once, "the one-shot jobs (keys, volume ownership)"
    assert set(doc["services"]) - once == {n for n in doc["services"] if any(p == n or p.startswith(f"{n}-")
                                                                              for p in runner.procs)}, runner.procs.keys()
    agents = [n for n in runner.procs if n.startswith("agent")]
    assert len(agents) == 2, agents
    published = {str(p).split(":")[-1] for p in doc["services"]["gateway"].get("ports", [])}
    assert "8080" in published
    asked = assert_alice_is_answered_from_team_a_only(runner.url("gateway", 8080), runner.logs())
    print(f"\ncompose run: up in {up:.1f}s, question answered in {asked:.2f}s; per unit: "
          + ", ".join(f"{k} {v:.1f}s" for k, v in runner.started.items()))


def test_the_published_alerts_webhook_takes_an_alertmanager_post(compose_stack) -> None:
    runner, doc, dotenv, _up = compose_stack
    published = {str(p).split(":")[-1] for p in doc["services"]["alerts"].get("ports", [])}
    assert "8090" in published
    alert = {"version": "4", "status": "firing", "receiver": "team-a", "groupKey": "{}:{}", "alerts": [
        {"status": "firing", "labels": {"alertname": "KubePodCrashLooping", "namespace": "team-a", "severity": "warning",
                                         "cluster": "demo"}, "fingerprint": "f00d"}]}
    url = f"{runner.url('alerts', 8090)}/v1/alertmanager/team-a"
    r = httpx.post(url, json=alert, headers={"Authorization": f"Bearer {dotenv['SLEUTH_DEMO_ALERTS_TOKEN']}"}, timeout=10)
    assert r.status_code in (200, 202), r.text
    r = httpx.post(url, json=alert, headers={"Authorization": "Bearer wrong"}, timeout=10)
    assert r.status_code == 401
