"""Fixtures shared by every test folder: real nats-server and Valkey processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.embedded import NatsServer, ValkeyServer

REPO = Path(__file__).resolve().parent


@pytest.fixture(scope="session", autouse=True)
def _no_real_model() -> Iterator[None]:
    """No test may reach a real LLM: a developer's SLEUTH_LLM_* settings (and provider keys) are
    hidden from every test and every process a test starts. Tests that want a model point
    ``extra_env`` at the fake model server."""
    hidden = {k: os.environ.pop(k) for k in list(os.environ)
              if k.startswith("SLEUTH_LLM_") or k in {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}}
    try:
        yield
    finally:
        os.environ.update(hidden)


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
