"""``alerts on|off|status`` (request/reply on ``sleuth.alerts.channels.<op>``, from the gateway;
the subscriber is in ``handlers``).

``alerts on`` stores who said it (user and groups, never a token or a scope); every batch for
the channel then runs as that user, with a scope the agent resolves fresh for that batch. The
reply is what the bot says publicly in the channel.

In a chat other than the built-in web chat (``mattermost:<channel_id>`` …) only the gateway knows
who reads the channel: it lists them in every request (``AlertChannelRequest.members``).
``alerts on`` stores them with the mark and is refused without them (an answer fitted to the
marker alone could show the others what they may not read); ``alerts status`` replaces the stored
ones when it carries them. There a route's ``run_as`` never investigates an unmarked channel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from sleuth_alerts.settings import Settings
from sleuth_alerts.store import Store, unique_members
from sleuth_common.audit import AuditLog
from sleuth_common.messages import AlertChannelReply, AlertChannelRequest, web_channel
from sleuth_common.messages.audit import ChannelMarked, Decision

__all__ = ["ChannelCommands"]

log = logging.getLogger(__name__)


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"


def _members(n: int) -> str:
    return "1 member" if n == 1 else f"{n} members"


class ChannelCommands:
    def __init__(self, store: Store, settings: Settings, clock: Callable[[], float],
                 audit: AuditLog | None = None) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.audit = audit

    def _audit(self, req: AlertChannelRequest, target: str, decision: Decision, reason: str = "",
               members: int = 0) -> None:
        if self.audit is not None and req.op in ("on", "off"):
            self.audit.emit_nowait(ChannelMarked(user=req.user, groups=req.groups, entry="bus", channel=target,
                                                 op=req.op, decision=decision, reason=reason,
                                                 counts={"members": members}))

    def _routes(self, target: str) -> list[str]:
        return [r.name for r in self.settings.alerts.routes if r.target == target]

    def _route_identity(self, target: str) -> str:
        """The route's ``run_as`` that investigates an unmarked channel ("" = none). Only for
        ``web:`` channels: elsewhere nobody but the gateway knows who reads the channel, and it
        says so only with ``alerts on|status``, so an unmarked channel there is never investigated."""
        if web_channel(target) is None:
            return ""
        for r in self.settings.alerts.routes:
            if r.target == target and r.run_as is not None:
                return r.run_as.user
        return ""

    def _unused_route_identity(self, target: str) -> str:
        """A note when a route names ``run_as`` for a channel where it is never used."""
        if web_channel(target) is not None:
            return ""
        if any(r.target == target and r.run_as is not None for r in self.settings.alerts.routes):
            return (" The alert route's own identity is not used in this chat: only `alerts on` tells "
                    "me who reads this channel.")
        return ""

    async def handle(self, req: AlertChannelRequest) -> AlertChannelReply:
        target = req.channel if ":" in req.channel else f"web:{req.channel}"
        routes = tuple(self._routes(target))
        no_route = "" if routes else "\n\nNo alert route posts to this channel yet."
        # Outside web chat only the gateway knows who reads the channel: it lists them with
        # every command, and an answer is fitted to them (``AlertChannelRequest.members``).
        listed = web_channel(target) is None
        members = unique_members(req.members) if listed else ()
        if req.op == "on":
            if listed and not members:
                self._audit(req, target, "refused", "readers_unknown")
                return await self._refused(target, routes)
            await self.store.mark(target, req.user, req.groups, self.clock(), members)
            self._audit(req, target, "allowed", members=len(members))
            readers = (
                f" Answers are fitted to the {_members(len(members))} of this channel now: when someone "
                "joins, say `alerts status` here so they are counted too (an answer fitted to fewer "
                "people than read the channel is not posted)." if listed else ""
            )
            text = (
                f"🔔 **{req.user}** turned alerts on here: alerts for this channel are now investigated "
                f"as **{req.user}**. What is posted here fits every member of this channel: only what "
                "all of you may read is shown, alerts about anything else are counted, not named. "
                f"`alerts off` stops this.{readers}" + no_route
            )
            return AlertChannelReply(text=text, marked_by=req.user, run_as=req.user, routes=routes)
        if req.op == "off":
            old = await self.store.unmark(target)
            self._audit(req, target, "allowed" if old is not None else "done", "" if old is not None else "not_marked")
            fallback = self._route_identity(target)
            then = (
                f"Alerts are investigated with the access of **{fallback}** (the alert route's identity)."
                if fallback
                else "Alerts arriving here are listed without an investigation."
            )
            if old is None:
                text = f"Alerts were not turned on in this channel. {then}"
            else:
                text = (
                    f"**{req.user}** turned alerts off here: alerts are no longer investigated with "
                    f"**{old.user}**'s access. {then}"
                )
            return AlertChannelReply(text=text, run_as=fallback, routes=routes)
        mark = await self.store.get_mark(target)
        if mark is not None and members and await self.store.set_members(target, members):
            mark = replace(mark, members=members)
        cfg = self.settings.alerts
        fallback = self._route_identity(target)
        run_as = ""
        if mark is not None and listed and not mark.members:
            who = ("by nobody for now: alerts were turned on here, but this chat has not told me who "
                   "reads the channel, so alerts are listed without an investigation (say `alerts on` again)")
        elif mark is not None:
            run_as = mark.user
            who = f"with **{mark.user}**'s access (they said `alerts on` here)"
            if listed:
                who += f", fitted to the {_members(len(mark.members))} of this channel"
        elif fallback:
            run_as = fallback
            who = f"with the access of **{fallback}** (the alert route's identity)"
        else:
            who = "by nobody: alerts are listed without an investigation (say `alerts on`)"
        cooling = await self.store.cooling(target)
        text = (
            f"Alert routes posting here: {', '.join(routes) or 'none'}. Alerts are investigated {who}."
            f"{self._unused_route_identity(target) if mark is None else ''} "
            f"Window {_duration(cfg.window)}, cooldown {_duration(cfg.cooldown)}, at most "
            f"{cfg.max_per_window} alerts per investigation; {cooling} alert(s) in cooldown now."
        )
        return AlertChannelReply(text=text, marked_by=mark.user if mark else "", run_as=run_as, routes=routes)

    async def _refused(self, target: str, routes: tuple[str, ...]) -> AlertChannelReply:
        """``alerts on`` in a chat that did not say who reads the channel: nothing changes (an
        answer fitted to the marker alone could show the others what they may not read)."""
        mark = await self.store.get_mark(target)
        run_as = mark.user if mark is not None and mark.members else ""
        text = (
            "Alerts were not turned on: this chat cannot tell me who reads the channel, and what I "
            "post here must fit everyone who reads it. Nothing changed."
        )
        return AlertChannelReply(ok=False, text=text, marked_by=mark.user if mark else "", run_as=run_as,
                                 routes=routes)
