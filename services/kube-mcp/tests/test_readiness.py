"""kube-mcp's /healthz (alive) and /readyz (its own Kubernetes credentials are loaded)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sleuth_kube_mcp import Settings, create_app


def kubeconfig(tmp_path: Path, user: dict[str, Any]) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": user}],
    }))
    return path


def app_for(path: Path, **kube_mcp: Any) -> Any:
    return create_app(Settings.model_validate({
        "kube_mcp": {"kubeconfig": str(path), "cluster_name": "demo", "require_identity": False, **kube_mcp},
        "identity": {"verify_key_files": [], "verify_keys_env": ""},
    }))


async def get(app: Any, path: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.get(path)


async def test_not_ready_until_the_token_file_is_there(tmp_path: Path) -> None:
    token = tmp_path / "token"
    app = app_for(kubeconfig(tmp_path, {"tokenFile": str(token)}))
    assert (await get(app, "/healthz")).json() == {"status": "alive"}
    resp = await get(app, "/readyz")
    assert resp.status_code == 503
    assert resp.json() == {"ready": False, "kubernetes": "the token file is missing or empty", "cluster": "demo"}
    assert str(tmp_path) not in resp.text  # nothing about where it reads from

    token.write_text("reader-token\n")  # a projected token volume mounted late
    resp = await get(app, "/readyz")
    assert resp.status_code == 200
    assert resp.json() == {"ready": True, "kubernetes": "ok", "cluster": "demo"}


@dataclass(frozen=True)
class Case:
    name: str
    user: dict[str, Any]
    kube_mcp: dict[str, Any]
    kubernetes: str


CASES = [
    Case("token", {"token": "t"}, {}, "ok"),
    Case("no credentials", {}, {}, "no token or client certificate is configured"),
    # Every read uses the caller's own token: kube-mcp needs none of its own.
    Case("callers' tokens only", {}, {"accept_caller_token": True, "require_identity": True}, "ok"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_readiness_by_credentials(tmp_path: Path, case: Case) -> None:
    resp = await get(app_for(kubeconfig(tmp_path, case.user), **case.kube_mcp), "/readyz")
    assert resp.json()["kubernetes"] == case.kubernetes
    assert resp.status_code == (200 if case.kubernetes == "ok" else 503)
