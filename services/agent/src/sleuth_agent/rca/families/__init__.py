"""One module per root-cause family (DESIGN §3): how its symptom propagates on the causal graph
to the object where the fix belongs. Importing the package registers every family and checks the
registry against the signature catalog."""

from sleuth_agent.rca.families import (  # noqa: F401  (each import registers a family)
    cpu_throttled,
    crash_loop_app_error,
    dependency_unreachable,
    disk_full,
    dns_failure,
    evicted,
    image_pull,
    job_failed,
    missing_config,
    network_policy_blocked,
    node_not_ready,
    oom_killed,
    probe_failure,
    pvc_pending,
    quota_exceeded,
    rbac_denied,
    rollout_stuck,
    service_no_endpoints,
    unschedulable_constraints,
    unschedulable_resources,
    volume_mount_failed,
)

__all__: list[str] = []
