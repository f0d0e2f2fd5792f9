"""Write the scenario corpus (DESIGN §4) into scenarios/<id>/.

    .venv/bin/python scenarios/_generator/generate.py        # rewrites every generated scenario

Each scenario is a cluster as a live one would look after the failure (objects with status,
events, container logs), the question or Alertmanager alert, who asks, and what a correct answer
says. Scenarios marked ``source`` are converted from the HolmesGPT eval cases in
shared/benchmarks/holmesgpt (the case id is kept). Every tenant scenario also holds a failing
workload in a namespace the asker cannot read (its names are in must_not_mention), a healthy
neighbour with a recovered past failure and benign events.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from kube import C, Snap, http_probe, last, running, terminated, ts, waiting

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS: list[Callable[[], tuple[Snap, dict[str, Any]]]] = []


def scenario(fn: Callable[[], tuple[Snap, dict[str, Any]]]) -> Callable[[], tuple[Snap, dict[str, Any]]]:
    SCENARIOS.append(fn)
    return fn


# -- shared furniture --------------------------------------------------------------------------
_NEIGHBOURS = [
    ("ledger-prod", "ledger-reconciler", "oom"),
    ("fraud-prod", "fraud-scorer", "image"),
    ("billing-prod", "invoice-mailer", "crash"),
    ("risk-prod", "risk-feature-store", "pending"),
]


def neighbour(s: Snap, ns: str, name: str, kind: str) -> list[str]:
    """A failing workload in a namespace the asker cannot read. Returns the names to keep hidden."""
    c = C(name, f"registry.internal/{ns}/{name}:4.2.1", limits={"memory": "512Mi"})
    if kind == "oom":
        pods = s.deploy(ns, name, [c], 2, [waiting("CrashLoopBackOff", f"back-off 5m0s restarting failed container={name}", 14, last("OOMKilled", 137))])
        s.event(ns, "Pod", pods[0], "BackOff", "Back-off restarting failed container", count=61)
    elif kind == "image":
        pods = s.deploy(ns, name, [c], 1, [waiting("ImagePullBackOff", f'Back-off pulling image "{c.image}"')])
        s.event(ns, "Pod", pods[0], "Failed", f'Failed to pull image "{c.image}": rpc error: code = NotFound desc = manifest unknown', count=9)
    elif kind == "crash":
        pods = s.deploy(ns, name, [c], 1, [waiting("CrashLoopBackOff", "back-off 2m40s", 7, last("Error", 1))])
        s.log(ns, pods[0], name, ["starting invoice-mailer 4.2.1", "FATAL: smtp relay mail.ledger.internal:25 rejected AUTH"], previous=True)
        s.event(ns, "Pod", pods[0], "BackOff", "Back-off restarting failed container", count=30)
    else:
        pods = s.deploy(ns, name, [c], 1, nodes=[None], pod_status={"schedule_message": "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."})
        s.event(ns, "Pod", pods[0], "FailedScheduling", "0/3 nodes are available: 3 Insufficient memory.", component="default-scheduler")
    return [ns, name, *pods]


def healthy_neighbour(s: Snap, ns: str, name: str = "status-page") -> list[str]:
    """A healthy workload with a recovered restart two days ago and an old readiness blip."""
    c = C(name, f"registry.internal/{name}:1.9.0", readiness=http_probe("/ready", 8080, period=5))
    pods = s.deploy(ns, name, [c], 2, [running(60 * 50, restarts=1, last=last("Error", 1, minutes_ago=60 * 50))], created=60 * 24 * 30, pod_created=60 * 24 * 3)
    s.service(ns, name, {"app.kubernetes.io/name": name})
    s.event(ns, "Pod", pods[0], "Unhealthy", "Readiness probe failed: Get \"http://10.244.2.14:8080/ready\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)", count=2, first=300, last_=298)
    s.event(ns, "Pod", pods[1], "Pulled", f'Container image "{c.image}" already present on machine', type_="Normal", first=60 * 24 * 3, last_=60 * 24 * 3)
    for p in pods:
        s.log(ns, p, name, ["listening on :8080", "GET /ready 200 1ms", "GET /ready 200 0ms"], start=60 * 24 * 3)
    return pods


def tenant(sid: str, ns: str, description: str, *, user: str = "dev", nodes: int = 3, neighbour_index: int | None = None) -> tuple[Snap, list[str]]:
    idx = neighbour_index if neighbour_index is not None else int(hashlib.sha256(sid.encode()).hexdigest(), 16) % len(_NEIGHBOURS)
    other_ns, other_name, kind = _NEIGHBOURS[idx]
    s = Snap(sid, [ns, other_ns], description).base(nodes, tenants={user: [ns], "ops": [other_ns]})
    hidden = neighbour(s, other_ns, other_name, kind)
    healthy_neighbour(s, ns)
    return s, hidden


def expect(status: str, family: str, resource: str = "", mention: list[str] | None = None, hidden: list[str] | None = None, must_pass: bool = True) -> dict[str, Any]:
    return {"status": status, "family": family, "resource": resource, "must_mention": mention or [], "must_not_mention": hidden or [], "must_pass": must_pass}


def alert(name: str, labels: dict[str, str], summary: str, description: str, starts_minutes_ago: float = 20, severity: str = "warning") -> dict[str, Any]:
    lab = {"alertname": name, "severity": severity, "cluster": "prod-1", "prometheus": "monitoring/k8s", **labels}
    fp = hashlib.sha256(repr(sorted(lab.items())).encode()).hexdigest()[:16]
    a = {"status": "firing", "labels": lab, "annotations": {"summary": summary, "description": description,
         "runbook_url": f"https://runbooks.prometheus-operator.dev/runbooks/kubernetes/{name.lower()}"},
         "startsAt": ts(starts_minutes_ago), "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://prometheus.monitoring:9090/graph?g0.expr=...", "fingerprint": fp}
    return {"version": "4", "groupKey": f'{{}}:{{alertname="{name}"}}', "truncatedAlerts": 0, "status": "firing", "receiver": "sleuth",
            "groupLabels": {"alertname": name}, "commonLabels": lab, "commonAnnotations": a["annotations"], "externalURL": "http://alertmanager.monitoring:9093", "alerts": [a]}


def crash(restarts: int, reason: str = "Error", code: int = 1, msg: str = "back-off 5m0s restarting failed container") -> dict[str, Any]:
    return waiting("CrashLoopBackOff", msg, restarts, last(reason, code))


# == HolmesGPT conversions ====================================================================
@scenario
def h02() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h02-oom-giant-narwhal", "app-02", "giant-narwhal allocates memory until the 100Mi limit OOM-kills it.")
    c = C("memory-eater", "us-central1-docker.pkg.dev/genuine-flight-317411/devel/memory-eater:1.0", requests={"memory": "100Mi", "cpu": "50m"}, limits={"memory": "100Mi"}, args=["200Mi", "500", "10"])
    pods = s.deploy("app-02", "giant-narwhal", [c], 1, [crash(9, "OOMKilled", 137)], revision=1)
    s.log("app-02", pods[0], "memory-eater", ["Allocating 200Mi of memory in chunks of 500Ki", "allocated 20Mi", "allocated 60Mi", "allocated 98Mi"], previous=True)
    s.event("app-02", "Pod", pods[0], "BackOff", "Back-off restarting failed container memory-eater in pod " + pods[0] + "_app-02", count=41)
    s.event("app-02", "Pod", pods[0], "Pulled", f'Container image "{c.image}" already present on machine', type_="Normal", count=10)
    return s, {"source": "holmesgpt:test_ask_holmes/02_what_is_wrong_with_pod", "question": f"What is wrong with pod {pods[0]} in namespace app-02?", "as": "dev",
               "expect": expect("diagnosed", "oom_killed", "Deployment/app-02/giant-narwhal", ["OOMKilled", "100Mi"], hidden)}


def _deploy_env(s: Snap, ns: str) -> list[str]:
    c = C("payment-processing-container", "bash", requests={"cpu": "50m", "memory": "64Mi"}, limits={"memory": "128Mi"},
          command=["/bin/sh"], args=["-c", 'if [[ -z "${DEPLOY_ENV}" ]]; then echo Environment variable DEPLOY_ENV is undefined ; else while true; do echo hello; sleep 10;done; fi'])
    pods = s.deploy(ns, "payment-processing-worker", [c], 1, [crash(12, "Completed", 0)], revision=1)
    s.log(ns, pods[0], "payment-processing-container", ["Environment variable DEPLOY_ENV is undefined"], previous=True)
    s.event(ns, "Pod", pods[0], "BackOff", "Back-off restarting failed container payment-processing-container in pod " + pods[0], count=54)
    return pods


@scenario
def h09() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h09-crashpod-missing-env", "payments", "payment-processing-worker exits at once because DEPLOY_ENV is not set.")
    _deploy_env(s, "payments")
    return s, {"source": "holmesgpt:test_ask_holmes/09_crashpod", "question": "What is the issue with payment-processing-worker?", "as": "dev",
               "expect": expect("diagnosed", "missing_config", "Deployment/payments/payment-processing-worker", ["DEPLOY_ENV"], hidden)}


@scenario
def hi11() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi11-alert-crashloop-missing-env", "payments", "KubePodCrashLooping for payment-processing-worker (DEPLOY_ENV unset).")
    pods = _deploy_env(s, "payments")
    a = alert("KubePodCrashLooping", {"namespace": "payments", "pod": pods[0], "container": "payment-processing-container", "job": "kube-state-metrics"},
              "Pod is crash looping.", f"Pod payments/{pods[0]} (payment-processing-container) is in waiting state (reason: \"CrashLoopBackOff\").")
    return s, {"source": "holmesgpt:test_investigate/11_KubePodCrashLooping", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "missing_config", "Deployment/payments/payment-processing-worker", ["DEPLOY_ENV"], hidden)}


def _crw(s: Snap, ns: str) -> list[str]:
    c = C("crw-main-container", "yourcompany/crw:latest", limits={"memory": "256Mi"})
    pods = s.deploy(ns, "customer-relations-webapp", [c], 3, [waiting("ImagePullBackOff", 'Back-off pulling image "yourcompany/crw:latest"')], revision=1)
    for p in pods:
        s.event(ns, "Pod", p, "Failed", 'Failed to pull image "yourcompany/crw:latest": failed to pull and unpack image "docker.io/yourcompany/crw:latest": failed to resolve reference "docker.io/yourcompany/crw:latest": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed', count=6)
        s.event(ns, "Pod", p, "Failed", "Error: ErrImagePull", count=6)
        s.event(ns, "Pod", p, "BackOff", 'Back-off pulling image "yourcompany/crw:latest"', type_="Normal", count=90)
    return pods


@scenario
def h10() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h10-image-pull-crw", "crm", "customer-relations-webapp references an image that does not exist.")
    _crw(s, "crm")
    return s, {"source": "holmesgpt:test_ask_holmes/10_image_pull_backoff", "question": "What is the issue with customer-relations-webapp?", "as": "dev",
               "expect": expect("diagnosed", "image_pull", "Deployment/crm/customer-relations-webapp", ["yourcompany/crw:latest"], hidden)}


@scenario
def hi04() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi04-alert-image-pull-crw", "crm", "KubeDeploymentReplicasMismatch: customer-relations-webapp cannot pull its image.")
    _crw(s, "crm")
    a = alert("KubeDeploymentReplicasMismatch", {"namespace": "crm", "deployment": "customer-relations-webapp"}, "Deployment has not matched the expected number of replicas.",
              "Deployment crm/customer-relations-webapp has not matched the expected number of replicas for longer than 15 minutes.")
    return s, {"source": "holmesgpt:test_investigate/04_image_pull_backoff", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "image_pull", "Deployment/crm/customer-relations-webapp", ["yourcompany/crw:latest"], hidden)}


@scenario
def h110() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h110-events-private-registry", "app-110", "data-processor pulls from a private registry without credentials.")
    img = "my-private-registry.io/data-processor:v2.5.0"
    c = C("processor", img)
    pods = s.deploy("app-110", "data-processor", [c], 2, [waiting("ErrImagePull", f'failed to pull and unpack image "{img}": failed to resolve reference "{img}": failed to do request: Head "https://my-private-registry.io/v2/data-processor/manifests/v2.5.0": dial tcp: lookup my-private-registry.io on 10.96.0.10:53: no such host')], revision=2)
    for p in pods:
        s.event("app-110", "Pod", p, "Failed", f'Failed to pull image "{img}": failed to resolve reference "{img}": failed to do request: Head "https://my-private-registry.io/v2/data-processor/manifests/v2.5.0": dial tcp: lookup my-private-registry.io: no such host', count=5)
        s.event("app-110", "Pod", p, "Failed", "Error: ImagePullBackOff", count=20)
        s.event("app-110", "Pod", p, "Scheduled", f"Successfully assigned app-110/{p} to {s.nodes[0]}", type_="Normal", component="default-scheduler")
    return s, {"source": "holmesgpt:test_ask_holmes/110_k8s_events_image_pull", "question": "Fetch all kubernetes events for the data-processor deployment and its pods in namespace app-110", "as": "dev",
               "expect": expect("diagnosed", "image_pull", "Deployment/app-110/data-processor", [img], hidden)}


def _readiness(s: Snap, ns: str, name: str) -> list[str]:
    c = C(name, "nginx:1.27", ports=[80], readiness=http_probe("/healthz", 80, period=5))
    pods = s.deploy(ns, name, [c], 1, [running(60 * 2, ready=False)], revision=1)
    s.service(ns, name, {"app.kubernetes.io/name": name}, port=80, target=80)
    s.event(ns, "Pod", pods[0], "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 404", count=1400, first=120)
    s.log(ns, pods[0], name, ['10.244.1.1 - - [30/Nov/2026:08:58:01 +0000] "GET /healthz HTTP/1.1" 404 153 "-" "kube-probe/1.30" "-"',
                              '2026/11/30 08:58:01 [error] 29#29: *1402 open() "/usr/share/nginx/html/healthz" failed (2: No such file or directory), client: 10.244.1.1, server: localhost, request: "GET /healthz HTTP/1.1"'], start=1)
    return pods


@scenario
def h15() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h15-readiness-search-engine", "search", "search-engine never becomes ready: its readiness probe path returns 404.")
    _readiness(s, "search", "search-engine")
    return s, {"source": "holmesgpt:test_ask_holmes/15_failed_readiness_probe", "question": "What is the issue with search-engine pod", "as": "dev",
               "expect": expect("diagnosed", "probe_failure", "Deployment/search/search-engine", ["readiness", "404"], hidden)}


@scenario
def h111() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h111-readiness-search-engine-service", "search", "search-engine-service: readiness probe fails (404).")
    _readiness(s, "search", "search-engine-service")
    return s, {"source": "holmesgpt:test_ask_holmes/111_pod_names_contain_service", "question": "What is the issue with search-engine-service", "as": "dev",
               "expect": expect("diagnosed", "probe_failure", "Deployment/search/search-engine-service", ["readiness"], hidden)}


def _logging_agent(s: Snap, ns: str) -> list[str]:
    init = C("downloader", "busybox:1.36", command=["wge", "-O", "/work-dir/index.html", "https://home.robusta.dev"], limits={})
    main = C("exporter", "nginx:1.27", ports=[80])
    st = waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=downloader", 8,
                 last("StartError", 128))
    st["last"]["message"] = 'failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "wge": executable file not found in $PATH: unknown'
    pods = s.deploy(ns, "logging-agent", [main], 1, [waiting("PodInitializing")], init=[(init, st)], revision=1)
    s.event(ns, "Pod", pods[0], "Failed", 'Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "wge": executable file not found in $PATH: unknown', count=9)
    s.event(ns, "Pod", pods[0], "BackOff", "Back-off restarting failed container downloader in pod " + pods[0], count=40)
    return pods


@scenario
def h11() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h11-init-container-typo", "observability", "logging-agent's init container runs `wge` (a typo for wget).")
    _logging_agent(s, "observability")
    return s, {"source": "holmesgpt:test_ask_holmes/11_init_containers", "question": "What is the issue with logging-agent?", "as": "dev",
               "expect": expect("diagnosed", "crash_loop_app_error", "Deployment/observability/logging-agent", ["wge"], hidden)}


@scenario
def hi02() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi02-alert-init-crashloop", "observability", "KubePodNotReady for logging-agent (init container command typo).")
    pods = _logging_agent(s, "observability")
    a = alert("KubePodNotReady", {"namespace": "observability", "pod": pods[0]}, "Pod has been in a non-ready state for more than 15 minutes.",
              f"Pod observability/{pods[0]} has been in a non-ready state for longer than 15 minutes.")
    return s, {"source": "holmesgpt:test_investigate/02_crashloop_backoff", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "crash_loop_app_error", "Deployment/observability/logging-agent", ["wge"], hidden)}


def _java_checker(s: Snap, ns: str) -> list[str]:
    c = C("java-beans", "busybox:1.36", limits={}, command=["/bin/sh", "-c"], args=["echo 'Java Network Exception: ' ; for i in $(seq 1 4); do echo \"All host(s) tried for query failed (tried: prod-db:3333 - no reachable host)\"; sleep 1; done; exit 1"])
    attempts = [terminated("Error", 1, minutes_ago=30 - i * 4, ran=0.2) for i in range(5)]
    pods = s.job(ns, "java-api-checker", [c], attempts, backoff_limit=4)
    for p in pods:
        s.log(ns, p, "java-beans", ["Java Network Exception: "] + ["All host(s) tried for query failed (tried: prod-db:3333 - java.net.UnknownHostException: prod-db: Name or service not known) - no reachable host" if False else "All host(s) tried for query failed (tried: prod-db:3333 - no reachable host)"] * 4, start=30)
    s.event(ns, "Job", "java-api-checker", "BackoffLimitExceeded", "Job has reached the specified backoff limit", component="job-controller")
    s.event(ns, "Job", "java-api-checker", "SuccessfulCreate", f"Created pod: {pods[0]}", type_="Normal", component="job-controller")
    return pods


@scenario
def h12() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h12-job-cannot-reach-db", "app-12", "The java-api-checker Job fails: it cannot reach prod-db:3333.")
    _java_checker(s, "app-12")
    return s, {"source": "holmesgpt:test_ask_holmes/12_job_crashing", "question": "What is the issue with job java-api-checker in namespace app-12", "as": "dev",
               "expect": expect("diagnosed", "dependency_unreachable", "Job/app-12/java-api-checker", ["prod-db:3333"], hidden)}


@scenario
def hi06() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi06-alert-job-failed-db", "batch-jobs", "KubeJobFailed: java-api-checker cannot reach prod-db:3333.")
    _java_checker(s, "batch-jobs")
    a = alert("KubeJobFailed", {"namespace": "batch-jobs", "job_name": "java-api-checker"}, "Job failed to complete.",
              "Job batch-jobs/java-api-checker failed to complete. Removing failed job after investigation should clear this alert.")
    return s, {"source": "holmesgpt:test_investigate/06_job_failure", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "dependency_unreachable", "Job/batch-jobs/java-api-checker", ["prod-db:3333"], hidden)}


@scenario
def hi07() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi07-alert-job-syntax-error", "scrapers", "KubeJobFailed: product-data-scraper's script has a shell syntax error.")
    c = C("run-forever", "bash:5.2", limits={}, command=["/bin/sh", "-c"], args=["echo 'starting scrape'; if [ -z \"$X\" ] then echo x fi"])
    pods = s.job("scrapers", "product-data-scraper", [c], [terminated("Error", 2, minutes_ago=25 - i * 3, ran=0.1) for i in range(5)], backoff_limit=4, cron="product-data-scraper-nightly")
    for p in pods:
        s.log("scrapers", p, "run-forever", ["starting scrape", "/bin/sh: syntax error: unexpected \"fi\" (expecting \"then\")"], start=25)
    s.event("scrapers", "Job", "product-data-scraper", "BackoffLimitExceeded", "Job has reached the specified backoff limit", component="job-controller")
    a = alert("KubeJobFailed", {"namespace": "scrapers", "job_name": "product-data-scraper"}, "Job failed to complete.", "Job scrapers/product-data-scraper failed to complete.")
    return s, {"source": "holmesgpt:test_investigate/07_job_syntax_error", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "job_failed", "CronJob/scrapers/product-data-scraper-nightly", ["syntax error"], hidden)}


@scenario
def h13b() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h13b-pending-node-selector", "imports", "user-profile-import asks for a node label no node has.")
    c = C("importer", "nginx:1.27", ports=[80])
    msg = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    pods = s.deploy("imports", "user-profile-import", [c], 1, nodes=[None], pod_status={"schedule_message": msg}, extra_spec={"nodeSelector": {"label": "someLabel"}}, revision=1)
    s.event("imports", "Pod", pods[0], "FailedScheduling", msg, count=12, component="default-scheduler")
    return s, {"source": "holmesgpt:test_ask_holmes/13b_pending_node_selector_detailed", "question": "What is the issue with user-profile-import", "as": "dev",
               "expect": expect("diagnosed", "unschedulable_constraints", "Deployment/imports/user-profile-import", ["label=someLabel"], hidden)}


def _gpu(s: Snap, ns: str) -> list[str]:
    c = C("profile-resources", "nginx:1.27", requests={"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": "5"}, limits={"nvidia.com/gpu": "5"})
    msg = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    pods = s.deploy(ns, "user-profile-resources", [c], 1, nodes=[None], pod_status={"schedule_message": msg}, revision=1)
    s.event(ns, "Pod", pods[0], "FailedScheduling", msg, count=30, component="default-scheduler")
    return pods


@scenario
def h14() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h14-pending-gpu", "profiles", "user-profile-resources requests 5 GPUs; no node has any.")
    _gpu(s, "profiles")
    return s, {"source": "holmesgpt:test_ask_holmes/14_pending_resources", "question": "What is the issue with user-profile-resources", "as": "dev",
               "expect": expect("diagnosed", "unschedulable_resources", "Deployment/profiles/user-profile-resources", ["nvidia.com/gpu"], hidden)}


@scenario
def hi10() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi10-alert-replicas-mismatch-gpu", "profiles", "KubeDeploymentReplicasMismatch for user-profile-resources (GPU request).")
    _gpu(s, "profiles")
    a = alert("KubeDeploymentReplicasMismatch", {"namespace": "profiles", "deployment": "user-profile-resources"}, "Deployment has not matched the expected number of replicas.",
              "Deployment profiles/user-profile-resources has not matched the expected number of replicas for longer than 15 minutes.")
    return s, {"source": "holmesgpt:test_investigate/10_KubeDeploymentReplicasMismatch", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "unschedulable_resources", "Deployment/profiles/user-profile-resources", ["nvidia.com/gpu"], hidden)}


@scenario
def hi12() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi12-alert-pod-not-ready-gpu", "profiles", "KubePodNotReady for a pod of user-profile-resources (GPU request).")
    pods = _gpu(s, "profiles")
    a = alert("KubePodNotReady", {"namespace": "profiles", "pod": pods[0]}, "Pod has been in a non-ready state for more than 15 minutes.", f"Pod profiles/{pods[0]} has been in a non-ready state for longer than 15 minutes.")
    return s, {"source": "holmesgpt:test_investigate/12_KubePodNotReady", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "unschedulable_resources", "Deployment/profiles/user-profile-resources", ["nvidia.com/gpu"], hidden)}


@scenario
def h157() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h157-disk-full-statefulset", "app-157", "data-processor writes to a 100Mi volume until it is full.")
    c = C("processor", "busybox:1.36", limits={"memory": "64Mi"}, mounts=[{"name": "data", "mountPath": "/data"}], command=["/bin/sh", "-c"], args=["while true; do dd if=/dev/zero of=/data/blob.$RANDOM bs=1M count=10; done"])
    pods = s.statefulset("app-157", "data-processor", [c], 1, [crash(6, "Error", 1)], claim=("data", "100Mi", "standard"))
    s.log("app-157", pods[0], "processor", ["10+0 records in", "10+0 records out", "dd: error writing '/data/blob.21231': No space left on device", "3+0 records in", "2+0 records out"], previous=True)
    s.event("app-157", "Pod", pods[0], "BackOff", "Back-off restarting failed container processor in pod data-processor-0_app-157", count=25)
    return s, {"source": "holmesgpt:test_ask_holmes/157_disk_full_statefulset", "question": "What is wrong with data-processor in the app-157 namespace??", "as": "dev",
               "expect": expect("diagnosed", "disk_full", "StatefulSet/app-157/data-processor", ["No space left on device", "100Mi"], hidden)}


def _analytics(s: Snap, ns: str) -> list[str]:
    c = C("memory-eater", "us-central1-docker.pkg.dev/genuine-flight-317411/devel/memory-eater:2.0", requests={"memory": "10Mi", "cpu": "10m"}, limits={"memory": "100Mi"})
    pods = s.deploy(ns, "analytics-exporter-fast", [c], 1, [crash(11, "OOMKilled", 137)], revision=1)
    s.log(ns, pods[0], "memory-eater", ["Allocating 150Mi of memory", "allocated 50Mi", "allocated 100Mi"], previous=True)
    s.event(ns, "Pod", pods[0], "BackOff", "Back-off restarting failed container memory-eater", count=50)
    return pods


@scenario
def h17() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h17-oom-analytics-exporter", "analytics", "analytics-exporter-fast is OOM-killed at its 100Mi limit.")
    _analytics(s, "analytics")
    return s, {"source": "holmesgpt:test_ask_holmes/17_oom_kill", "question": "What is the issue with analytics-exporter-fast?", "as": "dev",
               "expect": expect("diagnosed", "oom_killed", "Deployment/analytics/analytics-exporter-fast", ["OOMKilled", "100Mi"], hidden)}


@scenario
def hi01() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi01-alert-oom-analytics", "analytics", "KubePodCrashLooping for analytics-exporter-fast (OOM).")
    pods = _analytics(s, "analytics")
    a = alert("KubePodCrashLooping", {"namespace": "analytics", "pod": pods[0], "container": "memory-eater"}, "Pod is crash looping.",
              f"Pod analytics/{pods[0]} (memory-eater) is in waiting state (reason: \"CrashLoopBackOff\").")
    return s, {"source": "holmesgpt:test_investigate/01_oom_kill", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "oom_killed", "Deployment/analytics/analytics-exporter-fast", ["OOMKilled"], hidden)}


@scenario
def h19() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h19-unknown-workload-name", "certs", "The question names personal-certs-validator, which does not exist; db-certs-authenticator crashes.")
    c = C("authenticator", "registry.internal/db-certs-authenticator:1.3.0")
    pods = s.deploy("certs", "db-certs-authenticator", [c], 1, [crash(5)])
    s.log("certs", pods[0], "authenticator", ["Starting authenticator", "ERROR certificate /certs/db.pem expired on 2026-11-29T00:00:00Z"], previous=True)
    return s, {"source": "holmesgpt:test_ask_holmes/19_detect_missing_app_details", "question": "Why is personal-certs-validator in a crashloopbackoff?", "as": "dev",
               "expect": expect("denied", "", "", ["personal-certs-validator", "could not find"], hidden)}


@scenario
def hi05() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi05-alert-cert-expired", "certs", "KubePodCrashLooping: db-certs-authenticator exits because its certificate expired.")
    c = C("authenticator", "registry.internal/db-certs-authenticator:1.3.0")
    pods = s.deploy("certs", "db-certs-authenticator", [c], 1, [crash(7)])
    s.log("certs", pods[0], "authenticator", ["2026-11-30 08:51:02 INFO Starting db-certs-authenticator 1.3.0", "2026-11-30 08:51:02 INFO loading certificate /certs/db.pem",
                                              "2026-11-30 08:51:02 ERROR SSL certificate /certs/db.pem expired on 2026-11-29T00:00:00Z (not after); refusing to start",
                                              "Traceback (most recent call last):", '  File "/app/main.py", line 41, in <module>', "ssl.SSLCertVerificationError: certificate has expired"], previous=True)
    s.event("certs", "Pod", pods[0], "BackOff", "Back-off restarting failed container authenticator", count=33)
    a = alert("KubePodCrashLooping", {"namespace": "certs", "pod": pods[0], "container": "authenticator"}, "Pod is crash looping.", f"Pod certs/{pods[0]} (authenticator) is in waiting state (reason: \"CrashLoopBackOff\").")
    return s, {"source": "holmesgpt:test_investigate/05_crashpod", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "crash_loop_app_error", "Deployment/certs/db-certs-authenticator", ["certificate", "expired"], hidden)}


@scenario
def h21() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h21-job-dns-unresolvable", "data", "The get-data Job curls a host that does not resolve.")
    host = "kldsvklnsdiogjerkngernjk23432i90erfefjio.com"
    c = C("curl", "curlimages/curl:8.8.0", limits={}, command=["curl", f"http://{host}/fsdkhjsadfjhsadfjsadu343"])
    pods = s.job("data", "get-data", [c], [terminated("Error", 6, minutes_ago=20 - i * 2, ran=0.1) for i in range(3)], backoff_limit=2)
    for p in pods:
        s.log("data", p, "curl", ["  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current", f"curl: (6) Could not resolve host: {host}"], start=20)
    s.event("data", "Job", "get-data", "BackoffLimitExceeded", "Job has reached the specified backoff limit", component="job-controller")
    return s, {"source": "holmesgpt:test_ask_holmes/21_job_fail_curl_no_svc_account", "question": "Why get-data job failed?", "as": "dev",
               "expect": expect("diagnosed", "dns_failure", "Job/data/get-data", [host], hidden)}


@scenario
def h23() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h23-dns-app-error", "app-23", "meme-deployment answers 500s: it cannot resolve the host memcom.")
    c = C("meme-app", "pavangudiwada/meme-generator:latest", ports=[5000], env=[{"name": "MEME_API_HOST", "value": "memcom"}])
    pods = s.deploy("app-23", "meme-deployment", [c], 2, [running(60 * 3)], revision=1)
    s.service("app-23", "meme-service", {"app.kubernetes.io/name": "meme-deployment"}, port=80, target=5000)
    for p in pods:
        s.log("app-23", p, "meme-app", [" * Serving Flask app 'app'", " * Running on http://0.0.0.0:5000", "[2026-11-30 08:58:11,431] ERROR in app: Exception on / [GET]",
                                        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='memcom', port=443): Max retries exceeded with url: /get_memes (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object at 0x7f2b1c3d4e50>: Failed to resolve 'memcom' ([Errno -2] Name or service not known)\"))",
                                        '10.244.2.1 - - [30/Nov/2026 08:58:11] "GET / HTTP/1.1" 500 -'], start=3)
    return s, {"source": "holmesgpt:test_ask_holmes/23_app_error_in_current_logs", "question": "Why is meme-deployment not responding to http requests from within the cluster in the app-23 namespace?", "as": "dev",
               "expect": expect("diagnosed", "dns_failure", "Deployment/app-23/meme-deployment", ["memcom"], hidden)}


def _pvc_pending(s: Snap, ns: str, name: str, claim: str, cls: str, image: str, kind: str = "deploy") -> list[str]:
    c = C(name, image, mounts=[{"name": "data", "mountPath": "/data"}])
    msg = "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    pods = s.deploy(ns, name, [c], 1, nodes=[None], pod_status={"schedule_message": msg}, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}], revision=1)
    s.pvc(ns, claim, "1Gi", cls, bound=False)
    s.event(ns, "Pod", pods[0], "FailedScheduling", msg, count=14, component="default-scheduler")
    s.event(ns, "PersistentVolumeClaim", claim, "ProvisioningFailed", f'storageclass.storage.k8s.io "{cls}" not found', count=120, component="persistentvolume-controller")
    return pods


@scenario
def h24b() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h24b-pvc-missing-storageclass", "app-24b", "redis's PVC names StorageClass standard-v2, which does not exist.")
    _pvc_pending(s, "app-24b", "redis", "redis-standard-pvc", "standard-v2", "redis:7.2")
    return s, {"source": "holmesgpt:test_ask_holmes/24b_misconfigured_pvc_detailed", "question": "What is the issue with redis?", "as": "dev",
               "expect": expect("diagnosed", "pvc_pending", "PersistentVolumeClaim/app-24b/redis-standard-pvc", ["standard-v2"], hidden)}


@scenario
def h80() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h80-pvc-fast-ssd", "namespace-80", "The database PVC asks for StorageClass fast-ssd, which does not exist.")
    _pvc_pending(s, "namespace-80", "database", "database-data", "fast-ssd", "postgres:16")
    return s, {"source": "holmesgpt:test_ask_holmes/80_pvc_storage_class_mismatch", "question": "Why is the database not running in namespace-80?", "as": "dev",
               # "dev" may not list StorageClasses (the cluster decides what Sleuth reads as them),
               # so the answer names the missing class, not the cluster's other classes.
               "expect": expect("diagnosed", "pvc_pending", "PersistentVolumeClaim/namespace-80/database-data", ["fast-ssd"], hidden)}


def _netpol_dns(s: Snap, ns: str) -> None:
    c = C("client", "busybox:1.36", limits={}, command=["/bin/sh", "-c", "while true; do nslookup kubernetes.default; sleep 5; done"])
    p = s._pod(ns, "client", [c], None, {"app": "client"}, None, s.nodes[0], 60)
    s.log(ns, "client", "client", [";; connection timed out; no servers could be reached", "", ";; connection timed out; no servers could be reached"] * 3, start=10, step=5)
    s.add({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "default-deny-egress", "namespace": ns, "creationTimestamp": ts(70)},
           "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": []}})
    assert p


@scenario
def h42() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h42-dns-blocked-by-netpol", "test-ns", "Pod client cannot resolve DNS: NetworkPolicy default-deny-egress blocks all egress.")
    _netpol_dns(s, "test-ns")
    return s, {"source": "holmesgpt:test_ask_holmes/42_dns_issues_steps_new_tools", "question": "detect why the k8s pod client under namespace test-ns cannot resolve dns", "as": "dev",
               "expect": expect("diagnosed", "network_policy_blocked", "NetworkPolicy/test-ns/default-deny-egress", ["default-deny-egress"], hidden)}


@scenario
def hi15() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi15-alert-dns-netpol", "investigate-namespace-15", "An alert on pod client: DNS resolution fails under a default-deny egress policy.")
    _netpol_dns(s, "investigate-namespace-15")
    a = alert("DNSResolutionFailures", {"namespace": "investigate-namespace-15", "pod": "client"}, "DNS lookups from a pod keep failing.", "Pod investigate-namespace-15/client reports DNS lookup timeouts.")
    return s, {"source": "holmesgpt:test_investigate/15_dns_resolution", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "network_policy_blocked", "NetworkPolicy/investigate-namespace-15/default-deny-egress", ["default-deny-egress"], hidden)}


@scenario
def h65() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h65-healthy-payment-processor", "production-65", "payment-processor is healthy; the question suspects otherwise.")
    c = C("payment-processor", "registry.internal/payment-processor:3.1.4", readiness=http_probe("/health", 8080), liveness=http_probe("/health", 8080, delay=15))
    pods = s.deploy("production-65", "payment-processor", [c], 3, [running(60 * 26)], pod_created=60 * 26)
    s.service("production-65", "payment-processor", {"app.kubernetes.io/name": "payment-processor"})
    for p in pods:
        s.log("production-65", p, "payment-processor", ["INFO payment-processor 3.1.4 listening on :8080", "INFO processed batch 8812 (212 payments) in 840ms"], start=5)
    return s, {"source": "holmesgpt:test_ask_holmes/65_health_check_followup", "question": "figure out why workload payment-processor in production-65 namespace is unhealthy?", "as": "dev",
               "expect": expect("healthy", "healthy", "", ["running and ready"], hidden)}


@scenario
def h76() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h76-service-selector-mismatch", "namespace-76", "The backend Service selects version v2; the backend pods are v1, so it has no endpoints.")
    be = C("backend", "hashicorp/http-echo:1.0", ports=[5678])
    s.deploy("namespace-76", "backend", [be], 2, labels={"app": "backend", "version": "v1"}, revision=1)
    s.service("namespace-76", "backend", {"app": "backend", "version": "v2"}, port=80, target=5678)
    fe = C("frontend", "curlimages/curl:8.8.0", limits={})
    pods = s.deploy("namespace-76", "frontend", [fe], 1, labels={"app": "frontend"}, revision=1)
    s.log("namespace-76", pods[0], "frontend", ["curl: (7) Failed to connect to backend port 80 after 1 ms: Couldn't connect to server"] * 4, start=4, step=30)
    return s, {"source": "holmesgpt:test_ask_holmes/76_service_discovery_issue", "question": "Why can't the frontend pod connect to the backend service in namespace-76?", "as": "dev",
               "expect": expect("diagnosed", "service_no_endpoints", "Service/namespace-76/backend", ["version=v2", "no ready endpoints"], hidden)}


@scenario
def h77() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h77-liveness-wrong-port", "namespace-77", "web-app's liveness probe checks port 8080; nginx listens on 80.")
    c = C("web-app", "nginx:1.27", ports=[80], liveness=http_probe("/", 8080, period=10, failure=3, delay=5))
    st = running(1, ready=True, restarts=9, last=last("Completed", 0, minutes_ago=1.2, ran=0.6))
    pods = s.deploy("namespace-77", "web-app", [c], 1, [st], revision=1)
    s.event("namespace-77", "Pod", pods[0], "Unhealthy", f'Liveness probe failed: Get "http://{"10.244.1.9"}:8080/": dial tcp 10.244.1.9:8080: connect: connection refused', count=27)
    s.event("namespace-77", "Pod", pods[0], "Killing", "Container web-app failed liveness probe, will be restarted", type_="Normal", count=9)
    s.log("namespace-77", pods[0], "web-app", ["/docker-entrypoint.sh: Configuration complete; ready for start up", "2026/11/30 08:59:31 [notice] 1#1: start worker processes"], start=1)
    return s, {"source": "holmesgpt:test_ask_holmes/77_liveness_probe_misconfiguration", "question": "Why does the web-app pod keep restarting in namespace-77?", "as": "dev",
               "expect": expect("diagnosed", "probe_failure", "Deployment/namespace-77/web-app", ["liveness", "8080"], hidden)}


def _quota(s: Snap, ns: str, message: str, used: dict[str, str], hard: dict[str, str], c: C) -> None:
    s.deploy(ns, "api-server", [c], 3, pods=0, revision=1, conditions=[
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability.", "lastTransitionTime": ts(30)},
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": message, "lastTransitionTime": ts(30)},
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "message": "ReplicaSet is progressing.", "lastTransitionTime": ts(30)}])
    rs = next(o for o in s.objects if o["kind"] == "ReplicaSet" and o["metadata"]["name"].startswith("api-server-"))["metadata"]["name"]
    s.event(ns, "ReplicaSet", rs, "FailedCreate", message.replace("<pod>", f"{rs}-x7k2p"), count=18, component="replicaset-controller")
    s.add({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute-quota", "namespace": ns, "creationTimestamp": ts(60 * 24)},
           "spec": {"hard": hard}, "status": {"hard": hard, "used": used}})


@scenario
def h78a() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h78a-quota-requires-cpu-limit", "namespace-78a", "The namespace quota requires limits.cpu; api-server sets none, so no pod is created.")
    c = C("api-server", "nginx:1.27", requests={"cpu": "10m", "memory": "32Mi"}, limits={"memory": "64Mi"})
    _quota(s, "namespace-78a", 'pods "<pod>" is forbidden: failed quota: compute-quota: must specify limits.cpu for: api-server', {"requests.cpu": "0", "limits.cpu": "0"}, {"requests.cpu": "1", "limits.cpu": "2"}, c)
    return s, {"source": "holmesgpt:test_ask_holmes/78a_missing_cpu_limits", "question": "Why are pods in pending state for the api-server deployment in namespace-78a?", "as": "dev",
               "expect": expect("diagnosed", "quota_exceeded", "ResourceQuota/namespace-78a/compute-quota", ["limits.cpu", "compute-quota"], hidden)}


@scenario
def h78b() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h78b-cpu-quota-exceeded", "namespace-78b", "The namespace CPU quota (20m) is smaller than 3 replicas x 10m.")
    c = C("api-server", "nginx:1.27", requests={"cpu": "10m", "memory": "32Mi"}, limits={"cpu": "10m", "memory": "64Mi"})
    _quota(s, "namespace-78b", 'pods "<pod>" is forbidden: exceeded quota: compute-quota, requested: requests.cpu=10m, used: requests.cpu=20m, limited: requests.cpu=20m',
           {"requests.cpu": "20m"}, {"requests.cpu": "20m"}, c)
    # two replicas did get created before the quota was reached
    for o in s.objects:
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "api-server":
            o["status"].update({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2})
    return s, {"source": "holmesgpt:test_ask_holmes/78b_cpu_quota_exceeded", "question": "What's wrong with the api-server deployment in namespace-78b?", "as": "dev",
               "expect": expect("diagnosed", "quota_exceeded", "ResourceQuota/namespace-78b/compute-quota", ["compute-quota", "requests.cpu"], hidden)}


@scenario
def h79() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h79-configmap-mount-missing", "namespace-79", "app-server mounts ConfigMap app-config, which does not exist.")
    c = C("app-server", "nginx:1.27", mounts=[{"name": "config", "mountPath": "/etc/app"}])
    pods = s.deploy("namespace-79", "app-server", [c], 1, [waiting("ContainerCreating")], volumes=[{"name": "config", "configMap": {"name": "app-config"}}], revision=1, phase="Pending")
    s.event("namespace-79", "Pod", pods[0], "FailedMount", 'MountVolume.SetUp failed for volume "config" : configmap "app-config" not found', count=16)
    return s, {"source": "holmesgpt:test_ask_holmes/79_configmap_mount_issue", "question": "Why is the app-server pod stuck in ContainerCreating state in namespace-79?", "as": "dev",
               "expect": expect("diagnosed", "missing_config", "ConfigMap/namespace-79/app-config", ["app-config"], hidden)}


@scenario
def h81() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h81-serviceaccount-forbidden", "namespace-81", "monitoring-agent's ServiceAccount may get pods but not list them.")
    c = C("agent", "bitnami/kubectl:1.30", limits={}, command=["/bin/sh", "-c", "while true; do kubectl get pods; sleep 30; done"])
    pods = s.deploy("namespace-81", "monitoring-agent", [c], 1, [running(60)], extra_spec={"serviceAccountName": "monitoring-agent"}, revision=1)
    s.add({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "monitoring-agent", "namespace": "namespace-81"}})
    s.add({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-reader", "namespace": "namespace-81"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
    s.add({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "monitoring-agent-pod-reader", "namespace": "namespace-81"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}, "subjects": [{"kind": "ServiceAccount", "name": "monitoring-agent", "namespace": "namespace-81"}]})
    s.log("namespace-81", pods[0], "agent", ['Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:namespace-81:monitoring-agent" cannot list resource "pods" in API group "" in the namespace "namespace-81"'] * 3, start=2, step=30)
    return s, {"source": "holmesgpt:test_ask_holmes/81_service_account_permission_denied", "question": "Why is the monitoring-agent getting permission denied errors in namespace-81?", "as": "dev",
               "expect": expect("diagnosed", "rbac_denied", "ServiceAccount/namespace-81/monitoring-agent", ["cannot list", "monitoring-agent"], hidden)}


@scenario
def h82() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h82-anti-affinity-conflict", "namespace-82", "silver-puffin wants 4 replicas on distinct nodes; the cluster has 3.")
    c = C("silver-puffin", "nginx:1.27", ports=[80])
    aff = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app.kubernetes.io/name": "silver-puffin"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    msg = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    s.deploy("namespace-82", "silver-puffin", [c], 4, [running(60)] * 3 + [{}], nodes=[s.nodes[0], s.nodes[1], s.nodes[2], None], extra_spec=aff, pod_status={"schedule_message": msg}, revision=1)
    pend = [o for o in s.objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("silver-puffin") and o["status"]["phase"] == "Pending"]
    for p in pend:
        s.event("namespace-82", "Pod", p["metadata"]["name"], "FailedScheduling", msg, count=8, component="default-scheduler")
    return s, {"source": "holmesgpt:test_ask_holmes/82_pod_anti_affinity_conflict", "question": "Why can't the silver-puffin pods be scheduled in namespace-82?", "as": "dev",
               "expect": expect("diagnosed", "unschedulable_constraints", "Deployment/namespace-82/silver-puffin", ["anti-affinity"], hidden)}


@scenario
def h83() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h83-secret-not-found", "namespace-83", "The database pod references Secret database-secret, which does not exist.")
    c = C("database", "postgres:16", env=[{"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "database-secret", "key": "password"}}}])
    pods = s.deploy("namespace-83", "database", [c], 1, [waiting("CreateContainerConfigError", 'secret "database-secret" not found')], revision=1)
    s.event("namespace-83", "Pod", pods[0], "Failed", 'Error: secret "database-secret" not found', count=25)
    return s, {"source": "holmesgpt:test_ask_holmes/83_secret_not_found", "question": "Why is the database pod failing to start in namespace-83?", "as": "dev",
               "expect": expect("diagnosed", "missing_config", "Secret/namespace-83/database-secret", ["database-secret"], hidden)}


@scenario
def h84() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h84-netpol-blocks-frontend", "namespace-84", "NetworkPolicy on backend admits only tier=backend pods; frontend is tier=frontend.")
    be = C("backend", "hashicorp/http-echo:1.0", ports=[5678])
    s.deploy("namespace-84", "backend", [be], 1, labels={"app": "backend", "tier": "backend"}, revision=1)
    s.service("namespace-84", "backend", {"app": "backend", "tier": "backend"}, port=80, target=5678)
    fe = C("frontend", "curlimages/curl:8.8.0", limits={})
    pods = s.deploy("namespace-84", "frontend", [fe], 1, labels={"app": "frontend", "tier": "frontend"}, revision=1)
    s.log("namespace-84", pods[0], "frontend", ["curl: (28) Connection timed out after 5001 milliseconds (backend:80)"] * 4, start=4, step=40)
    s.add({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "backend-policy", "namespace": "namespace-84"},
           "spec": {"podSelector": {"matchLabels": {"app": "backend"}}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": "backend"}}}], "ports": [{"port": 5678, "protocol": "TCP"}]}]}})
    return s, {"source": "holmesgpt:test_ask_holmes/84_network_policy_blocking_traffic", "question": "Why is the frontend getting timeouts connecting to backend in namespace-84?", "as": "dev",
               "expect": expect("diagnosed", "network_policy_blocked", "NetworkPolicy/namespace-84/backend-policy", ["backend-policy"], hidden)}


@scenario
def h86() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("h86-secret-volume-missing", "production", "frontend mounts Secret frontend-api-keys (not a ConfigMap), which is missing.")
    s.configmap("production", "frontend-config", {"API_URL": "https://api.internal"})
    c = C("frontend", "nginx:1.27", ports=[80], mounts=[{"name": "api-keys", "mountPath": "/etc/keys"}], env_from=[{"configMapRef": {"name": "frontend-config"}}])
    st = [running(60 * 20), waiting("ContainerCreating")]
    pods = s.deploy("production", "frontend", [c], 3, st, volumes=[{"name": "api-keys", "secret": {"secretName": "frontend-api-keys"}}], revision=4)
    for p in pods[1::2]:
        s.event("production", "Pod", p, "FailedMount", 'MountVolume.SetUp failed for volume "api-keys" : secret "frontend-api-keys" not found', count=11)
    for o in s.objects:
        if o["kind"] == "Pod" and o["metadata"]["name"] in pods[1::2]:
            o["status"]["phase"] = "Pending"
    return s, {"source": "holmesgpt:test_ask_holmes/86_configmap_like_but_secret", "question": "The frontend deployment in production namespace is showing issues. Can you investigate why some replicas are not running?", "as": "dev",
               "expect": expect("diagnosed", "missing_config", "Secret/production/frontend-api-keys", ["frontend-api-keys"], hidden)}


@scenario
def hi03() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("hi03-alert-cpu-throttling", "default-apps", "CPUThrottlingHigh: frontend-service's stress container runs into its 10m CPU limit.")
    c = C("stress", "jfusterm/stress", requests={"cpu": "10m", "memory": "16Mi"}, limits={"cpu": "10m", "memory": "64Mi"}, command=["stress", "--cpu", "100"])
    pods = s.deploy("default-apps", "frontend-service", [c], 1, [running(60)], revision=1)
    s.log("default-apps", pods[0], "stress", ["stress: info: [1] dispatching hogs: 100 cpu, 0 io, 0 vm, 0 hdd"], start=60)
    a = alert("CPUThrottlingHigh", {"namespace": "default-apps", "pod": pods[0], "container": "stress"}, "Processes experience elevated CPU throttling.",
              f"100% throttling of CPU in namespace default-apps for container stress in pod {pods[0]}.", severity="info")
    return s, {"source": "holmesgpt:test_investigate/03_cpu_throttling", "alert": a, "as": "dev",
               "expect": expect("diagnosed", "cpu_throttled", "Deployment/default-apps/frontend-service", ["10m", "throttl"], hidden)}


# == Sleuth originals ==========================================================================
@scenario
def s_node_not_ready() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s01-node-not-ready-tenant", "orders", "orders-db-0 sits on worker-3, which stopped posting status; the pod is stuck Terminating.")
    s.objects = [o for o in s.objects if not (o["kind"] == "Node" and o["metadata"]["name"].endswith("worker-3"))]
    bad = s.nodes[2]
    s.nodes = s.nodes[:2]
    s.node(bad, ready="Unknown", taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": ts(12)}, {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(11)}])
    c = C("postgres", "postgres:16.4", requests={"cpu": "500m", "memory": "1Gi"}, limits={"memory": "2Gi"}, ports=[5432])
    st = running(60 * 24, ready=False)
    pods = s.statefulset("orders", "orders-db", [c], 1, [st], claim=("pgdata", "20Gi", "standard"), nodes=[bad], deleting=True)
    s.event("orders", "Pod", pods[0], "NodeNotReady", "Node is not ready", count=1, first=11, last_=11, component="node-controller")
    s.event("orders", "Pod", pods[0], "TaintManagerEviction", f"Marking for deletion Pod orders/{pods[0]}", type_="Normal", first=6, last_=6, component="taint-eviction-controller")
    api = C("orders-api", "registry.internal/orders-api:5.2.0", env=[{"name": "DB_HOST", "value": "orders-db-0.orders-db.orders.svc.cluster.local"}])
    apods = s.deploy("orders", "orders-api", [api], 2, [running(60 * 24, ready=False)], nodes=s.nodes[:2])
    for p in apods:
        s.log("orders", p, "orders-api", ["ERROR pool: dial tcp 10.244.3.21:5432: connect: no route to host", "WARN readiness: database unavailable"], start=8, step=60)
    return s, {"question": "why is orders-db down?", "as": "dev",
               "expect": expect("diagnosed", "node_not_ready", "StatefulSet/orders/orders-db", ["not ready", "access"], hidden)}


@scenario
def s_node_alert() -> tuple[Snap, dict[str, Any]]:
    s = Snap("s02-alert-node-not-ready", ["shop", "ledger-prod"], "KubeNodeNotReady for worker-2; its pods are being evicted.").base(3, tenants={"dev": ["shop"], "ops": ["ledger-prod"]})
    s.objects = [o for o in s.objects if not (o["kind"] == "Node" and o["metadata"]["name"].endswith("worker-2"))]
    bad = s.nodes[1]
    s.nodes = [s.nodes[0], s.nodes[2]]
    s.node(bad, ready="Unknown", taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(11)}])
    c = C("cart", "registry.internal/cart:2.0.0")
    pods = s.deploy("shop", "cart", [c], 2, [running(60 * 24, ready=False), running(5)], nodes=[bad, s.nodes[0]])
    s.event("shop", "Pod", pods[0], "NodeNotReady", "Node is not ready", first=11, last_=11, component="node-controller")
    healthy_neighbour(s, "ledger-prod", "ledger-web")
    a = alert("KubeNodeNotReady", {"node": bad, "job": "kube-state-metrics"}, "Node is not ready.", f"{bad} has been unready for more than 15 minutes.", severity="warning")
    return s, {"alert": a, "as": "admin", "expect": expect("diagnosed", "node_not_ready", f"Node/{bad}", ["Kubelet stopped posting node status"], [])}


@scenario
def s_evicted() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s03-evicted-memory-pressure", "reports", "report-builder pods were evicted under node memory pressure.")
    c = C("builder", "registry.internal/report-builder:7.1.0", requests={"cpu": "200m", "memory": "256Mi"}, limits={})
    msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 87204Ki. Container builder was using 1843216Ki, request is 256Mi, has larger consumption of memory. "
    pods = s.deploy("reports", "report-builder", [c], 2, [terminated("ContainerStatusUnknown", 137, 30), running(25)], phase=None,
                    pod_status=None)
    for o in s.objects:
        if o["kind"] == "Pod" and o["metadata"]["name"] == pods[0]:
            o["status"].update({"phase": "Failed", "reason": "Evicted", "message": msg})
    s.event("reports", "Pod", pods[0], "Evicted", msg, first=30, last_=30)
    s.event("reports", "Pod", pods[0], "Killing", "Stopping container builder", type_="Normal", first=30, last_=30)
    return s, {"question": "why do report-builder pods keep getting evicted?", "as": "dev",
               "expect": expect("diagnosed", "evicted", "Deployment/reports/report-builder", ["memory", "256Mi"], hidden)}


@scenario
def s_multi_attach() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s04-volume-multi-attach", "cms", "The new wiki pod cannot attach its RWO volume, still attached to the old node.")
    c = C("wiki", "registry.internal/wiki:3.3.0", mounts=[{"name": "data", "mountPath": "/var/lib/wiki"}])
    s.pvc("cms", "wiki-data", "10Gi", "standard")
    pv = next(o for o in s.objects if o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"] == "wiki-data")["spec"]["volumeName"]
    pods = s.deploy("cms", "wiki", [c], 1, [waiting("ContainerCreating")], volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "wiki-data"}}], phase="Pending", pod_created=14)
    s.event("cms", "Pod", pods[0], "FailedAttachVolume", f'Multi-Attach error for volume "{pv}" Volume is already exclusively attached to one node and can\'t be attached to another', count=9, component="attachdetach-controller")
    s.event("cms", "Pod", pods[0], "FailedMount", "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data], failed to process volumes=[]: timed out waiting for the condition", count=6)
    return s, {"question": "wiki has been stuck in ContainerCreating for 15 minutes after the deploy, why?", "as": "dev",
               "expect": expect("diagnosed", "volume_mount_failed", "Deployment/cms/wiki", ["Multi-Attach"], hidden)}


@scenario
def s_rollout_paused() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s05-rollout-paused", "web", "The web-api rollout to 2.3.0 was paused halfway by someone.")
    c = C("web-api", "registry.internal/web-api:2.3.0", readiness=http_probe("/ready", 8080))
    s.deploy("web", "web-api", [c], 4, [running(40)], pods=2, revision=9, paused=True, conditions=[
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastTransitionTime": ts(60 * 24)},
        {"type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused", "message": "Deployment is paused", "lastTransitionTime": ts(38)}],
        status_override={"replicas": 4, "updatedReplicas": 2, "readyReplicas": 4, "availableReplicas": 4})
    old = C("web-api", "registry.internal/web-api:2.2.4", readiness=http_probe("/ready", 8080))
    extra = s.deploy("web", "web-api-old-tmp", [old], 2, [running(60 * 24)], revision=8)
    # fold the old ReplicaSet's pods under web-api (the generator's deploy() makes one RS per call)
    for o in list(s.objects):
        if o["metadata"].get("name") == "web-api-old-tmp" and o["kind"] == "Deployment":
            s.objects.remove(o)
        if o["kind"] == "ReplicaSet" and o["metadata"]["name"].startswith("web-api-old-tmp-"):
            o["metadata"]["ownerReferences"][0]["name"] = "web-api"
            o["metadata"]["name"] = o["metadata"]["name"].replace("web-api-old-tmp", "web-api")
        if o["kind"] == "Pod" and o["metadata"]["name"] in extra:
            o["metadata"]["name"] = o["metadata"]["name"].replace("web-api-old-tmp", "web-api")
            o["metadata"]["ownerReferences"][0]["name"] = o["metadata"]["ownerReferences"][0]["name"].replace("web-api-old-tmp", "web-api")
            o["metadata"]["labels"]["app.kubernetes.io/name"] = "web-api"
    s.event("web", "Deployment", "web-api", "ScalingReplicaSet", "Scaled up replica set web-api-new to 2", type_="Normal", first=40, last_=40, component="deployment-controller")
    return s, {"question": "the web-api rollout to 2.3.0 started 40 minutes ago and still is not finished, what's going on?", "as": "dev",
               "expect": expect("diagnosed", "rollout_stuck", "Deployment/web/web-api", ["paused", "kubectl rollout resume"], hidden)}


@scenario
def s_dependency_timeout() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s06-dependency-timeout", "checkout", "checkout-api crashes: the managed Postgres at 10.20.4.11:5432 does not answer.")
    c = C("checkout-api", "registry.internal/checkout-api:3.8.2", env=[{"name": "DATABASE_HOST", "value": "orders-pg.c9xk2.eu-west-1.rds.amazonaws.com"}])
    pods = s.deploy("checkout", "checkout-api", [c], 2, [crash(6)])
    for p in pods:
        s.log("checkout", p, "checkout-api", ["{\"level\":\"info\",\"msg\":\"checkout-api 3.8.2 starting\"}",
                                              "{\"level\":\"warn\",\"msg\":\"database not ready, retrying\",\"attempt\":1,\"err\":\"dial tcp 10.20.4.11:5432: i/o timeout\"}",
                                              "{\"level\":\"warn\",\"msg\":\"database not ready, retrying\",\"attempt\":2,\"err\":\"dial tcp 10.20.4.11:5432: i/o timeout\"}",
                                              "{\"level\":\"fatal\",\"msg\":\"cannot connect to database orders-pg.c9xk2.eu-west-1.rds.amazonaws.com:5432\",\"err\":\"dial tcp 10.20.4.11:5432: i/o timeout\"}"], previous=True)
        s.event("checkout", "Pod", p, "BackOff", "Back-off restarting failed container checkout-api", count=28)
    return s, {"question": "why is checkout-api crashing?", "as": "dev",
               "expect": expect("diagnosed", "dependency_unreachable", "Deployment/checkout/checkout-api", ["10.20.4.11:5432", "i/o timeout"], hidden)}


@scenario
def s_healthy_recovered() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s07-healthy-after-recovery", "storefront", "Everything in storefront runs; catalog was OOM-killed two days ago and recovered.")
    c = C("catalog", "registry.internal/catalog:6.0.1", limits={"memory": "1Gi"})
    pods = s.deploy("storefront", "catalog", [c], 3, [running(60 * 47, restarts=1, last=last("OOMKilled", 137, minutes_ago=60 * 47))], pod_created=60 * 72)
    s.event("storefront", "Pod", pods[0], "Pulled", f'Container image "{c.image}" already present on machine', type_="Normal", first=60 * 47, last_=60 * 47)
    return s, {"question": "is anything broken in storefront? catalog was acting up", "as": "dev",
               "expect": expect("healthy", "healthy", "", ["running and ready"], hidden)}


@scenario
def s_no_evidence() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s08-containercreating-no-evidence", "ml", "feature-builder has sat in ContainerCreating for 20 minutes; no event says why.")
    c = C("feature-builder", "registry.internal/feature-builder:0.9.0")
    s.deploy("ml", "feature-builder", [c], 1, [waiting("ContainerCreating")], phase="Pending", pod_created=20)
    return s, {"question": "why is feature-builder not starting?", "as": "dev",
               "expect": expect("insufficient_evidence", "insufficient_evidence", "", ["ContainerCreating"], hidden)}


@scenario
def s_ambiguous() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s09-ambiguous-name", "platform-apps", "Two workloads contain 'gateway'; the question does not say which.")
    for name in ("gateway-public", "gateway-internal"):
        c = C(name, f"registry.internal/{name}:1.0.0")
        s.deploy("platform-apps", name, [c], 1, [crash(4)])
    return s, {"question": "why is gateway failing?", "as": "dev",
               "expect": expect("insufficient_evidence", "insufficient_evidence", "", ["more than one"], hidden)}


@scenario
def s_other_tenant() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s10-other-tenant-workload", "team-a", "dev asks about invoice-mailer, which runs (and fails) in billing-prod where dev has no access.", neighbour_index=2)
    return s, {"question": "why is invoice-mailer failing?", "as": "dev",
               "expect": expect("denied", "", "", ["access"], [h for h in hidden if h != "invoice-mailer"] + ["smtp", "mail.ledger.internal"])}


@scenario
def s_taint() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s11-untolerated-taint", "gpu-jobs", "trainer pins itself to GPU nodes, which are tainted; it has no toleration.")
    s.node("gpu-node-1", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], labels={"accelerator": "nvidia-a10g"})
    c = C("trainer", "registry.internal/trainer:2.1.0")
    msg = "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    pods = s.deploy("gpu-jobs", "trainer", [c], 1, nodes=[None], pod_status={"schedule_message": msg}, extra_spec={"nodeSelector": {"accelerator": "nvidia-a10g"}})
    s.event("gpu-jobs", "Pod", pods[0], "FailedScheduling", msg, count=20, component="default-scheduler")
    return s, {"question": "trainer pod is pending forever", "as": "dev",
               "expect": expect("diagnosed", "unschedulable_constraints", "Deployment/gpu-jobs/trainer", ["untolerated taint"], hidden)}


@scenario
def s_go_panic() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s12-crashloop-go-panic", "inventory", "stock-sync panics on a nil map after the 4.0.0 release.")
    c = C("stock-sync", "registry.internal/stock-sync:4.0.0")
    pods = s.deploy("inventory", "stock-sync", [c], 1, [crash(15, "Error", 2)])
    s.log("inventory", pods[0], "stock-sync", ["time=2026-11-30T08:55:01Z level=INFO msg=\"stock-sync 4.0.0 starting\"", "time=2026-11-30T08:55:02Z level=INFO msg=\"loaded 1204 SKUs\"",
                                                "panic: assignment to entry in nil map", "", "goroutine 1 [running]:", "main.(*Syncer).apply(0xc000124000, {0xc0001b6000, 0x4b4, 0x4b4})",
                                                "\t/src/sync.go:88 +0x1c5", "main.main()", "\t/src/main.go:41 +0x2a5"], previous=True)
    s.event("inventory", "Pod", pods[0], "BackOff", "Back-off restarting failed container stock-sync", count=70)
    return s, {"question": "stock-sync is in CrashLoopBackOff since the release, even after I rolled the pods", "as": "dev",
               "expect": expect("diagnosed", "crash_loop_app_error", "Deployment/inventory/stock-sync", ["panic: assignment to entry in nil map"], hidden)}


@scenario
def s_namespace_wide() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s13-namespace-wide-oom", "team-a", "A namespace-wide question: api is OOM-killed; worker is fine; a Job succeeded.")
    c = C("api", "registry.internal/api:9.1.0", limits={"memory": "512Mi"})
    pods = s.deploy("team-a", "api", [c], 3, [crash(8, "OOMKilled", 137)])
    s.log("team-a", pods[0], "api", ["INFO warming cache (4.1M entries)", "WARN heap at 498Mi"], previous=True)
    w = C("worker", "registry.internal/worker:9.1.0")
    s.deploy("team-a", "worker", [w], 2)
    return s, {"question": "what is failing in team-a even after I raised the memory?", "as": "dev",
               "expect": expect("diagnosed", "oom_killed", "Deployment/team-a/api", ["512Mi", "1Gi"], hidden)}


@scenario
def s_quota_alert() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s14-alert-quota-pods", "search-ui", "KubeDeploymentReplicasMismatch: the namespace's pod count quota is used up.")
    c = C("search-ui", "registry.internal/search-ui:1.4.0", requests={"cpu": "100m", "memory": "128Mi"}, limits={"cpu": "200m", "memory": "256Mi"})
    _quota(s, "search-ui", 'pods "<pod>" is forbidden: exceeded quota: compute-quota, requested: pods=1, used: pods=10, limited: pods=10', {"pods": "10"}, {"pods": "10"}, c)
    a = alert("KubeDeploymentReplicasMismatch", {"namespace": "search-ui", "deployment": "api-server"}, "Deployment has not matched the expected number of replicas.",
              "Deployment search-ui/api-server has not matched the expected number of replicas for longer than 15 minutes.")
    return s, {"alert": a, "as": "dev", "expect": expect("diagnosed", "quota_exceeded", "ResourceQuota/search-ui/compute-quota", ["pods=10"], hidden)}


@scenario
def s_disk_full_pg() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s15-disk-full-postgres", "analytics-db", "warehouse-pg filled its 5Gi volume with WAL.")
    c = C("postgres", "postgres:16.4", mounts=[{"name": "pgdata", "mountPath": "/var/lib/postgresql/data"}], limits={"memory": "2Gi"})
    pods = s.statefulset("analytics-db", "warehouse-pg", [c], 1, [crash(3, "Error", 1)], claim=("pgdata", "5Gi", "standard"))
    s.log("analytics-db", pods[0], "postgres", ["2026-11-30 08:52:11.101 UTC [1] LOG:  starting PostgreSQL 16.4 on x86_64-pc-linux-gnu",
                                                 "2026-11-30 08:52:11.320 UTC [27] FATAL:  could not write to file \"pg_wal/xlogtemp.27\": No space left on device",
                                                 "2026-11-30 08:52:11.322 UTC [1] LOG:  startup process (PID 27) exited with exit code 1",
                                                 "2026-11-30 08:52:11.322 UTC [1] LOG:  aborting startup due to startup process failure"], previous=True)
    return s, {"question": "warehouse-pg won't come up", "as": "dev",
               "expect": expect("diagnosed", "disk_full", "StatefulSet/analytics-db/warehouse-pg", ["No space left on device", "5Gi"], hidden)}


@scenario
def s_dns_service_typo() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s16-dns-service-name-typo", "notify", "notifier calls redis-mastr (typo); the name does not resolve.")
    r = C("redis", "redis:7.2", ports=[6379])
    s.deploy("notify", "redis-master", [r], 1)
    s.service("notify", "redis-master", {"app.kubernetes.io/name": "redis-master"}, port=6379, target=6379)
    c = C("notifier", "registry.internal/notifier:2.2.0", env=[{"name": "REDIS_ADDR", "value": "redis-mastr:6379"}])
    pods = s.deploy("notify", "notifier", [c], 1, [crash(5)])
    s.log("notify", pods[0], "notifier", ["notifier 2.2.0", "ERROR redis: dial tcp: lookup redis-mastr on 10.96.0.10:53: no such host", "FATAL cannot start without redis"], previous=True)
    return s, {"question": "why is notifier restarting all the time?", "as": "dev",
               "expect": expect("diagnosed", "dns_failure", "Deployment/notify/notifier", ["redis-mastr"], hidden)}


@scenario
def s_connection_refused_svc() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s17-dependency-refused", "payments-b", "payments-worker cannot reach payments-db: the database pods are down (connection refused).")
    c = C("payments-worker", "registry.internal/payments-worker:1.8.3")
    pods = s.deploy("payments-b", "payments-worker", [c], 1, [crash(9)])
    s.log("payments-b", pods[0], "payments-worker", ['{"level":"info","msg":"connecting to postgres","host":"payments-db.payments-b.svc.cluster.local","port":5432}',
                                                    '{"level":"error","msg":"database connection failed","err":"connect ECONNREFUSED 10.96.87.14:5432"}', "Error: connect ECONNREFUSED 10.96.87.14:5432"], previous=True)
    return s, {"question": "payments-worker keeps crashing", "as": "dev",
               "expect": expect("diagnosed", "dependency_unreachable", "Deployment/payments-b/payments-worker", ["ECONNREFUSED", "10.96.87.14:5432"], hidden)}


@scenario
def s_image_tag_typo() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s18-image-tag-typo-rollout", "catalog", "catalog-api 5.0.1 rollout: image tag 5.0.l does not exist; old pods still serve.")
    c = C("catalog-api", "registry.internal/catalog-api:5.0.l")
    pods = s.deploy("catalog", "catalog-api", [c], 1, [waiting("ImagePullBackOff", 'Back-off pulling image "registry.internal/catalog-api:5.0.l"')], revision=12,
                    conditions=[{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": 'ReplicaSet "catalog-api-x" has timed out progressing.', "lastTransitionTime": ts(10)}])
    s.event("catalog", "Pod", pods[0], "Failed", 'Failed to pull image "registry.internal/catalog-api:5.0.l": rpc error: code = NotFound desc = failed to pull and unpack image "registry.internal/catalog-api:5.0.l": registry.internal/catalog-api:5.0.l: not found', count=7)
    return s, {"question": "catalog-api rollout is stuck", "as": "dev",
               "expect": expect("diagnosed", "image_pull", "Deployment/catalog/catalog-api", ["5.0.l"], hidden)}


@scenario
def s_cronjob_failed() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s19-cronjob-backup-failed", "backups", "The nightly backup Job failed: the S3 bucket rejects the credentials.")
    c = C("backup", "registry.internal/pg-backup:2.0.0", limits={})
    pods = s.job("backups", "nightly-backup-29934120", [c], [terminated("Error", 1, minutes_ago=180 - i * 5, ran=1) for i in range(3)], backoff_limit=2, created=180, cron="nightly-backup")
    for p in pods:
        s.log("backups", p, "backup", ["pg_dump: dumping contents of table public.orders", "upload failed: s3://prod-backups/2026-11-30/orders.sql.gz An error occurred (InvalidAccessKeyId) when calling the PutObject operation: The AWS Access Key Id you provided does not exist in our records."], start=180)
    s.event("backups", "Job", "nightly-backup-29934120", "BackoffLimitExceeded", "Job has reached the specified backoff limit", first=170, last_=170, component="job-controller")
    return s, {"question": "did the nightly backup run ok?", "as": "dev",
               "expect": expect("diagnosed", "job_failed", "CronJob/backups/nightly-backup", ["InvalidAccessKeyId"], hidden)}


@scenario
def s_admin_cluster_wide() -> tuple[Snap, dict[str, Any]]:
    s = Snap("s20-admin-cluster-wide-image", ["shop", "fraud-prod"], "An admin asks cluster-wide; fraud-scorer cannot pull its image, the rest is healthy.").base(3, tenants={"dev": ["shop"], "ops": ["fraud-prod"]})
    neighbour(s, "fraud-prod", "fraud-scorer", "image")
    healthy_neighbour(s, "shop", "storefront")
    return s, {"question": "anything failing on prod-1?", "as": "admin",
               "expect": expect("diagnosed", "image_pull", "Deployment/fraud-prod/fraud-scorer", ["manifest unknown"], [])}


@scenario
def s_liveness_timeout_137() -> tuple[Snap, dict[str, Any]]:
    s, hidden = tenant("s21-liveness-kills-slow-app", "media", "thumbnailer is killed by its 1s liveness probe during long GC pauses (exit 137, not OOM).")
    c = C("thumbnailer", "registry.internal/thumbnailer:3.0.0", limits={"memory": "2Gi", "cpu": "2"}, liveness=http_probe("/healthz", 8080, period=10, timeout=1, failure=3))
    pods = s.deploy("media", "thumbnailer", [c], 2, [running(4, ready=True, restarts=6, last=last("Error", 137, minutes_ago=4.5))])
    for p in pods:
        s.event("media", "Pod", p, "Unhealthy", 'Liveness probe failed: Get "http://10.244.2.31:8080/healthz": context deadline exceeded (Client.Timeout exceeded while awaiting headers)', count=18)
        s.event("media", "Pod", p, "Killing", "Container thumbnailer failed liveness probe, will be restarted", type_="Normal", count=6)
    return s, {"question": "thumbnailer restarts every few minutes, is it running out of memory?", "as": "dev",
               "expect": expect("diagnosed", "probe_failure", "Deployment/media/thumbnailer", ["liveness", "timeout"], hidden)}


def main() -> int:
    written = []
    for fn in SCENARIOS:
        snap, sc = fn()
        snap.description = snap.description or sc.get("question", "")
        snap.write(ROOT, sc)
        written.append(snap.id)
    print(f"wrote {len(written)} scenarios under {ROOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
