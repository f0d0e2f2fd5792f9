"""One soak: the clustered stack, steady questions and alerts, the faults in turn, the figures."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml

from sleuth.embedded.stack import Stack, StackPorts, StackSpec
from sleuth.soak.auditor import SOAK_USER, Auditor, soak_permissions
from sleuth.soak.faults import FAULTS, inject
from sleuth.soak.load import AlertSender, Asker, Question, forbidden_names, questions_for
from sleuth.soak.report import AlertFigures, Phase, Row, alert_figures, as_json, markdown, rows

log = logging.getLogger(__name__)

__all__ = ["SoakPlan", "SoakResult", "run_soak", "soak_spec"]

BURST_BEFORE = frozenset({"agent_kill", "gateway_kill", "nats_leader_kill"})
"""Faults met by a burst of questions (the kills: what was in flight must survive them)."""


@dataclass(frozen=True)
class SoakPlan:
    """How long, how hard, which faults."""

    minutes: float = 10.0
    """Load time, faults included (the stack's start and the final drain come on top)."""
    rate: float = 1.0
    """Questions per second, all askers together."""
    alert_every: float = 5.0
    """Seconds between Alertmanager posts (one new alert each)."""
    alert_window: float = 5.0
    """The alerts service's batching window."""
    down: float = 5.0
    """Seconds a killed process stays down before it is restarted."""
    pause: float = 10.0
    """Seconds a process stays stopped (SIGSTOP)."""
    deadline: float = 100.0
    """Seconds a client waits for one question's answer, retries included (the gateway answers
    "timed out" after its ``answer_timeout``, 60 s, before this)."""
    faults: tuple[str, ...] = tuple(f.name for f in FAULTS)

    @property
    def quiet(self) -> float:
        """Seconds of quiet before the first fault, between faults and after the last: the rest
        of ``minutes`` once the faults (about ``max(down, pause)`` plus a restart each) are taken."""
        busy = len(self.faults) * (max(self.down, self.pause) + 4.0)
        return max(5.0, (self.minutes * 60 - busy) / (len(self.faults) + 1))


@dataclass
class SoakResult:
    table: list[Row]
    alerts: AlertFigures
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failures(self) -> list[str]:
        """What must be zero and is not, and faults not recovered from."""
        out = []
        for r in self.table:
            out += [f"{r.fault}: {n} {what}" for n, what in ((r.lost, "lost"), (r.duplicated, "duplicated"),
                                                              (r.cross_tenant, "cross-tenant names")) if n]
            if r.recover_from_end is None:
                out.append(f"{r.fault}: no question asked after it was answered")
        a = self.alerts
        out += [f"alerts: {n} {what}" for n, what in ((a.unposted, "queued but never posted"),
                                                      (a.duplicated, "posted or answered twice"),
                                                      (a.cross_tenant, "cross-tenant names in the channel")) if n]
        out += [f"stream {name} has {n} replica(s), not 3" for name, n in self.extra.get("replicas", {}).items()
                if n != 3]
        return out

    def markdown(self) -> str:
        return markdown(self.table, self.alerts)

    def as_json(self) -> dict[str, Any]:
        return as_json(self.table, self.alerts, {**self.extra, "failures": self.failures})


def soak_spec(snapshot: Path, state_dir: Path, plan: SoakPlan, *, agents: int = 2, gateways: int = 2) -> StackSpec:
    """The topology of issue 16: 3 NATS nodes (streams at 3 replicas), ``agents`` agents,
    ``gateways`` gateways, 2 authz-caches, Valkey with AOF, and a read-only ``soak`` bus user.
    Per-user limits are raised so the askers' steady rate never meets them (the soak is about
    faults, not the rate limiter); JetStream redelivers a dead agent's job after 15 s."""
    return StackSpec(
        snapshot=snapshot, state_dir=state_dir, ports=StackPorts.free(), agents=agents, gateways=gateways,
        nats_cluster=3, authz_caches=2, valkey_aof=True, nats_users={SOAK_USER: soak_permissions()},
        extra_config={
            "gateway": {"rate_limit_capacity": 50, "rate_limit_refill_per_second": 5.0, "max_inflight_per_user": 50,
                        "max_requests_per_user": 100, "read_rate_limit_capacity": 200,
                        "read_rate_limit_refill_per_second": 20.0},
            "agent": {"ack_wait": 15.0, "in_progress_interval": 3.0},
            "alerts": {"window": plan.alert_window, "tick": 0.5, "cooldown": 600.0, "investigation_timeout": 90.0},
        },
    )


def _alerts_token(stack: Stack) -> str:
    config = yaml.safe_load(stack.config_path.read_text())
    (route,) = [r for r in config["alerts"]["routes"] if r["name"] == "team-a"]
    return stack.spec.extra_env[route["token_env"]]


async def _scopes(stack: Stack, users: dict[str, str]) -> dict[str, set[str] | None]:
    """What each asker may read on the cluster (``/v1/whoami``); None = cluster-wide."""
    out: dict[str, set[str] | None] = {}
    async with httpx.AsyncClient(timeout=30) as client:
        for user, token in users.items():
            r = await client.get(f"{stack.gateway_url}/v1/whoami", headers={"Authorization": f"Bearer {token}"})
            r.raise_for_status()
            access = (r.json().get("access") or {}).get(stack.cluster_name) or {}
            out[user] = None if access.get("cluster_wide") else set(access.get("namespaces") or [])
    return out


def _metric(text: str, name: str) -> dict[str, int]:
    """``name{disposition="x"} n`` lines → {x: n}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line.rsplit(" ", 1)
            key = labels.split('"')[1] if '"' in labels else ""
            out[key] = out.get(key, 0) + int(float(value))
    return out


async def _channel(stack: Stack, token: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=30) as client:
        r = await client.get(f"{stack.gateway_url}/v1/channels/team-a-alerts/messages",
                             headers={"Authorization": f"Bearer {token}"})
        r.raise_for_status()
        return [m for m in r.json()["messages"] if m.get("author") == "sleuth"]


async def _every(interval: float, stop: asyncio.Event, spawn: Any, tasks: list[asyncio.Task[Any]],
                 offset: float = 0.0) -> None:
    await asyncio.sleep(offset)
    n = 0
    t0 = time.monotonic()
    while not stop.is_set():
        tasks.append(asyncio.create_task(spawn(n)))
        n += 1
        delay = t0 + n * interval - time.monotonic()
        if delay > 0:
            try:
                await asyncio.wait_for(stop.wait(), delay)
            except TimeoutError:
                pass


async def run_soak(stack: Stack, snapshot: Path, plan: SoakPlan, say: Any = print) -> SoakResult:
    """Drive ``stack`` (started from ``soak_spec``) through ``plan``; the figures."""
    since = datetime.now(UTC) - timedelta(seconds=5)
    auditor = Auditor(stack.nats_options(SOAK_USER), stack.prefix)
    await auditor.start()
    users = stack.demo_users()
    scopes = await _scopes(stack, users)
    forbidden = {u: forbidden_names(snapshot, v) for u, v in scopes.items()}
    asker = Asker(stack.gateway_urls, users, forbidden, plan.deadline)
    team_b = sorted(n for n in forbidden.get("alice", set()) if n.startswith("inventory-db"))
    pods = [("team-a", "checkout-api-7d9f8c6b5d-x2k4p"), ("team-a", "payments-worker-5c6d7e8f9a-mt4zq")]
    pods += [("team-b", team_b[0])] if team_b else []
    alerts = AlertSender(f"{stack.alerts_url}/v1/alertmanager/team-a", _alerts_token(stack), pods)
    stop = asyncio.Event()
    q_tasks: list[asyncio.Task[Any]] = []
    a_tasks: list[asyncio.Task[Any]] = []
    drivers = []
    try:
        replicas = await auditor.stream_replicas()
        say(f"soak: streams {replicas}; askers {sorted(users)}; quiet {plan.quiet:.0f} s between "
            f"{len(plan.faults)} faults")
        interval = len(users) / plan.rate
        asks_of = {user: questions_for(user, scopes[user]) for user in users}
        for i, (user, _) in enumerate(sorted(users.items())):
            asks = asks_of[user]

            async def one(n: int, user: str = user, asks: list[str] = asks, i: int = i) -> Question:
                return await asker.ask(user, asks[n % len(asks)], "sse" if (n + i) % 2 else "http")

            drivers.append(asyncio.create_task(_every(interval, stop, one, q_tasks, offset=i * interval / len(users))))
        drivers.append(asyncio.create_task(_every(plan.alert_every, stop, lambda n: alerts.send(), a_tasks, 0.5)))

        t_start = time.monotonic()
        phases = [Phase("none (quiet start)", t_start, t_start)]
        await asyncio.sleep(plan.quiet)
        for name in plan.faults:
            began = time.monotonic()
            say(f"soak: {name} at +{began - t_start:.0f} s")
            if name in BURST_BEFORE:
                # A few questions just before the kill, so it meets work in flight (a steady rate
                # of quick answers would mostly find the process idle).
                for n, user in enumerate(sorted(users) * 2):
                    q_tasks.append(asyncio.create_task(
                        asker.ask(user, asks_of[user][n % len(asks_of[user])], "sse" if n % 2 else "http")))
                await asyncio.sleep(0.3)
            hit = time.monotonic()
            detail = await asyncio.to_thread(inject, stack, name, down=plan.down, pause=plan.pause)
            phases.append(Phase(name, began, time.monotonic(), detail, hit))
            await asyncio.sleep(plan.quiet)
        stop.set()
        t_end = time.monotonic()
        await asyncio.gather(*drivers)
        say(f"soak: load stopped after {t_end - t_start:.0f} s; waiting for {sum(not t.done() for t in q_tasks)} "
            "question(s) still running")
        await asyncio.gather(*q_tasks, *a_tasks)

        # Every accepted alert ends in a posted answer (or is counted skipped at ingest).
        accepted_alerts = sum(a.accepted for a in alerts.sent)
        ingested: dict[str, int] = {}
        trail = await auditor.trail(since)
        wait_until = time.monotonic() + plan.alert_window + 120
        while time.monotonic() < wait_until:
            async with httpx.AsyncClient(timeout=10) as client:
                text = (await client.get(f"{stack.alerts_url}/metrics")).text
            ingested = _metric(text, "sleuth_alerts_received_total")
            posted = sum(int(p["alerts"]) for p in trail.alert_posted)
            if sum(ingested.values()) >= accepted_alerts and posted >= ingested.get("queued", 0):
                break
            await asyncio.sleep(2.0)
            trail = await auditor.trail(since)
        messages = await _channel(stack, users["alice"])
        channel_text = json.dumps(messages)
        leaked = sorted(n for n in forbidden.get("alice", set()) if n in channel_text)
        ids = Counter(str(m.get("id")) for m in messages)
        figures = alert_figures(alerts.sent, ingested, trail.alert_investigating, trail.alert_posted,
                                auditor.alert_results, len(leaked))
        figures.duplicated += sum(1 for n in ids.values() if n > 1)

        questions = asker.questions
        table = rows(phases, t_end, questions, auditor.answers, trail.finished)
        asked_jobs = {j for q in questions for j in q.job_ids}
        unfinished = sorted(j for j in asked_jobs if trail.started[j] and not trail.finished[j])
        extra = {
            "plan": {"minutes": plan.minutes, "rate": plan.rate, "quiet": round(plan.quiet, 1), "down": plan.down,
                     "pause": plan.pause, "alert_every": plan.alert_every, "faults": list(plan.faults)},
            "topology": {"nats_nodes": len(stack.nats_nodes), "gateways": len(stack.gateways),
                         "agents": len(stack.agents), "authz_caches": len(stack.authz_caches)},
            "replicas": replicas,
            "questions": len(questions),
            "jobs_started_never_finished": len(unfinished),
            "redelivered_jobs": sum(1 for j in asked_jobs if trail.started[j] > 1),
            "channel_leaks": leaked,
        }
        return SoakResult(table, figures, extra)
    finally:
        stop.set()
        for t in (*drivers, *q_tasks, *a_tasks):
            t.cancel()
        await asyncio.gather(*drivers, *q_tasks, *a_tasks, return_exceptions=True)
        await asker.close()
        await alerts.close()
        await auditor.close()


def soak(snapshot: Path, state_dir: Path, plan: SoakPlan, json_out: Path | None, say: Any = print) -> SoakResult:
    """Start the topology, run the soak, stop it; print the table, write the JSON."""
    t0 = time.monotonic()
    with Stack(soak_spec(snapshot, state_dir, plan)) as stack:
        say(f"soak: stack up in {time.monotonic() - t0:.1f} s (logs in {stack.logs}/)")
        result = asyncio.run(run_soak(stack, snapshot, plan, say))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result.as_json(), indent=2, default=str))
    return result
