"""In-process concurrency gates: how many requests one key (a user, a client address) may have in
progress at once in this replica.

A gate is checked before a request touches Redis or the bus, so one caller's burst is cut at the
door instead of queueing for the connections every other caller shares. Nothing is stored: a
restart simply starts with every gate open.
"""

from __future__ import annotations

__all__ = ["ConcurrencyGate"]


class ConcurrencyGate:
    """At most ``limit`` holders per key; ``limit`` <= 0 means no limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: dict[str, int] = {}

    def enter(self, key: str) -> bool:
        """Take a place for ``key``; False (and nothing taken) when it already holds ``limit``."""
        held = self._held.get(key, 0)
        if 0 < self.limit <= held:
            return False
        self._held[key] = held + 1
        return True

    def leave(self, key: str) -> None:
        """Give back a place taken by ``enter``."""
        held = self._held.get(key, 0) - 1
        if held > 0:
            self._held[key] = held
        else:
            self._held.pop(key, None)

    def held(self, key: str) -> int:
        return self._held.get(key, 0)
