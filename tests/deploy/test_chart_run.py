"""Run what the Helm chart renders: every Deployment's containers started here from their command,
args, env (literal, Secret and ConfigMap references resolved as the kubelet would) and volumes
(the rendered ConfigMap, the identity Secret made by ``sleuth keys``, the projected service
account token), each Service's name resolving to the pods it selects — against a local
nats-server and Valkey standing in for the external NATS/Redis of the profile, and simcluster
standing in for ``kubernetes.default.svc``. tests/deploy/runner.py says what is rewritten.

Then a question is answered end to end through the gateway Service, and the signal the rendered
KEDA ScaledObject scales the agents on is read the way KEDA's nats-jetstream scaler reads it:
with the agents stopped, N queued questions show as a lag of N on consumer ``agent`` of stream
``JOBS``; with two agents started again the lag falls to 0 and every question is answered.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.deploy.chart import render_chart
from tests.deploy.runner import (
    ROOT,
    Mount,
    Runner,
    Unit,
    ask,
    assert_alice_is_answered_from_team_a_only,
    keda_lag,
)

pytestmark = pytest.mark.e2e

NAMESPACE = "sleuth"
RELEASE = "sleuth"
NATS_HOST = "nats.messaging.example.internal"
REDIS_HOST = "valkey.cache.example.internal"
API_NAMES = ["kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "kubernetes.default", "kubernetes"]
RBAC_KINDS = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

VALUES: dict[str, Any] = {
    "cluster": {"name": "demo"},
    "nats": {"enabled": False},
    "redis": {"enabled": False},
    "externalNats": {"url": f"nats://{NATS_HOST}:4222", "monitoringEndpoint": f"{NATS_HOST}:8222"},
    "externalRedis": {"url": f"redis://{REDIS_HOST}:6379/0"},
    "agent": {"replicas": 2, "autoscaling": {"keda": {"enabled": True, "lagThreshold": 5, "minReplicas": 2}}},
    # One replica of the others keeps the run within two cores; replicas share nothing but the bus
    # and Redis, which two agents exercise.
    "gateway": {"replicas": 1}, "authzCache": {"replicas": 1}, "alerts": {"replicas": 1}, "kubeMcp": {"replicas": 1},
}


def _labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class Cluster:
    """The rendered objects, the Secrets the operator created, and the stand-in API server."""

    def __init__(self, objects: list[dict[str, Any]], secrets: dict[str, dict[str, str]], sim_state: Path,
                 sa_tokens: dict[str, str]) -> None:
        self.objects = objects
        self.secrets = secrets
        self.sim_state = sim_state
        self.sa_tokens = sa_tokens
        self.config_maps = {o["metadata"]["name"]: o.get("data") or {} for o in objects if o["kind"] == "ConfigMap"}
        for o in objects:
            if o["kind"] == "Secret":
                data = {k: base64.b64decode(v).decode() for k, v in (o.get("data") or {}).items()}
                self.secrets[o["metadata"]["name"]] = {**data, **(o.get("stringData") or {})}

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def sa_token(self, service_account: str) -> str:
        return self.sa_tokens[service_account]

    # -- volumes: relative path → text, or None for a directory the pod writes (emptyDir)
    def volume_files(self, vol: dict[str, Any], service_account: str) -> dict[str, str] | None:
        if "emptyDir" in vol:
            return None
        if "configMap" in vol:
            return self._items(self.config_maps[vol["configMap"]["name"]], vol["configMap"].get("items"))
        if "secret" in vol:
            return self._items(self.secrets[vol["secret"]["secretName"]], vol["secret"].get("items"))
        if "projected" in vol:
            files: dict[str, str] = {}
            for src in vol["projected"]["sources"]:
                if "serviceAccountToken" in src:
                    files[src["serviceAccountToken"]["path"]] = self.sa_token(service_account)
                elif "configMap" in src and src["configMap"]["name"] == "kube-root-ca.crt":
                    ca = (self.sim_state / "tls" / "ca.crt").read_text()
                    files.update(self._items({"ca.crt": ca}, src["configMap"].get("items")))
                elif "configMap" in src:
                    files.update(self._items(self.config_maps[src["configMap"]["name"]], src["configMap"].get("items")))
                elif "secret" in src:
                    files.update(self._items(self.secrets[src["secret"]["name"]], src["secret"].get("items")))
                elif "downwardAPI" in src:
                    continue
                else:
                    raise AssertionError(f"unknown projected source {src}")
            return files
        raise AssertionError(f"no local stand-in for volume {vol}")

    @staticmethod
    def _items(data: dict[str, str], items: list[dict[str, str]] | None) -> dict[str, str]:
        if not items:
            return dict(data)
        return {i.get("path", i["key"]): data[i["key"]] for i in items}

    def env_value(self, e: dict[str, Any], pod: str) -> str | None:
        if "value" in e:
            return str(e["value"])
        src = e["valueFrom"]
        if "secretKeyRef" in src:
            ref = src["secretKeyRef"]
            value = (self.secrets.get(ref["name"]) or {}).get(ref["key"])
            assert value is not None or ref.get("optional"), f"{pod}: secret {ref} missing"
            return value
        if "configMapKeyRef" in src:
            ref = src["configMapKeyRef"]
            return self.config_maps[ref["name"]][ref["key"]]
        if "fieldRef" in src:
            path = src["fieldRef"]["fieldPath"]
            return {"metadata.namespace": NAMESPACE, "metadata.name": pod, "status.podIP": "127.0.0.1",
                    "spec.nodeName": "node-1"}[path]
        if "resourceFieldRef" in src:
            return None
        raise AssertionError(f"{pod}: unknown env source {src}")


def deployment_units(cluster: Cluster, dep: dict[str, Any], work: Path, api_ip: str, api_port: int) -> list[Unit]:
    name = dep["metadata"]["name"]
    pod = dep["spec"]["template"]
    spec, labels = pod["spec"], pod["metadata"].get("labels") or {}
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    sa = spec.get("serviceAccountName", "default")
    services = [s for s in cluster.kind("Service") if _labels_match(s["spec"].get("selector") or {}, labels)]
    units = []
    # A Deployment a ScaledObject scales has no replicas of its own: KEDA keeps at least minReplicaCount.
    scaled = [o["spec"] for o in cluster.kind("ScaledObject") if o["spec"]["scaleTargetRef"]["name"] == name]
    replicas = int(scaled[0].get("minReplicaCount", 1)) if scaled else int(dep["spec"].get("replicas", 1))
    for i in range(replicas):
        unit_name = name if replicas == 1 else f"{name}-{i}"
        for c in spec["containers"]:
            argv = [*(c.get("command") or []), *(c.get("args") or [])]
            if argv and argv[0] in ("sleuth-entrypoint", "/usr/local/bin/sleuth-entrypoint"):
                argv = argv[1:]
            mounts: list[Mount] = []
            for vm in c.get("volumeMounts") or []:
                files = cluster.volume_files(volumes[vm["name"]], sa)
                base = work / unit_name / vm["name"]
                if files is None:
                    mounts.append(Mount(vm["mountPath"], base))
                elif vm.get("subPath"):
                    mounts.append(Mount(vm["mountPath"], base / vm["subPath"], file_text=files[vm["subPath"]]))
                else:
                    mounts.append(Mount(vm["mountPath"], base, files=files))
            env = {}
            for e in c.get("env") or []:
                value = cluster.env_value(e, unit_name)
                if value is not None:
                    env[e["name"]] = value
            for ef in c.get("envFrom") or []:
                if "secretRef" in ef:
                    env.update(cluster.secrets[ef["secretRef"]["name"]])
                if "configMapRef" in ef:
                    env.update(cluster.config_maps[ef["configMapRef"]["name"]])
            # What the kubelet injects into every pod: where the API server is.
            env.setdefault("KUBERNETES_SERVICE_HOST", api_ip)
            env.setdefault("KUBERNETES_SERVICE_PORT", str(api_port))
            named = {p.get("name"): p["containerPort"] for p in c.get("ports") or []}
            probe = (c.get("readinessProbe") or {}).get("httpGet")
            ready = None
            if probe:
                port = probe["port"]
                ready = (int(named.get(port, port)), probe.get("path", "/"))
            hostnames: list[str] = []
            ports: dict[int, int] = {}
            if i == 0:
                for s in services:
                    n = s["metadata"]["name"]
                    hostnames += [n, f"{n}.{NAMESPACE}", f"{n}.{NAMESPACE}.svc", f"{n}.{NAMESPACE}.svc.cluster.local"]
                    for p in s["spec"]["ports"]:
                        target = p.get("targetPort", p["port"])
                        ports[int(p["port"])] = int(named.get(target, target))
            units.append(Unit(name=unit_name, image="sleuth", argv=argv, env=env, mounts=mounts,
                              hostnames=hostnames, ports=ports, ready_http=ready))
    return units


def _component(dep: dict[str, Any]) -> str:
    labels = dep["metadata"].get("labels") or {}
    return str(labels.get("app.kubernetes.io/component") or dep["metadata"]["name"])


def cluster_snapshot(objects: list[dict[str, Any]], work: Path) -> tuple[Path, dict[str, str]]:
    """The demo cluster with the chart's RBAC installed, and a token per chart service account.

    The service accounts are users of the simulated API server under their real names
    (``system:serviceaccount:<ns>:<name>``, groups ``system:serviceaccounts[:<ns>]``), so what
    kube-mcp and authz-cache may do there is exactly what the rendered Roles and bindings grant:
    a chart missing ``impersonate`` or a review permission fails this run."""
    import secrets as _secrets
    import shutil

    snap = work / "snapshot"
    shutil.copytree(ROOT / "scenarios" / "demo", snap)
    rbac = [o for o in objects if o["kind"] in RBAC_KINDS]
    (snap / "cluster" / "90-sleuth-chart-rbac.yaml").write_text(yaml.safe_dump_all(rbac, sort_keys=False))
    meta = yaml.safe_load((snap / "snapshot.yaml").read_text())
    tokens: dict[str, str] = {}
    for sa in (o for o in objects if o["kind"] == "ServiceAccount"):
        name = sa["metadata"]["name"]
        tokens[name] = _secrets.token_urlsafe(24)
        meta["users"][f"system:serviceaccount:{NAMESPACE}:{name}"] = {
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"], "token": tokens[name]}
    (snap / "snapshot.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return snap, tokens


def _identity_secret(name: str) -> dict[str, str]:
    """What the operator creates before installing: ``sleuth keys --secret NAME``."""
    out = subprocess.run([str(Path(sys.executable).parent / "sleuth"), "keys", "--secret", name, "--namespace", NAMESPACE],
                         capture_output=True, text=True, check=True).stdout
    doc = yaml.safe_load(out)
    assert doc["kind"] == "Secret" and doc["metadata"]["name"] == name
    data = {k: base64.b64decode(v).decode() for k, v in (doc.get("data") or {}).items()}
    return {**data, **(doc.get("stringData") or {})}


@pytest.fixture(scope="module")
def chart_stack(tmp_path_factory: pytest.TempPathFactory):
    objects = render_chart(VALUES)
    work = tmp_path_factory.mktemp("chart")
    runner = Runner(work)
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    identity = {v["secret"]["secretName"] for d in deployments for v in d["spec"]["template"]["spec"].get("volumes") or []
                if "secret" in v and "identity" in v["secret"]["secretName"]}
    assert len(identity) == 1, identity
    secrets = {n: _identity_secret(n) for n in identity}
    snapshot, sa_tokens = cluster_snapshot(objects, work)
    t0 = time.monotonic()
    sim = Unit("simcluster", "sleuth", ["sleuth-simcluster", "--snapshot", str(snapshot),
                                        "--state-dir", str(work / "simcluster"), "--host", "0.0.0.0", "--port", "6443"],
               hostnames=API_NAMES, ports={443: 6443}, ready_tcp=6443)
    nats = Unit("nats", "nats", ["-js", "-sd", "/data", "-m", "8222"], mounts=[Mount("/data", work / "nats")],
                hostnames=[NATS_HOST], ready_tcp=4222)
    valkey = Unit("valkey", "valkey", ["valkey-server", "--appendonly", "yes"], mounts=[Mount("/data", work / "valkey")],
                  hostnames=[REDIS_HOST], ready_tcp=6379, working_dir="/data")
    try:
        runner.start_together([sim, nats, valkey])
        api_ip = runner.ips["simcluster"]
        cluster = Cluster(objects, secrets, work / "simcluster", sa_tokens)
        units = {_component(d): deployment_units(cluster, d, work, api_ip, 6443) for d in deployments}
        for group in units.values():
            for u in group:
                runner.place(u)
        # The services wait for NATS and Redis and reach each other per request: all at once, as
        # a `helm install` starts them.
        runner.start_together([u for group in units.values() for u in group])
        yield runner, objects, units, time.monotonic() - t0
    finally:
        runner.stop_all()


def _gateway_url(runner: Runner, objects: list[dict[str, Any]]) -> str:
    svc = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"].endswith("gateway"))
    return runner.url(f"{svc['metadata']['name']}.{NAMESPACE}.svc", int(svc["spec"]["ports"][0]["port"]))


def test_the_rendered_deployments_run_and_answer_a_question_end_to_end(chart_stack) -> None:
    runner, objects, units, up = chart_stack
    assert {c.rsplit("-", 1)[-1] for c in units} >= {"gateway", "agent", "alerts", "mcp", "cache"}
    asked = assert_alice_is_answered_from_team_a_only(_gateway_url(runner, objects), runner.logs())
    print(f"\nchart run: up in {up:.1f}s, question answered in {asked:.2f}s")


def test_the_scaledobject_signal_counts_queued_jobs_and_falls_to_zero_when_agents_run(chart_stack) -> None:
    runner, objects, units, _up = chart_stack
    scaled = [o for o in objects if o["kind"] == "ScaledObject"]
    assert len(scaled) == 1
    trigger = scaled[0]["spec"]["triggers"][0]
    assert trigger["type"] == "nats-jetstream"
    meta = trigger["metadata"]
    endpoint = runner.net.rewrite(meta["natsServerMonitoringEndpoint"], "", [])
    lag = lambda: keda_lag(endpoint, meta["account"], meta["stream"], meta["consumer"])  # noqa: E731
    gateway = _gateway_url(runner, objects)
    assert ask(gateway, "carol", "what is failing in team-b?").status_code == 200  # the consumer exists
    assert lag() == 0

    agent_units = next(v for k, v in units.items() if k.endswith("agent"))
    for u in agent_units:
        runner.stop(u.name)
    n = 4  # the gateway's per-user in-flight limit; two users so nothing is refused
    answers: list[httpx.Response] = []
    users = ["alice", "carol"]
    threads = [threading.Thread(target=lambda i=i: answers.append(
        ask(gateway, users[i % 2], "what is failing in team-a?"))) for i in range(n)]
    for t in threads:
        t.start()
    seen: list[int] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        seen.append(lag())
        if seen[-1] == n:
            break
        time.sleep(0.2)
    assert seen[-1] == n, f"lag never reached {n}: {seen}"
    t0 = time.monotonic()
    runner.start_together(agent_units)
    for t in threads:
        t.join(90)
    drained = time.monotonic() - t0
    assert len(answers) == n and all(r.status_code == 200 for r in answers), [r.text[:200] for r in answers]
    deadline = time.monotonic() + 10
    while lag() != 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert lag() == 0
    print(f"\nKEDA signal: lag {seen[-1]} with no agent running (observed {seen}); {len(agent_units)} agents "
          f"answered all {n} and the lag fell to 0 in {drained:.1f}s (lagThreshold {meta['lagThreshold']})")
