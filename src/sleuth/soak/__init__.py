"""The chaos soak of issue 16: the clustered embedded stack (3 NATS nodes, 2 gateways, 2 agents,
2 authz-caches, Valkey with AOF) under steady questions (HTTP and SSE, three askers) and alerts,
while an agent, a gateway, the NATS node leading JOBS, an authz-cache, Valkey and kube-mcp fail in
turn. Per fault: questions accepted, answered once, answered with a clear error, lost,
duplicated, other tenants' names in answers, latency, time to recover.

``sleuth soak`` (``make soak``) runs it; tests/test_soak.py runs a short one.
"""

from sleuth.soak.run import SoakPlan, SoakResult, run_soak, soak, soak_spec

__all__ = ["SoakPlan", "SoakResult", "run_soak", "soak", "soak_spec"]
