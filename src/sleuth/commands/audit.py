"""``sleuth audit tail``: read the audit trail (the AUDIT stream) as it is written.

    sleuth audit tail [--user U] [--kind K] [--since 10m] [--json] [--no-follow] [--config FILE]

Replays the events stored since ``--since`` (``30s``, ``10m``, ``1h``, ``2d``, or an ISO time) from
the AUDIT stream, then follows new ones until Ctrl-C (``--no-follow``: stops once the stored ones
are printed). ``--kind`` narrows the subject (``tool_call``, ``authenticated`` …); ``--user``
keeps one person's events. One line per event, or the events' JSON with ``--json``.

It connects like a service does: ``--config FILE`` (the ``prefix`` and ``nats`` groups of a
service's YAML) and the environment (``SLEUTH_NATS__URL``, ``SLEUTH_NATS__USER``,
``SLEUTH_NATS_PASSWORD``); log in as the read-only ``audit`` user. Without ``--config`` it uses
``<state-dir>/audit.yaml`` when present, which ``sleuth up`` writes for its embedded stack.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from sleuth_common.config import ServiceSettings
    from sleuth_common.messages.audit import AuditBase

__all__ = ["TailOptions", "format_event", "parse_since", "register", "tail"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DETAILS = ("entry", "cluster", "server", "tool", "command", "op", "schedule", "owner", "report", "via", "route",
            "channel", "origin", "status", "family", "reason")


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``10m`` → ten minutes ago; an ISO 8601 time as is (UTC when it names no zone)."""
    now = now or datetime.now(UTC)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if m:
        return now - timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since: {text!r} is neither a duration (30s, 10m, 1h, 2d) nor an ISO time") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def format_event(e: AuditBase) -> str:
    """One line: time, service, kind, decision, user, then what else the event says."""
    parts = [e.ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), f"{e.service or '-':<11}",
             f"{e.subject_name:<16}", f"{e.decision:<8}", e.user or "-"]
    data = e.model_dump()
    parts += [f"{k}={data[k]}" for k in _DETAILS if data.get(k)]
    if e.job_id:
        parts.append(f"job={e.job_id}")
    if e.request_id:
        parts.append(f"request={e.request_id}")
    clusters = data.get("clusters") or ()
    if clusters:
        parts.append("scope=" + ",".join(
            f"{c['name']}:{'error' if c['error'] else 'all' if c['cluster_wide'] else c['namespaces']}" for c in clusters))
    parts += [f"{k}={v}" for k, v in e.counts.items()]
    return " ".join(parts)


@dataclass(frozen=True)
class TailOptions:
    since: datetime
    user: str = ""
    kind: str = ""
    json: bool = False
    follow: bool = True


_NOT_FOUND = 10037  # JetStream: no message (at or after that time / sequence)


async def tail(settings: ServiceSettings, opts: TailOptions, out: TextIO,
               stop: asyncio.Event | None = None) -> int:
    """Print the audit events ``opts`` selects: the stored ones from ``opts.since`` on, then (with
    ``follow``) new ones until ``stop`` is set. Returns how many were printed.

    Stored events are read one by one from the AUDIT stream (``STREAM.MSG.GET``: the first at or
    after ``since``, then each next one on the subject), never through a consumer, so a reader
    needs no right to make one. New events arrive on a live subscription made before the replay
    starts; those the replay already printed are recognised by their id."""
    import nats

    from sleuth_common.connect import nats_connect_options
    from sleuth_common.subjects import Subjects

    subjects = Subjects(settings.prefix)
    subject = subjects.audit(opts.kind) if opts.kind else subjects.audit_all
    get = f"$JS.API.STREAM.MSG.GET.{subjects.stream_audit}"
    nc = await nats.connect(**nats_connect_options(settings.nats, name="sleuth-audit-tail"),
                            allow_reconnect=opts.follow, max_reconnect_attempts=-1)
    printed = 0
    seen: set[str] = set()
    live: asyncio.Queue[bytes] = asyncio.Queue()
    stop = stop or asyncio.Event()

    def show(data: bytes, *, replay: bool) -> None:
        nonlocal printed
        line = _line(data, opts, seen, remember=replay)
        if line is not None:
            out.write(line + "\n")
            out.flush()
            printed += 1

    async def on_live(msg: Any) -> None:
        live.put_nowait(msg.data)

    try:
        sub = await nc.subscribe(subject, cb=on_live) if opts.follow else None
        await nc.flush()
        request: dict[str, Any] = {"start_time": opts.since.astimezone(UTC).isoformat(), "next_by_subj": subject}
        while True:
            reply = json.loads((await nc.request(get, json.dumps(request).encode(), timeout=5)).data)
            if "error" in reply:
                if reply["error"].get("err_code") == _NOT_FOUND:
                    break
                raise RuntimeError(reply["error"].get("description", "JetStream refused the read"))
            msg = reply["message"]
            show(base64.b64decode(msg.get("data", "")), replay=True)
            request = {"seq": int(msg["seq"]) + 1, "next_by_subj": subject}
        if sub is not None:
            stopping = asyncio.ensure_future(stop.wait())
            try:
                while not stop.is_set():
                    getting = asyncio.ensure_future(live.get())
                    done, _ = await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
                    if getting in done:
                        show(getting.result(), replay=False)
                    else:
                        getting.cancel()
            finally:
                stopping.cancel()
    finally:
        await nc.close()
    return printed


def _line(data: bytes, opts: TailOptions, seen: set[str], *, remember: bool) -> str | None:
    """What to print for one event (None: filtered out, or printed by the replay). Only the
    replay's ids are remembered: a live event arrives once."""
    from pydantic import ValidationError

    from sleuth_common.messages.audit import parse_audit_event

    try:
        event = parse_audit_event(data)
    except ValidationError:
        print("sleuth audit: skipped an event this version does not understand", file=sys.stderr)
        return None
    if event.id in seen or (opts.user and event.user != opts.user):
        return None
    if remember:
        seen.add(event.id)
    return event.model_dump_json() if opts.json else format_event(event)


def _settings(args: argparse.Namespace) -> ServiceSettings:
    from sleuth_common.config import ServiceSettings, load_settings

    path = args.config
    if not path:
        default = Path(args.state_dir) / "audit.yaml"
        path = str(default) if default.is_file() else None
    return load_settings(ServiceSettings, path)


def _cmd_audit(args: argparse.Namespace) -> int:
    from sleuth_common.connect import ConnectConfigError
    from sleuth_common.messages.audit import AUDIT_KINDS

    if args.kind and args.kind not in AUDIT_KINDS:
        print(f"sleuth audit: unknown --kind {args.kind!r} (one of: {', '.join(AUDIT_KINDS)})", file=sys.stderr)
        return 2
    try:
        since = parse_since(args.since)
        settings = _settings(args)
    except (ValueError, OSError) as exc:
        print(f"sleuth audit: {exc}", file=sys.stderr)
        return 2
    opts = TailOptions(since=since, user=args.user, kind=args.kind, json=args.json, follow=not args.no_follow)
    try:
        asyncio.run(tail(settings, opts, sys.stdout))
    except KeyboardInterrupt:
        return 0
    except (ConnectConfigError, OSError, TimeoutError) as exc:
        print(f"sleuth audit: cannot read the audit trail: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the CLI's edge: nats-py's errors (no stream, no permission) in one line
        print(f"sleuth audit: cannot read the audit trail: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("audit", help="read the audit trail (who was allowed or refused what)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_subparsers(dest="audit_command", required=True)
    t = what.add_parser("tail", help="print the audit events of a recent window, then follow new ones",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--user", default="", help="only events about this user")
    t.add_argument("--kind", default="", help="only events of this kind (tool_call, authenticated, …)")
    t.add_argument("--since", default="10m", help="start this long ago (30s, 10m, 1h, 2d) or at an ISO time")
    t.add_argument("--json", action="store_true", help="one JSON object per line")
    t.add_argument("--no-follow", action="store_true", help="stop once the stored events are printed")
    t.add_argument("--config", default="", help="a service's YAML config (prefix, nats); else the environment")
    t.add_argument("--state-dir", default=".sleuth", help="the embedded stack's state (its audit.yaml)")
    t.set_defaults(func=_cmd_audit)
