"""Results are filtered for the caller: foreign records dropped, foreign documents withheld."""

from __future__ import annotations

import json

from sleuth_common.scope import Scope, filter_result

ALICE = Scope.of(["team-a"])


def _pod(ns: str, name: str) -> dict:
    return {"namespace": ns, "name": name, "phase": "Running", "containers": [{"name": "app"}]}


def test_drops_foreign_records_and_counts_them() -> None:
    doc = {"items": [_pod("team-a", "api-1"), _pod("team-b", "pay-1"), _pod("team-b", "pay-2")]}
    out = filter_result(json.dumps(doc), ALICE)
    assert out.outcome == "filtered"
    assert out.removed == 2
    assert [p["name"] for p in out.data["items"]] == ["api-1"]
    assert "pay" not in out.reason and "team-b" not in out.reason


def test_kubernetes_metadata_and_involved_object() -> None:
    events = {
        "kind": "EventList",
        "items": [
            {"metadata": {"name": "e1", "namespace": "team-a"}, "involvedObject": {"namespace": "team-a"}},
            {"metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod", "namespace": "team-b"}},
            {"metadata": {"name": "e3", "namespace": "team-b"}},
        ],
    }
    out = filter_result(json.dumps(events), ALICE)
    assert out.outcome == "filtered" and out.removed == 2
    assert [e["metadata"]["name"] for e in out.data["items"]] == ["e1"]


def test_nested_lists_at_any_depth() -> None:
    # "n1" names no namespace: under the allowlist it is withheld (it used to be shown), while
    # the team-a pod listed under it is the caller's and stays.
    doc = {"nodes": [{"name": "n1", "pods": [_pod("team-a", "a"), _pod("team-b", "b")]}]}
    out = filter_result(json.dumps(doc), ALICE)
    assert out.outcome == "filtered" and out.removed == 2
    assert out.data["nodes"][0]["pods"] == [_pod("team-a", "a")]
    assert "n1" not in out.text and "team-b" not in out.text
    pinned = filter_result(json.dumps(doc), ALICE, pinned=True)
    assert pinned.removed == 1 and pinned.data["nodes"][0]["name"] == "n1"


def test_namespace_maps_lists_and_refs() -> None:
    doc = {
        "by_namespace": {"team-a": 3, "team-b": 4},
        "namespaces": ["team-a", "team-b"],
        "owners": [{"namespace": "team-b", "name": "x"}],
        "refs": ["team-a/api", "team-b/pay", "docker.io/nginx"],
    }
    out = filter_result(json.dumps(doc), ALICE)
    assert "team-b" not in json.dumps(out.data)
    assert out.data["refs"] == ["team-a/api", "docker.io/nginx"]
    assert out.removed == 4


def test_top_level_foreign_document_is_withheld() -> None:
    out = filter_result(json.dumps(_pod("team-b", "pay-1")), ALICE)
    assert out.outcome == "withheld" and out.data is None
    out = filter_result(json.dumps({"metadata": {"name": "x", "namespace": "team-b"}}), ALICE)
    assert out.outcome == "withheld"


def test_all_allowed_document_is_kept_untouched() -> None:
    doc = {"namespace": "team-a", "items": [_pod("team-a", "a")], "namespaceSelector": {"matchLabels": {"x": "y"}}}
    out = filter_result(json.dumps(doc), ALICE)
    assert out.outcome == "kept" and out.removed == 0 and out.data == doc
    # Without its own namespace the envelope's selector value is not attributable (the old
    # filter showed it): withheld, the records it holds kept.
    bare = {"items": [_pod("team-a", "a")], "namespaceSelector": {"matchLabels": {"x": "y"}}}
    out = filter_result(json.dumps(bare), ALICE)
    assert out.outcome == "filtered" and out.removed == 1 and out.data["items"] == [_pod("team-a", "a")]
    assert out.data["namespaceSelector"]["matchLabels"]["x"] != "y"


def test_unstructured_text() -> None:
    out = filter_result("2026-11-30T09:00:00Z panic: boom", ALICE)
    assert out.outcome == "withheld" and "narrow" in out.reason.lower()
    assert "team-a" in out.reason  # tells the caller which namespaces they may use
    out = filter_result("panic: boom", ALICE, pinned=True)
    assert out.outcome == "kept" and out.data == "panic: boom"


def test_cluster_wide_is_unfiltered() -> None:
    doc = {"items": [_pod("team-a", "a"), _pod("team-b", "b")]}
    out = filter_result(json.dumps(doc), Scope.of([], cluster_wide=True))
    assert out.outcome == "kept" and out.data == doc
    assert filter_result("text", Scope.of([], cluster_wide=True)).outcome == "kept"


def test_too_large_is_withheld() -> None:
    out = filter_result(json.dumps({"items": [_pod("team-a", "a")] * 50}), ALICE, max_bytes=100)
    assert out.outcome == "withheld"


def test_as_json_shape() -> None:
    out = filter_result(json.dumps([_pod("team-b", "b")]), ALICE)
    assert out.as_json() == {"outcome": "filtered", "result": [], "removed": 1, "reason": out.reason}


def test_images_urls_and_paths_are_not_namespace_refs() -> None:
    # ``bitnami/redis`` under ``image`` is a repository, not namespace "bitnami": the container
    # stays. The same shape under a plain key still counts as a foreign ns/name reference.
    pod = {
        "namespace": "team-a",
        "name": "api-1",
        "containers": [
            {"name": "app", "image": "jfusterm/stress", "imageID": "library/redis@sha256:ab",
             "volume_mounts": [{"mountPath": "data/cache"}], "args": ["conf/app.yaml"]},
        ],
        "images": ["bitnami/redis", "team-b/api"],
        "related": [{"target": "team-b/pay"}, {"target": "team-a/db"}],
    }
    out = filter_result(json.dumps({"items": [pod]}), ALICE)
    kept = out.data["items"][0]
    assert kept["containers"][0]["image"] == "jfusterm/stress"
    assert kept["images"] == ["bitnami/redis", "team-b/api"]
    assert kept["related"] == [{"target": "team-a/db"}]
    assert out.removed == 1


def test_security_profile_names_are_not_namespace_references() -> None:
    """``runtime/default`` (seccomp, AppArmor) is a profile name, not ``namespace/name``: a pod
    carrying the legacy annotation (OpenShift's restricted SCC sets it) is the caller's own pod.
    A real ``ns/name`` reference elsewhere in the same record is still read as one."""
    pod = {"namespace": "team-a", "name": "api-1", "phase": "Running",
           "annotations": {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
                           "container.apparmor.security.beta.kubernetes.io/app": "localhost/k8s-apparmor-example"},
           "containers": [{"name": "app", "security_context": {"seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"}}}]}
    out = filter_result(json.dumps(pod), ALICE)
    assert out.outcome != "withheld" and out.data["annotations"]["seccomp.security.alpha.kubernetes.io/pod"] == "runtime/default"
    leaky = {**pod, "owner": "team-b/pay-1"}
    assert "pay-1" not in (filter_result(json.dumps({"items": [leaky]}), ALICE).text or "")


def test_an_image_of_the_callers_project_in_an_in_cluster_registry_keeps_its_pod() -> None:
    """OpenShift's internal registry is a Service in a platform namespace: an image
    ``image-registry.openshift-image-registry.svc:5000/team-a/api:1`` is the caller's own image.
    Its registry host is hidden; the container record is kept (it was withheld whole, which hid
    every container state and log hint on OpenShift). An image of another team's project in the
    same registry still keeps the record out."""
    def pod(image: str) -> dict:
        return {"namespace": "team-a", "name": "api-1", "phase": "Running",
                "containers": [{"name": "api", "image": image, "restart_count": 3, "last_termination": {"reason": "OOMKilled"}}]}

    own = filter_result(json.dumps(pod("image-registry.openshift-image-registry.svc:5000/team-a/api:1.0.3")), ALICE)
    c = own.data["containers"][0]
    assert c["last_termination"]["reason"] == "OOMKilled" and c["image"].endswith("/team-a/api:1.0.3")
    assert "openshift-image-registry" not in own.text
    other = filter_result(json.dumps({"items": [pod("image-registry.openshift-image-registry.svc:5000/team-b/pay:2")]}), ALICE)
    assert "team-b" not in (other.text or "") and "openshift-image-registry" not in (other.text or "")
    url = filter_result(json.dumps({"items": [{"namespace": "team-a", "name": "x", "containers": [
        {"name": "c", "url": "http://pay.team-b.svc.cluster.local/", "id": "pay"}]}]}), ALICE)
    assert "team-b" not in (url.text or "")  # only images: a URL to another namespace still taints its record
