"""image_tag_mutable: :latest or untagged images (init containers too); digests and versions are fine."""

from __future__ import annotations

import pytest
from report_objects import container, findings, pod_spec, workload


def with_image(image: str, init: str = "") -> dict:
    extra = {"initContainers": [container("init", init, port=None)]} if init else {}
    return workload(spec=pod_spec(container("app", image), **extra))


@pytest.mark.parametrize(("image", "repo"), [
    ("nginx:latest", "nginx"),
    ("nginx", "nginx"),
    ("registry.internal:5000/team/app", "registry.internal:5000/team/app"),
    ("ghcr.io/org/app:latest", "ghcr.io/org/app"),
])
def test_mutable_images_get_set_image_with_the_repository(image: str, repo: str) -> None:
    (f,) = findings("image_tag_mutable", with_image(image))
    assert f.observed == {"container": "app", "image": image}
    assert f.fix.startswith(f"kubectl set image deployment/web -n team-a app={repo}:<version>")


@pytest.mark.parametrize("image", [
    "nginx:1.27.2", "registry.internal:5000/team/app:2.1", "nginx@sha256:" + "b" * 64,
    "nginx:latest@sha256:" + "c" * 64,
])
def test_pinned_images_are_fine(image: str) -> None:
    assert findings("image_tag_mutable", with_image(image)) == []


def test_init_containers_count_and_a_missing_image_is_skipped() -> None:
    (f,) = findings("image_tag_mutable", with_image("nginx:1.27", init="busybox"))
    assert f.observed["container"] == "init"
    no_image = with_image("nginx:1.27")
    del no_image["spec"]["template"]["spec"]["containers"][0]["image"]
    assert findings("image_tag_mutable", no_image) == []
