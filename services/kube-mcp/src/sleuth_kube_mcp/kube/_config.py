"""Where the Kubernetes API is and how to authenticate: a kubeconfig context, or the pod's own
service account (in-cluster). Read once at start; the token file is re-read when it changes, so
a rotated (bound) service-account token keeps working."""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["SA_DIR", "ClusterAccess", "KubeConfigError", "load_access"]

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeConfigError(Exception):
    """The kubeconfig (or the in-cluster environment) does not say how to reach the API."""


@dataclass
class ClusterAccess:
    """The API server URL, TLS trust and the default credentials."""

    server: str
    ssl_context: ssl.SSLContext
    token: str = ""
    token_file: str = ""
    source: str = ""
    client_cert: bool = False
    """The kubeconfig names a client certificate (loaded into ``ssl_context``)."""
    _cached: tuple[float, str] = field(default=(0.0, ""), repr=False)

    def credentials_problem(self) -> str:
        """Why there are no credentials of its own to read with ("" = there are): a token, a
        token file that reads non-empty, or a client certificate. Names no path (it is shown on
        ``/readyz``)."""
        if self.token or self.client_cert:
            return ""
        if self.token_file:
            try:
                return "" if self.default_token() else "the token file is missing or empty"
            except OSError:
                return "the token file cannot be read"
        return "no token or client certificate is configured"

    def default_token(self) -> str:
        """The configured bearer token ("" when the kubeconfig authenticates by client cert)."""
        if self.token:
            return self.token
        if not self.token_file:
            return ""
        try:
            mtime = os.stat(self.token_file).st_mtime
        except OSError:
            return self._cached[1]
        if mtime != self._cached[0]:
            self._cached = (mtime, Path(self.token_file).read_text().strip())
        return self._cached[1]


def _data_file(data_b64: str, suffix: str) -> str:
    """Write base64 PEM data to a private temp file (the ssl module loads certs from paths)."""
    fd, path = tempfile.mkstemp(prefix="sleuth-kube-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(base64.b64decode(data_b64))
    return path


def _ssl_context(
    ca_file: str = "", ca_data: str = "", insecure: bool = False, cert: str = "", key: str = ""
) -> ssl.SSLContext:
    if ca_data:
        ctx = ssl.create_default_context(cadata=base64.b64decode(ca_data).decode())
    elif ca_file:
        ctx = ssl.create_default_context(cafile=ca_file)
    else:
        ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert and key:
        ctx.load_cert_chain(cert, key)
    return ctx


def _named(items: list[dict[str, Any]] | None, name: str, what: str, path: str) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return item.get(what) or {}
    raise KubeConfigError(f"{path}: no {what} named {name!r}")


def _resolve(base: Path, value: str) -> str:
    return value if not value or os.path.isabs(value) else str(base / value)


def from_kubeconfig(path: str, context: str = "") -> ClusterAccess:
    p = Path(path).expanduser()
    try:
        cfg = yaml.safe_load(p.read_text()) or {}
    except OSError as e:
        raise KubeConfigError(f"cannot read kubeconfig {p}: {e.strerror}") from e
    ctx_name = context or cfg.get("current-context") or ""
    if not ctx_name:
        raise KubeConfigError(f"{p}: no context given and no current-context set")
    ctx = _named(cfg.get("contexts"), ctx_name, "context", str(p))
    cluster = _named(cfg.get("clusters"), ctx.get("cluster", ""), "cluster", str(p))
    user = _named(cfg.get("users"), ctx.get("user", ""), "user", str(p)) if ctx.get("user") else {}
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise KubeConfigError(f"{p}: cluster {ctx.get('cluster')!r} has no server")
    base = p.parent
    cert = _resolve(base, user.get("client-certificate", ""))
    key = _resolve(base, user.get("client-key", ""))
    if user.get("client-certificate-data") and user.get("client-key-data"):
        cert = _data_file(user["client-certificate-data"], ".crt")
        key = _data_file(user["client-key-data"], ".key")
    ssl_ctx = _ssl_context(
        ca_file=_resolve(base, cluster.get("certificate-authority", "")),
        ca_data=cluster.get("certificate-authority-data", ""),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        cert=cert,
        key=key,
    )
    return ClusterAccess(
        server=server,
        ssl_context=ssl_ctx,
        token=str(user.get("token") or ""),
        token_file=_resolve(base, user.get("tokenFile", "")),
        source=f"kubeconfig {p} context {ctx_name}",
        client_cert=bool(cert and key),
    )


def in_cluster(sa_dir: Path = SA_DIR) -> ClusterAccess:
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise KubeConfigError(
            "no kube_mcp.kubeconfig configured and not running in a pod (KUBERNETES_SERVICE_HOST is unset)"
        )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    ca = sa_dir / "ca.crt"
    return ClusterAccess(
        server=f"https://{host}:{port}",
        ssl_context=_ssl_context(ca_file=str(ca) if ca.is_file() else ""),
        token_file=str(sa_dir / "token"),
        source="in-cluster service account",
    )


def load_access(kubeconfig: str = "", context: str = "", sa_dir: str | Path = SA_DIR) -> ClusterAccess:
    """A kubeconfig context when ``kubeconfig`` is set, else the pod's service account (token and
    CA in ``sa_dir``)."""
    if kubeconfig:
        return from_kubeconfig(kubeconfig, context)
    return in_cluster(Path(sa_dir))
