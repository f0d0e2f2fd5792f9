"""`SimCluster`: load a snapshot, make a CA, write kubeconfigs and token files, serve HTTPS in a
background thread."""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
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


def advertised_name(value: str) -> str:
    """A host name or IP address clients reach the server by (``simcluster``, ``10.0.0.5``,
    ``::1``); raises ``ValueError`` for anything else (a URL, a port, spaces)."""
    name = value.strip()
    try:
        return str(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        pass
    labels = name.rstrip(".").split(".")
    if not name or len(name) > 253 or not all(
            label and len(label) <= 63 and label.replace("-", "").isalnum() and label.isascii()
            and not label.startswith("-") and not label.endswith("-") for label in labels):
        raise ValueError(f"not a host name or IP address: {value!r}")
    return name.lower()


class SimCluster:
    """A simulated Kubernetes API server over one snapshot directory.

    >>> with SimCluster("scenarios/demo", "/tmp/state") as sim:   # doctest: +SKIP
    ...     print(sim.url, sim.kubeconfig("alice"))

    ``advertise``: the names clients reach the server by when that is not the address it listens
    on (``host="0.0.0.0", advertise=["simcluster"]`` in docker compose). Each goes into the server
    certificate; the first makes ``url``, the kubeconfigs' ``server`` and discovery's address.
    """

    def __init__(self, snapshot_dir: Path | str, state_dir: Path | str, host: str = "127.0.0.1",
                 port: int = 0, advertise: Sequence[str] = ()) -> None:
        self.snapshot_dir = Path(snapshot_dir)
        self.state_dir = Path(state_dir)
        self.host = host
        self.port = port
        self.advertise = tuple(dict.fromkeys(advertised_name(n) for n in advertise))
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
        tls = make_certificates(self.state_dir / "tls", self.host, names=self.advertise)
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
        # Files first: whoever finds the server up finds its kubeconfig and token in place.
        self._write_kubeconfigs()
        self._write_tokens()
        app = create_app(self._snapshot, f"{self.advertise[0] if self.advertise else self.host}:{self.port}")
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
        """Where clients reach the server: the first advertised name, else the listening address."""
        name = self.advertise[0] if self.advertise else self.host
        host = f"[{name}]" if ":" in name else name
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

    def token_file(self, user: str) -> Path:
        """``<state-dir>/tokens/<user>``: the user's bearer token alone (mode 0600), for a client
        that reads its token from a file (authz-cache's ``authz_token_file``)."""
        self.token(user)  # KeyError for unknown users
        return self.state_dir / "tokens" / user

    def _write_tokens(self) -> None:
        directory = self.state_dir / "tokens"
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        for user in self.snapshot.users.values():
            fd = os.open(directory / user.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                os.fchmod(fh.fileno(), 0o600)
                fh.write(user.token)

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
