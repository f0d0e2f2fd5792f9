"""SimCluster's lifecycle and files, the CLI, and the protobuf reader."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
import yaml

from sleuth_simcluster import SimCluster, SimClusterError
from sleuth_simcluster._protobuf import ProtobufError, decode_review, encode_ssar, field_bytes, fields


def test_start_stop_leaves_no_threads(fixture_snapshot: Path, tmp_path: Path) -> None:
    before = set(threading.enumerate())
    sim = SimCluster(fixture_snapshot, tmp_path)
    sim.start()
    assert sim.url.startswith("https://127.0.0.1:") and sim.port > 0
    with httpx.Client(verify=ssl.create_default_context(cafile=str(sim.ca_file))) as c:
        assert c.get(f"{sim.url}/healthz").text == "ok"
    sim.stop()
    assert set(threading.enumerate()) == before
    with pytest.raises(httpx.ConnectError), httpx.Client(verify=False) as c:
        c.get(f"{sim.url}/healthz")


def test_kubeconfig_files(fixture_snapshot: Path, tmp_path: Path) -> None:
    with SimCluster(fixture_snapshot, tmp_path / "state") as sim:
        path = sim.kubeconfig("alice")
        assert path == tmp_path / "state" / "kubeconfig" / "alice.yaml"
        doc = yaml.safe_load(path.read_text())
        cluster = doc["clusters"][0]
        assert cluster["name"] == "fixture" and cluster["cluster"]["server"] == sim.url
        assert Path(cluster["cluster"]["certificate-authority"]) == sim.ca_file.resolve()
        assert doc["users"][0]["user"]["token"] == sim.token("alice") == "fx-alice-token"
        ctx = doc["contexts"][0]["context"]
        assert (ctx["cluster"], ctx["user"], ctx["namespace"]) == ("fixture", "alice", "default")
        # the snapshot's users, plus Sleuth's own identities it does not define (DESIGN §4)
        assert set(sim.kubeconfigs()) == {"alice", "bob", "carol", "dave", "root", "authz", "reader",
                                          "sleuth-reader", "sleuth-authz"}
        assert path.stat().st_mode & 0o077 == 0
        with pytest.raises(KeyError):
            sim.token("mallory")


def test_busy_port_is_reported(fixture_snapshot: Path, tmp_path: Path) -> None:
    with SimCluster(fixture_snapshot, tmp_path / "a") as first:
        with pytest.raises(SimClusterError, match="cannot listen"):
            SimCluster(fixture_snapshot, tmp_path / "b", port=first.port).start()


def test_cli_prints_ready_line_and_stops_on_sigterm(fixture_snapshot: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth_simcluster", "--snapshot", str(fixture_snapshot),
         "--state-dir", str(tmp_path), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["url"].startswith("https://127.0.0.1:")
        assert Path(ready["ca_file"]).is_file() and Path(ready["kubeconfigs"]["bob"]).is_file()
        ctx = ssl.create_default_context(cafile=ready["ca_file"])
        with httpx.Client(verify=ctx, headers={"Authorization": "Bearer fx-bob-token"}) as c:
            assert c.get(f"{ready['url']}/api/v1/namespaces/pay/pods").json()["kind"] == "PodList"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def test_cli_refuses_a_missing_snapshot(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "sleuth_simcluster", "--snapshot", str(tmp_path / "none"),
                           "--state-dir", str(tmp_path / "s"), "--port", "0"], capture_output=True, text=True,
                          timeout=30, check=False)
    assert proc.returncode == 2 and "not a directory" in proc.stderr


def test_protobuf_round_trip() -> None:
    body = encode_ssar({"namespace": "a", "verb": "get", "group": "apps", "resource": "deployments",
                        "subresource": "scale", "name": "web"})
    review = decode_review(body)
    assert review["kind"] == "SelfSubjectAccessReview" and review["apiVersion"] == "authorization.k8s.io/v1"
    assert review["spec"]["resourceAttributes"] == {"namespace": "a", "verb": "get", "group": "apps",
                                                    "resource": "deployments", "subresource": "scale", "name": "web"}
    nonres = decode_review(encode_ssar(non_resource_attributes={"path": "/healthz", "verb": "get"}))
    assert nonres["spec"] == {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}


def test_protobuf_varints_and_errors() -> None:
    assert fields(b"\x08\x96\x01" + field_bytes(2, "hi")) == {1: [150], 2: [b"hi"]}
    with pytest.raises(ProtobufError):
        fields(b"\x12\x05ab")  # length past the end
    with pytest.raises(ProtobufError):
        decode_review(b"not protobuf")
    with pytest.raises(ProtobufError):
        fields(b"\x0b")  # wire type 3 (groups) is not supported
