"""``--advertise``: the names clients reach simcluster by (a compose service name), and the token
files beside the kubeconfigs. Nothing here resolves an advertised name: the TLS checks connect to
127.0.0.1 and present the name as SNI / the host name to verify, as a client resolving it would."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from cryptography import x509

from sleuth_simcluster import SimCluster
from sleuth_simcluster.__main__ import _parser


def sans(sim: SimCluster) -> set[str]:
    cert = x509.load_pem_x509_certificate((sim.state_dir / "tls" / "server.crt").read_bytes())
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {*ext.get_values_for_type(x509.DNSName), *map(str, ext.get_values_for_type(x509.IPAddress))}


def handshake(sim: SimCluster, name: str) -> None:
    """A TLS handshake with 127.0.0.1 that verifies the certificate for ``name``."""
    ctx = ssl.create_default_context(cafile=str(sim.ca_file))
    with socket.create_connection(("127.0.0.1", sim.port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname=name):
        pass


def test_advertised_names_are_in_the_certificate_and_the_kubeconfigs(fixture_snapshot: Path, tmp_path: Path) -> None:
    with SimCluster(fixture_snapshot, tmp_path, advertise=["simcluster", "10.0.0.7", "SimCluster"]) as sim:
        assert sim.advertise == ("simcluster", "10.0.0.7")
        assert sans(sim) == {"localhost", "127.0.0.1", "simcluster", "10.0.0.7"}
        assert sim.url == f"https://simcluster:{sim.port}"
        for user, path in sim.kubeconfigs().items():
            cluster = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]
            assert cluster["server"] == sim.url, user
            assert Path(cluster["certificate-authority"]) == sim.ca_file.resolve()
        handshake(sim, "simcluster")
        handshake(sim, "localhost")
        with pytest.raises(ssl.SSLCertVerificationError):
            handshake(sim, "elsewhere")
        # discovery tells kubectl the advertised address, as kube-apiserver's --advertise-address
        ctx = ssl.create_default_context(cafile=str(sim.ca_file))
        with httpx.Client(verify=ctx, headers={"Authorization": "Bearer fx-alice-token"}) as c:
            r = c.get(f"https://127.0.0.1:{sim.port}/api", extensions={"sni_hostname": "simcluster"})
        assert r.json()["serverAddressByClientCIDRs"][0]["serverAddress"] == f"simcluster:{sim.port}"


def test_without_advertise_nothing_changes(fixture_snapshot: Path, tmp_path: Path) -> None:
    with SimCluster(fixture_snapshot, tmp_path) as sim:
        assert sim.advertise == ()
        assert sans(sim) == {"localhost", "127.0.0.1"}
        assert sim.url == f"https://127.0.0.1:{sim.port}"
        server = yaml.safe_load(sim.kubeconfig("alice").read_text())["clusters"][0]["cluster"]["server"]
        assert server == sim.url


def test_an_ipv6_name_is_bracketed_in_urls(fixture_snapshot: Path, tmp_path: Path) -> None:
    with SimCluster(fixture_snapshot, tmp_path, advertise=["[fd00::7]"]) as sim:
        assert sim.url == f"https://[fd00::7]:{sim.port}"
        assert "fd00::7" in sans(sim)


def test_each_users_token_is_in_its_own_file(fixture_snapshot: Path, tmp_path: Path) -> None:
    with SimCluster(fixture_snapshot, tmp_path) as sim:
        tokens = tmp_path / "tokens"
        assert tokens.stat().st_mode & 0o077 == 0
        assert {p.name for p in tokens.iterdir()} == set(sim.users)
        for user in sim.users:
            path = sim.token_file(user)
            assert path == tokens / user
            assert path.read_text() == sim.token(user), user
            assert path.stat().st_mode & 0o777 == 0o600
            kubeconfig = yaml.safe_load(sim.kubeconfig(user).read_text())
            assert kubeconfig["users"][0]["user"]["token"] == path.read_text()
        assert sim.token_file("alice").read_text() == "fx-alice-token"
        # Sleuth's own identities get a token made up at start, in the file as in the kubeconfig
        assert sim.token_file("sleuth-authz").read_text().startswith("sleuth-authz-")
        with pytest.raises(KeyError):
            sim.token_file("mallory")
        # the file is what authz-cache sends: the API server knows who that is
        ctx = ssl.create_default_context(cafile=str(sim.ca_file))
        token = sim.token_file("sleuth-authz").read_text()
        with httpx.Client(verify=ctx, headers={"Authorization": f"Bearer {token}"}) as c:
            r = c.post(f"{sim.url}/apis/authentication.k8s.io/v1/selfsubjectreviews", json={})
        assert r.json()["status"]["userInfo"]["username"] == "sleuth-authz"


def test_a_restart_rewrites_the_token_files(fixture_snapshot: Path, tmp_path: Path) -> None:
    with SimCluster(fixture_snapshot, tmp_path) as first:
        old = first.token_file("sleuth-authz").read_text()
    with SimCluster(fixture_snapshot, tmp_path) as second:
        new = second.token_file("sleuth-authz").read_text()
        assert new == second.token("sleuth-authz") != old


def test_cli_option_parsing() -> None:
    args = _parser().parse_args(["--snapshot", "s", "--state-dir", "d", "--advertise", "simcluster",
                                 "--advertise", "sim.example.com,10.1.2.3"])
    assert args.advertise == ["simcluster", "sim.example.com", "10.1.2.3"]
    assert _parser().parse_args(["--snapshot", "s", "--state-dir", "d"]).advertise == []
    for bad in ("https://simcluster", "simcluster:6443", "", "a b", "-x.example"):
        with pytest.raises(SystemExit):
            _parser().parse_args(["--snapshot", "s", "--state-dir", "d", f"--advertise={bad}"])


def test_cli_advertises_the_name_in_its_ready_line(fixture_snapshot: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth_simcluster", "--snapshot", str(fixture_snapshot), "--state-dir",
         str(tmp_path), "--host", "127.0.0.1", "--port", "0", "--advertise", "simcluster"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["url"].startswith("https://simcluster:")
        doc = yaml.safe_load(Path(ready["kubeconfigs"]["sleuth-reader"]).read_text())
        assert doc["clusters"][0]["cluster"]["server"] == ready["url"]
        assert (tmp_path / "tokens" / "sleuth-reader").read_text() == doc["users"][0]["user"]["token"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
