"""Who may do what on the bus and in Redis (DESIGN §1): one NATS user and one Redis ACL user per
service, each allowed only the subjects and keys that service uses.

The embedded stack renders these tables into a nats-server config and a Valkey ACL file at every
start, with fresh passwords, and hands each service process only its own credentials. A real
deployment takes the same tables (``sleuth access`` prints them with placeholder passwords).

NATS rules of thumb, checked by tests/test_bus_auth.py against a real server:
- Allow lists only: what is not listed is refused (nats-server logs "Permissions Violation").
- Each user subscribes to its own inbox prefix only (``_INBOX.<user>.>``; nats-py and FastStream
  take it as ``inbox_prefix``, which ``NatsSettings.inbox()`` derives from the user name), so no
  service reads another's replies.
- Responders publish to the inboxes of the services allowed to ask them, not through
  ``allow_responses``: nats-server lets a responder with ``allow_responses`` publish to whatever
  reply subject a request carried, so a requester could steer the answer onto any subject
  (``sleuth.chat.outbound``, say). With inbox allow lists a reply can only land in an inbox.
  A responder that is itself a service with replies of its own to read (the agent answering
  the gateway's ``diagnostics``) gets a branch of the asker's inbox kept for that request
  (``_INBOX.gateway.diagnostics.*``), never the whole inbox.
- JetStream: each service gets the ``$JS.API`` subjects of its own streams (info, create) and
  its own durable consumers (info, create, next) and the ``$JS.ACK`` subjects of those
  consumers, never ``$JS.API.>``: it cannot read, purge or delete a stream it does not own, nor
  make a consumer on one. The gateway also sees every stream's state for ``diagnostics`` (stream
  info and consumer lists: counts, never messages), and gets a job's answer kept in RESULTS after
  a restart (``STREAM.MSG.GET``: the answers it receives live anyway).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sleuth_alerts.batcher import INGEST_DURABLE as ALERTS_INGEST_DURABLE
from sleuth_alerts.batcher import RESULTS_DURABLE as ALERTS_RESULTS_DURABLE
from sleuth_common.streams import stream_specs
from sleuth_common.subjects import Subjects
from sleuth_gateway.channels import CHAT_DURABLE as GATEWAY_CHAT_DURABLE

__all__ = [
    "AUDIT_USER",
    "COMING_SERVICES",
    "SERVICES",
    "Credentials",
    "NatsPermissions",
    "RedisAcl",
    "nats_authorization",
    "nats_permissions",
    "redis_acl",
    "redis_acl_file",
]

SERVICES = ("gateway", "authz-cache", "agent", "alerts", "scheduler", "reporter")
"""Services with a NATS user and a Redis user. kube-mcp has neither: it uses no bus and no Redis."""
COMING_SERVICES: frozenset[str] = frozenset()
"""Defined now (DESIGN §1), not built yet: their users exist so that they start with no changes."""
AUDIT_USER = "audit"
"""NATS only: reads ``<prefix>.audit.>`` and nothing else (an ops tail, a SIEM shipper)."""



@dataclass(frozen=True)
class NatsPermissions:
    """What one NATS user may publish and subscribe to (allow lists; the rest is refused)."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    note: str = ""


def inbox(user: str) -> str:
    """The inbox subjects of ``user`` (``_INBOX.<user>.>``)."""
    return f"_INBOX.{user}.>"


def _stream(name: str) -> tuple[str, ...]:
    # ensure_streams: look a stream up, create it when absent (never update, purge or delete).
    return (f"$JS.API.STREAM.INFO.{name}", f"$JS.API.STREAM.CREATE.{name}")


def _consumer(stream: str, durable: str) -> tuple[str, ...]:
    # pull_subscribe(durable=…): info, create (the subject nats-py picks depends on the server
    # version, with or without the filter subject), fetch, and the acks of its messages.
    return (
        f"$JS.API.CONSUMER.INFO.{stream}.{durable}",
        f"$JS.API.CONSUMER.CREATE.{stream}.{durable}",
        f"$JS.API.CONSUMER.CREATE.{stream}.{durable}.>",
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
    )


def _replies_to(*users: str) -> tuple[str, ...]:
    return tuple(inbox(u) for u in users)


def nats_permissions(prefix: str = "sleuth") -> dict[str, NatsPermissions]:
    """The NATS user of every service (and ``audit``) with its permissions, for ``prefix``."""
    s = Subjects(prefix)
    audit = f"{prefix}.audit.>"
    progress_all = f"{prefix}.jobs.progress.*"
    schedules_all = f"{prefix}.schedules.*"
    reports_all = f"{prefix}.reports.*"
    jobs, chat, alerts, results = s.stream_jobs, s.stream_chat, s.stream_alerts, s.stream_results
    perms = {
        "gateway": NatsPermissions(
            publish=(
                s.authz_authenticate, s.authz_invalidate, s.authz_scope, s.jobs_investigate,
                s.alerts_channels_all, schedules_all, reports_all, audit, s.agent_diagnostics, s.agent_kb,
                s.agent_feedback,
                *_stream(jobs), *_stream(chat), *_consumer(chat, GATEWAY_CHAT_DURABLE),
                # `diagnostics`: read-only state (message and consumer counts, consumers' pending
                # counts) of the streams it does not make; no messages, no changes.
                f"$JS.API.STREAM.INFO.{alerts}", *(f"$JS.API.CONSUMER.LIST.{x}" for x in (jobs, chat, alerts)),
                # a job's kept answer after a restart (the answers it may already overhear live)
                *_stream(results), f"$JS.API.STREAM.MSG.GET.{results}",
                # backpressure and the sleuth_jobs_* gauges: the agents' consumer state (counts
                # only; stream info gives the oldest job's time — never a job's content)
                f"$JS.API.CONSUMER.INFO.{jobs}.{s.agent_durable}",
            ),
            subscribe=(progress_all, s.jobs_done_all, inbox("gateway")),
            note="asks authz-cache who a token is and what they may read, submits jobs, watches "
                 "their progress and results, consumes CHAT, sends alerts/schedules/reports "
                 "commands, reads stream state and asks an agent for its view (diagnostics), runbooks (kb) "
                 "and to keep feedback on an answer",
        ),
        "authz-cache": NatsPermissions(
            publish=(audit, *_replies_to("gateway", "agent", "alerts", "scheduler", "reporter")),
            subscribe=(
                s.authz_scope, s.authz_resolve, s.authz_inventory, s.authz_authenticate,
                s.authz_invalidate, inbox("authz-cache"),
            ),
            note="the only responder on <prefix>.authz.*; answers into the askers' inboxes",
        ),
        "agent": NatsPermissions(
            publish=(
                s.authz_scope, s.authz_resolve, s.authz_inventory, progress_all, s.jobs_done_all,
                s.alerts_results_all, audit, *_stream(jobs), *_consumer(jobs, s.agent_durable), *_stream(results),
                # answers to `diagnostics` and `kb` only, not into the gateway's other replies
                s.agent_diagnostics_reply("_INBOX.gateway"), s.agent_kb_reply("_INBOX.gateway"),
                s.agent_feedback_reply("_INBOX.gateway"),
                # incident memory: agents tell each other (it names the asker's objects; nobody else hears it)
                s.incidents_recorded,
            ),
            # `diagnostics` and `kb`, in its queue group only (one agent answers, none overhears).
            subscribe=(f"{s.agent_diagnostics} {s.agent_queue}", f"{s.agent_kb} {s.agent_queue}",
                       f"{s.agent_feedback} {s.agent_queue}", s.incidents_recorded, inbox("agent")),
            note="the only consumer of JOBS; publishes progress and results (a job's reply "
                 "subject can only be one of these); answers the gateway's `diagnostics`, `kb` and feedback; "
                 "announces and hears incidents (agents only)",
        ),
        "alerts": NatsPermissions(
            publish=(
                s.authz_scope, s.jobs_investigate, s.chat_outbound, s.alerts_ingest, audit,
                *_replies_to("gateway"),
                *_stream(alerts), *_stream(chat), *_stream(jobs),
                *_consumer(alerts, ALERTS_INGEST_DURABLE), *_consumer(alerts, ALERTS_RESULTS_DURABLE),
            ),
            subscribe=(s.alerts_channels_all, inbox("alerts")),
            note="webhook → ALERTS, batches → JOBS, answers → CHAT; answers `alerts on/off/status`",
        ),
        "scheduler": NatsPermissions(
            publish=(
                s.jobs_investigate, s.chat_outbound, s.reports("run"), audit, *_replies_to("gateway"),
                *_stream(jobs), *_stream(chat),
            ),
            subscribe=(schedules_all, s.jobs_done_all, inbox("scheduler")),
            note="answers the schedule commands, fires saved questions as jobs (JOBS) and scheduled "
                 "reports as `reports.run` requests, posts their answers (CHAT)",
        ),
        "reporter": NatsPermissions(
            publish=(
                s.jobs_investigate, s.chat_outbound, s.reports_queued_all, audit,
                *_replies_to("gateway", "scheduler"),
                *_stream(jobs), *_stream(chat), *_stream(s.stream_reports),
                *_consumer(s.stream_reports, s.reporter_durable),
            ),
            subscribe=(reports_all, s.jobs_done_all, inbox("reporter")),
            note="answers `report`, queues reports on REPORTS, asks the agent for them (JOBS, jobs.done), "
                 "posts them (CHAT)",
        ),
        AUDIT_USER: NatsPermissions(
            publish=(), subscribe=(audit,), note="reads the audit events; publishes nothing",
        ),
    }
    # Every service publishes its audit events to the AUDIT stream (and may create it at start).
    audit_stream = stream_specs(s)["audit"].name
    for service in SERVICES:
        p = perms[service]
        perms[service] = NatsPermissions(publish=(*p.publish, *_stream(audit_stream)), subscribe=p.subscribe,
                                         note=p.note)
    # The audit user reads stored events one by one (STREAM.MSG.GET: by start time, then by
    # sequence) and follows new ones live. It makes no consumer: a consumer's config names where
    # its messages are delivered, and nats-server does not check that subject against the
    # creator's permissions, so a reader allowed to make one could pour the trail into CHAT or JOBS.
    perms[AUDIT_USER] = NatsPermissions(
        publish=(f"$JS.API.STREAM.INFO.{audit_stream}", f"$JS.API.STREAM.MSG.GET.{audit_stream}"),
        subscribe=(audit, inbox(AUDIT_USER)),
        note="reads the audit events (live and replayed from the AUDIT stream); publishes nothing else",
    )
    return perms


def _q(value: str) -> str:
    return json.dumps(value)  # nats-server config strings: quoted, so "$JS…" is not a variable


def _allow(subjects: Iterable[str]) -> str:
    items = list(subjects)
    if not items:
        return '{deny: [">"]}'
    return "{allow: [" + ", ".join(_q(x) for x in items) + "]}"


def nats_authorization(passwords: Mapping[str, str], prefix: str = "sleuth",
                       extra: Mapping[str, NatsPermissions] | None = None, *, env_refs: bool = False) -> str:
    """The ``authorization { users = [...] }`` block of a nats-server config: one user per entry
    of ``passwords`` that has permissions (services, ``audit``, and ``extra`` users). With
    ``env_refs`` the values of ``passwords`` are names of environment variables of nats-server
    (written ``$NAME``), so the file holds no secret."""
    perms = {**nats_permissions(prefix), **(extra or {})}
    lines = ["authorization {", "  users = ["]
    for user, password in passwords.items():
        p = perms[user]
        if user in COMING_SERVICES:
            lines.append(f"    # coming service, not built yet: {p.note}")
        elif p.note:
            lines.append(f"    # {p.note}")
        lines.append(
            f"    {{user: {_q(user)}, password: {'$' + password if env_refs else _q(password)}, permissions: {{"
            f"publish: {_allow(p.publish)}, subscribe: {_allow(p.subscribe)}}}}}"
        )
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RedisAcl:
    """One Redis ACL user: the key patterns it may touch and the commands it may run."""

    keys: tuple[str, ...]
    commands: str
    note: str = ""


# Data commands only, no admin or server-wide ones (FLUSHALL, KEYS, CONFIG, DEBUG, CLIENT KILL
# … are all @dangerous), scripts by EVAL/EVALSHA/SCRIPT LOAD only (no FUNCTION), no pub/sub.
# SCAN would list every service's key names: only the alerts service, which needs it, has it.
_COMMANDS = ("-@all +@read +@write +@transaction +@connection -@dangerous -function +time "
             "+eval +evalsha +script|load +script|exists -scan -randomkey")


def redis_acl(prefix: str = "sleuth") -> dict[str, RedisAcl]:
    """The Redis ACL user of every service: its key patterns (``<prefix>:<area>:*``) and commands.
    No service reads another's keys today; the agent also owns ``<prefix>:llm:*`` (the per-user
    daily AI budget)."""
    p = prefix
    return {
        "gateway": RedisAcl((f"{p}:gateway:*",), _COMMANDS,
                            "rate limits, conversations, web-chat channels"),
        "authz-cache": RedisAcl((f"{p}:authz:*",), _COMMANDS, "scope and token caches"),
        "agent": RedisAcl((f"{p}:agent:*", f"{p}:llm:*"), _COMMANDS, "answered marks, AI budget"),
        "alerts": RedisAcl((f"{p}:alerts:*",), _COMMANDS + " +scan",
                           "windows, batches, channel marks, cooldowns (SCAN for cooldowns)"),
        "scheduler": RedisAcl((f"{p}:scheduler:*",), _COMMANDS, "schedules, runs, fired-occurrence marks"),
        "reporter": RedisAcl((f"{p}:reporter:*",), _COMMANDS, "report records, the email's once-mark"),
    }


def redis_acl_file(passwords: Mapping[str, str], prefix: str = "sleuth") -> str:
    """A Valkey/Redis ACL file: the ``default`` user off, one user per entry of ``passwords``,
    passwords stored as SHA-256 (``#<hex>``), never in clear."""
    acl = redis_acl(prefix)
    lines = ["user default off resetkeys resetchannels -@all"]
    for user, password in passwords.items():
        a = acl[user]
        digest = hashlib.sha256(password.encode()).hexdigest()
        keys = " ".join(f"~{k}" for k in a.keys)
        lines.append(f"user {user} on #{digest} resetkeys {keys} resetchannels {a.commands}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Credentials:
    """Passwords of one run of the embedded stack: NATS users and Redis users, made fresh at
    every start and kept only in memory, the server's config (NATS, mode 0600) and the hashes
    of the ACL file (Redis)."""

    nats: dict[str, str]
    redis: dict[str, str]

    @classmethod
    def generate(cls, extra_nats_users: Iterable[str] = ()) -> Credentials:
        nats_users = (*SERVICES, AUDIT_USER, *extra_nats_users)
        return cls(
            nats={u: secrets.token_urlsafe(32) for u in nats_users},
            redis={u: secrets.token_urlsafe(32) for u in SERVICES},
        )

    def service_env(self, service: str) -> dict[str, str]:
        """The environment of one service process: its own NATS and Redis user and passwords,
        nobody else's (the inbox prefix follows from the user name)."""
        return {
            "SLEUTH_NATS__USER": service,
            "SLEUTH_NATS_PASSWORD": self.nats[service],
            "SLEUTH_REDIS__USERNAME": service,
            "SLEUTH_REDIS_PASSWORD": self.redis[service],
        }
