"""What an auditor on the bus sees during a soak, as a read-only NATS user (``soak``): every
answer published on ``jobs.done.<job>`` and ``alerts.results.<batch>`` (live), and at the end
the audit trail replayed from the AUDIT stream (kept on every node, so no event is missed while
the auditor's own connection moved to another node).

A job answered twice shows as two answers on its subject or two ``job_finished`` events; an
alert batch posted twice as two posted ``alert_batched`` events for it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import nats
from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from sleuth.embedded.access import NatsPermissions
from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["SOAK_USER", "Auditor", "Trail", "soak_permissions"]

SOAK_USER = "soak"
_NOT_FOUND = 10037


def soak_permissions(prefix: str = "sleuth") -> NatsPermissions:
    """Read-only: answers and audit events live, the AUDIT stream by message, streams' state."""
    s = Subjects(prefix)
    return NatsPermissions(
        publish=(f"$JS.API.STREAM.MSG.GET.{s.stream_audit}", *(f"$JS.API.STREAM.INFO.{x}" for x in (
            s.stream_jobs, s.stream_results, s.stream_chat, s.stream_alerts, s.stream_audit))),
        subscribe=(s.jobs_done_all, s.alerts_results_all, f"_INBOX.{SOAK_USER}.>"),
        note="the chaos soak's auditor: reads answers and the audit trail; publishes nothing",
    )


@dataclass
class Trail:
    """The audit events of the soak, by kind."""

    finished: Counter[str] = field(default_factory=Counter)
    """job id → ``job_finished`` events (an answer published)."""
    started: Counter[str] = field(default_factory=Counter)
    """job id → ``job_started`` events (deliveries begun: a redelivery after a crash adds one)."""
    origin: dict[str, str] = field(default_factory=dict)
    alert_investigating: dict[str, int] = field(default_factory=dict)
    """batch id → alerts asked about."""
    alert_posted: list[dict[str, Any]] = field(default_factory=list)
    """posted batches: ``{"job_id", "reason", "alerts"}``, one per posted event."""


class Auditor:
    """Connects as ``soak`` to every node, counts answers live, replays the trail at the end."""

    def __init__(self, options: dict[str, Any], prefix: str = "sleuth") -> None:
        self.options = options
        self.subjects = Subjects(prefix)
        self.answers: Counter[str] = Counter()
        """job id → answers seen on ``jobs.done.<job>``."""
        self.alert_results: Counter[str] = Counter()
        self.nc: Nats | None = None

    async def start(self) -> None:
        self.nc = await nats.connect(**self.options, name="sleuth-soak-auditor", max_reconnect_attempts=-1,
                                     reconnect_time_wait=0.2)
        await self.nc.subscribe(self.subjects.jobs_done_all, cb=self._on_answer)
        await self.nc.subscribe(self.subjects.alerts_results_all, cb=self._on_alert_result)
        await self.nc.flush()

    async def _on_answer(self, msg: Msg) -> None:
        self.answers[msg.subject.rsplit(".", 1)[-1]] += 1

    async def _on_alert_result(self, msg: Msg) -> None:
        self.alert_results[msg.subject.rsplit(".", 1)[-1]] += 1

    async def close(self) -> None:
        if self.nc is not None:
            await self.nc.close()

    async def stream_replicas(self) -> dict[str, int]:
        """Each stream's replica count, as the cluster reports it."""
        assert self.nc is not None
        out: dict[str, int] = {}
        s = self.subjects
        for name in (s.stream_jobs, s.stream_results, s.stream_chat, s.stream_alerts, s.stream_audit):
            reply = json.loads((await self.nc.request(f"$JS.API.STREAM.INFO.{name}", b"", timeout=5)).data)
            out[name] = int((reply.get("config") or {}).get("num_replicas", 0))
        return out

    async def trail(self, since: datetime) -> Trail:
        """The job and alert events stored since ``since``, each once (by event id)."""
        trail = Trail()
        for kind in ("job_started", "job_finished", "alert_batched"):
            for event in await self._replay(self.subjects.audit(kind), since):
                job = str(event.get("job_id", ""))
                if kind == "job_started":
                    trail.started[job] += 1
                    trail.origin[job] = str(event.get("origin", ""))
                elif kind == "job_finished":
                    trail.finished[job] += 1
                    trail.origin.setdefault(job, str(event.get("origin", "")))
                elif event.get("decision") == "allowed" and event.get("reason") == "investigating":
                    trail.alert_investigating[job] = int((event.get("counts") or {}).get("alerts", 0))
                else:
                    trail.alert_posted.append({"job_id": job, "reason": event.get("reason", ""),
                                               "alerts": int((event.get("counts") or {}).get("alerts", 0))})
        return trail

    async def _replay(self, subject: str, since: datetime) -> list[dict[str, Any]]:
        assert self.nc is not None
        get = f"$JS.API.STREAM.MSG.GET.{self.subjects.stream_audit}"
        request: dict[str, Any] = {"start_time": since.isoformat(), "next_by_subj": subject}
        seen: set[str] = set()
        events: list[dict[str, Any]] = []
        while True:
            for attempt in range(10):  # a node may still be electing a leader after the drill
                try:
                    reply = json.loads((await self.nc.request(get, json.dumps(request).encode(), timeout=5)).data)
                    break
                except (NatsError, TimeoutError):
                    if attempt == 9:
                        raise
                    await asyncio.sleep(0.5)
            if "error" in reply:
                if reply["error"].get("err_code") == _NOT_FOUND:
                    return events
                raise RuntimeError(f"reading the audit trail: {reply['error'].get('description')}")
            msg = reply["message"]
            event = json.loads(base64.b64decode(msg.get("data", "")))
            if event.get("id") not in seen:
                seen.add(str(event.get("id")))
                events.append(event)
            request = {"seq": int(msg["seq"]) + 1, "next_by_subj": subject}
