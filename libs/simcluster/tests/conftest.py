"""Fixtures for simcluster's tests: the fixture snapshot, a running server, HTTPS clients."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from sleuth_simcluster import SimCluster

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "basic"


@pytest.fixture(scope="session")
def fixture_snapshot() -> Path:
    return FIXTURE


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    """One simcluster over the fixture snapshot, shared by a test module."""
    with SimCluster(FIXTURE, tmp_path_factory.mktemp("simcluster")) as running:
        yield running


@pytest.fixture
def client(sim: SimCluster) -> Iterator[Callable[..., httpx.Client]]:
    """`client("alice")`: an httpx client with alice's token that verifies the server with the CA."""
    opened: list[httpx.Client] = []

    def make(user: str | None = None, **headers: str) -> httpx.Client:
        hdrs = dict(headers)
        if user is not None:
            hdrs["Authorization"] = f"Bearer {sim.token(user)}"
        c = httpx.Client(base_url=sim.url, verify=ssl.create_default_context(cafile=str(sim.ca_file)),
                         headers=hdrs, timeout=10)
        opened.append(c)
        return c

    yield make
    for c in opened:
        c.close()
