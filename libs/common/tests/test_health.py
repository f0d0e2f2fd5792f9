"""Liveness, readiness and the wait for NATS and Redis (``sleuth_common.health``)."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path

import nats.errors
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from sleuth.embedded import ValkeyServer, free_port
from sleuth_common.config import RedisSettings
from sleuth_common.connect import redis_client
from sleuth_common.health import (
    Readiness,
    RetryLog,
    describe,
    run_until_signalled,
    safe_url,
    unreachable,
    until_up,
)

HEALTH_LOGGER = "sleuth_common.health"


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == HEALTH_LOGGER]


@dataclass(frozen=True)
class Case:
    exc: BaseException
    reason: str


def _redis_refused() -> RedisConnectionError:
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 6379)")
        except OSError as e:
            raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connect call failed.") from e
    except RedisConnectionError as wrapped:
        return wrapped


REASONS = [
    Case(ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 4222)"), "Connection refused"),
    Case(socket.gaierror(-2, "Name or service not known"), "Name or service not known"),
    Case(TimeoutError(), "timed out"),
    Case(nats.errors.TimeoutError(), "timed out"),
    Case(nats.errors.Error("nats: 'Authorization Violation'"), "Authorization Violation"),
    Case(_redis_refused(), "Connection refused"),
]


@pytest.mark.parametrize("case", REASONS, ids=lambda c: type(c.exc).__name__ + ":" + c.reason)
def test_a_failure_is_named_in_a_few_words(case: Case) -> None:
    assert describe(case.exc) == case.reason


def test_unreachable_is_told_from_refused_or_misconfigured() -> None:
    assert unreachable(ConnectionRefusedError(111, "Connect call failed"))
    assert unreachable(OSError(errno.EHOSTUNREACH, "No route to host"))
    assert unreachable(_redis_refused())
    assert not unreachable(nats.errors.Error("nats: 'Authorization Violation'"))
    assert not unreachable(ssl.SSLCertVerificationError(1, "certificate verify failed"))
    assert not unreachable(FileNotFoundError(errno.ENOENT, "No such file or directory"))  # a .creds file


def test_addresses_are_logged_without_credentials() -> None:
    assert safe_url("nats://gw:s3cret@nats:4222, nats://other:4222") == "nats://nats:4222,nats://other:4222"
    assert safe_url("redis://:s3cret@valkey:6379/0") == "redis://valkey:6379/0"
    assert safe_url("nats://nats:4222") == "nats://nats:4222"


def test_one_line_per_retry_interval(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=HEALTH_LOGGER)
    retry = RetryLog("nats", "nats://gw:s3cret@nats:4222", 0.2)
    refused = ConnectionRefusedError(111, "Connect call failed ('10.0.0.7', 4222)")
    retry.failed(refused)
    retry.failed(refused)  # the same attempt reported twice (nats-py's callback, then until_up)
    assert lines(caplog) == ["nats at nats://nats:4222 unreachable (Connection refused); retrying every 0.2s"]
    time.sleep(0.2)
    retry.failed(nats.errors.Error("nats: 'Authorization Violation'"))
    retry.succeeded()
    assert lines(caplog)[1:] == [
        "nats at nats://nats:4222 not usable (Authorization Violation); retrying every 0.2s",
        "nats at nats://nats:4222 is up",
    ]
    assert "s3cret" not in caplog.text


def test_readiness_is_ready_only_when_every_dependency_is_ok() -> None:
    ready = Readiness({"nats": "ok", "redis": "ok"}, {"busy": 2})
    assert (ready.status_code, ready.body()) == (200, {"ready": True, "nats": "ok", "redis": "ok", "busy": 2})
    down = Readiness({"nats": "disconnected", "redis": "ok"})
    assert (down.status_code, down.body()) == (503, {"ready": False, "nats": "disconnected", "redis": "ok"})


async def test_a_configuration_error_is_not_retried() -> None:
    async def attempt() -> None:
        raise ValueError("nats.user is set but its password is empty")

    with pytest.raises(ValueError, match="password"):
        await asyncio.wait_for(until_up(attempt, RetryLog("nats", "nats://nats:4222", 10.0)), 1.0)


@pytest.mark.connected
async def test_waits_for_redis_until_it_is_started(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=HEALTH_LOGGER)
    port = free_port()
    settings = RedisSettings(url=f"redis://127.0.0.1:{port}/0", timeout=0.5, retry_interval=0.1)
    client = redis_client(settings)
    waiting = asyncio.create_task(until_up(client.ping, RetryLog("redis", settings.url, settings.retry_interval)))
    try:
        await asyncio.sleep(0.35)
        assert not waiting.done()
        refused = f"redis at redis://127.0.0.1:{port}/0 unreachable (Connection refused); retrying every 0.1s"
        assert 2 <= lines(caplog).count(refused) <= 5
        server = ValkeyServer(tmp_path / "valkey", port=port).start()
        try:
            assert await asyncio.wait_for(waiting, 3.0) is True
            assert lines(caplog)[-1] == f"redis at redis://127.0.0.1:{port}/0 is up"
        finally:
            server.stop()
    finally:
        waiting.cancel()
        await client.aclose()


async def test_a_signal_during_start_up_ends_the_wait_at_once() -> None:
    stopped: list[str] = []

    async def start() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # as the kubelet does while the service waits for NATS
        await asyncio.Event().wait()

    async def stop() -> None:
        stopped.append("stopped")

    await asyncio.wait_for(run_until_signalled(start, stop), 2.0)
    assert stopped == ["stopped"]


async def test_a_failed_start_up_is_raised_after_stopping() -> None:
    stopped: list[str] = []

    async def start() -> None:
        raise ValueError("no signing key")

    async def stop() -> None:
        stopped.append("stopped")

    with pytest.raises(ValueError, match="signing key"):
        await asyncio.wait_for(run_until_signalled(start, stop), 2.0)
    assert stopped == ["stopped"]
