"""A backup endpoint behind a circuit breaker.

``closed``: the primary answers. After ``threshold`` consecutive failures of the primary the
circuit ``open``s: requests go straight to the backup for ``cooldown`` seconds. Then one request
probes the primary (``half_open``): success closes the circuit, failure opens it again. A request
the primary failed is retried on the backup, so a caller sees the failover as one slow answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from sleuth_common.llm._base import LlmClient, LlmObserver
from sleuth_common.llm._types import LlmError, LlmRejected, LlmRequest, LlmResponse

__all__ = ["CircuitBreaker", "FailoverClient"]

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(
        self,
        threshold: int = 3,
        cooldown: float = 30.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[State], None] | None = None,
    ) -> None:
        self.threshold = max(1, threshold)
        self.cooldown = cooldown
        self.clock = clock
        self.on_change = on_change
        self.state: State = "closed"
        self.failures = 0
        self._opened_at = 0.0
        self._probing = False

    def _set(self, state: State) -> None:
        if state != self.state:
            self.state = state
            if self.on_change is not None:
                self.on_change(state)

    def allow_primary(self) -> bool:
        """May this request use the primary? In ``half_open`` only one probe at a time."""
        if self.state == "closed":
            return True
        if self.state == "open" and self.clock() - self._opened_at >= self.cooldown:
            self._set("half_open")
        if self.state == "half_open" and not self._probing:
            self._probing = True
            return True
        return False

    def success(self) -> None:
        self.failures = 0
        self._probing = False
        self._set("closed")

    def failure(self) -> None:
        self.failures += 1
        was_probe = self._probing
        self._probing = False
        if was_probe or self.state == "half_open" or self.failures >= self.threshold:
            self._opened_at = self.clock()
            self._set("open")


class FailoverClient(LlmClient):
    """Looks like one client; ``name``/``model`` are the primary's."""

    def __init__(
        self,
        primary: LlmClient,
        backup: LlmClient,
        breaker: CircuitBreaker | None = None,
        observer: LlmObserver | None = None,
    ) -> None:
        super().__init__(primary.settings, retry=primary.retry, observer=observer or primary.observer)
        self.primary = primary
        self.backup = backup
        self.provider = primary.provider
        self.model = primary.model
        self.breaker = breaker or CircuitBreaker()
        if self.breaker.on_change is None:
            self.breaker.on_change = lambda state: self.observer.breaker(primary.name, state)
        self.last_used: LlmClient = primary

    @property
    def tool_name_limit(self) -> int:
        return min(self.primary.tool_name_limit, self.backup.tool_name_limit)

    async def complete(self, request: LlmRequest) -> LlmResponse:
        if self.breaker.allow_primary():
            try:
                response = await self.primary.complete(request)
            except LlmRejected as exc:
                if exc.request_fault:
                    # The request itself is wrong; the backup would refuse it too.
                    self.breaker.success()
                    raise
                self.breaker.failure()
            except LlmError:
                self.breaker.failure()
            else:
                self.breaker.success()
                self.last_used = self.primary
                return response
        self.last_used = self.backup
        return await self.backup.complete(request)

    async def _attempt(self, request: LlmRequest) -> LlmResponse:  # pragma: no cover - complete() overrides
        return await self.complete(request)

    async def aclose(self) -> None:
        await self.primary.aclose()
        await self.backup.aclose()
