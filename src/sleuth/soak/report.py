"""The soak's figures: one row per fault (and the quiet start), the alerts, as Markdown and JSON."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from sleuth.soak.load import AlertSent, Question

__all__ = ["AlertFigures", "Phase", "Row", "alert_figures", "markdown", "rows"]


@dataclass(frozen=True)
class Phase:
    name: str
    began: float
    ended: float
    """When the fault was over (restarted, resumed); ``began`` for the quiet start."""
    detail: str = ""
    hit: float | None = None
    """When the fault struck (after the burst of questions sent to meet it)."""


@dataclass
class Row:
    fault: str
    detail: str
    asked: int
    in_flight: int
    """Questions asked before the fault struck and not answered yet when it did."""
    accepted: int
    answered_once: int
    clear_error: int
    refused: int
    lost: int
    duplicated: int
    cross_tenant: int
    p50_during: float | None
    p99_during: float | None
    p50_after: float | None
    p99_after: float | None
    recover_from_begin: float | None
    """Seconds from the fault's start to the first answer of a question asked since then."""
    recover_from_end: float | None
    """Seconds from the fault's end to the first answer of a question asked since then (None:
    never recovered)."""
    examples: list[str] = field(default_factory=list)
    """A few of the questions that went wrong: request id, outcome, what was seen."""


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))], 3)


def duplicated(q: Question, answers: Counter[str], finished: Counter[str]) -> bool:
    """Answered twice: two answers to the asker, two jobs for one question, or a job of it
    answered twice on the bus."""
    return q.results > 1 or len(q.job_ids) > 1 or any(answers[j] > 1 or finished[j] > 1 for j in q.job_ids)


def rows(phases: list[Phase], end: float, questions: list[Question], answers: Counter[str],
         finished: Counter[str]) -> list[Row]:
    out = []
    for i, phase in enumerate(phases):
        until = phases[i + 1].began if i + 1 < len(phases) else end
        mine = [q for q in questions if phase.began <= q.sent < until]
        ok = [q for q in mine if q.outcome == "ok"]
        dup = [q for q in mine if duplicated(q, answers, finished)]
        during = [q.latency for q in ok if q.sent <= phase.ended and q.latency is not None]
        after = [q.latency for q in ok if q.sent > phase.ended and q.latency is not None]

        def first_ok(since: float, ok: list[Question] = ok) -> float | None:
            times = [q.finished for q in ok if q.sent >= since and q.finished is not None]
            return round(min(times) - since, 2) if times else None

        bad = [q for q in mine if q.outcome != "ok" or q in dup or q.leaked]
        out.append(Row(
            fault=phase.name, detail=phase.detail, asked=len(mine),
            in_flight=0 if phase.hit is None else sum(
                1 for q in questions if q.sent < phase.hit and (q.finished is None or q.finished > phase.hit)),
            accepted=sum(q.accepted for q in mine),
            answered_once=sum(1 for q in ok if q not in dup), clear_error=sum(q.outcome == "error" for q in mine),
            refused=sum(q.outcome == "refused" for q in mine), lost=sum(q.outcome == "lost" for q in mine),
            duplicated=len(dup), cross_tenant=sum(len(q.leaked) for q in mine),
            p50_during=_pct(during, 50), p99_during=_pct(during, 99), p50_after=_pct(after, 50),
            p99_after=_pct(after, 99), recover_from_begin=first_ok(phase.began), recover_from_end=first_ok(phase.ended),
            examples=[f"{q.request_id} {q.user} {q.mode} {q.outcome}: {q.detail}"
                      + (f" leaked {q.leaked}" if q.leaked else "") + (" DUPLICATED" if q in dup else "")
                      for q in bad[:5]],
        ))
    return out


@dataclass
class AlertFigures:
    sent: int
    accepted: int
    """Alerts the webhook took (2xx)."""
    not_accepted: int
    ingested: dict[str, int]
    """By disposition, as the alerts service counted them (``queued``: to be investigated)."""
    batches_investigated: int
    posted_alerts: int
    """Alerts in posted answers (investigated, or reported outside the channel's access)."""
    unposted: int
    """Queued alerts in no posted answer: must be 0."""
    duplicated: int
    """Batches posted twice or answered twice on the bus: must be 0."""
    cross_tenant: int


def alert_figures(sent: list[AlertSent], ingested: dict[str, int], investigating: dict[str, int],
                  posted: list[dict[str, Any]], results: Counter[str], leaked: int) -> AlertFigures:
    per_batch = Counter(p["job_id"] for p in posted if p["job_id"])
    posted_alerts = sum(int(p["alerts"]) for p in posted)
    queued = ingested.get("queued", 0)
    return AlertFigures(
        sent=len(sent), accepted=sum(a.accepted for a in sent), not_accepted=sum(1 for a in sent if not a.accepted),
        ingested=ingested, batches_investigated=len(investigating), posted_alerts=posted_alerts,
        unposted=max(0, queued - posted_alerts),
        duplicated=sum(1 for n in per_batch.values() if n > 1) + sum(1 for n in results.values() if n > 1)
        + max(0, posted_alerts - queued),
        cross_tenant=leaked,
    )


def _s(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def markdown(table: list[Row], alerts: AlertFigures | None) -> str:
    head = ("| fault | asked | in flight at fault | accepted | answered once | clear error | refused | lost | duplicated | cross-tenant "
            "| p50/p99 during (s) | p50/p99 after (s) | recovered after begin / end (s) |")
    lines = [head, "|" + "---|" * 13]
    for r in table:
        lines.append(
            f"| {r.fault} | {r.asked} | {r.in_flight} | {r.accepted} | {r.answered_once} | {r.clear_error} | {r.refused} | {r.lost} "
            f"| {r.duplicated} | {r.cross_tenant} | {_s(r.p50_during)} / {_s(r.p99_during)} "
            f"| {_s(r.p50_after)} / {_s(r.p99_after)} | {_s(r.recover_from_begin)} / {_s(r.recover_from_end)} |"
        )
    lines.append("")
    lines += [f"- {r.fault}: {r.detail}" for r in table if r.detail]
    if alerts is not None:
        lines += [
            "",
            "| alerts sent | accepted | not accepted | ingested | batches investigated | alerts in posted answers "
            "| queued but unposted | duplicated | cross-tenant |",
            "|" + "---|" * 9,
            f"| {alerts.sent} | {alerts.accepted} | {alerts.not_accepted} "
            f"| {', '.join(f'{k} {v}' for k, v in sorted(alerts.ingested.items()))} | {alerts.batches_investigated} "
            f"| {alerts.posted_alerts} | {alerts.unposted} | {alerts.duplicated} | {alerts.cross_tenant} |",
        ]
    return "\n".join(lines) + "\n"


def as_json(table: list[Row], alerts: AlertFigures | None, extra: dict[str, Any]) -> dict[str, Any]:
    return {"faults": [asdict(r) for r in table], "alerts": asdict(alerts) if alerts else None, **extra}
