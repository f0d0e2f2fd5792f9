"""From stored webhook payloads to one posted answer per (channel, cluster) window.

- **ingest**: a durable pull consumer on ``sleuth.alerts.ingest`` takes each payload, skips
  Watchdog / resolved / low-severity alerts and puts the first ``max_alerts_per_request`` of the
  rest in their window in Redis (new, in cooldown, or a duplicate; past ``max_stored_per_window``
  only counted), each trimmed to ``max_alert_bytes``; alerts past the per-request cap are
  counted in their window. Then it acks. A crash before the ack redelivers the payload, and
  putting it in again changes nothing (the left-out counts aside).
- **windows** are per (channel, configured cluster): an alert naming no configured cluster goes
  to the channel's one "unknown cluster" window, which is posted as a count, never investigated.
- **tick**: windows past their closing time become batches (atomically, in Redis); batches
  wait for one of ``concurrency`` slots; each is investigated as the channel marker (``alerts
  on``) or the route's identity, resolved fresh, intersected with every reader of the channel
  (``_members``): that scope decides which alerts may be shown and asked about. A channel
  outside web chat whose readers the gateway has not listed (no ``alerts on`` there, or a mark
  from before it listed them) gets its alerts listed, not investigated. The job's id is the
  batch id and its answer comes back on ``sleuth.alerts.results.<batch>``, which the ALERTS
  stream keeps until it is handled.
- **results**: a durable consumer turns each answer into one chat post whose id is the batch
  id (``alert-<batch>``), so a redelivered answer or a restarted service posts nothing twice.
  Every post fitted to the readers' scopes names them in ``meta["readers"]``.
- a batch with no answer after its deadline is reported as not finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from pydantic import ValidationError
from redis.exceptions import RedisError

from sleuth_alerts import compose
from sleuth_alerts.bus import publish_post
from sleuth_alerts.metrics import Metrics
from sleuth_alerts.payload import PayloadError, parse_payload
from sleuth_alerts.settings import Settings
from sleuth_alerts.store import Batch, Mark, Store
from sleuth_alerts.triage import (
    UNKNOWN_CLUSTER,
    alert_ref,
    cluster_label,
    cluster_of,
    fingerprint,
    in_scope,
    question,
    skip_reason,
)
from sleuth_common.audit import AuditLog
from sleuth_common.bus import BusError, request
from sleuth_common.channels import audience_claims, intersect_scopes, member_requesters
from sleuth_common.identity import IdentityError, signer_from_settings
from sleuth_common.messages import (
    AlertmanagerWebhook,
    AlertRef,
    ChatPost,
    InvestigationJob,
    InvestigationResult,
    Requester,
    ScopeReply,
    ScopeRequest,
    web_channel,
)
from sleuth_common.messages.audit import AlertBatched, Decision
from sleuth_common.subjects import Subjects

__all__ = ["ROUTE_HEADER", "Batcher", "decode_payload", "post_id"]

log = logging.getLogger(__name__)

ALERTS_ISSUER = "sleuth-alerts"

ROUTE_HEADER = "Sleuth-Route"
ENCODING_HEADER = "Sleuth-Encoding"
INGEST_DURABLE = "alerts-batcher"
RESULTS_DURABLE = "alerts-results"


class ScopeUnavailable(Exception):
    pass


def post_id(batch_id: str) -> str:
    return f"alert-{batch_id}"


def decode_payload(data: bytes, headers: dict[str, str] | None, *, max_depth: int = 32) -> AlertmanagerWebhook:
    """A payload from the ALERTS stream (the webhook checked it; this is the same parser)."""
    if (headers or {}).get(ENCODING_HEADER) == "zlib":
        data = zlib.decompress(data)
    return parse_payload(data, max_depth=max_depth)


_POSTED: dict[str, Decision] = {"outside_access": "withheld", "no_identity": "refused", "no_readers": "refused",
                                "left_out": "refused", "unknown_cluster": "refused", "not_finished": "error"}
"""How a batch's post (its ``outcome``) reads in the audit trail; any other outcome is an answer."""


def audit_code(outcome: str) -> str:
    return re.sub(r"[^a-z0-9_.:-]+", "_", outcome.lower())[:64]


class Batcher:
    def __init__(
        self,
        nc: Nats,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        *,
        clock: Callable[[], float] = time.time,
        audit: AuditLog | None = None,
    ) -> None:
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream(timeout=settings.alerts.publish_timeout)
        if audit is None:  # a batcher built alone (tests); the app passes its own
            audit = AuditLog(Subjects(settings.prefix), "alerts", settings.audit)
            audit.bind_nats(nc)
        self.audit = audit
        self.store = store
        self.settings = settings
        self.cfg = settings.alerts
        self.metrics = metrics
        self.subjects = Subjects(settings.prefix)
        self.clock = clock
        # Signs whom each alert investigation acts for, and who reads its answer (the agent
        # trusts nothing else). A key that cannot be read fails the start.
        self.signer = signer_from_settings(settings.identity, issuer=ALERTS_ISSUER, ttl=settings.identity.job_ttl)
        if self.signer is None:
            log.warning("alerts has no identity signing key (identity.signing_key_file): the agent "
                        "will refuse every alert investigation")
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[Any] = []

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        s = self.subjects
        config = ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.cfg.ack_wait,
            max_deliver=-1,
            deliver_policy=DeliverPolicy.ALL,
        )
        # Stays a hand-written nats-py loop, not a FastStream subscriber: FastStream 0.7.8's concurrent
        # pull subscriber fetches before a worker slot is free and holds what it fetched (no in-progress
        # heartbeats), so a busy replica would sit on work others could run (sleuth_common.bus, "JetStream").
        ingest = await self.js.pull_subscribe(
            s.alerts_ingest, durable=INGEST_DURABLE, stream=s.stream_alerts, config=config
        )
        results = await self.js.pull_subscribe(
            s.alerts_results_all, durable=RESULTS_DURABLE, stream=s.stream_alerts, config=config
        )
        self._tasks = [
            asyncio.create_task(
                self._pull(ingest, self._on_ingest, self.cfg.fetch_batch), name="alerts-ingest"
            ),
            asyncio.create_task(self._pull(results, self._on_result, 8), name="alerts-results"),
            asyncio.create_task(self._ticker(), name="alerts-tick"),
        ]

    async def stop(self) -> None:
        # A flag as well as a cancel: nats-py's fetch can swallow a cancel on Python 3.11.
        self._stopping.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(t, 5.0)
        self._tasks.clear()
        for sub in self._subs:
            with contextlib.suppress(NatsError):
                await sub.unsubscribe()
        self._subs.clear()

    async def _pull(self, sub: Any, handle: Callable[[Msg], Awaitable[None]], batch: int) -> None:
        while not self._stopping.is_set():
            try:
                msgs = await sub.fetch(batch, timeout=1.0)
            except TimeoutError:  # nats' own TimeoutError, or the builtin one from a batch fetch
                continue
            except NatsError as exc:
                log.warning("fetching from the ALERTS stream failed: %s", exc)
                await asyncio.sleep(1.0)
                continue
            for msg in msgs:
                try:
                    await handle(msg)
                except (RedisError, OSError, NatsError, TimeoutError) as exc:
                    # Temporary: Redis or NATS trouble. Try again shortly; nothing is lost.
                    log.warning("alert message left for redelivery: %s", exc)
                    with contextlib.suppress(NatsError):
                        await msg.nak(delay=2.0)

    async def _ticker(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.tick()
            except (RedisError, OSError, NatsError, TimeoutError) as exc:
                log.warning("alert windows could not be checked: %s", exc)
            await asyncio.sleep(self.cfg.tick)

    # ------------------------------------------------------------------ ingest
    async def _on_ingest(self, msg: Msg) -> None:
        route = (msg.headers or {}).get(ROUTE_HEADER, "")
        try:
            payload = decode_payload(msg.data, msg.headers, max_depth=self.cfg.max_json_depth)
        except (PayloadError, ValueError, zlib.error) as exc:
            log.error("dropped a malformed alert payload from route %s: %s", route, exc)
            await msg.term()
            return
        await self.ingest(route, payload)
        await msg.ack()

    async def ingest(self, route_name: str, payload: AlertmanagerWebhook) -> dict[str, int]:
        """Put one payload's alerts in their windows; returns counts by disposition."""
        counts: dict[str, int] = {}
        route = self.settings.route(route_name)
        if route is None:
            log.warning("alerts for unknown route %r dropped (was it removed from the config?)", route_name)
            return counts
        now, cfg = self.clock(), self.cfg
        left_out: dict[str, int] = {}  # cluster → alerts past max_alerts_per_request
        for index, alert in enumerate(payload.alerts):
            skipped = skip_reason(
                alert,
                skip_alertnames=cfg.skip_alertnames,
                severities=cfg.severities,
                min_severity=cfg.min_severity,
            )
            disp: str
            if skipped is not None:
                disp = skipped
            else:
                cluster = cluster_of(alert.labels, cfg.cluster_labels, self.settings.clusters)
                if index >= cfg.max_alerts_per_request:
                    left_out[cluster] = left_out.get(cluster, 0) + 1
                    disp = "over_request"
                else:
                    ref = alert_ref(
                        alert, fingerprint(alert), max_bytes=cfg.max_alert_bytes, cluster_labels=cfg.cluster_labels
                    )
                    disp = await self.store.add(
                        route.target,
                        cluster,
                        ref,
                        now=now,
                        window=cfg.window,
                        cooldown=cfg.cooldown,
                        max_stored=cfg.max_stored_per_window,
                    )
                    if disp == "queued" and cluster == UNKNOWN_CLUSTER:
                        disp = "unknown_cluster"
            counts[disp] = counts.get(disp, 0) + 1
            self.metrics.received.labels(disp).inc()
        for cluster, n in left_out.items():
            await self.store.left_out(route.target, cluster, n, now=now, window=cfg.window)
        if left_out:
            log.info(
                "alerts over max_alerts_per_request counted, not stored",
                extra={"route": route_name, "alerts": sum(left_out.values())},
            )
        return counts

    # ------------------------------------------------------------------ windows → jobs
    async def tick(self) -> None:
        now = self.clock()
        for window in await self.store.due_windows(now):
            batch_id = await self.store.close(window, now)
            if batch_id:
                log.info("alert window closed", extra={"batch": batch_id, "window": window})
        free = self.cfg.concurrency - await self.store.inflight_count()
        for batch_id in await self.store.closed_batches(free):
            await self._start_batch(batch_id)
        for batch_id in await self.store.overdue(self.clock()):
            batch = await self.store.batch(batch_id)
            if batch is not None:
                await self._post_not_finished(batch, "no answer arrived before the deadline")
        self.metrics.pending.set(await self.store.pending_alerts())

    def _identity(self, target: str, mark: Mark | None) -> tuple[Requester | None, str]:
        """(who to investigate as, who marked the channel or "")."""
        if mark is not None and mark.user:
            return Requester(user=mark.user, groups=mark.groups), mark.user
        for route in self.cfg.routes:
            if route.target == target and route.run_as is not None:
                return Requester(user=route.run_as.user, groups=tuple(route.run_as.groups)), ""
        return None, ""

    def _members(self, target: str, who: Requester, mark: Mark | None) -> tuple[Requester, ...] | None:
        """Who reads ``target``, or None when nobody can tell (then nothing is investigated).

        A ``web:`` channel: one identity per member entry of its config (() when it is not
        configured or lists nobody: the gateway shows a web channel to its listed members only, and
        drops posts for an unconfigured one). A ``user:`` member's groups
        are those Sleuth knows: the marker's, the route's ``run_as``. Any other chat: the members
        the gateway listed with the last ``alerts on|status`` (stored with the mark); without a
        mark, or a mark without them (written before the gateway sent them), the readers are
        unknown: None, fail closed."""
        name = web_channel(target)
        if name is None:
            if mark is None or not mark.user or not mark.members:
                return None
            return mark.members
        channel = self.settings.gateway.channel(name)
        if channel is None:
            return ()
        known = [who, *(Requester(user=r.run_as.user, groups=tuple(r.run_as.groups))
                        for r in self.cfg.routes if r.target == target and r.run_as is not None)]
        if mark is not None and mark.user:
            known.append(Requester(user=mark.user, groups=mark.groups))
        return member_requesters(channel.members, known=known)

    async def _scope(self, who: Requester, members: tuple[Requester, ...] = ()) -> ScopeReply:
        """``who``'s scope narrowed to what every member of the channel may read: marking a
        channel chooses whose identity reads the cluster, never widens what the channel sees."""
        unique: dict[tuple[str, frozenset[str]], Requester] = {}
        for r in (who, *members):  # each identity asked once; ``who`` first (it names the result)
            unique.setdefault((r.user, frozenset(r.groups)), r)
        replies = [await self._scope_of(r) for r in unique.values()]
        return replies[0] if len(replies) == 1 else intersect_scopes(replies)

    async def _scope_of(self, who: Requester) -> ScopeReply:
        req = ScopeRequest(user=who.user, groups=who.groups)
        try:
            return await request(self.nc, self.subjects.authz_scope, req, ScopeReply,
                                 wait=self.settings.authz.request_timeout, service="authz-cache",
                                 hedge_after=self.settings.authz.hedge_after)
        except BusError as exc:  # not running, no answer in time, a malformed or error reply: all unavailable
            raise ScopeUnavailable(str(exc)) from exc

    def _assert(self, who: Requester, job_id: str, members: tuple[Requester, ...]) -> str:
        if self.signer is None:
            return ""
        try:
            return self.signer.mint(who.user, who.groups, audience=self.settings.identity.job_audience,
                                    job=job_id, members=audience_claims(members))
        except IdentityError as e:
            log.warning("cannot sign the alert investigation's identity: %s", e, extra={"batch": job_id})
            return ""

    async def _start_batch(self, batch_id: str) -> None:
        batch = await self.store.batch(batch_id)
        if batch is None or batch.state != "closed":
            if batch is None:
                log.warning("alert batch expired before an investigation slot was free", extra={"batch": batch_id})
            await self.store.posted(batch_id)  # expired or already handled: drop from the queue
            return
        if not batch.new:
            await self._post(batch, compose.nothing_stored(batch.cluster, len(batch.ctx)), "left_out")
            return
        if batch.cluster == UNKNOWN_CLUSTER:
            values = sorted({cluster_label(a.labels, self.cfg.cluster_labels) for a in batch.new} - {""})
            text = compose.unknown_clusters(batch.new, len(batch.ctx), values[:5], more=max(len(values) - 5, 0))
            await self._post(batch, text, "unknown_cluster")
            return
        mark = await self.store.get_mark(batch.target)
        who, marked_by = self._identity(batch.target, mark)
        if who is None:
            await self._post(batch, compose.no_identity(batch.cluster, batch.new), "no_identity")
            return
        members = self._members(batch.target, who, mark)
        if members is None:
            # An answer fitted to ``who`` alone, shown to readers nobody knows: never.
            text = compose.no_readers(batch.cluster, batch.new, marked=bool(marked_by))
            await self._post(batch, text, "no_readers")
            return
        # Whose scopes everything below is fitted to; the gateway posts it only to them.
        readers = json.dumps(list(audience_claims((who, *members))))
        try:
            scope = await self._scope(who, members)
        except ScopeUnavailable as exc:
            if self.clock() - batch.created > self.cfg.investigation_timeout:
                await self._post_not_finished(batch, "authorization stayed unavailable")
            else:
                log.warning(
                    "authz unavailable for alert batch (%s); will retry", exc, extra={"batch": batch.id}
                )
            return
        visible = [a for a in batch.new if in_scope(a, batch.cluster, scope)]
        ctx = [a for a in batch.ctx if in_scope(a, batch.cluster, scope)]
        hidden = len(batch.new) - len(visible)
        known = {c.name for c in self.settings.clusters}
        if not visible:
            text = compose.outside_access(batch.cluster, hidden, len(ctx), run_as=who.user, marked_by=marked_by)
            await self._post(batch, text, "outside_access", readers=readers)
            return
        asked = visible[: self.cfg.max_per_window]
        job = InvestigationJob(
            id=batch.id,
            origin="alert",
            requester=who,
            question=question(batch.cluster, asked),
            alerts=tuple(asked),
            clusters=(batch.cluster,) if batch.cluster in known else (),
            deadline=time.time() + self.cfg.investigation_timeout,
            unattended=True,
            reply_subject=self.subjects.alerts_result(batch.id),
            chat_target=batch.target,
            audience=members,
            identity=self._assert(who, batch.id, members),
        )
        await self.js.publish(
            self.subjects.jobs_investigate,
            job.to_bytes(),
            stream=self.subjects.stream_jobs,
            headers={"Nats-Msg-Id": job.id},
        )
        await self.store.submitted(
            batch.id,
            self.clock() + self.cfg.investigation_timeout + self.cfg.answer_grace,
            run_as=who.user,
            marked_by=marked_by,
            readers=readers,
            hidden=str(hidden),
            asked=json.dumps([a.fingerprint for a in asked]),
            over=json.dumps([a.fingerprint for a in visible[self.cfg.max_per_window :]]),
            ctx=json.dumps([a.fingerprint for a in ctx]),
        )
        self.audit.emit_nowait(AlertBatched(
            user=who.user, groups=who.groups, entry="alertmanager", job_id=batch.id, cluster=batch.cluster,
            decision="allowed", reason="investigating",
            counts={"alerts": len(asked), "hidden": hidden, "over": len(visible) - len(asked), "context": len(ctx),
                    "readers": len(members) + 1},
        ))
        log.info(
            "alert investigation submitted",
            extra={"batch": batch.id, "alerts": len(asked), "cluster": batch.cluster, "user": who.user},
        )

    # ------------------------------------------------------------------ answers
    async def _on_result(self, msg: Msg) -> None:
        try:
            result = InvestigationResult.model_validate_json(msg.data)
        except ValidationError:
            log.error("dropped a malformed investigation result on %s", msg.subject)
            await msg.term()
            return
        batch_id = result.job_id or msg.subject.rsplit(".", 1)[-1]
        batch = await self.store.batch(batch_id)
        if batch is None or batch.state == "posted":
            await msg.ack()
            return
        await self.post_result(batch, result)
        await msg.ack()

    async def post_result(self, batch: Batch, result: InvestigationResult) -> None:
        by_fp: dict[str, AlertRef] = {a.fingerprint: a for a in (*batch.new, *batch.ctx)}

        def pick(key: str) -> list[AlertRef]:
            return [by_fp[f] for f in json.loads(batch.meta.get(key, "[]")) if f in by_fp]

        text = compose.answer(
            batch.cluster,
            pick("asked"),
            pick("over"),
            pick("ctx"),
            int(batch.meta.get("hidden", "0") or 0),
            result,
            run_as=batch.meta.get("run_as", ""),
            marked_by=batch.meta.get("marked_by", ""),
        )
        await self._post(batch, text, result.status, status=result.status)

    async def _post_not_finished(self, batch: Batch, reason: str) -> None:
        by_fp = {a.fingerprint: a for a in batch.new}
        asked = [by_fp[f] for f in json.loads(batch.meta.get("asked", "[]")) if f in by_fp]
        await self._post(batch, compose.not_finished(batch.cluster, asked, reason), "not_finished")

    async def _post(self, batch: Batch, text: str, outcome: str, **meta: str) -> None:
        """Post ``text`` for ``batch`` once. A batch submitted for investigation has its readers
        (``meta["readers"]``, see ``ChatPost.meta``) on every post: what it lists was chosen by
        their scopes."""
        if await self.store.is_posted(batch.id):
            return
        if "readers" in batch.meta:
            meta.setdefault("readers", batch.meta["readers"])
        note = compose.left_out(
            batch.over_request,
            batch.over_window,
            per_request=self.cfg.max_alerts_per_request,
            per_window=self.cfg.max_stored_per_window,
        )
        if note:
            text = f"{text.rstrip()}\n\n{note}\n"
        post = ChatPost(
            id=post_id(batch.id),
            target=batch.target,
            text=text,
            origin="alert",
            meta={"batch": batch.id, "cluster": batch.cluster, "outcome": outcome, **meta},
        )
        await publish_post(self.js, self.subjects, post, self.cfg.publish_timeout)
        if await self.store.posted(batch.id, outcome=outcome):
            self.audit.emit_nowait(AlertBatched(
                user=batch.meta.get("run_as", ""), entry="alertmanager", job_id=batch.id if "asked" in batch.meta else "",
                cluster=batch.cluster, decision=_POSTED.get(outcome, "done"), reason=audit_code(outcome),
                counts={"alerts": len(batch.new), "context": len(batch.ctx)},
            ))
            self.metrics.investigations.labels(outcome).inc()
            if batch.created:
                self.metrics.seconds.observe(max(0.0, self.clock() - batch.created))
        log.info("alert answer posted", extra={"batch": batch.id, "target": batch.target, "outcome": outcome})
