"""Slow clients against the real webhook server: a head or a body trickled a byte at a time is cut
off within its deadline, and Alertmanager's posts are served meanwhile."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from sleuth_common.subjects import Subjects

from .conftest import TOKENS, alert, payload

pytestmark = pytest.mark.connected

DEADLINE = 1.5


def _trickle(port: int, first: bytes, slow: bytes, within: float) -> tuple[float, bytes]:
    """Send ``first`` at once, then ``slow`` a byte every 0.2 s; (seconds until the server closed
    the connection or ``within`` passed, everything it sent)."""
    t0 = time.monotonic()
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=within) as sock:
        sock.settimeout(0.2)
        if first:
            sock.sendall(first)
        for byte in slow:
            if time.monotonic() - t0 > within:
                break
            try:
                sock.sendall(bytes([byte]))
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        while time.monotonic() - t0 < within:  # the rest of the answer, then the close
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            got += chunk
    return time.monotonic() - t0, got


async def test_slow_heads_and_bodies_are_cut_off_while_posts_are_served(start_alerts):
    async with start_alerts(header_timeout=DEADLINE, body_timeout=DEADLINE, window=60.0) as s:
        port = s.settings.alerts.port
        js, stream = s.bus.nc.jetstream(), Subjects("sleuth").stream_alerts
        first = (await js.stream_info(stream)).state.last_seq
        body = json.dumps(payload(alert())).encode()
        head = (
            f"POST /v1/alertmanager/team-a HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {TOKENS['TEST_ALERTS_TOKEN_A']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        slow_head = asyncio.to_thread(_trickle, port, b"", head, 15.0)
        slow_body = asyncio.to_thread(_trickle, port, head, body, 15.0)
        silent = asyncio.to_thread(_trickle, port, b"", b"", 15.0)

        async def meanwhile() -> list[int]:
            await asyncio.sleep(0.3)
            return [(await s.post("team-a", payload(alert(pod=f"p-{i}")))).status_code for i in range(5)]

        (head_s, head_got), (body_s, body_got), (silent_s, silent_got), served = await asyncio.gather(
            slow_head, slow_body, silent, meanwhile()
        )
        assert served == [200] * 5
        for elapsed in (head_s, body_s, silent_s):
            assert DEADLINE * 0.9 < elapsed < DEADLINE + 5, (head_s, body_s, silent_s)
        assert head_got.startswith(b"HTTP/1.1 408") and b'"request_id"' in head_got, head_got
        assert body_got.startswith(b"HTTP/1.1 408") and b"did not arrive" in body_got, body_got
        assert b"x-request-id" in body_got.lower()
        assert silent_got == b""  # nothing asked, nothing answered: just closed
        # The trickled alert was never stored: five posts, five stored payloads.
        assert (await js.stream_info(stream)).state.last_seq - first == 5
