"""The soak's clients: people asking questions over HTTP and SSE through a load balancer, and
Alertmanager posting alerts. Each question keeps what its asker saw (accepted, answered, a clear
error, nothing), its latency, the job ids it was given and any other tenant's names in its answer.

The load balancer is the client's: it sends each question to the next gateway in turn; when a
gateway cannot be reached or drops the connection mid-answer, the question is sent again to the
next one with the same ``X-Request-Id`` (the gateway resumes the job that request started, or
starts it when none did), until the question's deadline.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

log = logging.getLogger(__name__)

__all__ = ["AlertSender", "Asker", "Question", "forbidden_names", "questions_for"]

OK_STATUSES = frozenset({"diagnosed", "healthy", "insufficient_evidence", "denied"})
"""Result statuses that answer the question (``denied``: the asker may not read that, said so)."""

_RETRYABLE = (httpx.TransportError,)


@dataclass
class Question:
    """One question and everything its asker saw."""

    user: str
    text: str
    mode: str
    """``http`` (one JSON answer) or ``sse`` (``?stream=1``)."""
    request_id: str
    sent: float
    """Monotonic time it was first sent."""
    accepted: bool = False
    outcome: str = "pending"
    """``ok``, ``error`` (a clear error: an error status with a message, a result of status
    ``error``), ``refused`` (turned away before it was accepted: 429, 503), ``lost``."""
    detail: str = ""
    finished: float | None = None
    job_ids: set[str] = field(default_factory=set)
    results: int = 0
    """Answers the asker received (more than one is a duplicate)."""
    attempts: int = 0
    leaked: list[str] = field(default_factory=list)

    @property
    def latency(self) -> float | None:
        return None if self.finished is None else self.finished - self.sent


def _tenant_names(snapshot: Path) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Object names per namespace in the snapshot (events name their namespaced object; logs
    their pod), and the text of each namespace's objects and logs."""
    by_ns: dict[str, set[str]] = {}
    text: dict[str, list[str]] = {}
    for f in sorted((snapshot / "cluster").rglob("*")):
        if f.suffix not in {".yaml", ".yml", ".json"}:
            continue
        for doc in yaml.safe_load_all(f.read_text()):
            if not isinstance(doc, dict):
                continue
            items = doc["items"] if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list) \
                else [doc]
            for obj in (i for i in items if isinstance(i, dict)):
                meta = obj.get("metadata") or {}
                ns = meta.get("namespace")
                if not ns:
                    continue
                text.setdefault(str(ns), []).append(json.dumps(obj))
                involved = obj.get("involvedObject") or {}
                if obj.get("kind") == "Event" and not involved.get("namespace"):
                    continue  # an event about a node: not a tenant's object
                name = involved.get("name") if obj.get("kind") == "Event" else meta.get("name")
                if name:
                    by_ns.setdefault(str(ns), set()).add(str(name))
    logs = snapshot / "logs"
    if logs.is_dir():
        for ns_dir in (d for d in logs.iterdir() if d.is_dir()):
            by_ns.setdefault(ns_dir.name, set()).update(p.name for p in ns_dir.iterdir() if p.is_dir())
            text.setdefault(ns_dir.name, []).extend(f.read_text(errors="replace") for f in ns_dir.rglob("*.log"))
    return by_ns, {ns: "\n".join(parts) for ns, parts in text.items()}


def forbidden_names(snapshot: Path, visible: set[str] | None) -> set[str]:
    """Names of objects that exist only in namespaces outside ``visible`` (None: cluster-wide,
    nothing is foreign): an answer to this asker must name none of them. Left out, as telling
    nothing: names under 4 characters, and names the asker reads in their own namespaces' objects
    and logs (``prometheus`` in a ``prometheus.io/scrape`` annotation, ``kubernetes`` in
    ``app.kubernetes.io/name``). Namespace names are left out as in tests/snapshot_names.py
    (``sleuth``, ``default`` are words of any answer; saying one is out of reach is no leak)."""
    if visible is None:
        return set()
    by_ns, text = _tenant_names(snapshot)
    readable = "\n".join(t for ns, t in text.items() if ns in visible)
    foreign = set().union(*(names for ns, names in by_ns.items() if ns not in visible))
    return {n for n in foreign - set(by_ns) if len(n) >= 4 and n not in readable}


def questions_for(user: str, visible: set[str] | None) -> list[str]:
    """What ``user`` asks, in turn: about what they may read, and now and then about another
    tenant's objects (the answer must not name them beyond the question's own words)."""
    own = sorted(visible) if visible is not None else ["team-a", "team-b"]
    asks = [f"what is failing in {ns}?" for ns in own if ns.startswith("team-")] or ["what is failing?"]
    if visible is None or "team-a" in visible:
        asks += ["why is checkout-api crashing?", "what is wrong with payments-worker in team-a?"]
    if visible is None or "team-b" in visible:
        asks += ["why can't inventory-db start in team-b?", "why is search-indexer pending?"]
    if visible is not None:
        other = "team-b" if "team-a" in visible else "team-a"
        asks.append(f"what is failing in {other}?")
    return asks


class Asker:
    """Sends questions to the gateways as a load balancer would, and records what came back."""

    def __init__(self, gateways: list[str], tokens: dict[str, str], forbidden: dict[str, set[str]],
                 deadline: float) -> None:
        self.gateways = gateways
        self.tokens = tokens
        self.forbidden = forbidden
        self.deadline = deadline
        self._next = itertools.count()
        self.questions: list[Question] = []
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(deadline, connect=2.0),
                                         limits=httpx.Limits(max_connections=200))

    async def close(self) -> None:
        await self._client.aclose()

    def _gateway(self, after: str | None) -> str:
        """The next gateway in turn; after a failure, the one after the gateway that failed."""
        if after is not None:
            return self.gateways[(self.gateways.index(after) + 1) % len(self.gateways)]
        return self.gateways[next(self._next) % len(self.gateways)]

    async def ask(self, user: str, text: str, mode: str) -> Question:
        q = Question(user, text, mode, f"soak-{uuid.uuid4().hex[:20]}", time.monotonic())
        self.questions.append(q)
        give_up = q.sent + self.deadline
        url: str | None = None
        while q.outcome == "pending":
            q.attempts += 1
            url = self._gateway(url)
            try:
                if mode == "sse":
                    await self._sse(q, url)
                else:
                    await self._json(q, url)
            except _RETRYABLE as exc:
                q.detail = f"{type(exc).__name__} from {url}"
                if time.monotonic() + 0.5 > give_up:
                    break
                await asyncio.sleep(0.5)  # then the next gateway, with the same request id
        if q.outcome == "pending":
            # Nothing final came back. Unless every attempt was turned away unheard (a gateway
            # that never took the connection cannot have accepted it), it may have been
            # accepted: counted as lost.
            q.outcome = "lost"
        return q

    def _headers(self, q: Question) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[q.user]}", "X-Request-Id": q.request_id}

    def _finish(self, q: Question, outcome: str, detail: str = "") -> None:
        if q.outcome == "pending":
            q.outcome, q.detail, q.finished = outcome, detail, time.monotonic()

    def _answered(self, q: Question, payload: dict[str, Any]) -> None:
        q.results += 1
        q.accepted = True
        result = payload.get("result") or {}
        if payload.get("job_id"):
            q.job_ids.add(str(payload["job_id"]))
        text = json.dumps({"answer": payload.get("answer", ""), "result": result})
        asked = q.text.lower()
        q.leaked += sorted(n for n in self.forbidden.get(q.user, set()) if n in text and n.lower() not in asked)
        status = str(result.get("status", ""))
        if status in OK_STATUSES:
            self._finish(q, "ok", status)
        else:
            answer = str(payload.get("answer") or result.get("answer_markdown") or "").strip().splitlines()
            self._finish(q, "error", f"result status {status or '?'}: {(answer or [''])[0][:160]}")

    def _refused(self, q: Question, status: int, body: dict[str, Any]) -> None:
        if body.get("job_id"):
            q.job_ids.add(str(body["job_id"]))
            q.accepted = True
        message = f"{status}: {str(body.get('error', ''))[:120]}"
        if q.accepted:
            self._finish(q, "error", message)
        elif status in (429, 503) or status < 500:
            self._finish(q, "refused", message)
        else:
            self._finish(q, "error", message)

    async def _json(self, q: Question, url: str) -> None:
        r = await self._client.post(f"{url}/v1/query", json={"query": q.text}, headers=self._headers(q))
        try:
            body = r.json()
        except ValueError:
            body = {"error": r.text[:200]}
        if r.status_code == 200 and isinstance(body.get("result"), dict):
            self._answered(q, body)
        else:
            self._refused(q, r.status_code, body if isinstance(body, dict) else {})

    async def _sse(self, q: Question, url: str) -> None:
        async with self._client.stream("POST", f"{url}/v1/query?stream=1", json={"query": q.text},
                                       headers=self._headers(q)) as r:
            if r.status_code != 200:
                content = await r.aread()
                try:
                    body = json.loads(content)
                except ValueError:
                    body = {"error": content[:200].decode(errors="replace")}
                self._refused(q, r.status_code, body if isinstance(body, dict) else {})
                return
            buf = ""
            async for chunk in r.aiter_text():
                buf += chunk
                while "\n\n" in buf:
                    raw, buf = buf.split("\n\n", 1)
                    name, data = "message", ""
                    for line in raw.splitlines():
                        if line.startswith("event:"):
                            name = line[6:].strip()
                        elif line.startswith("data:"):
                            data += line[5:].strip()
                    if not data:
                        continue
                    event = json.loads(data)
                    if name == "accepted":
                        q.accepted = True
                        q.job_ids.add(str(event.get("job_id", "")))
                    elif name == "result":
                        self._answered(q, event)
                    elif name == "error":
                        q.accepted = True
                        self._finish(q, "error", f"{event.get('status', '')}: {str(event.get('error', ''))[:120]}")
            if q.outcome == "pending":  # the stream ended without an answer: the gateway went away
                raise httpx.RemoteProtocolError("the event stream ended without a result")


@dataclass
class AlertSent:
    sent: float
    accepted: int = 0
    duplicate: bool = False
    status: int = 0


class AlertSender:
    """Posts Alertmanager webhook payloads (one new alert each, so none is in cooldown), retrying
    a failed post with the same body as Alertmanager does."""

    def __init__(self, url: str, token: str, pods: list[tuple[str, str]], retry_for: float = 30.0) -> None:
        self.url = url
        self.token = token
        self.pods = pods
        self.retry_for = retry_for
        self.sent: list[AlertSent] = []
        self._seq = itertools.count()
        self._client = httpx.AsyncClient(timeout=10.0)

    async def close(self) -> None:
        await self._client.aclose()

    def payload(self, n: int) -> dict[str, Any]:
        namespace, pod = self.pods[n % len(self.pods)]
        labels = {"alertname": "KubePodCrashLooping", "cluster": "demo", "namespace": namespace, "pod": pod,
                  "severity": "warning", "soak_seq": str(n)}
        return {
            "receiver": "team-a", "status": "firing", "version": "4", "externalURL": "http://alertmanager:9093",
            "groupKey": f'{{}}:{{alertname="KubePodCrashLooping", soak_seq="{n}"}}',
            "groupLabels": {"alertname": "KubePodCrashLooping"}, "commonLabels": labels, "commonAnnotations": {},
            "truncatedAlerts": 0,
            "alerts": [{
                "status": "firing", "labels": labels,
                "annotations": {"summary": "Pod is crash looping."},
                "startsAt": "2026-11-30T08:41:07.613Z", "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus:9090/graph", "fingerprint": f"{n:016x}",
            }],
        }

    async def send(self) -> AlertSent:
        n = next(self._seq)
        record = AlertSent(time.monotonic())
        self.sent.append(record)
        body = self.payload(n)
        give_up = record.sent + self.retry_for
        while True:
            try:
                r = await self._client.post(self.url, json=body, headers={"Authorization": f"Bearer {self.token}"})
                record.status = r.status_code
                if r.status_code == 200:
                    doc = r.json()
                    # One alert per record: a retry whose lost first try was stored anyway is
                    # answered "duplicate" and still counts once.
                    record.accepted, record.duplicate = int(doc.get("accepted", 0)), bool(doc.get("duplicate"))
                    return record
                if r.status_code < 500:
                    return record
            except httpx.TransportError:
                record.status = -1
            if time.monotonic() + 1.0 > give_up:
                return record
            await asyncio.sleep(1.0)
