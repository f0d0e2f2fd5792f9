"""Web-chat channels over HTTP: list them, read them, post to them (chat commands).

``GET /v1/channels`` → the caller's channels; ``GET /v1/channels/{channel}/messages`` →
``{"channel", "messages": [{"id", "author", "text", "created_at", "origin", "html", ...}]}``
newest last; ``POST /v1/channels/{channel}/messages {"text"}`` stores the message and, when
the whole message is a command, answers it there (``run_command`` with ``surface="web"``: the
same answers as everywhere, except that nothing of the poster's own access is shown to the
channel). Members only (``gateway.channels[].members``); others get 403, unknown channels 404.
A post takes a token from the poster's question bucket (as a question does), a read from their
read bucket; over either: 429 with Retry-After.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from sleuth_gateway.auth import Identity
from sleuth_gateway.body import parse_json_object, read_body
from sleuth_gateway.channels import channel_message
from sleuth_gateway.commands import parse_command, run_command
from sleuth_gateway.errors import BadRequest, NotFound, PayloadTooLarge
from sleuth_gateway.handlers import _gw, _identify, _json, _take_question
from sleuth_gateway.render import render_markdown
from sleuth_gateway.settings import ChannelSettings

log = logging.getLogger(__name__)

__all__ = ["channel_messages", "list_channels", "post_channel_message"]

BOT = "sleuth"


def _member_channel(request: Request, identity: Identity) -> ChannelSettings:
    name = request.path_params["channel"]
    channel = _gw(request).settings.gateway.channel(name)
    # One answer for "no such channel" and "not yours": a non-member learns nothing, not even
    # that the channel exists.
    if channel is None or not channel.admits(identity.user, identity.groups):
        raise NotFound(f"you are not a member of a channel {name!r}")
    return channel


def _with_html(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for msg in messages:
        msg["html"] = render_markdown(str(msg.get("text", "")))
    return messages


async def list_channels(request: Request) -> Response:
    identity = await _identify(request)
    channels = [
        c.name for c in _gw(request).settings.gateway.channels if c.admits(identity.user, identity.groups)
    ]
    return _json(request, {"user": identity.user, "channels": channels})


async def channel_messages(request: Request) -> Response:
    identity = await _identify(request)
    channel = _member_channel(request, identity)
    messages = await _gw(request).channels.messages(channel.name)
    return _json(request, {"channel": channel.name, "messages": _with_html(messages)})


async def post_channel_message(request: Request) -> Response:
    gw = _gw(request)
    cfg = gw.settings.gateway
    identity = await _identify(request, bucket="none")
    channel = _member_channel(request, identity)
    raw = await read_body(request, cfg.max_body_bytes, cfg.body_timeout)
    example = '{"text": "alerts status"}'
    text = parse_json_object(raw, cfg.max_json_depth, example).get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest(f"the body must be a JSON object like {example}")
    if len(text) > cfg.question_limit:
        raise PayloadTooLarge(
            f"the message is {len(text)} characters long; the limit is {cfg.question_limit}"
        )
    await _take_question(gw, identity, "messages", "web")
    posted = [channel_message(text, identity.user)]
    await gw.channels.append(channel.name, posted[0])
    command = parse_command(text)
    if command is not None:
        reply = await run_command(
            gw, identity, command, surface="web", token=request.state.token, channel=channel.name
        )
        posted.append(channel_message(reply, BOT, origin="command"))
        await gw.channels.append(channel.name, posted[1])
    return _json(request, {"channel": channel.name, "messages": _with_html(posted)})
