"""An in-memory audit log: who asked, as whom, for what, and what they got.

Every authenticated request (and every refused one) leaves one :class:`AuditRecord` in a bounded
deque on the :class:`~sleuth_simcluster.app.ApiServer` (``app.state.api.audit``,
``SimCluster.audit``), so a test can assert "kube-mcp read pods in team-a as alice, and never as
itself". Unauthenticated probes of public paths (``/healthz`` …) are not recorded. The server thread
appends while a test thread reads: both go through one lock.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

__all__ = ["AuditLog", "AuditRecord"]


@dataclass(frozen=True)
class AuditRecord:
    """One request. ``user``/``groups`` are the authenticated identity (empty when authentication
    failed); ``impersonated_*`` what the request asked to act as (also when that was refused)."""

    user: str
    groups: tuple[str, ...]
    impersonated_user: str
    impersonated_groups: tuple[str, ...]
    method: str
    path: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    api_group: str
    code: int
    time: float = field(default_factory=time.time)

    @property
    def effective_user(self) -> str:
        """The identity the request was authorized as."""
        return self.impersonated_user or self.user


class AuditLog:
    """The last ``maxlen`` records, oldest first."""

    def __init__(self, maxlen: int = 10_000) -> None:
        self._records: deque[AuditRecord] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def add(self, record: AuditRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self) -> list[AuditRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)
