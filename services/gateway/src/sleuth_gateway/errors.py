"""Errors a caller sees: each becomes ``{"error": ..., "request_id": ...}`` with a fitting status."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApiError",
    "BadRequest",
    "BusUnavailable",
    "Busy",
    "Conflict",
    "DependencyUnavailable",
    "Forbidden",
    "JobTimeout",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "RequestTimeout",
    "Unauthorized",
    "UnsupportedMediaType",
]


class ApiError(Exception):
    """An error with an HTTP status and a message meant for the caller."""

    status = 500

    def __init__(
        self, message: str, *, headers: dict[str, str] | None = None, reason: str = "", **extra: Any
    ) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}
        self.reason = reason
        """Why a guard refused the request (the ``reason`` label of ``sleuth_gateway_refused``)."""
        self.extra = extra


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer realm="sleuth"'}, **extra)


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class RequestTimeout(ApiError):
    """The client did not send its request in time; the connection is closed after the answer."""

    status = 408

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"Connection": "close"})


class PayloadTooLarge(ApiError):
    status = 413


class RateLimited(ApiError):
    status = 429

    def __init__(self, message: str, retry_after: float, *, reason: str = "") -> None:
        seconds = max(1, int(retry_after + 0.999))
        super().__init__(message, headers={"Retry-After": str(seconds)}, reason=reason, retry_after=seconds)


class DependencyUnavailable(ApiError):
    """authz-cache or Redis did not answer: never guess, answer 503 quickly."""

    status = 503


class Busy(ApiError):
    """More work waits for the agents than they can finish in time: a new question is refused
    (nothing submitted, nothing stored) with a hint when to ask again."""

    status = 503

    def __init__(self, message: str, retry_after: float) -> None:
        seconds = max(1, int(retry_after + 0.999))
        super().__init__(message, headers={"Retry-After": str(seconds)}, retry_after=seconds)


class BusUnavailable(ApiError):
    """NATS / JetStream could not take the job."""

    status = 503


class JobTimeout(ApiError):
    status = 504


class Conflict(ApiError):
    """The request id was used before for another question (or by the same person with other
    access): a retry must repeat its request exactly."""

    status = 409


class UnsupportedMediaType(ApiError):
    """A body of another type than the endpoint takes (``/mcp``: JSON only)."""

    status = 415
