"""``run_command``: one runner for every chat surface (web chat and API, web-chat channels, the
MCP ``ask`` tool, Mattermost later), so a command answers the same wherever it is said."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sleuth_common.channels import member_requesters
from sleuth_common.messages import AlertChannelRequest, ClusterScope, KbRequest, Requester, ScopeReply
from sleuth_common.messages.reports import ReportRequest
from sleuth_common.messages.schedules import ScheduleRequest, conversation_target
from sleuth_gateway import audit
from sleuth_gateway.auth import Identity
from sleuth_gateway.bus import BusError
from sleuth_gateway.commands._access import Access, caller_access
from sleuth_gateway.commands._diagnostics import diagnostics
from sleuth_gateway.commands._parse import ALERT_OPS, Command
from sleuth_gateway.errors import ApiError, DependencyUnavailable
from sleuth_gateway.runtime import Gateway

__all__ = ["help_text", "run_command"]

log = logging.getLogger(__name__)

_PRIVATE_ONLY = (
    "`{name}` shows your own access, so I answer it only in your private conversation "
    "(everyone in this channel would read it here)."
)
REFUSED_DIAGNOSTICS = (
    "Sorry: `diagnostics` is for cluster admins (people who can read every configured cluster "
    "cluster-wide). Your platform team can run it for you."
)


async def run_command(
    gw: Gateway,
    identity: Identity,
    command: Command,
    *,
    surface: str,
    token: str | None = None,
    channel: str | None = None,
    members: tuple[Requester, ...] = (),
    target: str | None = None,
    thread: str = "",
) -> str:
    """Run ``command`` for ``identity`` and return the answer (Markdown).

    ``surface``: where it was said (``api`` = web chat and HTTP API, ``web`` = a web-chat
    channel, ``mcp``, ``mattermost``), for the log line and a channel's chat target
    (``<surface>:<channel>``). ``channel``: the channel it was said in when others read the
    answer there (the caller checked membership), ``None`` in a private conversation; commands
    that show the caller's own access answer only in private. ``token``: the caller's bearer
    token where the surface has one; no command needs it today, and it is never logged.
    ``members``: who reads ``channel`` where the chat system (not the config) knows it (a
    Mattermost channel), the asker included, for ``alerts``, schedules and reports.
    ``target``/``thread``: where later posts for this command go (a schedule's answers, a
    report), when not ``<surface>:<channel>`` — a Mattermost direct message; default: the
    channel, or the asker's private conversation (``conversation:<user>``).

    Raises ``DependencyUnavailable`` (an ``ApiError``, status 503) when what the command needs
    (authz-cache, the bus, the alerts service) does not answer; ``diagnostics`` reports broken
    parts in its answer instead. One log line per command: user, command, surface, channel,
    outcome.
    """
    del token  # accepted for surfaces that have one; nothing uses it yet
    t0 = time.monotonic()
    outcome = "error"
    try:
        where = _Where.of(gw, identity, surface, channel, members, target, thread)
        answer, outcome = await _dispatch(gw, identity, command, surface, channel, members, where)
    except ApiError as exc:
        outcome = exc.reason or type(exc).__name__
        raise
    finally:
        audit.command_run(gw, identity.user, identity.groups, command.name, surface, outcome, channel=bool(channel))
        log.info(
            "command",
            extra={
                "user": identity.user,
                "command": command.name,
                "arg": command.arg,
                "surface": surface,
                "channel": channel or "",
                "outcome": outcome,
                "duration_ms": round((time.monotonic() - t0) * 1000, 1),
            },
        )
    return answer


async def _dispatch(
    gw: Gateway,
    identity: Identity,
    command: Command,
    surface: str,
    channel: str | None,
    members: tuple[Requester, ...],
    where: _Where,
) -> tuple[str, str]:
    """``(answer, outcome)``."""
    if command.name in _SCHEDULE_OPS:
        return await _schedules(gw, identity, command, where)
    if command.name == "report":
        return await _report(gw, identity, where)
    if command.name == "refresh":
        try:
            await gw.bus.invalidate(identity.user)
        except BusError as exc:
            raise DependencyUnavailable(f"authorization is unavailable ({exc}); try again shortly") from exc
        gw.authenticator.forget_user(identity.user)
        return "Done: your access will be checked again on your next question.", "ok"
    if command.name == "access":
        if channel is not None:
            return _PRIVATE_ONLY.format(name="access"), "private_only"
        return (await caller_access(gw, identity)).markdown(identity), "ok"
    if command.name == "diagnostics":
        if channel is not None:
            return _PRIVATE_ONLY.format(name="diagnostics"), "private_only"
        access = await caller_access(gw, identity)
        if not access.cluster_admin:
            return REFUSED_DIAGNOSTICS, "refused"
        return await diagnostics(gw, access, identity.user), "ok"
    if command.name == "alerts" and command.arg in ALERT_OPS:
        return await _alerts(gw, identity, command.arg, surface, channel, members)
    if command.name == "kb":
        if channel is not None:
            return _PRIVATE_ONLY.format(name="kb"), "private_only"
        return await _kb(gw, identity, command)
    return await help_text(gw, identity, channel), "ok"


KB_USAGE = (
    "Runbooks: `kb list`, `kb show <id>`; cluster admins also `kb rm <id>` and `kb add <id>` with the "
    "runbook on the lines below it:\n\n"
    "```\nkb add postgres-disk-full\n---\ntitle: Postgres disk full\n"
    "tags: [alert:PostgresDiskFull, family:disk_full, namespace:team-a]\n---\n"
    "1. Check the volume's usage ...\n```\n\n"
    "Tags: `alert:`, `family:`, `workload:`, `kind:` say what it is for; `namespace:` and `cluster:` who "
    "may read it (everyone, when it has none). Ids: lower-case letters, digits and `-`."
)


async def _kb(gw: Gateway, identity: Identity, command: Command) -> tuple[str, str]:
    """``kb …``: answered by an agent, for this caller's scope; editors are cluster admins."""
    if command.arg == "usage":
        return KB_USAGE, "usage"
    access = await caller_access(gw, identity)
    scope = ScopeReply(user=identity.user, groups=identity.groups, clusters={
        name: ClusterScope(namespaces=c.namespaces, cluster_wide=c.cluster_wide)
        for name, c in access.clusters.items() if not c.unavailable})
    req = KbRequest(op=command.arg, user=identity.user, editor=access.cluster_admin, scope=scope,  # type: ignore[arg-type]
                    id=command.target, text=command.text)
    try:
        reply = await gw.bus.agent_kb(req, gw.settings.gateway.alerts_timeout)
    except BusError as exc:
        raise DependencyUnavailable(f"runbooks are unavailable ({exc}); try again shortly") from exc
    return reply.text, "ok" if reply.ok else "refused"


async def _alerts(
    gw: Gateway,
    identity: Identity,
    op: str,
    surface: str,
    channel: str | None,
    members: tuple[Requester, ...],
) -> tuple[str, str]:
    if channel is None:
        return (
            f"`alerts {op}` works in a channel (it changes what everyone there sees); "
            "post it in one of your channels instead of this private conversation.",
            "not_here",
        )
    req = AlertChannelRequest(
        op=op,  # type: ignore[arg-type]  # one of ALERT_OPS
        channel=f"{surface}:{channel}",
        user=identity.user,
        groups=identity.groups,
        members=members,
    )
    try:
        reply = await gw.bus.alerts_command(req, gw.settings.gateway.alerts_timeout)
    except BusError as exc:
        raise DependencyUnavailable(f"alerts are unavailable ({exc}); try again shortly") from exc
    return reply.text, "ok"


_SCHEDULE_OPS = {"schedule": "create", "schedules": "list", "run": "run", "delete": "delete",
                 "pause": "pause", "resume": "resume"}
_OFF = "{what} {are} not switched on in this deployment."


@dataclass(frozen=True)
class _Where:
    """Where a command was said, for the services that post there later."""

    target: str
    thread: str
    members: tuple[Requester, ...]

    @classmethod
    def of(
        cls,
        gw: Gateway,
        identity: Identity,
        surface: str,
        channel: str | None,
        members: tuple[Requester, ...],
        target: str | None,
        thread: str,
    ) -> _Where:
        if target is None:
            target = f"{surface}:{channel}" if channel is not None else conversation_target(identity.user)
        if not members and channel is not None and surface == "web":
            config = gw.settings.gateway.channel(channel)
            asker = Requester(user=identity.user, groups=identity.groups)
            members = (asker, *member_requesters(config.members if config else (), known=[asker]))
        return cls(target, thread, members)


async def _schedules(gw: Gateway, identity: Identity, command: Command, where: _Where) -> tuple[str, str]:
    if not gw.settings.gateway.schedules:
        return _OFF.format(what="Schedules", are="are"), "off"
    req = ScheduleRequest(
        op=_SCHEDULE_OPS[command.name],  # type: ignore[arg-type]  # one of ScheduleOp
        user=identity.user,
        groups=identity.groups,
        target=where.target,
        thread=where.thread,
        members=where.members,
        text=command.arg if command.name == "schedule" else "",
        id=command.arg if command.name != "schedule" else "",
    )
    try:
        reply = await gw.bus.schedules_command(req, gw.settings.gateway.commands_timeout)
    except BusError as exc:
        raise DependencyUnavailable(f"schedules are unavailable ({exc}); try again shortly") from exc
    return reply.text, "ok" if reply.ok else "refused"


async def _report(gw: Gateway, identity: Identity, where: _Where) -> tuple[str, str]:
    if not gw.settings.gateway.reports:
        return _OFF.format(what="Reports", are="are"), "off"
    req = ReportRequest(
        op="run", user=identity.user, groups=identity.groups, target=where.target, thread=where.thread,
        members=where.members,
    )
    try:
        reply = await gw.bus.reports_command(req, gw.settings.gateway.commands_timeout)
    except BusError as exc:
        raise DependencyUnavailable(f"reports are unavailable ({exc}); try again shortly") from exc
    return reply.text, "ok" if reply.ok else "refused"


async def _access_or_none(gw: Gateway, identity: Identity) -> Access | None:
    try:
        return await caller_access(gw, identity)
    except DependencyUnavailable:
        return None


async def help_text(gw: Gateway, identity: Identity, channel: str | None = None) -> str:
    """What this deployment offers this caller: ``alerts …`` where they have a channel,
    ``diagnostics`` for cluster admins (in private). In a channel, nothing of the caller's own
    access shows (every member reads the answer)."""
    access = None if channel is not None else await _access_or_none(gw, identity)
    own = access.namespaces() if access is not None else []
    namespace = own[0] if own else "my-namespace"
    has_channel = channel is not None or any(
        c.admits(identity.user, identity.groups) for c in gw.settings.gateway.channels
    )
    where = " (in your private conversation)" if channel is not None else ""
    lines = [
        "**Sleuth** investigates your Kubernetes clusters read-only and answers with evidence.",
        "",
        "Ask a question in plain words, for example:",
        "",
        f"- `what is failing in {namespace}?`",
        f"- `why is the api deployment in {namespace} crashing?`",
        "",
        "Commands (the whole message):",
        "",
        "- `help` — this text",
        "- `refresh` — re-check your access now (after your permissions changed)",
        f"- `access` — what you can read, per cluster{where}",
    ]
    if has_channel:
        lines.append(
            "- `alerts on` / `alerts off` / `alerts status` — in a channel: investigate the alerts "
            "posted there with your access (everyone in the channel then sees what you can see), "
            "stop that, or show who does"
        )
    if gw.settings.gateway.schedules:
        lines += [
            "- `schedule every weekday at 09:00 what is failing in "
            f"{namespace}?` — ask it on a schedule (also `every 2h`, `every monday at 9am in Europe/Berlin`, "
            '`cron "0 9 * * 1-5" …`); answers come here',
            "- `schedules` — the schedules here; `run <id>`, `pause <id>`, `resume <id>`, `unschedule <id>`",
        ]
    if gw.settings.gateway.reports:
        lines.append("- `report` — a best-practice report of what you can read (what will hurt before it does)")
    lines.append("- `kb list`, `kb show <id>` — the team's runbooks that answers link; `kb` alone for more")
    if access is not None and access.cluster_admin:
        lines.append("- `kb add <id>` (the runbook below it), `kb rm <id>` — edit runbooks (cluster admins)")
        lines.append("- `diagnostics` — how Sleuth's parts are doing (cluster admins)")
    lines += ["", "You only ever see what your own Kubernetes credentials let you read."]
    return "\n".join(lines)
