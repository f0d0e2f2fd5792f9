"""Incidents with negative feedback as scenario skeletons (``sleuth incidents export``): the misses
people told Sleuth about, turned into regression scenarios the team finishes.

One directory per incident — verdict ``down``, or a "fixed by" text — named
``<date>-<family>-<job id>``, in the corpus's format (``scenarios/*/``, ``sleuth.scenarios``):

- ``scenario.yaml``: the asker's question, ``as`` the asker, and an ``expect`` holding what the answer
  said (family, resource) with ``must_pass: false``; the fix as people told it is a TODO in comments
  for the team to turn into the corrected expectation (nothing from it is trusted as the truth).
- ``snapshot.yaml``: the cluster's name, the incident's time as ``now``, the asker as a user (their
  groups a TODO: the incident keeps no groups).
- ``capture.sh``: the ``kubectl`` commands of the decisive evidence (else the resource and its
  namespace's events), each quoted, writing ``cluster/`` and ``logs/`` — run by someone allowed to
  read those objects, then reviewed for secrets before the directory is committed.
- empty ``cluster/`` and ``logs/``.

Incidents are read from Redis as the agent keeps them (``<prefix>:agent:incidents:*``), so the
export logs in as the agent's Redis user.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml
from redis.asyncio import Redis

from sleuth_agent.incidents import IncidentStore
from sleuth_common.messages import Incident

__all__ = ["Exported", "is_negative", "negative_incidents", "skeleton", "write_skeletons"]

_MAX_READ = 100_000
_UNSAFE = re.compile(r"[^a-z0-9_.-]+")


@dataclass(frozen=True)
class Exported:
    path: Path
    incident: Incident


def is_negative(incident: Incident) -> bool:
    """A miss someone told Sleuth about: 👎, or what really fixed it."""
    return incident.verdict == "down" or bool(incident.fixed_by.strip())


async def negative_incidents(redis: Redis, prefix: str, since: float, *, now: float | None = None) -> list[Incident]:
    """The incidents with negative feedback recorded in the last ``since`` seconds, oldest first."""
    now = time.time() if now is None else now
    store = IncidentStore(redis, prefix, max_incidents=_MAX_READ, max_age=since)
    return sorted((i for i in await store.recent(now=now) if is_negative(i)), key=lambda i: i.at)


def write_skeletons(incidents: list[Incident], out: Path) -> list[Exported]:
    """A skeleton under ``out`` for each incident (an existing directory is rewritten)."""
    out.mkdir(parents=True, exist_ok=True)
    return [Exported(skeleton(i, out), i) for i in incidents]


def _name(incident: Incident) -> str:
    day = datetime.fromtimestamp(incident.at, UTC).strftime("%Y%m%d")
    job = _UNSAFE.sub("-", incident.job_id.lower())[:32]
    return f"{day}-{_UNSAFE.sub('-', incident.family.lower())[:40]}-{job}".strip("-")


def _comment(text: str) -> str:
    """``text`` as YAML/shell comment lines (one line each; nothing in it ends the comment)."""
    return "\n".join(f"# {line}".rstrip() for line in text.replace("\r", "").split("\n"))


def skeleton(incident: Incident, out: Path) -> Path:
    """One incident's scenario skeleton under ``out`` (see the module docstring)."""
    d = out / _name(incident)
    (d / "cluster").mkdir(parents=True, exist_ok=True)
    (d / "logs").mkdir(exist_ok=True)
    when = datetime.fromtimestamp(incident.at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster = incident.clusters[0] if incident.clusters else "cluster"
    asker = incident.user or "asker"
    snapshot = {
        "name": d.name,
        "description": f"From incident {incident.job_id}: the answer said {incident.family} on {incident.resource}, "
                       "and was marked wrong.",
        "cluster": {"name": cluster},
        "now": when,
        "users": {asker: {"groups": []}},
    }
    (d / "snapshot.yaml").write_text(
        f"# Exported by `sleuth incidents export` from incident {incident.job_id}.\n"
        f"# TODO(team): the groups {asker} had (the incident keeps none); cluster/ from capture.sh.\n"
        + yaml.safe_dump(snapshot, sort_keys=False, allow_unicode=True), encoding="utf-8")
    scenario = {
        "source": f"incident:{incident.job_id}",
        "question": incident.question or f"What is wrong with {incident.resource}?",
        "as": asker,
        "expect": {"status": "diagnosed", "family": incident.family, "resource": incident.resource,
                   "must_mention": [], "must_pass": False},
    }
    verdict = {"down": "👎", "up": "👍"}.get(incident.verdict, "no verdict")
    notes = [
        f"Exported by `sleuth incidents export` from incident {incident.job_id} ({when}, asked by {asker}).",
        f"The answer said: {incident.family} on {incident.resource} ({verdict}).",
        f"Its summary: {incident.summary}" if incident.summary else "",
        f"Fixed by (as {incident.feedback_by or 'someone'} told Sleuth): {incident.fixed_by}"
        if incident.fixed_by else "",
        "TODO(team): confirm what was really wrong, set expect.family, expect.resource and must_mention to it,",
        "then must_pass: true. Until then the expect below is what the answer said, not the truth.",
    ]
    (d / "scenario.yaml").write_text(
        _comment("\n".join(n for n in notes if n)) + "\n"
        + yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True), encoding="utf-8")
    script = d / "capture.sh"
    script.write_text(_capture(incident), encoding="utf-8")
    script.chmod(0o755)
    return d


def _resource_commands(resource: str) -> list[list[str]]:
    parts = resource.split("/")
    if len(parts) == 3:
        kind, ns, name = parts
        return [["kubectl", "get", kind.lower(), name, "-n", ns, "-o", "yaml"],
                ["kubectl", "get", "events", "-n", ns, "-o", "yaml"]]
    if len(parts) == 2:
        return [["kubectl", "get", parts[0].lower(), parts[1], "-o", "yaml"]]
    return []


def _capture(incident: Incident) -> str:
    """``capture.sh``: each command quoted token by token; one that is no ``kubectl get|logs`` stays a comment."""
    lines = [
        "#!/bin/sh",
        "# Capture what the answer cited into cluster/ and logs/ (as someone allowed to read it), then",
        "# review the files for secrets before committing this directory.",
        "set -eu",
        'cd "$(dirname "$0")"',
    ]
    commands: list[list[str]] = []
    for text in incident.commands:
        try:
            argv = shlex.split(text)
        except ValueError:
            argv = []
        if len(argv) >= 2 and argv[0] == "kubectl" and argv[1] in ("get", "logs"):
            commands.append(argv)
        else:
            lines.append(_comment(f"not run (read it by hand): {text}"))
    commands = commands or _resource_commands(incident.resource)
    for n, argv in enumerate(commands, 1):
        if argv[1] == "logs":
            lines.append(f"{shlex.join(argv)} > logs/{n:02d}.log")
            continue
        if not any(a == "-o" or a.startswith(("-o=", "--output")) for a in argv):
            argv = [*argv, "-o", "yaml"]
        lines.append(f"{shlex.join(argv)} > cluster/{n:02d}.yaml")
    return "\n".join(lines) + "\n"
