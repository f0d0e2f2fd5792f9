"""``sleuth up``: the whole stack as separate local processes.

nats-server (JetStream) and Valkey from their wheels, simcluster over a snapshot, kube-mcp,
authz-cache, agent worker(s), gateway, alerts, scheduler and reporter, each a real process reading one
generated YAML config. Everything lives under one state directory (``.sleuth/`` by default):
data, logs, the cluster's CA and kubeconfigs, and the config the services read.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import httpx
import yaml

from sleuth.embedded.access import (
    AUDIT_USER,
    SERVICES,
    Credentials,
    NatsPermissions,
    nats_authorization,
    redis_acl_file,
)
from sleuth.embedded.procs import (
    ManagedProcess,
    NatsClusterMember,
    NatsServer,
    ValkeyServer,
    _write_private,
    free_port,
    wait_for_port,
)

log = logging.getLogger(__name__)

__all__ = ["Stack", "StackPorts", "StackSpec", "restart_nats", "stream_leader", "wait_nats_healthy"]

AUTHZ_TOKEN_ENV = "SLEUTH_DEMO_AUTHZ_TOKEN"


@dataclass
class StackPorts:
    nats: int = 4222
    valkey: int = 6379
    simcluster: int = 6443
    kube_mcp: int = 8181
    gateway: int = 8080
    authz_metrics: int = 9101
    agent_metrics: int = 9102
    alerts: int = 8090
    scheduler: int = 8091
    reporter: int = 9104

    @classmethod
    def free(cls) -> StackPorts:
        """Every port chosen free (tests, and several stacks on one machine)."""
        return cls(*(free_port() for _ in fields(cls)))


@dataclass
class StackSpec:
    snapshot: Path
    state_dir: Path
    ports: StackPorts = field(default_factory=StackPorts)
    agents: int = 1
    host: str = "127.0.0.1"
    extra_env: dict[str, str] = field(default_factory=dict)
    extra_config: dict[str, Any] = field(default_factory=dict)
    nats_users: dict[str, NatsPermissions] = field(default_factory=dict)
    """NATS users beside the services' and ``audit`` (tests, benches), with their permissions."""
    redis_maxmemory: str = "256mb"
    """Valkey's memory cap (policy ``noeviction``, explained in ``Stack.start``)."""
    nats_monitor_port: int | None = None
    """nats-server's HTTP monitoring port (``/connz``, ``/jsz`` …, on ``host``); None = off. With
    ``nats_cluster`` > 1 every node serves one (the first this port when set, the others free)."""
    nats_cluster: int = 1
    """nats-server processes: 1 (one server) or 3 (a cluster on loopback with JetStream: routes
    between the nodes, each its own ``server_name`` and store; the services get every node's URL
    and make the streams with 3 replicas)."""
    gateways: int = 1
    """Gateway replicas, each serving the web chat and the API on its own port (see
    ``gateway_ports``); they share Redis and the bus as replicas behind a load balancer do."""
    gateway_ports: tuple[int, ...] = ()
    """Ports of the gateways after the first (which listens on ``ports.gateway``); missing = free."""
    authz_caches: int = 1
    """authz-cache replicas (one queue group; the first serves metrics on ``ports.authz_metrics``)."""
    valkey_aof: bool = False
    """Valkey also keeps an append-only file fsynced every second, so a restart of Valkey keeps
    the answered-marks, pending questions and alert windows written up to a second before."""


def _read_snapshot_meta(snapshot: Path) -> dict[str, Any]:
    """``snapshot.yaml``, or for a ``kubectl cluster-info dump`` without one what simcluster
    assumes: the folder's name and one cluster admin."""
    path = snapshot / "snapshot.yaml"
    if not path.is_file():
        return {"name": snapshot.resolve().name, "users": {"admin": {"groups": ["system:masters"]}}}
    meta = yaml.safe_load(path.read_text()) or {}
    if not isinstance(meta, dict):
        raise ValueError(f"{snapshot}/snapshot.yaml is not a mapping")
    return meta


IDENTITY_SIGNERS = {"agent": "agent", "authz-cache": "authz", "alerts": "alerts", "gateway": "chat",
                    "scheduler": "scheduler", "reporter": "reporter"}
"""Service → the key it signs identities with (see ``Stack._identity_keys``)."""


class Stack:
    """Start, inspect and stop the embedded stack."""

    def __init__(self, spec: StackSpec) -> None:
        self.spec = spec
        self.state = spec.state_dir.resolve()
        self.logs = self.state / "logs"
        self.meta = _read_snapshot_meta(spec.snapshot)
        cluster = self.meta.get("cluster") or {}
        self.cluster_name: str = cluster.get("name") or self.meta.get("name") or "demo"
        self.cluster_aliases: list[str] = list(cluster.get("aliases") or [])
        self.users: dict[str, dict[str, Any]] = dict(self.meta.get("users") or {})
        self.nats: NatsServer | None = None
        """The first nats-server (the only one unless ``spec.nats_cluster`` > 1)."""
        self.nats_nodes: list[NatsServer] = []
        self.valkey: ValkeyServer | None = None
        self.procs: list[ManagedProcess] = []
        self.agents: list[ManagedProcess] = []
        self.gateways: list[ManagedProcess] = []
        self.authz_caches: list[ManagedProcess] = []
        self.gateway_ports = [spec.ports.gateway, *(
            spec.gateway_ports[i] if i < len(spec.gateway_ports) else free_port() for i in range(spec.gateways - 1)
        )]
        self.sim_info: dict[str, Any] = {}
        self.config_path = self.state / "sleuth.yaml"
        self.identity_keys: dict[str, tuple[Path, Path]] = {}
        self._routes: list[dict[str, Any]] = []
        self._cache_key = secrets.token_urlsafe(32)
        # Bus and Redis passwords, new at every start; each service gets only its own.
        self.credentials = Credentials.generate(spec.nats_users)

    # ----------------------------------------------------------------- addresses
    @property
    def gateway_url(self) -> str:
        return f"http://{self.spec.host}:{self.spec.ports.gateway}"

    @property
    def gateway_urls(self) -> list[str]:
        """Every gateway replica's base URL (the first is ``gateway_url``)."""
        return [f"http://{self.spec.host}:{port}" for port in self.gateway_ports]

    @property
    def nats_url(self) -> str:
        """Every node's URL, comma separated (``nats.url``)."""
        return ",".join(n.url for n in self._nats_nodes())

    def _nats_nodes(self) -> list[NatsServer]:
        return self.nats_nodes or ([self.nats] if self.nats is not None else [])

    @property
    def alerts_url(self) -> str:
        return f"http://{self.spec.host}:{self.spec.ports.alerts}"

    @property
    def simcluster_url(self) -> str:
        return f"https://{self.spec.host}:{self.spec.ports.simcluster}"

    @property
    def kube_mcp_url(self) -> str:
        return f"http://{self.spec.host}:{self.spec.ports.kube_mcp}/mcp"

    @property
    def prefix(self) -> str:
        return str(self.spec.extra_config.get("prefix", "sleuth"))

    def nats_options(self, user: str) -> dict[str, Any]:
        """``nats.connect`` keyword arguments to log in as ``user`` (a service, ``audit``, or one
        of ``spec.nats_users``), with that user's inbox prefix."""
        assert self.nats is not None
        return {"servers": [n.url for n in self._nats_nodes()], "user": user, "password": self.credentials.nats[user],
                "inbox_prefix": f"_INBOX.{user}"}

    def redis_options(self, user: str) -> dict[str, Any]:
        """``redis.asyncio.Redis`` keyword arguments to log in as the service ``user``."""
        assert self.valkey is not None
        return {"host": self.valkey.host, "port": self.valkey.port, "username": user,
                "password": self.credentials.redis[user]}

    def token(self, user: str) -> str:
        """A user's bearer token: the snapshot's (demo users), else the one simcluster made for
        this run and wrote into that user's kubeconfig (Sleuth's own identities)."""
        token = (self.users.get(user) or {}).get("token")
        if token:
            return str(token)
        path = (self.sim_info.get("kubeconfigs") or {}).get(user)
        if not path:
            raise KeyError(f"no token for {user!r}")
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        return str(doc["users"][0]["user"]["token"])

    def demo_users(self) -> dict[str, str]:
        """Human users and their demo tokens (service identities left out)."""
        return {u: str(v.get("token")) for u, v in self.users.items() if not u.startswith("sleuth-") and v.get("token")}

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> Stack:
        t0 = time.monotonic()
        self.state.mkdir(parents=True, exist_ok=True)
        p = self.spec.ports
        try:
            self._start_nats()
            # noeviction: at the cap, writes fail (the services answer "Redis is unavailable")
            # instead of Valkey silently dropping keys. Under volatile-lru an answered-mark or an
            # alert window (keys with a TTL) could be evicted, and a job would be answered twice
            # or an alert batch lost; schedules and the scheduler lock must not vanish either.
            self.valkey = ValkeyServer(
                self.state / "valkey", port=p.valkey, log_path=self.logs / "valkey.log", persist=True,
                acl=redis_acl_file(self.credentials.redis, self.prefix), maxmemory=self.spec.redis_maxmemory,
                maxmemory_policy="noeviction", aof=self.spec.valkey_aof,
            ).start()
            self._start_simcluster()
            self._write_config()
            env = {AUTHZ_TOKEN_ENV: self.token("sleuth-authz"), **self.spec.extra_env}
            # All at once, then each waited for: every service waits for NATS and Redis by itself
            # and reaches the others per request, so none needs another to be ready first.
            starting = [
                (self._service("kube-mcp", "sleuth_kube_mcp", env, health=p.kube_mcp, wait=False), p.kube_mcp),
                *(self._start_authz_cache(i, env) for i in range(self.spec.authz_caches)),
                *(self._start_agent(i, env) for i in range(self.spec.agents)),
                *(self._start_gateway(i, env) for i in range(self.spec.gateways)),
                (self._service("alerts", "sleuth_alerts", env, health=p.alerts, wait=False), p.alerts),
                (self._service("scheduler", "sleuth_scheduler", env, health=p.scheduler, wait=False), p.scheduler),
                (self._service("reporter", "sleuth_reporter", env, health=p.reporter, wait=False), p.reporter),
            ]
            for proc, port in starting:
                self._wait_healthy(proc, port)
        except BaseException:
            self.stop()
            raise
        log.info("stack up in %.1fs", time.monotonic() - t0)
        return self

    def _start_nats(self) -> None:
        authorization = nats_authorization(self.credentials.nats, self.prefix, self.spec.nats_users)
        p, n = self.spec.ports, self.spec.nats_cluster
        if n <= 1:
            self.nats = NatsServer(
                self.state / "nats", port=p.nats, log_path=self.logs / "nats.log",
                authorization=authorization, monitor_port=self.spec.nats_monitor_port,
            ).start()
            self.nats_nodes = [self.nats]
            return
        cluster_ports = tuple(free_port() for _ in range(n))
        route_password = secrets.token_urlsafe(24)
        for i in range(n):
            member = NatsClusterMember(f"sleuth-{i}", cluster_ports[i], cluster_ports, route_password)
            monitor = self.spec.nats_monitor_port if i == 0 and self.spec.nats_monitor_port else free_port()
            self.nats_nodes.append(NatsServer(
                self.state / f"nats-{i}", port=p.nats if i == 0 else free_port(), log_path=self.logs / f"nats-{i}.log",
                authorization=authorization, monitor_port=monitor, cluster=member,
            ).start())
        self.nats = self.nats_nodes[0]
        for node in self.nats_nodes:
            wait_nats_healthy(node)

    def _start_simcluster(self) -> None:
        sim_state = self.state / "simcluster"
        logf = self.logs / "simcluster.log"
        if logf.exists():
            logf.unlink()
        proc = ManagedProcess(
            "simcluster",
            [sys.executable, "-m", "sleuth_simcluster", "--snapshot", str(self.spec.snapshot.resolve()),
             "--state-dir", str(sim_state), "--host", self.spec.host, "--port", str(self.spec.ports.simcluster)],
            log_path=logf,
        ).start()
        self.procs.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not proc.alive():
                raise RuntimeError(f"simcluster exited:\n{proc.log_tail()}")
            for line in logf.read_text(errors="replace").splitlines() if logf.exists() else []:
                if line.startswith("{") and '"url"' in line:
                    self.sim_info = json.loads(line)
                    return
            time.sleep(0.05)
        raise TimeoutError(f"simcluster did not become ready:\n{proc.log_tail()}")

    def _identity_keys(self) -> dict[str, tuple[Path, Path]]:
        """Ed25519 key pairs for signed identities, one per signer (made once, kept in the state
        directory; each private key readable by this user only and given only to its service):
        the agent signs the asker for kube-mcp; authz-cache a person's login, alerts a channel's
        alerts, the gateway a chat user it mapped (issuer ``sleuth-chat``), the scheduler a
        schedule's owner (issuer ``sleuth-scheduler``) and the reporter a report's asker (issuer
        ``sleuth-reporter``), for the agent."""
        from sleuth_common.identity import generate_keypair

        d = self.state / "identity"
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        out: dict[str, tuple[Path, Path]] = {}
        for signer in IDENTITY_SIGNERS.values():
            private, public = d / f"{signer}.key", d / f"{signer}.pub"
            if not (private.is_file() and public.is_file()):
                key, pub = generate_keypair()
                fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(key)
                public.write_bytes(pub)
            out[signer] = (private, public)
        return out

    def _write_config(self) -> None:
        p, h = self.spec.ports, self.spec.host
        self.identity_keys = keys = self._identity_keys()
        assert self.nats is not None and self.valkey is not None
        kubeconfigs = self.sim_info.get("kubeconfigs") or {}
        cfg: dict[str, Any] = {
            "prefix": "sleuth",
            "nats": {"url": self.nats_url},
            "redis": {"url": self.valkey.url},
            "logging": {"level": "INFO"},
            "clusters": [{
                "name": self.cluster_name,
                "aliases": self.cluster_aliases,
                "api_server": self.sim_info["url"],
                "ca_file": self.sim_info["ca_file"],
                "authz_token_env": AUTHZ_TOKEN_ENV,
                # Sleuth's kube-mcp reads as the asker: the agent signs who that is.
                "mcp_servers": [{"name": "kube", "url": self.kube_mcp_url, "identity": True}],
            }],
            # Public keys only: each service gets its own private key in its environment.
            "identity": {
                "verify_key_files": [str(keys["agent"][1])],
                "job_issuers": {"sleuth-authz": [str(keys["authz"][1])], "sleuth-alerts": [str(keys["alerts"][1])],
                                "sleuth-chat": [str(keys["chat"][1])],
                                "sleuth-scheduler": [str(keys["scheduler"][1])],
                                "sleuth-reporter": [str(keys["reporter"][1])]},
            },
            "kube_mcp": {"host": h, "port": p.kube_mcp, "kubeconfig": kubeconfigs.get("sleuth-reader", ""),
                         "cluster_name": self.cluster_name},
            "authz_cache": {"host": h, "metrics_port": p.authz_metrics},
            "agent": {"host": h, "metrics_port": p.agent_metrics},
            # the scheduler runs here: the gateway offers its commands
            "gateway": {"host": h, "port": p.gateway, "channels": self._demo_channels(), "schedules": True,
                        "reports": True},
            "alerts": {"host": h, "port": p.alerts, "routes": self._demo_routes()},
            "scheduler": {"host": h, "port": p.scheduler},
            "reporter": {"host": h, "port": p.reporter},
        }
        if len(self._nats_nodes()) > 1:  # every stream on 3 nodes (at most), so one node may go
            cfg["jetstream"] = {"replicas": min(3, len(self.nats_nodes))}
            # When the node leading JOBS dies, the others elect a new leader; until then nobody
            # takes a job. The election took ~5 s here on a loaded machine: the gateway keeps
            # trying a question's job for 10 s (bus.submit) instead of answering 503 at 5 s.
            cfg["gateway"]["publish_timeout"] = 10.0
        for key, value in self.spec.extra_config.items():
            if isinstance(value, dict) and isinstance(cfg.get(key), dict):
                cfg[key] = {**cfg[key], **value}
            else:
                cfg[key] = value
        self.config_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        self._write_audit_login(str(cfg.get("prefix", "sleuth")))

    def _write_audit_login(self, prefix: str) -> None:
        """``audit.yaml`` and ``audit.password`` (mode 0600): how ``sleuth audit tail`` logs in to
        this stack as the read-only ``audit`` user."""
        assert self.nats is not None
        password = self.state / "audit.password"
        _write_private(password, self.credentials.nats[AUDIT_USER])
        login = {"prefix": prefix, "nats": {"url": self.nats_url, "user": AUDIT_USER, "password_env": "",
                                            "password_file": str(password)}}
        _write_private(self.state / "audit.yaml", yaml.safe_dump(login, sort_keys=False))

    def _demo_routes(self) -> list[dict[str, Any]]:
        """Route ``team-a`` → channel ``team-a-alerts``, investigating as alice with her groups.
        Its bearer token (the alerts service requires one on every route) is made once per stack
        and reaches the services' environment through ``spec.extra_env`` under the route's
        ``token_env`` (a value already there is kept); the banner prints it."""
        alice = self.users.get("alice")
        if not alice:
            return []
        token_env = "SLEUTH_DEMO_ALERTS_TOKEN"
        self.spec.extra_env.setdefault(token_env, secrets.token_urlsafe(24))
        groups = list(alice.get("groups") or [])
        self._routes = [{"name": "team-a", "channel": "team-a-alerts", "token_env": token_env,
                         "run_as": {"user": "alice", "groups": groups}}]
        return self._routes

    def _demo_channels(self) -> list[dict[str, Any]]:
        """``team-a-alerts``: alice, her groups and the platform admins (carol)."""
        alice = self.users.get("alice")
        if not alice:
            return []
        groups = [f"group:{g}" for g in alice.get("groups") or []]
        return [{"name": "team-a-alerts", "members": ["user:alice", *groups, "group:platform-admins"]}]

    def _service(self, name: str, module: str, env: dict[str, str], health: int | None,
                 extra_args: list[str] | None = None, *, wait: bool = True) -> ManagedProcess:
        user = re.sub(r"-\d+$", "", name)  # replicas (agent-1, gateway-1 …) log in as their service
        if user in SERVICES:  # its own NATS and Redis login, nobody else's (kube-mcp uses neither)
            env = {**self.credentials.service_env(user), **env}
        if user == "authz-cache":  # seals its Redis entries (one secret for all its replicas)
            env = {**env, "SLEUTH_AUTHZ_CACHE_KEY": self._cache_key}
        key = self.identity_keys.get(IDENTITY_SIGNERS.get(user, ""))
        if key is not None:  # its own signing key, nobody else's
            env = {**env, "SLEUTH_IDENTITY__SIGNING_KEY_FILE": str(key[0])}
        # Secrets only where they are used: the cluster review token for authz-cache, the alert
        # routes' bearer tokens for alerts.
        owners = {AUTHZ_TOKEN_ENV: "authz-cache",
                  **{str(r["token_env"]): "alerts" for r in self._routes if r.get("token_env")}}
        env = {k: v for k, v in env.items() if owners.get(k, user) == user}
        proc = ManagedProcess(
            name, [sys.executable, "-m", module, "--config", str(self.config_path), *(extra_args or [])],
            log_path=self.logs / f"{name}.log", env=env,
        ).start()
        self.procs.append(proc)
        if health and wait:
            self._wait_healthy(proc, health)
        return proc

    def start_agent(self, index: int = 0, env: dict[str, str] | None = None) -> ManagedProcess:
        """Start one more agent worker (they share the durable JOBS consumer) and wait until it
        is ready."""
        proc, port = self._start_agent(index, env)
        self._wait_healthy(proc, port)
        return proc

    def start_gateway(self) -> ManagedProcess:
        """Start the gateway again (after it was stopped or killed) and wait until it is ready."""
        proc, port = self._start_gateway(0, None)
        self._wait_healthy(proc, port)
        return proc

    def restart_gateway(self, index: int = 0) -> ManagedProcess:
        """Start gateway replica ``index`` again (after it was stopped or killed), same port and
        config, and wait until it is ready."""
        return self._restart(self.gateways[index], self.gateway_ports[index])

    def restart_agent(self, index: int = 0) -> ManagedProcess:
        """Start agent worker ``index`` again (after it was stopped or killed), same name and
        metrics port, and wait until it is ready."""
        proc = self.agents[index]
        return self._restart(proc, int((proc.env or {})["SLEUTH_AGENT__METRICS_PORT"]))

    def _restart(self, proc: ManagedProcess, health: int) -> ManagedProcess:
        proc.stop()
        proc.start()
        self._wait_healthy(proc, health)
        return proc

    def _start_gateway(self, index: int, env: dict[str, str] | None) -> tuple[ManagedProcess, int]:
        env = env or {AUTHZ_TOKEN_ENV: self.token("sleuth-authz"), **self.spec.extra_env}
        port = self.gateway_ports[index]
        if index:
            env = {**env, "SLEUTH_GATEWAY__PORT": str(port)}
        proc = self._service(f"gateway-{index}" if index else "gateway", "sleuth_gateway", env, health=port,
                             wait=False)
        if index < len(self.gateways):
            self.gateways[index] = proc
        else:
            self.gateways.append(proc)
        return proc, port

    def _start_authz_cache(self, index: int, env: dict[str, str]) -> tuple[ManagedProcess, int]:
        port = self.spec.ports.authz_metrics if index == 0 else free_port()
        if index:
            env = {**env, "SLEUTH_AUTHZ_CACHE__METRICS_PORT": str(port)}
        proc = self._service(f"authz-cache-{index}" if index else "authz-cache", "sleuth_authz_cache", env,
                             health=port, wait=False)
        self.authz_caches.append(proc)
        return proc, port

    def _start_agent(self, index: int, env: dict[str, str] | None) -> tuple[ManagedProcess, int]:
        env = env or {AUTHZ_TOKEN_ENV: self.token("sleuth-authz"), **self.spec.extra_env}
        # Only the first worker serves health/metrics on the fixed port; the others pick a free one.
        port = self.spec.ports.agent_metrics if index == 0 and not self.agents else free_port()
        env = {**env, "SLEUTH_AGENT__METRICS_PORT": str(port)}
        proc = self._service(f"agent-{len(self.agents)}" if self.agents or index else "agent",
                             "sleuth_agent", env, health=port, wait=False)
        self.agents.append(proc)
        return proc, port

    def _wait_healthy(self, proc: ManagedProcess, port: int, timeout: float = 30.0) -> None:
        """Until ``/readyz`` answers 200 (connected to what it needs and set up on it)."""
        wait_for_port(self.spec.host, port, timeout, proc.proc)
        _until_ok(proc, f"http://{self.spec.host}:{port}/readyz", timeout, 0.1, f"not ready on :{port}")

    def stop(self) -> None:
        # Services first, all at once (SIGTERM to each, then wait), then the servers they use.
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in reversed(self.procs):
            proc.stop()
        self.procs.clear()
        self.agents.clear()
        self.gateways.clear()
        self.authz_caches.clear()
        for srv in (self.valkey, *reversed(self._nats_nodes())):
            if srv is not None:
                srv.stop()
        self.valkey = self.nats = None
        self.nats_nodes = []

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def banner(self) -> str:
        users = self.demo_users()
        width = max((len(u) for u in users), default=4)
        lines = [
            "",
            "Sleuth is up.",
            f"  web chat     {self.gateway_url}/",
            f"  HTTP API     POST {self.gateway_url}/v1/query   (Authorization: Bearer <token>)",
            f"  MCP          {self.gateway_url}/mcp   (your own AI client, same token; see the README)",
            f"  cluster      {self.cluster_name} (simulated) at {self.simcluster_url}",
            f"  kube-mcp     {self.kube_mcp_url}",
            f"  alerts       POST {self.alerts_url}/v1/alertmanager/team-a  (answers in channel #team-a-alerts)",
            *(f"  web chat     {url}/   (gateway replica {i})" for i, url in enumerate(self.gateway_urls[1:], 1)),
            *([f"  NATS         {self.nats_url}   (cluster of {len(self.nats_nodes)}, streams at 3 replicas)"]
              if len(self.nats_nodes) > 1 else []),
            f"  logs         {self.logs}/",
            "",
            "Demo users (paste a token into the web chat):",
        ]
        for user, token in users.items():
            lines.append(f"  {user:<{width}}  {token}")
        kc = (self.sim_info.get("kubeconfigs") or {}).get("alice")
        if kc:
            lines += ["", f"kubectl as alice:  KUBECONFIG={kc} kubectl get pods -n team-a"]
        lines += [
            "",
            "Try:  curl -s -H 'Authorization: Bearer " + users.get("alice", "<token>") + "' "
            f"-d '{{\"query\": \"what is failing in team-a?\"}}' {self.gateway_url}/v1/query",
        ]
        routes = self._demo_routes()
        if routes:
            alert = json.dumps({"version": "4", "status": "firing", "alerts": [{"status": "firing", "labels": {
                "alertname": "KubePodCrashLooping", "cluster": self.cluster_name, "namespace": "team-a",
                "pod": "checkout-api-7d9f8c6b5d-x2k4p", "severity": "warning"}}]})
            lines += [
                "",
                "Alert (the route's bearer token; answered in #team-a-alerts a window later):",
                "  curl -s -H 'Authorization: Bearer " + self.spec.extra_env.get(routes[0]["token_env"], "<token>")
                + f"' -H 'Content-Type: application/json' -d '{alert}' {self.alerts_url}/v1/alertmanager/team-a",
            ]
        lines += [
            "",
            "Ctrl-C stops everything.",
        ]
        return "\n".join(lines)


def main_loop(stack: Stack) -> None:
    """Block until Ctrl-C or a service dies; then stop everything."""
    try:
        while True:
            for proc in stack.procs:
                if not proc.alive():
                    print(f"\n{proc.name} stopped unexpectedly:\n{proc.log_tail()}", file=sys.stderr)
                    return
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nstopping…", file=sys.stderr)



def restart_nats(stack: Stack, index: int = 0, *, kill: bool = False) -> NatsServer:
    """Stop nats-server node ``index`` (SIGTERM, or SIGKILL with ``kill``) and start it again on
    the same ports and data (tests, chaos drills); in a cluster, wait until it is back in it."""
    node = stack._nats_nodes()[index]
    if kill:
        node.kill(signal.SIGKILL)
    node.stop()
    node.start()
    if node.cluster is not None:
        wait_nats_healthy(node)
    return node


def wait_nats_healthy(node: NatsServer, timeout: float = 60.0) -> None:
    """Until the node's ``/healthz`` answers 200: for a cluster node, JetStream has a meta leader
    and the node has caught up with its streams."""
    _until_ok(node, f"{node.monitor_url}/healthz", timeout, 0.2, "not healthy")


def _until_ok(proc: ManagedProcess, url: str, timeout: float, interval: float, failing: str) -> None:
    """Until ``url`` answers 200; RuntimeError when ``proc`` exits, TimeoutError (saying ``failing``,
    the last answer and the log's tail) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited:\n{proc.log_tail()}")
        try:
            r = httpx.get(url, timeout=2)
            if r.status_code == 200:
                return
            last = r.text
        except httpx.HTTPError as e:
            last = str(e)
        time.sleep(interval)
    raise TimeoutError(f"{proc.name} {failing}: {last}\n{proc.log_tail()}")


def stream_leader(stack: Stack, stream: str) -> int | None:
    """Index (in ``stack.nats_nodes``) of the node leading JetStream stream ``stream`` now, from
    each node's monitoring ``/jsz`` (a node reports the streams it holds, with the cluster's
    leader); None when no node names one (an election is under way)."""
    names = {n.cluster.server_name: i for i, n in enumerate(stack.nats_nodes) if n.cluster is not None}
    for node in stack.nats_nodes:
        if not node.alive() or node.monitor_port is None:
            continue
        try:
            doc = httpx.get(f"{node.monitor_url}/jsz", params={"accounts": "true", "streams": "true"},
                            timeout=2).json()
        except (httpx.HTTPError, ValueError):
            continue
        for account in doc.get("account_details") or []:
            for info in account.get("stream_detail") or []:
                leader = (info.get("cluster") or {}).get("leader")
                if info.get("name") == stream and leader in names:
                    return names[leader]
    return None
