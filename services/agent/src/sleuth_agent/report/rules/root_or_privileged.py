"""Pods that run privileged or as root (``runAsUser: 0``), and pods where nothing keeps them from
running as root (neither ``runAsNonRoot`` nor a non-root ``runAsUser``: the image decides)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sleuth_agent.report._model import Inventory, K8sObject, containers, pod_spec, template_patch, to_yaml
from sleuth_agent.report._registry import Hit, rule


def _effective(c: Mapping[str, Any], pod: Mapping[str, Any], key: str) -> Any:
    sc = c.get("securityContext") or {}
    return sc[key] if sc.get(key) is not None else pod.get(key)


@rule("root_or_privileged", title="Runs as root or privileged", severity="high",
      kinds=("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod"))
def check(obj: K8sObject, inv: Inventory) -> Iterator[Hit]:
    pod = pod_spec(obj).get("securityContext") or {}
    privileged, root, unenforced = [], [], []
    for c in containers(obj, init=True):
        name = str(c.get("name") or "")
        if (c.get("securityContext") or {}).get("privileged") is True:
            privileged.append(name)
        user = _effective(c, pod, "runAsUser")
        if user is not None and not isinstance(user, int):
            raise ValueError(f"runAsUser of {name} is {user!r}, not a number")
        if user == 0:
            root.append(name)
        elif user is None and _effective(c, pod, "runAsNonRoot") is not True:
            unenforced.append(name)
    if not (privileged or root or unenforced):
        return
    fixed = [*privileged, *root]
    patch: dict[str, Any] = {"securityContext": {"runAsNonRoot": True, **({} if pod.get("runAsUser") not in (None, 0) else {"runAsUser": 10001})}}
    init = {str(c.get("name") or "") for c in pod_spec(obj).get("initContainers") or [] if isinstance(c, Mapping)}
    for field, names in (("initContainers", [n for n in fixed if n in init]),
                         ("containers", [n for n in fixed if n not in init])):
        if names:
            patch[field] = [{"name": n, "securityContext": {"privileged": False, "allowPrivilegeEscalation": False,
                                                            **({"runAsUser": 10001} if n in root else {})}}
                            for n in dict.fromkeys(names)]
    if privileged:
        why = (f"Container(s) {', '.join(privileged)} run privileged, with every capability and the "
               "node's devices, so a compromise of the container is a compromise of the node.")
    elif root:
        why = (f"Container(s) {', '.join(root)} run as root (runAsUser 0), so an escape from the "
               "container starts with root rights.")
    else:
        why = (f"Nothing keeps container(s) {', '.join(unenforced)} from running as root (no runAsNonRoot, "
               "no runAsUser), so the image alone decides.")
    yield Hit(
        why=why,
        fix=to_yaml(obj, template_patch(obj, patch)),
        severity="high" if fixed else "low",
        observed={"privileged": privileged, "run_as_root": root, "root_not_prevented": unenforced},
    )
