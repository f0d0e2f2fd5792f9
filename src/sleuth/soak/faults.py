"""The soak's faults, one at a time on the running stack. Each returns when the fault is over
(the process restarted and ready, the paused one running again)."""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from sleuth.embedded.stack import Stack, stream_leader, wait_nats_healthy
from sleuth_common.subjects import Subjects

log = logging.getLogger(__name__)

__all__ = ["FAULTS", "Fault", "inject"]


@dataclass(frozen=True)
class Fault:
    name: str
    what: str


FAULTS: tuple[Fault, ...] = (
    Fault("agent_kill", "SIGKILL an agent, restart it"),
    Fault("gateway_kill", "SIGKILL a gateway, restart it"),
    Fault("nats_leader_kill", "SIGKILL the NATS node leading JOBS, restart it"),
    Fault("authz_pause", "SIGSTOP an authz-cache"),
    Fault("valkey_restart", "restart Valkey (same port and data)"),
    Fault("kube_mcp_pause", "SIGSTOP kube-mcp"),
)


def _agent_kill(stack: Stack, down: float, pause: float) -> str:
    agent = stack.agents[0]
    agent.kill(signal.SIGKILL)
    time.sleep(down)
    stack.restart_agent(0)
    return f"{agent.name} killed, restarted after {down:.0f} s"


def _gateway_kill(stack: Stack, down: float, pause: float) -> str:
    index = len(stack.gateways) - 1
    gateway = stack.gateways[index]
    gateway.kill(signal.SIGKILL)
    time.sleep(down)
    stack.restart_gateway(index)
    return f"{gateway.name} killed, restarted after {down:.0f} s"


def _nats_leader_kill(stack: Stack, down: float, pause: float) -> str:
    jobs = Subjects(stack.prefix).stream_jobs
    index = stream_leader(stack, jobs)
    node = stack.nats_nodes[index if index is not None else 0]
    node.kill(signal.SIGKILL)
    time.sleep(down)
    node.start()
    wait_nats_healthy(node)
    after = stream_leader(stack, jobs)
    leader = stack.nats_nodes[after].name if after is not None else "?"
    led = f"led {jobs}" if index is not None else f"no leader of {jobs} found: the first node"
    return f"{node.name} ({led}) killed, restarted after {down:.0f} s; leader now {leader}"


def _authz_pause(stack: Stack, down: float, pause: float) -> str:
    authz = stack.authz_caches[0]
    authz.pause()
    try:
        time.sleep(pause)
    finally:
        authz.resume()
    return f"{authz.name} stopped for {pause:.0f} s"


def _valkey_restart(stack: Stack, down: float, pause: float) -> str:
    assert stack.valkey is not None
    t0 = time.monotonic()
    stack.valkey.restart()
    return f"valkey restarted in {time.monotonic() - t0:.1f} s"


def _kube_mcp_pause(stack: Stack, down: float, pause: float) -> str:
    kube_mcp = next(p for p in stack.procs if p.name == "kube-mcp")
    kube_mcp.pause()
    try:
        time.sleep(pause)
    finally:
        kube_mcp.resume()
    return f"kube-mcp stopped for {pause:.0f} s"


_ACTIONS: dict[str, Callable[[Stack, float, float], str]] = {
    "agent_kill": _agent_kill,
    "gateway_kill": _gateway_kill,
    "nats_leader_kill": _nats_leader_kill,
    "authz_pause": _authz_pause,
    "valkey_restart": _valkey_restart,
    "kube_mcp_pause": _kube_mcp_pause,
}


def inject(stack: Stack, name: str, *, down: float, pause: float) -> str:
    """Run fault ``name`` to its end (blocking); what was done, in a few words."""
    return _ACTIONS[name](stack, down, pause)
