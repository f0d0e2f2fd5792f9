"""pull_always_on_digest: imagePullPolicy Always on an image pinned by digest."""

from __future__ import annotations

import json

from report_objects import container, findings, pod_spec, workload

DIGEST = "registry.internal/app@sha256:" + "d" * 64


def test_always_on_a_digest_gets_a_patch_to_if_not_present() -> None:
    dep = workload(spec=pod_spec(container("app", DIGEST, imagePullPolicy="Always")))
    (f,) = findings("pull_always_on_digest", dep)
    assert f.severity == "low" and f.observed["image_pull_policy"] == "Always"
    prefix = "kubectl patch deployment web -n team-a -p '"
    assert f.fix.startswith(prefix)
    patch = json.loads(f.fix[len(prefix):-1])
    assert patch == {"spec": {"template": {"spec": {"containers": [{"name": "app", "imagePullPolicy": "IfNotPresent"}]}}}}


def test_an_init_container_is_patched_as_one() -> None:
    spec = pod_spec(container("app"), initContainers=[container("init", DIGEST, port=None, imagePullPolicy="Always")])
    (f,) = findings("pull_always_on_digest", workload(spec=spec))
    assert '"initContainers":[{"name":"init"' in f.fix


def test_tags_other_policies_and_a_missing_policy_are_fine() -> None:
    assert findings("pull_always_on_digest", workload(spec=pod_spec(container("app", "app:1.0", imagePullPolicy="Always")))) == []
    assert findings("pull_always_on_digest", workload(spec=pod_spec(container("app", DIGEST)))) == []
    assert findings("pull_always_on_digest", workload(spec=pod_spec(container("app", DIGEST, imagePullPolicy=None)))) == []
