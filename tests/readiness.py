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
