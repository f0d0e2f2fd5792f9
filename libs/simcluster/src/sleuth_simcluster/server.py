"""`SimCluster`: load a snapshot, make a CA, write kubeconfigs, serve HTTPS in a background thread."""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path
from types import TracebackType

import uvicorn
import yaml

from ._audit import AuditLog
from ._loader import Snapshot, load_snapshot
from ._tls import make_certificates
from .app import create_app

log = logging.getLogger(__name__)


class SimClusterError(RuntimeError):
    """simcluster could not start."""


class SimCluster:
    """A simulated Kubernetes API server over one snapshot directory.

    >>> with SimCluster("scenarios/demo", "/tmp/state") as sim:   # doctest: +SKIP
    ...     print(sim.url, sim.kubeconfig("alice"))
    """

    def __init__(self, snapshot_dir: Path | str, state_dir: Path | str, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.snapshot_dir = Path(snapshot_dir)
        self.state_dir = Path(state_dir)
        self.host = host
        self.port = port
        self._snapshot: Snapshot | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._ca_file: Path | None = None
        self._audit: AuditLog | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = 15.0) -> SimCluster:
        """Load the snapshot and serve; returns once the server accepts connections."""
        if self._thread is not None:
            raise SimClusterError("simcluster is already running")
        started = time.monotonic()
        self._snapshot = load_snapshot(self.snapshot_dir)
        tls = make_certificates(self.state_dir / "tls", self.host)
        self._ca_file = tls.ca_file
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise SimClusterError(f"cannot listen on {self.host}:{self.port}: {exc}") from exc
        sock.listen(128)
        self._sock = sock
        self.port = sock.getsockname()[1]
        app = create_app(self._snapshot, f"{self.host}:{self.port}")
        self._audit = app.state.api.audit
        config = uvicorn.Config(
            app, ssl_certfile=str(tls.cert_file), ssl_keyfile=str(tls.key_file), log_config=None,
            log_level="warning", access_log=False, lifespan="off", ws="none", timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"simcluster-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise SimClusterError("simcluster did not start (see the log)")
            time.sleep(0.01)
        self._write_kubeconfigs()
        log.info("simcluster serving snapshot %s (%d objects) at %s in %.2fs", self._snapshot.name,
                 self._snapshot.store.count(), self.url, time.monotonic() - started)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server thread to end."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                log.warning("simcluster server thread did not stop in time")
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = self._sock = None

    def __enter__(self) -> SimCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- what clients need -----------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            raise SimClusterError("simcluster is not started")
        return self._snapshot

    @property
    def audit(self) -> AuditLog:
        """What was asked of this server, by whom and as whom (kept across ``stop``)."""
        if self._audit is None:
            raise SimClusterError("simcluster is not started")
        return self._audit

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"

    @property
    def ca_file(self) -> Path:
        if self._ca_file is None:
            raise SimClusterError("simcluster is not started")
        return self._ca_file

    @property
    def users(self) -> list[str]:
        return list(self.snapshot.users)

    def token(self, user: str) -> str:
        try:
            return self.snapshot.users[user].token
        except KeyError:
            raise KeyError(f"no user {user!r} in snapshot {self.snapshot.name}") from None

    def kubeconfig(self, user: str) -> Path:
        self.token(user)  # KeyError for unknown users
        return self.state_dir / "kubeconfig" / f"{user}.yaml"

    def kubeconfigs(self) -> dict[str, Path]:
        return {user: self.kubeconfig(user) for user in self.snapshot.users}

    def _write_kubeconfigs(self) -> None:
        snap = self.snapshot
        directory = self.state_dir / "kubeconfig"
        directory.mkdir(parents=True, exist_ok=True)
        for user in snap.users.values():
            context = f"{user.name}@{snap.cluster_name}"
            doc = {
                "apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": snap.cluster_name, "cluster": {
                    "server": self.url, "certificate-authority": str(self.ca_file.resolve())}}],
                "users": [{"name": user.name, "user": {"token": user.token}}],
                "contexts": [{"name": context, "context": {
                    "cluster": snap.cluster_name, "user": user.name, "namespace": "default"}}],
                "current-context": context,
            }
            path = directory / f"{user.name}.yaml"
            path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
            path.chmod(0o600)
