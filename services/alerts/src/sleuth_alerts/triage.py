"""Pure decisions about single alerts: skip or keep, which cluster, which fingerprint, whether
the investigating identity may see it, and the question an investigation is asked."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal

from sleuth_common.config import ClusterSettings
from sleuth_common.messages import AlertmanagerAlert, AlertRef, ScopeReply

__all__ = [
    "UNKNOWN_CLUSTER",
    "Disposition",
    "alert_ref",
    "cluster_of",
    "describe",
    "fingerprint",
    "in_scope",
    "question",
    "skip_reason",
]

Disposition = Literal[
    "queued",
    "duplicate",
    "cooldown",
    "ignored",
    "resolved",
    "low_severity",
    "unknown_cluster",
    "over_request",
    "over_window",
]

UNKNOWN_CLUSTER = "(unknown)"
"""The window key of alerts whose cluster label names no configured cluster (one per channel).
Parentheses make it impossible as a configured cluster name (a DNS-style name)."""

_FINGERPRINT = re.compile(r"[0-9A-Za-z._:-]{1,64}")


def fingerprint(alert: AlertmanagerAlert) -> str:
    """Alertmanager's fingerprint (16 hex digits), a hash of any other value a sender puts there
    (it becomes part of Redis keys), or a stable hash of the labels when a sender leaves it out."""
    if alert.fingerprint and _FINGERPRINT.fullmatch(alert.fingerprint):
        return alert.fingerprint
    if alert.fingerprint:
        return "h" + hashlib.sha256(alert.fingerprint.encode()).hexdigest()[:16]
    return hashlib.sha256(json.dumps(alert.labels, sort_keys=True).encode()).hexdigest()[:16]


def skip_reason(
    alert: AlertmanagerAlert, *, skip_alertnames: Sequence[str], severities: Sequence[str], min_severity: str
) -> Disposition | None:
    """Why an alert is not investigated (None = investigate it).

    ``Watchdog``-style alerts are ignored, resolved notifications are not diagnosed, and an alert
    whose ``severity`` ranks below ``min_severity`` is skipped; a severity the list does not know
    (or none at all) is investigated, since nobody said it is unimportant."""
    if alert.labels.get("alertname", "") in skip_alertnames:
        return "ignored"
    if alert.status == "resolved":
        return "resolved"
    order = [s.lower() for s in severities]
    sev = alert.labels.get("severity", "").lower()
    floor = min_severity.lower()
    if sev in order and floor in order and order.index(sev) < order.index(floor):
        return "low_severity"
    return None


def cluster_of(
    labels: Mapping[str, str], cluster_labels: Sequence[str], clusters: Sequence[ClusterSettings]
) -> str:
    """The configured cluster an alert is about: the first cluster label present, matched against
    the configured clusters' names and aliases (case-insensitive). "" = no cluster label;
    ``UNKNOWN_CLUSTER`` = a value naming no configured cluster (the sender chooses label values,
    so they never become windows of their own)."""
    value = cluster_label(labels, cluster_labels)
    if not value:
        return ""
    low = value.lower()
    for c in clusters:
        if c.name.lower() == low or low in (a.lower() for a in c.aliases):
            return c.name
    return UNKNOWN_CLUSTER


def cluster_label(labels: Mapping[str, str], cluster_labels: Sequence[str]) -> str:
    """The value of the first cluster label present ("" = none)."""
    for key in cluster_labels:
        value = labels.get(key, "").strip()
        if value:
            return value
    return ""


# The order in which labels and annotations are kept when an alert is trimmed to
# ``max_alert_bytes``: what names the target, the summary, the other labels, the rest of the text.
_FIRST_LABELS = ("alertname", "namespace", "severity", "cluster", "k8s_cluster", "cluster_name")
_MAX_KEY = 128
_MIN_CUT = 32  # a value cut shorter than this is left out instead


def _json_len(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode())


def _cut(value: str, room: int) -> str:
    """``value`` shortened (with "…") to at most ``room`` bytes of JSON."""
    value = value[: max(room - 8, 0)]
    while value and _json_len(value + "…") > room:
        value = value[: len(value) * 3 // 4]
    return value + "…"


def _trimmed(
    labels: Mapping[str, str], annotations: Mapping[str, str], budget: int, first_labels: Sequence[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Labels and annotations within ``budget`` bytes of JSON (both objects, with separators).
    No value takes more than a quarter of the budget; what does not fit is cut or left out."""
    first = tuple(dict.fromkeys((*_FIRST_LABELS, *first_labels, *_OBJECT_LABELS)))
    order: list[tuple[bool, str, str]] = [(True, k, labels[k]) for k in first if k in labels]
    order += [(False, k, annotations[k]) for k in ("summary",) if k in annotations]
    order += [(True, k, labels[k]) for k in sorted(labels) if k not in first]
    order += [(False, k, annotations[k]) for k in ("description", "message", "runbook_url") if k in annotations]
    order += [(False, k, annotations[k]) for k in sorted(annotations) if k not in _TEXT_ANNOTATIONS]
    left = budget - 4  # the two objects' braces
    per_value = max(budget // 4, _MIN_CUT)
    kept: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for is_label, key, value in order:
        if len(key) > _MAX_KEY:
            continue
        need = _json_len(key) + 4  # ": " and ", "
        room = min(left - need, per_value)
        if _json_len(value) > room:
            if room < _MIN_CUT:
                continue
            value = _cut(value, room)
        kept[0 if is_label else 1][key] = value
        left -= need + _json_len(value)
    return kept


_TEXT_ANNOTATIONS = ("summary", "description", "message", "runbook_url")


def alert_ref(
    alert: AlertmanagerAlert, fp: str, *, max_bytes: int = 4096, cluster_labels: Sequence[str] = ()
) -> AlertRef:
    """What is stored and sent on of one alert: labels and annotations within ``max_bytes``
    (the cluster labels are among those kept first)."""
    labels, annotations = _trimmed(alert.labels, alert.annotations, max_bytes, cluster_labels)
    return AlertRef(
        labels=labels,
        annotations=annotations,
        status=alert.status,
        starts_at=alert.starts_at[:40],
        fingerprint=fp,
    )


_OBJECT_LABELS = (
    "pod",
    "deployment",
    "statefulset",
    "daemonset",
    "job",
    "cronjob",
    "service",
    "node",
    "persistentvolumeclaim",
    "container",
)


def describe(alert: AlertRef, *, with_cluster: str = "") -> str:
    """``KubePodCrashLooping firing for pod X in namespace Y`` (the names come from the labels)."""
    labels = alert.labels
    text = f"{labels.get('alertname', 'alert')} {alert.status}"
    for key in _OBJECT_LABELS:
        if labels.get(key):
            text += f" for {key} {labels[key]}"
            break
    if labels.get("namespace"):
        text += f" in namespace {labels['namespace']}"
    if with_cluster:
        text += f" on cluster {with_cluster}"
    return text


def question(cluster: str, alerts: Sequence[AlertRef]) -> str:
    """The question an alert investigation asks, naming every target so that an investigator that
    reads only text finds the same targets as one that reads the labels."""
    where = f" on cluster {cluster}" if cluster else ""
    if len(alerts) == 1:
        return f"Alert {describe(alerts[0])}{where}: do these alerts share a cause?"
    listed = "; ".join(describe(a) for a in alerts)
    return f"Alerts firing{where}: {listed}. Do these alerts share a cause?"


_NAMESPACE_LABEL = re.compile(r"(?i)(^|_)namespace$")


def in_scope(alert: AlertRef, cluster: str, scope: ScopeReply) -> bool:
    """May the investigating identity read what this alert is about?

    A namespaced alert needs its namespace on its cluster (on any cluster when the alert names
    none); an alert without a namespace label (nodes, the control plane) needs cluster-wide read.
    Every label that names a namespace counts (``namespace``, and ``exported_namespace``,
    ``kubernetes_namespace`` … as scrape relabelling produces): all must be readable, so a
    ``namespace: team-a`` alert about another tenant's ``exported_namespace`` is not shown."""
    named = {v for k, v in alert.labels.items() if _NAMESPACE_LABEL.search(k) and v}
    clusters = [cluster] if cluster else list(scope.clusters)
    for name in clusters:
        cs = scope.clusters.get(name)
        if cs is None:
            continue
        if cs.cluster_wide or (named and named <= set(cs.namespaces)):
            return True
    return False
