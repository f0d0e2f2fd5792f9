"""``alerts on|off|status`` (request/reply on ``sleuth.alerts.channels.<op>``, from the gateway).

``alerts on`` stores who said it (user and groups, never a token or a scope); every batch for
the channel then runs as that user, with a scope the agent resolves fresh for that batch. The
reply is what the bot says publicly in the channel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from pydantic import ValidationError
from redis.exceptions import RedisError

from sleuth_alerts.settings import Settings
from sleuth_alerts.store import Store
from sleuth_common.messages import AlertChannelReply, AlertChannelRequest

__all__ = ["ChannelCommands"]

log = logging.getLogger(__name__)


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"


class ChannelCommands:
    def __init__(self, store: Store, settings: Settings, clock: Callable[[], float]) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock

    def _routes(self, target: str) -> list[str]:
        return [r.name for r in self.settings.alerts.routes if r.target == target]

    def _route_identity(self, target: str) -> str:
        for r in self.settings.alerts.routes:
            if r.target == target and r.run_as is not None:
                return r.run_as.user
        return ""

    async def handle(self, req: AlertChannelRequest) -> AlertChannelReply:
        target = req.channel if ":" in req.channel else f"web:{req.channel}"
        routes = tuple(self._routes(target))
        no_route = "" if routes else "\n\nNo alert route posts to this channel yet."
        if req.op == "on":
            await self.store.mark(target, req.user, req.groups, self.clock())
            text = (
                f"🔔 **{req.user}** turned alerts on here: alerts for this channel are now investigated "
                f"as **{req.user}**. What is posted here fits every member of this channel: only what "
                "all of you may read is shown, alerts about anything else are counted, not named. "
                "`alerts off` stops this." + no_route
            )
            return AlertChannelReply(text=text, marked_by=req.user, run_as=req.user, routes=routes)
        if req.op == "off":
            old = await self.store.unmark(target)
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
        cfg = self.settings.alerts
        fallback = self._route_identity(target)
        if mark is not None:
            who = f"with **{mark.user}**'s access (they said `alerts on` here)"
        elif fallback:
            who = f"with the access of **{fallback}** (the alert route's identity)"
        else:
            who = "by nobody: alerts are listed without an investigation (say `alerts on`)"
        cooling = await self.store.cooling(target)
        text = (
            f"Alert routes posting here: {', '.join(routes) or 'none'}. Alerts are investigated {who}. "
            f"Window {_duration(cfg.window)}, cooldown {_duration(cfg.cooldown)}, at most "
            f"{cfg.max_per_window} alerts per investigation; {cooling} alert(s) in cooldown now."
        )
        return AlertChannelReply(
            text=text,
            marked_by=mark.user if mark else "",
            run_as=mark.user if mark else fallback,
            routes=routes,
        )

    async def on_request(self, msg: Msg) -> None:
        try:
            req = AlertChannelRequest.model_validate_json(msg.data)
        except ValidationError:
            reply = AlertChannelReply(ok=False, text="malformed alerts command")
        else:
            try:
                reply = await self.handle(req)
            except (RedisError, OSError) as exc:
                log.warning("alerts command failed: %s", exc)
                reply = AlertChannelReply(ok=False, text="The alert state is unavailable; try again shortly.")
        if msg.reply:
            try:
                await msg.respond(reply.to_bytes())
            except NatsError as exc:
                log.warning("could not answer an alerts command: %s", exc)
