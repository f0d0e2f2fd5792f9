"""The embedded stack's servers are real processes that answer their protocols."""

from __future__ import annotations

import nats
import pytest
import redis.asyncio as aioredis

pytestmark = pytest.mark.connected


async def test_nats_server_has_jetstream(nats_server) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="T", subjects=["t.>"])
        ack = await js.publish("t.x", b"hello")
        assert ack.stream == "T" and ack.seq == 1
    finally:
        await nc.close()


async def test_valkey_answers(valkey) -> None:
    r = aioredis.from_url(valkey.url)
    try:
        await r.set("k", "v")
        assert await r.get("k") == b"v"
    finally:
        await r.aclose()
