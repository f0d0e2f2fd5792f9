"""quorum_replicas: consensus systems as StatefulSets with an even member count or fewer than 3."""

from __future__ import annotations

import pytest
from report_objects import container, findings, pod_spec, workload


def sts(image: str, replicas: int) -> dict:
    return workload("StatefulSet", "quorum", replicas=replicas, spec=pod_spec(container("main", image)))


@pytest.mark.parametrize(("image", "replicas", "target"), [
    ("quay.io/coreos/etcd:v3.5.15", 1, 3),
    ("zookeeper:3.9", 2, 3),
    ("confluentinc/cp-kafka:7.7.0", 4, 5),
    ("hashicorp/consul:1.19@sha256:" + "a" * 64, 2, 3),
])
def test_unsafe_member_counts_get_the_next_safe_odd_count(image: str, replicas: int, target: int) -> None:
    (f,) = findings("quorum_replicas", sts(image, replicas))
    assert f.severity == "high" and f.observed == {"replicas": replicas, "image": image, "suggested": target}
    assert f.fix.startswith(f"kubectl scale statefulset/quorum -n team-a --replicas={target}")


def test_even_counts_say_the_extra_member_adds_nothing() -> None:
    (f,) = findings("quorum_replicas", sts("bitnami/etcd:3.5", 4))
    assert "4 members tolerate no more failures than 3" in f.why


@pytest.mark.parametrize(("image", "replicas"), [
    ("quay.io/coreos/etcd:v3.5.15", 3),
    ("zookeeper:3.9", 5),
    ("postgres:16", 2),                  # not a quorum system
    ("registry.internal/etcd-backup-ui:1.0", 1),  # only names like one
    ("zookeeper:3.9", 0),                # scaled to zero on purpose
])
def test_safe_or_unrelated_statefulsets_are_fine(image: str, replicas: int) -> None:
    assert findings("quorum_replicas", sts(image, replicas)) == []


def test_a_deployment_is_not_judged_and_a_container_without_image_is_skipped() -> None:
    dep = workload("Deployment", "etcd", replicas=2, spec=pod_spec(container("etcd", "etcd:3.5")))
    no_image = sts("etcd:3.5", 2)
    del no_image["spec"]["template"]["spec"]["containers"][0]["image"]
    assert findings("quorum_replicas", dep, no_image) == []
