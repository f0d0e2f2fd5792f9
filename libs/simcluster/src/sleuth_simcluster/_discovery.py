"""Discovery documents: `/api`, `/apis`, `/api/v1`, `/apis/<g>/<v>` and the aggregated form.

kubectl 1.32 asks `/api` and `/apis` for `application/json;g=apidiscovery.k8s.io;v=v2;
as=APIGroupDiscoveryList` first; answering that (with the same Content-Type) saves it one request per
group version. A client that asks for plain JSON gets the legacy documents.
"""

from __future__ import annotations

from typing import Any

from ._registry import GROUP_VERSIONS, RESOURCES, Resource

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def aggregated_media_type(accept: str) -> str | None:
    """The aggregated discovery media type the client asked for first, if any."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")}
        if "as=APIGroupDiscoveryList" in params and "g=apidiscovery.k8s.io" in params:
            if "v=v2" in params:
                return AGGREGATED_V2
            if "v=v2beta1" in params:
                return AGGREGATED_V2BETA1
    return None


def _resources(group: str, version: str) -> list[Resource]:
    return [r for (g, v, _p), r in RESOURCES.items() if g == group and v == version]


def _sub_kind(res: Resource, sub: str) -> dict[str, str]:
    if sub == "scale":
        return {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    return {"group": res.group, "version": res.version, "kind": res.kind}


def _sub_verbs(sub: str) -> list[str]:
    return ["get"]


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_doc(group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in GROUP_VERSIONS[group]]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list() -> dict[str, Any]:
    groups = [_group_doc(g) for g in GROUP_VERSIONS if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str) -> dict[str, Any] | None:
    if not group or group not in GROUP_VERSIONS:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group)}


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    if version not in GROUP_VERSIONS.get(group, ()):
        return None
    gv = f"{group}/{version}" if group else version
    items: list[dict[str, Any]] = []
    for res in _resources(group, version):
        entry: dict[str, Any] = {
            "name": res.plural, "singularName": res.singular, "namespaced": res.namespaced,
            "kind": res.kind, "verbs": list(res.verbs),
        }
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        if res.categories:
            entry["categories"] = list(res.categories)
        items.append(entry)
        for sub in res.subresources:
            sk = _sub_kind(res, sub)
            sub_entry: dict[str, Any] = {
                "name": f"{res.plural}/{sub}", "singularName": "", "namespaced": res.namespaced,
                "kind": sk["kind"], "verbs": _sub_verbs(sub),
            }
            if sk["group"] != res.group or sk["version"] != res.version:
                sub_entry["group"], sub_entry["version"] = sk["group"], sk["version"]
            items.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


def _aggregated_resource(res: Resource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": res.plural,
        "responseKind": {"group": res.group, "version": res.version, "kind": res.kind},
        "scope": "Namespaced" if res.namespaced else "Cluster",
        "singularResource": res.singular,
        "verbs": list(res.verbs),
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    if res.categories:
        entry["categories"] = list(res.categories)
    if res.subresources:
        entry["subresources"] = [
            {"subresource": sub, "responseKind": _sub_kind(res, sub), "verbs": _sub_verbs(sub)}
            for sub in res.subresources
        ]
    return entry


def aggregated(core: bool, media_type: str) -> dict[str, Any]:
    """The APIGroupDiscoveryList for `/api` (core) or `/apis` (every named group)."""
    items = []
    for group, versions in GROUP_VERSIONS.items():
        if bool(group) == core:
            continue
        items.append({
            "metadata": {"name": group, "creationTimestamp": None},
            "versions": [
                {"version": v, "resources": [_aggregated_resource(r) for r in _resources(group, v)],
                 "freshness": "Current"}
                for v in versions
            ],
        })
    version = "v2" if media_type == AGGREGATED_V2 else "v2beta1"
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {}, "items": items}


def version_info() -> dict[str, str]:
    return {
        "major": "1", "minor": "32", "gitVersion": "v1.32.0-sleuth-simcluster",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
        "platform": "linux/amd64",
    }
