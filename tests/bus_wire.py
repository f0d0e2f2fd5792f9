"""What the services subscribe to on the wire, against what their AsyncAPI documents declare.

nats-server's monitoring endpoint ``/connz?subs=detail&auth=true`` lists every connection with
its NATS user and its subscriptions (subject, queue group). ``WireSampler`` reads it a few times a
second while a stack runs, so subscriptions that live only while a job runs (a job's
``jobs.done.<id>``) are seen too; ``undocumented`` compares them with the receive operations of
docs/asyncapi/<service>.json.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote


@dataclass(frozen=True)
class Sub:
    """One subscription a service's connection held."""

    service: str
    subject: str
    queue: str = ""


def _tokens(pattern: str) -> list[str]:
    # AsyncAPI addresses may name a token as a parameter (`sleuth.jobs.done.{job_id}`): one token.
    return ["*" if t.startswith("{") and t.endswith("}") else t for t in pattern.split(".")]


def covers(channel: str, subject: str) -> bool:
    """Every subject ``subject`` (a subscription, wildcards allowed) can match is one
    ``channel`` (an AsyncAPI address: ``*``, ``>`` or ``{param}`` tokens) matches."""
    want, got = _tokens(channel), _tokens(subject)
    for i, w in enumerate(want):
        if w == ">":
            return len(got) > i
        if i >= len(got) or got[i] == ">" or (w != "*" and (w != got[i])):
            return False
    return len(got) == len(want)


def receive_channels(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """``{(address, queue group)}`` of the document's receive operations (what the service
    subscribes to or consumes)."""
    out: set[tuple[str, str]] = set()
    for op in doc["operations"].values():
        if op["action"] != "receive":
            continue
        channel = doc["channels"][unquote(op["channel"]["$ref"].removeprefix("#/channels/"))]
        out.add((channel["address"], channel.get("bindings", {}).get("nats", {}).get("queue", "")))
    return out


# Not channels of any document, so not checked:
# - `_INBOX.<user>.…`: nats-py's reply inbox of requests, and the inbox a JetStream pull consumer
#   fetches into (the consumed subject itself is never a subscription of the client); the server
#   lets a user subscribe only to its own inbox (sleuth.embedded.access).
# - `$JS.…`: JetStream's API and acknowledgement subjects (the client library's business).
# A documented reply branch (the gateway's `_INBOX.gateway.diagnostics.*`) is still matched first.
IGNORED_PREFIXES = ("_INBOX.", "$JS.")


def undocumented(subs: set[Sub], docs: dict[str, dict[str, Any]]) -> list[Sub]:
    """The subscriptions no receive operation of their service's document declares (the same
    subject pattern and the same queue group), minus inboxes and JetStream's API."""
    wanted = {service: receive_channels(doc) for service, doc in docs.items()}
    return sorted(
        (s for s in subs
         if not any(covers(address, s.subject) and queue == s.queue for address, queue in wanted[s.service])
         and not s.subject.startswith(IGNORED_PREFIXES)),
        key=lambda s: (s.service, s.subject, s.queue),
    )


def load_documents(directory: Path, services: set[str]) -> dict[str, dict[str, Any]]:
    return {s: json.loads((directory / f"{s}.json").read_text()) for s in sorted(services)}


class WireSampler:
    """Reads ``/connz`` every ``interval`` seconds in a thread; ``subs`` is every subscription a
    service held at any reading. A service's connection is one logged in as the service's own
    NATS user and named ``sleuth-<service>`` (the tests' own logins as a service user are unnamed)."""

    def __init__(self, monitor_url: str, services: set[str], interval: float = 0.2) -> None:
        self.url = f"{monitor_url}/connz?subs=detail&auth=true&limit=1024"
        self.services = services
        self.interval = interval
        self.subs: set[Sub] = set()
        self.readings = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="connz-sampler", daemon=True)

    def read(self) -> None:
        """One reading now (also the sampler's step)."""
        with urllib.request.urlopen(self.url, timeout=5) as r:  # stdlib: cheap enough to poll
            connz = json.load(r)
        found = {
            Sub(c["authorized_user"], s["subject"], s.get("qgroup", ""))
            for c in connz.get("connections") or []
            if c.get("authorized_user") in self.services and c.get("name") == f"sleuth-{c['authorized_user']}"
            for s in c.get("subscriptions_list_detail") or []
        }
        with self._lock:
            self.subs |= found
            self.readings += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(OSError):  # nats-server restarting (URLError is an OSError)
                self.read()

    def __enter__(self) -> WireSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def seen(self) -> set[Sub]:
        with self._lock:
            return set(self.subs)
