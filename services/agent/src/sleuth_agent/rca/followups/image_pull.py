"""Image pulls: the cause at the end of the pull error, and for a refused pull the pull
credentials of the pod and of a sibling pulling from the same registry."""

from __future__ import annotations

import json
from typing import Any

from sleuth_agent.rca._observe import WorkloadObservation, pull_cause
from sleuth_agent.rca._records import PodView, items_of
from sleuth_agent.rca.followups._context import FollowUpContext

__all__ = ["run"]


def _registry(image: str) -> str:
    """The registry host of an image reference (docker.io when it names none)."""
    first, sep, _rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


async def run(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView, container: Any, messages: list[str]) -> None:
    """Name the cause at the end of the pull error; for a refused pull (401/403), say whether
    the pod has imagePullSecrets and whether a sibling pulling from the same registry has one."""
    kind, phrase = "", ""
    for m in messages:
        kind, phrase = pull_cause(m)
        if kind:
            break
    registry = _registry(container.image)
    obs.variables.update({"registry": registry, "pull_cause": phrase or "see the pull events"})
    template = "spec.template.spec" if obs.kind in ("Deployment", "StatefulSet", "DaemonSet", "Job") else "spec"
    if kind == "auth":
        mine = pod.image_pull_secrets
        sibling, secrets = await _sibling_pull_secrets(ctx, obs, pod, registry)
        if mine is None:
            have = "Whether the pod has imagePullSecrets could not be read."
        elif mine:
            have = f"The pod uses imagePullSecrets {', '.join(mine)}, which {registry} does not accept (wrong or expired credentials)."
        else:
            have = "The pod spec has no imagePullSecrets, so the node pulls anonymously."
        if sibling and secrets:
            have += f" {sibling} in {obs.namespace} pulls from {registry} with imagePullSecrets {', '.join(secrets)}."
        obs.derive("pull", have)
        if mine == () and secrets:
            obs.variables["pull_action_text"] = (
                f"The registry {registry} refused the pull ({phrase}) and the pod has no pull credentials: "
                f"add the imagePullSecret {secrets[0]} that {sibling} uses to the {obs.kind}."
            )
            patch = json.dumps({"imagePullSecrets": [{"name": secrets[0]}]}, separators=(",", ":"))
        elif mine:
            obs.variables["pull_action_text"] = (
                f"The registry {registry} refused the pull ({phrase}): renew the credentials in the secret "
                f"{mine[0]} (or grant its identity pull access to the repository)."
            )
            patch = ""
        else:
            obs.variables["pull_action_text"] = (
                f"The registry {registry} refused the pull ({phrase}): create a docker-registry secret with "
                f"credentials for {registry} and add it to the {obs.kind} as an imagePullSecret (or grant the "
                "nodes' identity pull access)."
            )
            patch = '{"imagePullSecrets":[{"name":"<pull-secret>"}]}'
        if patch and template != "spec":
            body = patch
            for part in reversed(template.split(".")):
                body = f'{{"{part}":{body}}}'
            obs.variables["pull_action_command"] = f"kubectl patch {obs.kind.lower()}/{obs.name} -n {obs.namespace} -p '{body}'"
        else:
            obs.variables["pull_action_command"] = (
                f"kubectl create secret docker-registry <pull-secret> -n {obs.namespace} --docker-server={registry} "
                "--docker-username=<user> --docker-password=<password>"
            )
    elif kind == "not_found":
        obs.variables["pull_action_text"] = (
            f"The image {container.image} does not exist in {registry} ({phrase}): fix the repository or tag."
        )
    elif kind in ("dns", "network", "tls"):
        obs.variables["pull_action_text"] = (
            f"The node cannot reach the registry {registry} ({phrase}): check the registry host name, the nodes' "
            "DNS and egress (proxy, firewall, certificates)."
        )
        obs.variables["pull_action_command"] = f"kubectl get events -n {obs.namespace} --field-selector involvedObject.name={pod.name}"
    elif kind == "platform":
        arch = dict(pod.node_selector).get("kubernetes.io/arch", "")
        if not arch and ctx.cluster_wide and pod.node:
            r = await ctx.read("list_nodes", {})
            node = next((n for n in items_of(r.data, "nodes", "items") if n.get("name") == pod.node), None) if r.ok else None
            arch = str(((node or {}).get("labels") or {}).get("kubernetes.io/arch") or (node or {}).get("architecture") or "")
        where = f"node {pod.node} is {arch}" if arch and pod.node else f"its nodes are {arch}" if arch else "the node's platform"
        obs.variables["pull_action_text"] = (
            f"The image {container.image} has no build for the platform the pod runs on ({where}; {phrase}): publish a "
            "multi-arch image (docker buildx build --platform linux/amd64,linux/arm64) or keep the pods on nodes of an "
            "architecture the image supports (nodeSelector kubernetes.io/arch)."
        )
        if arch:
            obs.derive("pull", f"The image has no manifest for {arch}: {where}.")
    elif kind == "rate_limited":
        obs.variables["pull_action_text"] = (
            f"The registry {registry} is rate-limiting pulls ({phrase}): authenticate the pulls or mirror the image."
        )


async def _sibling_pull_secrets(ctx: FollowUpContext, obs: WorkloadObservation, pod: PodView, registry: str) -> tuple[str, tuple[str, ...]]:
    """A pod of another workload in the namespace that pulls from the same registry, and its
    imagePullSecrets (read with get_pod: list_pods does not show them)."""
    for other in ctx.got.pods.get(obs.namespace, []):
        if other.workload == pod.workload or not other.healthy:
            continue
        if not any(_registry(c.image) == registry for c in other.containers):
            continue
        r = await ctx.read("get_pod", {"namespace": obs.namespace, "name": other.name})
        if not r.ok or not isinstance(r.data, dict):
            return "", ()
        fresh = PodView.parse(r.data.get("pod", r.data))
        secrets = fresh.image_pull_secrets or ()
        if secrets:
            obs.cites.append((r, f"pod {other.name} ({other.workload[0]} {other.workload[1]}): imagePullSecrets {', '.join(secrets)}", [f"image registry {registry}", f"imagePullSecrets: {', '.join(secrets)}"]))
        return f"{other.workload[0]} {other.workload[1]}", secrets
    return "", ()
