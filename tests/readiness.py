"""Polling a service's ``/readyz`` in tests (shared by every service's readiness tests)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

__all__ = ["readiness_when"]


async def readiness_when(client: httpx.AsyncClient, **expected: object) -> dict[str, Any]:
    """The /readyz body once it shows ``expected`` (within 5 s)."""
    async with asyncio.timeout(5):
        while True:
            body: dict[str, Any] = (await client.get("/readyz")).json()
            if body.items() >= expected.items():
                return body
            await asyncio.sleep(0.02)


async def alive(client: httpx.AsyncClient) -> None:
    """Once /healthz answers that the process lives (within 5 s; connection refusals while it
    starts are waited out)."""
    async with asyncio.timeout(5):
        while True:
            try:
                if (await client.get("/healthz")).json() == {"status": "alive"}:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.02)
