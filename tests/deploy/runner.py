"""Run what a deployment file describes, here: each container as a local process.

A container has its own network namespace and file system; a process here has neither. The
runner gives each container one loopback address of its own (``127.A.B.n``, one random /24 per
run, so its ports are the container's ports and two runs never collide) and rewrites, in the
container's argv, environment and every *file* mounted into it (the config file), exactly three
kinds of thing and nothing else:

- a name other containers reach it by (``nats``, ``sleuth-kube-mcp.sleuth.svc``,
  ``kubernetes.default.svc``), in a URL, a ``host:port`` or a bare argument, becomes the owner's
  loopback address (and a Service port its target port);
- the container's own "every interface" and loopback (``0.0.0.0``, ``127.0.0.1``,
  ``localhost``) become its own address;
- a path under a mount target becomes the host directory or file standing in for that volume.

Everything else (config keys, flags, commands) runs as written, so a config key or a command that
drifts from what the services read fails the run. Directory volumes are shared between the units
that mount them (named volumes, an init container's output) and never rewritten: what the
processes write there is already in host terms.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sleuth.embedded.procs import ManagedProcess, _bin, _valkey_binary, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "deploy" / "entrypoint.sh"

__all__ = ["Mount", "Network", "Runner", "Unit", "entrypoint_commands"]


def entrypoint_commands() -> set[str]:
    """The commands the image's entrypoint accepts (its ``case`` list)."""
    text = ENTRYPOINT.read_text()
    m = re.search(r"^\s*([a-z|-]+)\)\s*$", text, re.M)
    assert m, "no case list in deploy/entrypoint.sh"
    return set(m.group(1).split("|"))


@dataclass
class Mount:
    target: str
    """Path in the container."""
    source: Path
    """Host file or directory standing in for it."""
    file_text: str | None = None
    """For a mounted file (config, secret item): its content, rewritten before it is written."""
    files: dict[str, str] | None = None
    """For a directory of files (a ConfigMap, Secret or projected volume): relative path → content,
    each rewritten before it is written into ``source``."""


@dataclass
class Unit:
    """One container to run."""

    name: str
    image: str
    """``sleuth``, ``nats``, ``valkey`` or ``busybox``: which local program stands in for the image."""
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    hostnames: list[str] = field(default_factory=list)
    """Names other containers reach it by."""
    ports: dict[int, int] = field(default_factory=dict)
    """Service port → container port, for names in ``hostnames``."""
    ready_http: tuple[int, str] | None = None
    """(port, path) answering 200 when ready (the readiness probe / healthcheck target)."""
    ready_command: list[str] | None = None
    """A healthcheck command run in the container (sleuth image only: ``python`` is this one)."""
    ready_tcp: int | None = None
    working_dir: str | None = None


class Network:
    """Names → loopback addresses, and the rewriting of one container's strings."""

    def __init__(self) -> None:
        rnd = random.SystemRandom()
        # pytest-xdist worker gwN of M takes every M-th second octet from N on: two workers' runs
        # never share a /24.
        worker, count = os.environ.get("PYTEST_XDIST_WORKER", "gw0"), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")
        index, step = (int(worker[2:]), int(count)) if worker[2:].isdigit() and count.isdigit() else (0, 1)
        self.base = f"127.{rnd.choice(range(100 + index % max(step, 1), 250, max(step, 1)))}.{rnd.randrange(1, 250)}"
        self._next = 2
        self.names: dict[str, tuple[str, dict[int, int]]] = {}

    def allocate(self) -> str:
        ip = f"{self.base}.{self._next}"
        self._next += 1
        return ip

    def name(self, hostname: str, ip: str, ports: dict[int, int] | None = None) -> None:
        self.names[hostname.lower()] = (ip, dict(ports or {}))

    def _host(self, host: str, port: int | None, own_ip: str) -> tuple[str, int | None] | None:
        h = host.lower()
        if h in ("0.0.0.0", "127.0.0.1", "localhost", "::", "[::]"):
            return own_ip, port
        if h in self.names:
            ip, ports = self.names[h]
            return ip, ports.get(port, port) if port is not None else None
        return None

    _URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?:(?P<auth>[^@/\s]*)@)?(?P<host>[A-Za-z0-9_.-]+)(?::(?P<port>\d+))?")
    _HOSTPORT = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+):(?P<port>\d+)$")

    def rewrite(self, value: str, own_ip: str, mounts: list[Mount], *, bare: bool = False) -> str:
        """``value`` with names, own addresses and mount paths rewritten. A bare name (a whole
        word that is a host name, ``--advertise simcluster``) only with ``bare`` (an argument
        after the command): in a config value or the command itself a name is a name."""
        def url(m: re.Match[str]) -> str:
            scheme, auth, host, port = m["scheme"], m["auth"], m["host"], m["port"]
            default = {"https://": 443, "http://": 80}.get(scheme)
            mapped = self._host(host, int(port) if port else default, own_ip)
            if mapped is None:
                return m.group(0)
            ip, new_port = mapped
            suffix = f":{new_port}" if new_port is not None and (port or new_port != default) else ""
            return f"{scheme}{auth + '@' if auth else ''}{ip}{suffix}"

        out = self._URL.sub(url, value)
        if out == value:
            hp = self._HOSTPORT.match(value)
            if hp:
                mapped = self._host(hp["host"], int(hp["port"]), own_ip)
                if mapped is not None:
                    out = f"{mapped[0]}:{mapped[1]}"
            elif bare or value in ("0.0.0.0", "127.0.0.1", "localhost"):
                mapped = self._host(value, None, own_ip)
                if mapped is not None:
                    out = mapped[0]
        for m in sorted(mounts, key=lambda m: len(m.target), reverse=True):
            if out == m.target or out.startswith(m.target.rstrip("/") + "/"):
                out = str(m.source) + out[len(m.target.rstrip("/")):]
                break
        return out

    def rewrite_doc(self, doc: Any, own_ip: str, mounts: list[Mount]) -> Any:
        if isinstance(doc, dict):
            return {k: self.rewrite_doc(v, own_ip, mounts) for k, v in doc.items()}
        if isinstance(doc, list):
            return [self.rewrite_doc(v, own_ip, mounts) for v in doc]
        if isinstance(doc, str):
            return self.rewrite(doc, own_ip, mounts)
        return doc

    def rewrite_text(self, text: str, own_ip: str, mounts: list[Mount]) -> str:
        """A mounted file: YAML/JSON is rewritten value by value; anything else is kept."""
        import yaml

        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            return text
        if not isinstance(doc, (dict, list)):
            return text
        return yaml.safe_dump(self.rewrite_doc(doc, own_ip, mounts), sort_keys=False)


class Runner:
    """Start units in order, each as a local process on its own loopback address."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.net = Network()
        self.procs: dict[str, ManagedProcess] = {}
        self.ips: dict[str, str] = {}
        self.started: dict[str, float] = {}

    # -- addresses
    def place(self, unit: Unit) -> str:
        """Give ``unit`` its address and publish its names (before anything that reaches it starts)."""
        if unit.name not in self.ips:
            self.ips[unit.name] = ip = self.net.allocate()
            for h in unit.hostnames:
                self.net.name(h, ip, unit.ports)
        return self.ips[unit.name]

    def url(self, hostname: str, port: int, scheme: str = "http") -> str:
        ip, ports = self.net.names[hostname.lower()]
        return f"{scheme}://{ip}:{ports.get(port, port)}"

    # -- processes
    def _argv(self, unit: Unit, ip: str) -> tuple[list[str], str | None]:
        # A bare name only as a flag's value (``--advertise simcluster``); a subcommand is a word.
        argv = unit.argv[:1] + [self.net.rewrite(a, ip, unit.mounts, bare=prev.startswith("-"))
                                for prev, a in zip(unit.argv, unit.argv[1:], strict=False)]
        cwd = self.net.rewrite(unit.working_dir, ip, unit.mounts) if unit.working_dir else None
        if unit.image == "sleuth":
            assert argv and argv[0] in entrypoint_commands(), f"{unit.name}: the image's entrypoint refuses {argv[:1]}"
            return [str(Path(sys.executable).parent / argv[0]), *argv[1:]], cwd
        if unit.image == "nats":
            # The official image's entrypoint is nats-server; a container listens on every
            # interface of its own namespace, here that is its one address.
            return [_bin("nats-server"), *argv, "-a", ip], cwd
        if unit.image == "valkey":
            assert argv and argv[0] == "valkey-server", f"{unit.name}: {argv}"
            return [_valkey_binary(), *argv[1:], "--bind", ip], cwd
        if unit.image == "busybox":  # a one-shot job of coreutils (chown a volume): this machine's
            if argv[0] == "chown" and os.geteuid() != 0:
                return ["true"], cwd  # only root may give files away; the processes here run as us
            found = shutil.which(argv[0])
            assert found, f"{unit.name}: {argv[0]} not on PATH"
            return [found, *argv[1:]], cwd
        raise AssertionError(f"{unit.name}: no local stand-in for image {unit.image!r}")

    def start(self, unit: Unit, *, timeout: float = 40.0) -> ManagedProcess:
        """Start ``unit`` and wait until it is ready."""
        self.start_together([unit], timeout=timeout)
        return self.procs[unit.name]

    def start_together(self, units: list[Unit], *, timeout: float = 40.0) -> None:
        """Start ``units`` at once (as an orchestrator starts independent pods), then wait until
        each is ready."""
        t0 = time.monotonic()
        for unit in units:
            self._launch(unit)
        for unit in units:
            self._wait_ready(unit, self.procs[unit.name], self.ips[unit.name], timeout)
            self.started[unit.name] = time.monotonic() - t0

    def _launch(self, unit: Unit) -> None:
        ip = self.place(unit)
        self._materialize(unit, ip)
        argv, cwd = self._argv(unit, ip)
        env = {k: self.net.rewrite(v, ip, unit.mounts) for k, v in unit.env.items()}
        proc = ManagedProcess(unit.name, argv, log_path=self.workdir / "logs" / f"{unit.name}.log", env=env, cwd=cwd)
        # ManagedProcess lays env over os.environ; nothing of the test's own SLEUTH_* may leak in.
        saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("SLEUTH_")}
        try:
            proc.start()
        finally:
            os.environ.update(saved)
        self.procs[unit.name] = proc

    def _materialize(self, unit: Unit, ip: str) -> None:
        """Write the unit's mounted files (rewritten) and make its directories."""

        def write(path: Path, text: str) -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.net.rewrite_text(text, ip, unit.mounts))
            path.chmod(0o600)

        for m in unit.mounts:
            if m.file_text is not None:
                write(m.source, m.file_text)
            else:
                m.source.mkdir(parents=True, exist_ok=True)
                for rel, text in (m.files or {}).items():
                    write(m.source / rel, text)

    def run_to_completion(self, unit: Unit, timeout: float = 30.0) -> str:
        """An init container / one-shot service: run it, fail unless it exits 0."""
        ip = self.place(unit)
        self._materialize(unit, ip)
        argv, cwd = self._argv(unit, ip)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")},
               **{k: self.net.rewrite(v, ip, unit.mounts) for k, v in unit.env.items()}}
        r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"{unit.name} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
        return r.stdout

    def _wait_ready(self, unit: Unit, proc: ManagedProcess, ip: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if not proc.alive():
                raise AssertionError(f"{unit.name} exited:\n{proc.log_tail()}")
            try:
                if unit.ready_command is not None:
                    cmd = [self.net.rewrite(a, ip, unit.mounts) for a in unit.ready_command]
                    if cmd[0] == "python":
                        cmd[0] = sys.executable
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
                    if r.returncode == 0:
                        return
                    last = (r.stderr or r.stdout)[-300:]
                elif unit.ready_http is not None:
                    port, path = unit.ready_http
                    r2 = httpx.get(f"http://{ip}:{port}{path}", timeout=2)
                    if r2.status_code == 200:
                        return
                    last = r2.text[:300]
                elif unit.ready_tcp is not None:
                    wait_for_port(ip, unit.ready_tcp, max(0.1, deadline - time.monotonic()), proc.proc)
                    return
                else:
                    return
            except (httpx.HTTPError, subprocess.TimeoutExpired, OSError, TimeoutError) as exc:
                last = str(exc)
            time.sleep(0.1)
        raise AssertionError(f"{unit.name} not ready after {timeout}s: {last}\n{proc.log_tail()}")

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is not None:
            proc.stop()

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            proc.stop()
        self.procs.clear()

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{p.log_tail(30)}" for n, p in self.procs.items())


def keda_lag(monitoring_endpoint: str, account: str, stream: str, consumer: str, *, use_https: bool = False) -> int:
    """The lag KEDA's ``nats-jetstream`` scaler computes (kedacore/keda
    ``pkg/scalers/nats_jetstream_scaler.go``, single server): GET
    ``/jsz?acc=<account>&consumers=true&config=true`` on the monitoring endpoint, then for the
    named stream the consumer's ``num_pending + num_ack_pending`` — or, when the consumer does not
    exist, the stream's last sequence."""
    scheme = "https" if use_https else "http"
    r = httpx.get(f"{scheme}://{monitoring_endpoint}/jsz?acc={account}&consumers=true&config=true", timeout=5)
    r.raise_for_status()
    for acc in r.json().get("account_details") or []:
        if acc.get("name") != account:
            continue
        for st in acc.get("stream_detail") or []:
            if st.get("name") != stream:
                continue
            for c in st.get("consumer_detail") or []:
                if c.get("name") == consumer:
                    return int(c.get("num_pending", 0)) + int(c.get("num_ack_pending", 0))
            return int((st.get("state") or {}).get("last_seq", 0))
    raise LookupError(f"stream {stream} of account {account} not in the monitoring data")


def shell_words(value: str | list[str]) -> list[str]:
    """A compose ``command`` / ``test`` as a list (a string is split as a shell would)."""
    return list(value) if isinstance(value, list) else shlex.split(value)


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)


def rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def demo_token(user: str) -> str:
    """A demo user's bearer token (scenarios/demo/snapshot.yaml)."""
    import yaml

    meta = yaml.safe_load((ROOT / "scenarios" / "demo" / "snapshot.yaml").read_text())
    return str(meta["users"][user]["token"])


def ask(gateway_url: str, user: str, question: str) -> httpx.Response:
    """``POST /v1/query`` as a demo user."""
    return httpx.post(f"{gateway_url}/v1/query", json={"query": question},
                      headers={"Authorization": f"Bearer {demo_token(user)}"}, timeout=90)


def assert_alice_is_answered_from_team_a_only(gateway_url: str, logs: str = "") -> float:
    """What every deployment must do end to end: alice's question is diagnosed in team-a with
    evidence, nothing of team-b comes back, and a token nobody issued is refused. Returns the
    question's latency in seconds."""
    from tests.snapshot_names import tenant_names

    t0 = time.monotonic()
    r = ask(gateway_url, "alice", "what is failing in team-a?")
    asked = time.monotonic() - t0
    assert r.status_code == 200, f"{r.status_code} {r.text}\n{logs}"
    body = r.json()
    assert body["result"]["status"] == "diagnosed", body
    assert body["result"]["root_cause"]["resource"].split("/")[1] == "team-a"
    assert "E01" in body["answer"]
    text = json.dumps(body)
    leaked = sorted(n for n in tenant_names(ROOT / "scenarios" / "demo", "team-b") if n in text)
    assert not leaked, f"team-b names reached alice: {leaked}"
    refused = httpx.post(f"{gateway_url}/v1/query", json={"query": "what is failing in team-a?"},
                         headers={"Authorization": "Bearer never-issued"}, timeout=30)
    assert refused.status_code == 401, refused.text
    return asked
