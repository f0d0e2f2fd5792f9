"""Fixtures shared by every test folder: real nats-server and Valkey processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.embedded import NatsServer, ValkeyServer

REPO = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def demo_snapshot() -> Path:
    return REPO / "scenarios" / "demo"


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A fresh nats-server with JetStream for one test."""
    srv = NatsServer(tmp_path / "nats", log_path=tmp_path / "nats.log").start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def valkey(tmp_path: Path) -> Iterator[ValkeyServer]:
    """A fresh Valkey server for one test."""
    srv = ValkeyServer(tmp_path / "valkey", log_path=tmp_path / "valkey.log").start()
    try:
        yield srv
    finally:
        srv.stop()
