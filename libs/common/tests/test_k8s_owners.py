"""Owner references and the pod-template-hash of Deployments' ReplicaSets and pods."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from sleuth_common.k8s import (
    OwnerRef,
    controller_of,
    controller_ref,
    deployment_of,
    owner_refs,
    pod_template_hash,
    strip_pod_template_hash,
)


def obj(*refs: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x", "ownerReferences": list(refs)}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta}


def ref(kind: str, name: str, controller: bool | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "name": name, **extra}
    if controller is not None:
        out["controller"] = controller
    return out


@dataclass(frozen=True)
class Case:
    name: str
    obj: dict[str, Any]
    controller: tuple[str, str] | None
    deployment: str | None = None


CASES = [
    Case("deployment pod", obj(ref("ReplicaSet", "web-7d9f8c6b5d", True), labels={"pod-template-hash": "7d9f8c6b5d"}),
         ("ReplicaSet", "web-7d9f8c6b5d"), "web"),
    Case("hash label that does not fit", obj(ref("ReplicaSet", "web-7d9f8c6b5d", True),
                                             labels={"pod-template-hash": "abc"}), ("ReplicaSet", "web-7d9f8c6b5d")),
    Case("no hash label: guessed", obj(ref("ReplicaSet", "checkout-api-5d4f8b9c7", True)),
         ("ReplicaSet", "checkout-api-5d4f8b9c7"), "checkout-api"),
    Case("bare replicaset name", obj(ref("ReplicaSet", "cache", True)), ("ReplicaSet", "cache")),
    Case("replicaset of a deployment", obj(ref("Deployment", "web", True)), ("Deployment", "web"), "web"),
    Case("controller preferred", obj(ref("ConfigMap", "c"), ref("StatefulSet", "db", True)), ("StatefulSet", "db")),
    Case("first owner without a controller", obj(ref("ConfigMap", "c"), ref("Secret", "s", False)), ("ConfigMap", "c")),
    Case("cronjob job", obj(ref("Job", "backup-28493520", True)), ("Job", "backup-28493520")),
    Case("node-owned static pod", obj(ref("Node", "n1", True)), ("Node", "n1")),
    Case("no owners", obj(), None),
    Case("malformed entries skipped", obj({"kind": "ReplicaSet"}, "junk", ref("Job", "j")), ("Job", "j")),  # type: ignore[arg-type]
    Case("no metadata", {}, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_owner_chains(case: Case) -> None:
    assert controller_of(case.obj) == case.controller
    assert deployment_of(case.obj) == case.deployment


def test_owner_refs_carry_the_reference() -> None:
    o = obj(ref("ReplicaSet", "web-1", True, apiVersion="apps/v1", uid="u1"), ref("ConfigMap", "c"))
    assert owner_refs(o) == (OwnerRef("ReplicaSet", "web-1", "apps/v1", "u1", True), OwnerRef("ConfigMap", "c"))
    assert controller_ref(o) == OwnerRef("ReplicaSet", "web-1", "apps/v1", "u1", True)
    assert controller_ref(None) is None and owner_refs({"metadata": None}) == ()


def test_pod_template_hash() -> None:
    assert pod_template_hash(obj(labels={"pod-template-hash": "abc12"})) == "abc12"
    assert pod_template_hash(obj(labels={"pod-template-hash": ""})) is None
    assert pod_template_hash(obj()) is None


@pytest.mark.parametrize(("name", "template_hash", "expected"), [
    ("web-7d9f8c6b5d", "7d9f8c6b5d", "web"),
    ("web-7d9f8c6b5d", "other", None),
    ("-7d9f8c6b5d", "7d9f8c6b5d", None),
    ("web-7d9f8c6b5d", None, "web"),
    ("my-app-v2-5f7b9", None, "my-app-v2"),
    ("web-abc", None, None),
    ("web", None, None),
    ("web-ABCDEF", None, None),
])
def test_strip_pod_template_hash(name: str, template_hash: str | None, expected: str | None) -> None:
    assert strip_pod_template_hash(name, template_hash) == expected
