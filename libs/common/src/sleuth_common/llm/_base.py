"""The one interface every LLM client has, and the retry loop they share."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from opentelemetry.trace import SpanKind

from sleuth_common.llm._settings import LlmSettings
from sleuth_common.llm._types import (
    LlmError,
    LlmRejected,
    LlmRequest,
    LlmResponse,
    LlmRetryableError,
    LlmUnavailable,
)
from sleuth_common.tracing import internal_span

__all__ = ["LlmClient", "LlmObserver", "RetryPolicy", "status_error"]

log = logging.getLogger(__name__)


class LlmObserver:
    """Hooks for metrics; the defaults do nothing. ``attempt`` is called once per HTTP attempt
    with its outcome (``ok``, ``rate_limited``, ``server_error``, ``network``, ``timeout``,
    ``incomplete``, ``bad_tool_arguments``, ``rejected``); ``breaker`` on every circuit change."""

    def attempt(self, provider: str, outcome: str, seconds: float) -> None:
        return None

    def breaker(self, name: str, state: str) -> None:
        return None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.5
    """Each delay is reduced by up to this fraction, at random, so replicas do not retry in step."""

    @classmethod
    def of(cls, settings: LlmSettings) -> RetryPolicy:
        return cls(max(1, settings.retries + 1), settings.backoff, settings.backoff_max)

    def delay(self, retry: int, rng: random.Random, retry_after: float | None = None) -> float:
        d = min(self.max_delay, self.base_delay * (2**retry))
        d *= 1.0 - self.jitter * rng.random()
        if retry_after is not None:
            d = max(d, min(retry_after, self.max_delay))
        return d


Sleep = Callable[[float], Awaitable[None]]


class LlmClient(ABC):
    """``await client.complete(request) -> LlmResponse``; raises ``LlmUnavailable`` when every
    attempt failed and ``LlmRejected`` for a request the endpoint refuses (4xx)."""

    provider = "llm"

    def __init__(
        self,
        settings: LlmSettings,
        *,
        retry: RetryPolicy | None = None,
        observer: LlmObserver | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.model = settings.resolved_model()
        self.retry = retry or RetryPolicy.of(settings)
        self.observer = observer or LlmObserver()
        self._sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def tool_name_limit(self) -> int:
        return self.settings.tool_name_limit

    async def complete(self, request: LlmRequest) -> LlmResponse:
        last: LlmError | None = None
        for attempt in range(self.retry.attempts):
            started = time.monotonic()
            try:
                async with asyncio.timeout(self.settings.timeout):
                    response = await self._traced_attempt(request)
            except TimeoutError:
                last = LlmRetryableError(f"no complete answer within {self.settings.timeout:g}s")
                outcome = "timeout"
            except LlmRetryableError as exc:
                last = exc
                outcome = _outcome(exc)
            except LlmError as exc:
                self.observer.attempt(self.provider, _outcome(exc), time.monotonic() - started)
                raise
            else:
                self.observer.attempt(self.provider, "ok", time.monotonic() - started)
                return response
            self.observer.attempt(self.provider, outcome, time.monotonic() - started)
            if attempt + 1 < self.retry.attempts:
                delay = self.retry.delay(attempt, self._rng, last.retry_after)
                log.warning(
                    "LLM request failed (%s: %s); retry %d in %.2fs",
                    outcome,
                    last,
                    attempt + 1,
                    delay,
                    extra={"llm": self.name},
                )
                await self._sleep(delay)
        raise LlmUnavailable(
            f"{self.name}: {last} (after {self.retry.attempts} attempts)",
            status=last.status if last else None,
        )

    async def _traced_attempt(self, request: LlmRequest) -> LlmResponse:
        """``_attempt`` in a ``chat <model>`` span: model, token counts, stop reason; never text."""
        with internal_span(f"chat {self.model}", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
        }) as span:
            response = await self._attempt(request)
            span.set_attributes({
                "gen_ai.response.model": response.model or self.model,
                "gen_ai.usage.input_tokens": response.usage.input_tokens,
                "gen_ai.usage.output_tokens": response.usage.output_tokens,
                "gen_ai.response.finish_reasons": [response.stop],
            })
            return response

    @abstractmethod
    async def _attempt(self, request: LlmRequest) -> LlmResponse:
        """One HTTP attempt; raise ``LlmRetryableError`` / ``LlmRejected``, nothing else."""

    async def aclose(self) -> None:
        return None


def _outcome(exc: LlmError) -> str:
    if exc.kind in ("incomplete", "bad_tool_arguments", "rejected"):
        return exc.kind
    if exc.status == 429:
        return "rate_limited"
    if exc.status is not None and exc.status >= 500:
        return "server_error"
    if exc.status is None and exc.kind == "retryable":
        return "network"
    return exc.kind


def status_error(status: int, message: str, retry_after: str | None = None) -> LlmError:
    """The error for an HTTP status: 408, 409, 429 and 5xx are retryable, other 4xx are not."""
    after: float | None = None
    if retry_after:
        try:
            after = float(retry_after)
        except ValueError:
            after = None
    if status in (408, 409, 429) or status >= 500:
        return LlmRetryableError(f"HTTP {status}: {message}", status=status, retry_after=after)
    return LlmRejected(f"HTTP {status}: {message}", status=status)
