"""Finding the API: kubeconfig contexts, in-cluster service account, settings, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from sleuth_common.config import load_settings
from sleuth_kube_mcp import Settings
from sleuth_kube_mcp.kube import KubeConfigError, load_access
from sleuth_kube_mcp.kube._config import in_cluster
from sleuth_kube_mcp.kube._kinds import KindResolver


def _kubeconfig(tmp_path: Path, users: dict, current: str = "a") -> Path:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [
            {"name": "c", "cluster": {"server": "https://127.0.0.1:6443/", "insecure-skip-tls-verify": True}}
        ],
        "contexts": [{"name": name, "context": {"cluster": "c", "user": name}} for name in users],
        "users": [{"name": name, "user": user} for name, user in users.items()],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_kubeconfig_current_and_named_context(tmp_path):
    (tmp_path / "tok").write_text("file-token\n")
    path = _kubeconfig(tmp_path, {"a": {"token": "tok-a"}, "b": {"tokenFile": "tok"}})
    a = load_access(str(path))
    assert a.server == "https://127.0.0.1:6443" and a.default_token() == "tok-a"
    b = load_access(str(path), "b")
    assert b.default_token() == "file-token"  # relative tokenFile resolved beside the kubeconfig
    with pytest.raises(KubeConfigError, match="no context named 'zzz'"):
        load_access(str(path), "zzz")


def test_missing_kubeconfig_and_not_in_cluster(tmp_path, monkeypatch):
    with pytest.raises(KubeConfigError, match="cannot read kubeconfig"):
        load_access(str(tmp_path / "nope"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeConfigError, match="not running in a pod"):
        load_access("")


def test_in_cluster_reads_the_rotating_token(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    (tmp_path / "token").write_text("t1")
    access = in_cluster(tmp_path)
    assert access.server == "https://10.96.0.1:443" and access.default_token() == "t1"
    (tmp_path / "token").write_text("t2")
    later = time.time() + 5
    os.utime(tmp_path / "token", (later, later))
    assert access.default_token() == "t2"


def test_service_account_dir_setting_points_in_cluster_access_at_a_projected_token(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    (tmp_path / "token").write_text("projected")
    cfg = tmp_path / "sleuth.yaml"
    cfg.write_text(f"kube_mcp:\n  service_account_dir: {tmp_path}\n")
    k = load_settings(Settings, cfg).kube_mcp
    access = load_access(k.kubeconfig, k.context, k.service_account_dir)
    assert access.default_token() == "projected" and access.source == "in-cluster service account"
    assert Settings().kube_mcp.service_account_dir == "/var/run/secrets/kubernetes.io/serviceaccount"


def test_settings_from_yaml(tmp_path):
    cfg = tmp_path / "sleuth.yaml"
    cfg.write_text("kube_mcp:\n  port: 9999\n  accept_caller_token: true\n  cluster_name: prod-1\nother: 1\n")
    s = load_settings(Settings, cfg)
    assert s.kube_mcp.port == 9999 and s.kube_mcp.accept_caller_token and s.kube_mcp.cluster_name == "prod-1"
    d = Settings().kube_mcp
    assert (
        d.host,
        d.port,
        d.kubeconfig,
        d.context,
        d.accept_caller_token,
        d.request_timeout,
        d.max_log_bytes,
    ) == ("127.0.0.1", 8181, "", "", False, 10.0, 262144)


def test_kind_names_resolve():
    r = KindResolver()
    assert r.builtin("Deployment").plural == "deployments"
    assert r.builtin("deploy").kind == "Deployment"
    assert r.builtin("deployments.apps").kind == "Deployment"
    assert r.builtin("ingress").kind == "Ingress"
    assert r.builtin("storageclass").namespaced is False
    assert r.builtin("networkpolicies").group == "networking.k8s.io"
    assert r.builtin("widgets") is None
    r.learn(
        [
            (
                "example.com",
                "v1",
                {
                    "resources": [
                        {
                            "name": "widgets",
                            "kind": "Widget",
                            "namespaced": True,
                            "shortNames": ["wd"],
                            "verbs": ["get", "list"],
                        },
                        {"name": "widgets/status", "kind": "Widget", "namespaced": True, "verbs": ["get"]},
                    ]
                },
            )
        ]
    )
    w = r.discovered("wd")
    assert (
        w is not None and w.object_path("w1", "team-a") == "/apis/example.com/v1/namespaces/team-a/widgets/w1"
    )
    assert r.discovered("widget") == w


def test_cli_refuses_to_start_without_cluster_access(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"kube_mcp:\n  kubeconfig: {tmp_path / 'missing'}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sleuth_kube_mcp", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "cannot read kubeconfig" in proc.stderr


def test_cli_refuses_to_start_without_an_identity_key(sim, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"kube_mcp:\n  kubeconfig: {sim.kubeconfig('sleuth-reader')}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_IDENTITY")}
    proc = subprocess.run(
        [sys.executable, "-m", "sleuth_kube_mcp", "--config", str(cfg)],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert proc.returncode == 2 and "verify_key_files" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.connected
def test_cli_serves_healthz_and_readyz(sim, tmp_path):
    from sleuth.embedded import free_port
    from sleuth_common.identity import generate_keypair

    port = free_port()
    _private, public = generate_keypair()
    (tmp_path / "agent.pub").write_bytes(public)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"kube_mcp:\n  kubeconfig: {sim.kubeconfig('alice')}\n  port: {port}\n  cluster_name: demo\n"
        f"identity:\n  verify_key_files: [{tmp_path / 'agent.pub'}]\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth_kube_mcp", "--config", str(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "kube-mcp did not start"
                time.sleep(0.2)
        assert r.json() == {"status": "alive"}
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
        # Nothing about where or how it reads the API.
        assert ready.json() == {"ready": True, "kubernetes": "ok", "cluster": "demo"}
        refused = httpx.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401 and "unauthenticated" in refused.json()["error"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
