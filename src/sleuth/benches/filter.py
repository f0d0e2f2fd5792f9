"""Scope-filter throughput on a 5 MB pod list against the floor of a plain ``json.loads`` +
``json.dumps`` of the same document (DESIGN §6: the filter at least half as fast as the floor).

The pod list is built from the demo snapshot's pods, repeated across tenant and platform
namespaces (half of them outside the caller's scope), with env credentials, so every part of the
filter has work: parsing, the walk, dropping records, redaction and serializing the result.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import yaml

from sleuth.benches import emit
from sleuth_common.scope import Scope, filter_result

REPO = Path(__file__).resolve().parents[3]
TARGET_BYTES = 5_000_000
NAMESPACES = ["team-a", "team-b", "shop", "payments", "kube-system", "monitoring"]
SCOPE = Scope.of(["team-a", "shop", "monitoring"])


def _demo_pods() -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for path in sorted((REPO / "scenarios" / "demo" / "cluster").glob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict):
                continue
            items = doc.get("items") if doc.get("kind", "").endswith("List") else [doc]
            pods.extend(d for d in items or [] if isinstance(d, dict) and d.get("kind") == "Pod")
    if not pods:
        raise RuntimeError("no pods in scenarios/demo")
    return pods


def pod_list(target_bytes: int = TARGET_BYTES) -> str:
    """A ``kubectl get pods -A -o json``-shaped document of about ``target_bytes``."""
    base = _demo_pods()
    items: list[dict[str, Any]] = []
    size = 0
    i = 0
    while size < target_bytes:
        pod = copy.deepcopy(base[i % len(base)])
        ns = NAMESPACES[i % len(NAMESPACES)]
        meta = pod.setdefault("metadata", {})
        meta["namespace"] = ns
        meta["name"] = f"{meta.get('name', 'pod')}-{i}"
        pod.setdefault("status", {})["podIP"] = f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"
        if i % 50 == 0:
            for c in pod.get("spec", {}).get("containers", []):
                c.setdefault("env", []).append({"name": "DB_PASSWORD", "value": f"s3cr3t-{i}"})
        items.append(pod)
        size += len(json.dumps(pod))
        i += 1
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}})


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(repeat: int = 7) -> None:
    text = pod_list()
    mb = len(text) / 1e6

    def floor() -> None:
        json.dumps(json.loads(text))

    def filtered() -> None:
        filter_result(text, SCOPE, max_bytes=None)

    floor_s = _best(floor, repeat)
    filter_s = _best(filtered, repeat)
    out = filter_result(text, SCOPE)
    assert out.outcome == "filtered" and out.removed > 0 and out.redacted > 0
    # throughput in MB/s: higher is better, so ratio = filter / floor (target ≥ 0.5)
    emit("scope_filter_throughput", mb / filter_s, "MB/s", "json.loads + json.dumps of the same document",
         mb / floor_s, "ratio >= 0.5", document_mb=round(mb, 2), records=len(json.loads(text)["items"]),
         removed=out.removed, redacted=out.redacted)


if __name__ == "__main__":
    run()
