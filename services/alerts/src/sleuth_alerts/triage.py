"""Pure decisions about single alerts: skip or keep, which cluster, which fingerprint, whether
the investigating identity may see it, and the question an investigation is asked."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Literal

from sleuth_common.config import ClusterSettings
from sleuth_common.messages import AlertmanagerAlert, AlertRef, ScopeReply

__all__ = [
    "Disposition",
    "alert_ref",
    "cluster_of",
    "describe",
    "fingerprint",
    "in_scope",
    "question",
    "skip_reason",
]

Disposition = Literal["queued", "duplicate", "cooldown", "ignored", "resolved", "low_severity"]


def fingerprint(alert: AlertmanagerAlert) -> str:
    """Alertmanager's fingerprint, or a stable hash of the labels when a sender leaves it out."""
    if alert.fingerprint:
        return alert.fingerprint
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
    labels: dict[str, str], cluster_labels: Sequence[str], clusters: Sequence[ClusterSettings]
) -> str:
    """The cluster an alert is about: the first cluster label present, mapped to the configured
    cluster's name when it is one of its names or aliases ("" = no cluster label)."""
    for key in cluster_labels:
        value = labels.get(key, "").strip()
        if value:
            low = value.lower()
            for c in clusters:
                if c.name.lower() == low or low in (a.lower() for a in c.aliases):
                    return c.name
            return value
    return ""


def alert_ref(alert: AlertmanagerAlert, fp: str) -> AlertRef:
    return AlertRef(
        labels=dict(alert.labels),
        annotations=dict(alert.annotations),
        status=alert.status,
        starts_at=alert.starts_at,
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


def in_scope(alert: AlertRef, cluster: str, scope: ScopeReply) -> bool:
    """May the investigating identity read what this alert is about?

    A namespaced alert needs that namespace on its cluster (on any cluster when the alert names
    none); an alert without a namespace label (nodes, the control plane) needs cluster-wide read."""
    ns = alert.labels.get("namespace", "")
    clusters = [cluster] if cluster else list(scope.clusters)
    for name in clusters:
        cs = scope.clusters.get(name)
        if cs is None:
            continue
        if cs.cluster_wide or (ns and ns in cs.namespaces):
            return True
    return False
