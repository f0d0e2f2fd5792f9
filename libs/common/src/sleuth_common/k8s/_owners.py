"""Owner chains: ``metadata.ownerReferences`` and the ``pod-template-hash`` a Deployment's
ReplicaSets and pods carry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "POD_TEMPLATE_HASH_LABEL",
    "OwnerRef",
    "controller_of",
    "controller_ref",
    "deployment_of",
    "owner_refs",
    "pod_template_hash",
    "strip_pod_template_hash",
]

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
_HASH_GUESS = re.compile(r"(?P<name>.+)-[a-z0-9]{5,10}")
"""A ReplicaSet name whose pod-template-hash is unknown: ``<deployment>-<5 to 10 of [a-z0-9]>``."""


@dataclass(frozen=True)
class OwnerRef:
    """One ``ownerReferences`` entry."""

    kind: str
    name: str
    api_version: str = ""
    uid: str = ""
    controller: bool = False


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def owner_refs(obj: Mapping[str, Any] | None) -> tuple[OwnerRef, ...]:
    """An object's ``metadata.ownerReferences``, in order; entries without a kind or a name are skipped."""
    out = []
    for ref in _meta(obj).get("ownerReferences") or []:
        if not isinstance(ref, Mapping):
            continue
        kind, name = ref.get("kind"), ref.get("name")
        if not (isinstance(kind, str) and kind and isinstance(name, str) and name):
            continue
        out.append(OwnerRef(kind, name, str(ref.get("apiVersion") or ""), str(ref.get("uid") or ""),
                            ref.get("controller") is True))
    return tuple(out)


def controller_ref(obj: Mapping[str, Any] | None) -> OwnerRef | None:
    """The owner with ``controller: true`` (``metav1.GetControllerOf``), else the first owner, else None."""
    refs = owner_refs(obj)
    return next((r for r in refs if r.controller), refs[0] if refs else None)


def controller_of(obj: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(kind, name)`` of ``controller_ref(obj)``: ``("ReplicaSet", "web-7d9f8c6b5d")`` for a
    Deployment's pod, ``("Job", "backup-28493520")`` for a CronJob's, None for a bare pod."""
    ref = controller_ref(obj)
    return (ref.kind, ref.name) if ref else None


def pod_template_hash(obj: Mapping[str, Any] | None) -> str | None:
    """The ``pod-template-hash`` label of a pod or ReplicaSet, or None."""
    labels = _meta(obj).get("labels")
    value = labels.get(POD_TEMPLATE_HASH_LABEL) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) and value else None


def strip_pod_template_hash(replicaset: str, template_hash: str | None = None) -> str | None:
    """The Deployment a ReplicaSet name belongs to: ``web-7d9f8c6b5d`` → ``web``.

    With ``template_hash`` (the ``pod-template-hash`` label) the name must end in ``-<hash>``;
    without it, any ``-`` and 5 to 10 lowercase letters or digits at the end are taken for the
    hash (a guess: a bare ReplicaSet named ``cache-proxy`` would give ``cache``). None when the
    name does not fit."""
    if template_hash:
        suffix = f"-{template_hash}"
        if replicaset.endswith(suffix) and len(replicaset) > len(suffix):
            return replicaset[: -len(suffix)]
        return None
    m = _HASH_GUESS.fullmatch(replicaset)
    return m["name"] if m else None


def deployment_of(obj: Mapping[str, Any] | None) -> str | None:
    """The name of the Deployment behind a pod or a ReplicaSet, or None.

    A ReplicaSet's Deployment is its controlling owner of kind Deployment. A pod names only its
    ReplicaSet, so the Deployment is that ReplicaSet's name less the pod's ``pod-template-hash``
    label (less a guessed hash when the pod has no such label)."""
    ref = controller_ref(obj)
    if ref is None:
        return None
    if ref.kind == "Deployment":
        return ref.name
    if ref.kind == "ReplicaSet":
        return strip_pod_template_hash(ref.name, pod_template_hash(obj))
    return None
