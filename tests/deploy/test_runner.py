"""The deployment runner rewrites names, own addresses and mount paths — and nothing else (a
runner that rewrote more could hide a config that drifted from what the services read)."""

from __future__ import annotations

from pathlib import Path

from tests.deploy.runner import Mount, Network, entrypoint_commands


def _net() -> Network:
    net = Network()
    net.name("nats", "127.9.9.2")
    net.name("kubernetes.default.svc", "127.9.9.4", {443: 6443})
    net.name("sleuth-gateway.sleuth.svc", "127.9.9.5", {80: 8080})
    return net


def test_names_in_urls_host_ports_and_bare_arguments_become_their_owners_address() -> None:
    net, own = _net(), "127.9.9.7"
    assert net.rewrite("nats://nats:4222", own, []) == "nats://127.9.9.2:4222"
    assert net.rewrite("nats://user@nats:4222", own, []) == "nats://user@127.9.9.2:4222"
    assert net.rewrite("https://kubernetes.default.svc", own, []) == "https://127.9.9.4:6443"
    assert net.rewrite("https://kubernetes.default.svc:443/api", own, []) == "https://127.9.9.4:6443/api"
    assert net.rewrite("http://sleuth-gateway.sleuth.svc/v1", own, []) == "http://127.9.9.5:8080/v1"
    assert net.rewrite("nats:8222", own, []) == "127.9.9.2:8222"
    assert net.rewrite("nats", own, [], bare=True) == "127.9.9.2"
    assert net.rewrite("nats", own, []) == "nats"  # a config value naming a user, a section …


def test_own_wildcard_and_loopback_become_the_units_address() -> None:
    net, own = _net(), "127.9.9.7"
    assert net.rewrite("0.0.0.0", own, []) == own
    assert net.rewrite("http://127.0.0.1:8080/readyz", own, []) == f"http://{own}:8080/readyz"
    assert net.rewrite("http://localhost:9101/readyz", own, []) == f"http://{own}:9101/readyz"


def test_everything_else_is_left_as_written() -> None:
    net, own = _net(), "127.9.9.7"
    for s in ("nats_jetstream", "natsy", "redis://valkey-elsewhere:6379/0", "https://example.com", "--config",
              "sleuth-gateway", "JOBS", "$G"):
        assert net.rewrite(s, own, []) == s
    doc = {"nats": {"url": "nats://nats:4222"}, "gateway": {"host": "0.0.0.0", "prot": 8080}}
    assert net.rewrite_doc(doc, own, []) == {"nats": {"url": "nats://127.9.9.2:4222"},
                                             "gateway": {"host": own, "prot": 8080}}


def test_paths_under_a_mount_target_move_to_the_volumes_host_directory(tmp_path: Path) -> None:
    net = _net()
    mounts = [Mount("/etc/sleuth/identity", tmp_path / "id"), Mount("/etc/sleuth/sleuth.yaml", tmp_path / "c.yaml", "")]
    assert net.rewrite("/etc/sleuth/identity/agent.key", "1", mounts) == f"{tmp_path}/id/agent.key"
    assert net.rewrite("/etc/sleuth/sleuth.yaml", "1", mounts) == f"{tmp_path}/c.yaml"
    assert net.rewrite("/etc/sleuth/identityx", "1", mounts) == "/etc/sleuth/identityx"


def test_the_entrypoint_case_list_is_read() -> None:
    assert {"sleuth-gateway", "sleuth-agent", "sleuth"} <= entrypoint_commands()
