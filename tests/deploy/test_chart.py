"""helm/sleuth with the real Helm engine (helm-python-sdk), offline: lint, render every value
profile, validate every object against the Kubernetes 1.30 schemas, and check that the services
accept the config the chart writes, that the schema refuses typos, and that the docs cover it.

Policy checks over the rendered objects (RBAC, hardening, secrets, network) are in
test_chart_policy.py. The NATS and Valkey subcharts are declared, not vendored: the SDK renders
them as nothing (see test_missing_dependencies_render_as_nothing)."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import pytest
import yaml
from pydantic import BaseModel

from sleuth_common.config import load_settings
from tests.deploy.chart import CHART_DIR, find, load_chart, render_chart, render_notes, service_config
from tests.deploy.conftest import MATTERMOST_CA, PROFILES, SECRET_NAMES, components

Obj = dict[str, Any]

APP_VERSION = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())["appVersion"]
KEDA_TRIGGER_KEYS = {  # https://keda.sh/docs/scalers/nats-jetstream/ (trigger metadata)
    "natsServerMonitoringEndpoint", "account", "accountID", "stream", "consumer", "lagThreshold",
    "activationLagThreshold", "useHttps",
}
KEDA_SPEC_KEYS = {
    "scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod", "idleReplicaCount",
    "minReplicaCount", "maxReplicaCount", "fallback", "advanced", "triggers",
}

# -- every profile renders, and every object is valid Kubernetes 1.30 ------------------------------

EXPECTED = {
    "defaults": {"HorizontalPodAutoscaler": 1, "ScaledObject": 0, "Deployment": 7, "Service": 7,
                 "ServiceAccount": 7, "PodDisruptionBudget": 7, "NetworkPolicy": 6, "ClusterRole": 3,
                 "ClusterRoleBinding": 3, "ConfigMap": 1, "Ingress": 0},
    "external": {"HorizontalPodAutoscaler": 1, "NetworkPolicy": 4, "PodDisruptionBudget": 7},
    "keda": {"HorizontalPodAutoscaler": 0, "ScaledObject": 1},
    "fixed": {"HorizontalPodAutoscaler": 0, "ScaledObject": 0, "PodDisruptionBudget": 0, "NetworkPolicy": 0},
    "everything": {"ScaledObject": 1, "Ingress": 2, "NetworkPolicy": 7, "ConfigMap": 3,
                   "PodDisruptionBudget": 6, "ClusterRole": 3},
    "mattermost": {"Deployment": 7, "ConfigMap": 1, "NetworkPolicy": 6},
    "caller-token": {"ClusterRole": 2, "ClusterRoleBinding": 2},
    "no-schedules-reports": {"Deployment": 5, "Service": 5, "ServiceAccount": 5, "PodDisruptionBudget": 5,
                             "ConfigMap": 1},
}


def _kinds(objects: list[Obj]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in objects:
        out[o["kind"]] = out.get(o["kind"], 0) + 1
    return out


def test_every_profile_renders_the_expected_objects(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    kinds = _kinds(objects)
    for kind, count in EXPECTED[name].items():
        assert kinds.get(kind, 0) == count, f"{name}: {kind} ×{kinds.get(kind, 0)}, expected {count}"
    assert not find(objects, "Secret"), "the chart never makes a Secret: they are created beside it"
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert len(names) == len(set(names)), f"duplicate objects in {name}"
    deployments = {o["metadata"]["name"] for o in find(objects, "Deployment")}
    assert deployments == {f"sleuth-{s}" for s in components(PROFILES[name])}
    accounts = {o["metadata"]["name"] for o in find(objects, "ServiceAccount")}
    assert accounts == deployments, f"{name}: one ServiceAccount per Deployment"


def test_every_object_is_valid_kubernetes_1_30(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    for obj in objects:
        if obj["apiVersion"].startswith("keda.sh/"):
            continue  # a CRD kind: checked against KEDA's documented keys below
        try:
            kubernetes_validate.validate(obj, "1.30", strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{name}: {obj['kind']}/{obj['metadata']['name']}: {e.message} at {list(e.path)}")


@pytest.mark.parametrize("name", ["keda", "everything"])
def test_scaled_object_uses_the_nats_jetstream_scaler_as_documented(name: str, rendered: dict[str, list[Obj]]) -> None:
    (so,) = find(rendered[name], "ScaledObject")
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    spec = so["spec"]
    assert set(spec) <= KEDA_SPEC_KEYS
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sleuth-agent"}
    assert find(rendered[name], "Deployment", "sleuth-agent")
    assert 0 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "nats-jetstream"
    meta = trigger["metadata"]
    assert set(meta) <= KEDA_TRIGGER_KEYS
    assert all(isinstance(v, str) for v in meta.values()), "KEDA trigger metadata values are strings"
    assert meta["natsServerMonitoringEndpoint"] == "sleuth-nats-headless.sleuth.svc.cluster.local:8222"
    assert meta["account"] == "$G"
    # The JOBS stream is named after the subject prefix, and its durable consumer is "agent".
    from sleuth_common.subjects import Subjects

    subjects = Subjects("sleuth")
    assert (meta["stream"], meta["consumer"]) == (subjects.stream_jobs, subjects.agent_durable)
    assert int(meta["lagThreshold"]) >= 1
    # KEDA owns the agent's replica count: the Deployment does not fight it on every upgrade.
    (agent,) = find(rendered[name], "Deployment", "sleuth-agent")
    assert "replicas" not in agent["spec"]


def test_keda_with_external_nats_needs_the_monitoring_endpoint() -> None:
    external = {**PROFILES["external"], "agent": {"autoscaling": {"keda": {"enabled": True}}}}
    with pytest.raises(helm_python.HelmError, match=r"set externalNats\.monitoringEndpoint"):
        render_chart(external)
    external["externalNats"] = {**external["externalNats"], "monitoringEndpoint": "nats-mon.messaging.svc:8222"}
    (so,) = find(render_chart(external), "ScaledObject")
    assert so["spec"]["triggers"][0]["metadata"]["natsServerMonitoringEndpoint"] == "nats-mon.messaging.svc:8222"


def test_lint_passes_with_only_the_missing_dependency_warning() -> None:
    for values in (PROFILES["defaults"], PROFILES["external"], PROFILES["everything"]):
        report = helm_python.lint(CHART_DIR, values, kube_version="v1.30.0")
        assert report["errors"] == [], report
        warnings = [m["error"] for m in report["messages"] if m["severity"] >= 2]
        assert warnings == ["chart directory is missing these dependencies: nats,valkey"], warnings


def test_missing_dependencies_render_as_nothing() -> None:
    """Helm itself refuses to install a chart whose enabled dependencies are missing from charts/;
    the SDK renders it anyway, without their objects. Both are declared with a condition and
    neither is vendored (README: `helm dependency build`)."""
    declared = {d["name"]: d for d in yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())["dependencies"]}
    assert declared["nats"]["condition"] == "nats.enabled"
    assert declared["nats"]["repository"] == "https://nats-io.github.io/k8s/helm/charts/"
    assert (declared["valkey"]["alias"], declared["valkey"]["condition"]) == ("redis", "redis.enabled")
    assert declared["valkey"]["repository"] == "https://valkey.io/valkey-helm/"
    status = {d["name"]: d["status"] for d in helm_python.dependency_list(CHART_DIR)}
    assert status == {"nats": "missing", "valkey": "missing"}
    assert load_chart().dependencies == []
    assert not (CHART_DIR / "charts").exists(), "the subcharts' code must not enter the repository"
    kinds = {o["kind"] for o in render_chart({})}
    assert "StatefulSet" not in kinds


# -- the services accept the config the chart writes --------------------------------------------------


def _service_models() -> dict[str, type[BaseModel]]:
    from sleuth_agent.settings import Settings as AgentSettings
    from sleuth_alerts.settings import Settings as AlertsSettings
    from sleuth_authz_cache.settings import Settings as AuthzSettings
    from sleuth_gateway.settings import Settings as GatewaySettings
    from sleuth_kube_mcp.settings import Settings as KubeMcpSettings
    from sleuth_reporter.settings import Settings as ReporterSettings
    from sleuth_scheduler.settings import Settings as SchedulerSettings

    return {"gateway": GatewaySettings, "authz-cache": AuthzSettings, "agent": AgentSettings,
            "alerts": AlertsSettings, "kube-mcp": KubeMcpSettings, "scheduler": SchedulerSettings,
            "reporter": ReporterSettings}


def _model_paths(model: type[BaseModel], prefix: str, known: set[str], open_: set[str]) -> None:
    for name, field in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        known.add(path)
        todo: list[tuple[Any, str]] = [(field.annotation, path)]
        while todo:
            ann, at = todo.pop()
            origin = typing.get_origin(ann)
            if origin is list:
                known.add(f"{at}[]")
                todo.append((typing.get_args(ann)[0], f"{at}[]"))
            elif origin is dict:
                open_.add(at)
            elif origin is not None:  # Optional / Union
                todo.extend((a, at) for a in typing.get_args(ann))
            elif isinstance(ann, type) and issubclass(ann, BaseModel):
                _model_paths(ann, at, known, open_)


def _data_paths(data: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(data, dict):
        for k, v in data.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            out |= {path, *_data_paths(v, path)}
    elif isinstance(data, list):
        for item in data:
            out |= {f"{prefix}[]", *_data_paths(item, f"{prefix}[]")}
    return out


def test_every_config_key_is_one_a_service_reads(profile: tuple[str, list[Obj]]) -> None:
    """The services ignore unknown keys, so a misspelt key would be silently dropped: every key
    the chart writes must be a field of some service's settings model."""
    name, objects = profile
    known: set[str] = set()
    open_: set[str] = set()
    for model in _service_models().values():
        _model_paths(model, "", known, open_)
    unknown = sorted(p for p in _data_paths(service_config(objects))
                     if p not in known and not any(p.startswith(f"{o}.") for o in open_))
    assert unknown == [], f"{name}: keys no service reads: {unknown}"


def test_every_service_loads_the_config(profile: tuple[str, list[Obj]], tmp_path: Path) -> None:
    name, objects = profile
    path = tmp_path / "sleuth.yaml"
    (cm,) = find(objects, "ConfigMap", "sleuth-config")
    path.write_text(cm["data"]["sleuth.yaml"])
    for service, model in _service_models().items():
        settings: Any = load_settings(model, path)  # type: ignore[type-var]
        assert settings.clusters[0].api_server == "https://kubernetes.default.svc:443", f"{name}/{service}"


def test_config_has_the_shape_the_local_stack_writes(rendered: dict[str, list[Obj]]) -> None:
    """Same sections and in-cluster wiring as src/sleuth/embedded/stack.py _write_config."""
    cfg = service_config(rendered["defaults"])
    assert {"prefix", "nats", "redis", "logging", "clusters", "identity", "kube_mcp", "authz_cache",
            "agent", "gateway", "alerts", "scheduler", "reporter", "jetstream", "audit"} == set(cfg)
    assert cfg["nats"] == {"url": "nats://sleuth-nats:4222"}
    assert cfg["redis"] == {"url": "redis://sleuth-redis:6379/0"}
    assert cfg["jetstream"]["replicas"] == 1
    (cluster,) = cfg["clusters"]
    assert cluster == {
        "name": "in-cluster", "aliases": [], "api_server": "https://kubernetes.default.svc:443",
        "ca_file": "/var/run/secrets/sleuth/kube/ca.crt",
        "authz_token_file": "/var/run/secrets/sleuth/kube/token",
        "mcp_servers": [{"name": "kube", "url": "http://sleuth-kube-mcp:8181/mcp", "identity": True}],
    }
    assert cfg["identity"] == {
        "verify_key_files": ["/etc/sleuth/identity/agent.pub"],
        "job_issuers": {"sleuth-authz": ["/etc/sleuth/identity/authz.pub"],
                        "sleuth-alerts": ["/etc/sleuth/identity/alerts.pub"],
                        "sleuth-chat": ["/etc/sleuth/identity/chat.pub"],
                        "sleuth-scheduler": ["/etc/sleuth/identity/scheduler.pub"],
                        "sleuth-reporter": ["/etc/sleuth/identity/reporter.pub"]},
    }
    listeners = {"gateway": ("port", 8080), "alerts": ("port", 8090), "kube_mcp": ("port", 8181),
                 "authz_cache": ("metrics_port", 9101), "agent": ("metrics_port", 9102),
                 "scheduler": ("port", 8091), "reporter": ("port", 9104)}
    for section, (key, port) in listeners.items():
        assert (cfg[section]["host"], cfg[section][key]) == ("0.0.0.0", port), section
    kube = cfg["kube_mcp"]
    assert (kube["kubeconfig"], kube["service_account_dir"]) == ("", "/var/run/secrets/sleuth/kube")
    assert (kube["require_identity"], kube["accept_caller_token"]) == (True, False)
    assert "llm" not in cfg["agent"], "no model unless one is configured"
    # The scheduler and the reporter run: the gateway offers their commands. No email by default.
    assert (cfg["gateway"]["schedules"], cfg["gateway"]["reports"]) == (True, True)
    assert cfg["reporter"] == {"host": "0.0.0.0", "port": 9104, "emails": {}}


def _settings(objects: list[Obj], service: str, tmp_path: Path) -> Any:
    """The service's own settings, loaded from the rendered ConfigMap as the pod loads them."""
    path = tmp_path / "sleuth.yaml"
    (cm,) = find(objects, "ConfigMap", "sleuth-config")
    path.write_text(cm["data"]["sleuth.yaml"])
    return load_settings(_service_models()[service], path)  # type: ignore[type-var]


JOB_ISSUERS = {"scheduler": "sleuth-scheduler", "reporter": "sleuth-reporter"}


def test_the_scheduler_and_the_reporter_follow_enabled(profile: tuple[str, list[Obj]], tmp_path: Path) -> None:
    """Each runs with its own settings on its port; the gateway offers its commands and the agent
    trusts its issuer exactly when it runs."""
    name, objects = profile
    running = components(PROFILES[name])
    gateway = _settings(objects, "gateway", tmp_path).gateway
    assert (gateway.schedules, gateway.reports) == ("scheduler" in running, "reporter" in running), name
    issuers = _settings(objects, "agent", tmp_path).identity.job_issuers
    cfg = service_config(objects)
    for service, issuer in JOB_ISSUERS.items():
        if service in running:
            assert issuers[issuer] == [f"/etc/sleuth/identity/{service}.pub"], name
            own = getattr(_settings(objects, service, tmp_path), service)
            assert (own.host, own.port) == ("0.0.0.0", {"scheduler": 8091, "reporter": 9104}[service])
        else:
            assert issuer not in issuers and service not in cfg, f"{name}: {service} is off"
    from sleuth_reporter.asking import REPORTER_ISSUER
    from sleuth_scheduler.firing import SCHEDULER_ISSUER

    assert (JOB_ISSUERS["scheduler"], JOB_ISSUERS["reporter"]) == (SCHEDULER_ISSUER, REPORTER_ISSUER)


def test_the_reporter_loads_the_mail_server_as_given(rendered: dict[str, list[Obj]], tmp_path: Path) -> None:
    values = PROFILES["everything"]["reporter"]
    reporter = _settings(rendered["everything"], "reporter", tmp_path).reporter
    smtp = reporter.smtp
    assert smtp.enabled
    assert (smtp.host, smtp.port, smtp.tls, smtp.sender, smtp.user) == (
        "smtp.example.com", 465, True, "Sleuth <sleuth@example.com>", "sleuth-prod")
    assert smtp.password_file == "/etc/sleuth/smtp/password"
    assert smtp.password_env == "SLEUTH_SMTP_PASSWORD", "the default: no pod has it, so the file is read"
    assert reporter.emails == values["emails"]
    assert reporter.addresses("web:team-a-alerts") == ["team-a@example.com"]
    written = set(service_config(rendered["everything"])["reporter"]["smtp"])
    assert written == {"host", "port", "starttls", "tls", "sender", "user", "password_file"}
    # By default: no server, no email.
    assert not _settings(rendered["defaults"], "reporter", tmp_path).reporter.smtp.enabled


def test_a_relay_without_login_needs_no_password(tmp_path: Path) -> None:
    objects = render_chart({"reporter": {"smtp": {"host": "mail-relay.mail.svc", "port": 25, "starttls": False,
                                                  "from": "sleuth@example.com"}}})
    smtp = _settings(objects, "reporter", tmp_path).reporter.smtp
    assert smtp.enabled and (smtp.host, smtp.port, smtp.starttls, smtp.user) == ("mail-relay.mail.svc", 25, False, "")
    assert smtp.password_file == ""
    (reporter,) = find(objects, "Deployment", "sleuth-reporter")
    assert "smtp" not in {v["name"] for v in reporter["spec"]["template"]["spec"]["volumes"]}


def test_the_mail_server_goes_through_its_values_not_config() -> None:
    """Through ``config`` the chart would not mount the password: it says where the setting goes."""
    with pytest.raises(helm_python.HelmRenderError, match=r"config\.reporter\.smtp\.host: set reporter\.smtp\.host"):
        render_chart({"config": {"reporter": {"smtp": {"host": "smtp.example.com", "sender": "s@example.com"}}}})
    # Other reporter settings do go through `config`, merged with the values.
    cfg = service_config(render_chart({**PROFILES["everything"], "config": {
        "reporter": {"email_attempts": 8, "smtp": {"timeout": 40}}, "scheduler": {"default_tz": "Europe/Berlin"}}}))
    assert (cfg["reporter"]["email_attempts"], cfg["reporter"]["smtp"]["timeout"]) == (8, 40)
    assert cfg["reporter"]["smtp"]["host"] == "smtp.example.com"
    assert cfg["scheduler"] == {"host": "0.0.0.0", "port": 8091, "default_tz": "Europe/Berlin"}


def test_smtp_secrets_are_refused_in_config() -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"config\.reporter\.smtp\.password looks like a secret"):
        render_chart({"config": {"reporter": {"smtp": {"password": "hunter2"}}}})


def test_external_and_everything_config(rendered: dict[str, list[Obj]]) -> None:
    ext = service_config(rendered["external"])
    assert ext["nats"]["url"] == "nats://nats.messaging.svc:4222"
    assert ext["redis"]["url"] == "rediss://valkey.cache.svc:6380/2"
    cfg = service_config(rendered["everything"])
    assert cfg["jetstream"]["replicas"] == 3
    assert cfg["agent"]["llm"] == {"provider": "openai", "base_url": "https://llm.internal/v1",
                                   "model": "qwen2.5:14b", "api_key_env": "SLEUTH_LLM_API_KEY"}
    assert cfg["gateway"]["public_url"] == "https://sleuth.example.com"
    assert "alerts.sleuth.example.com" in cfg["alerts"]["allowed_hosts"]
    assert cfg["alerts"]["routes"] == [
        {"name": "team-a", "channel": "team-a-alerts", "token_env": "SLEUTH_ALERTS_TOKEN_TEAM_A",
         "run_as": {"user": "alice", "groups": ["team-a"]}},
        {"name": "platform", "channel": "platform-alerts", "token_env": "PLATFORM_ALERTS_TOKEN"},
    ]
    assert cfg["clusters"][1] == {
        "name": "prod-2", "aliases": ["us-east-1"], "api_server": "https://prod-2.example.internal:6443",
        "ca_file": "/etc/sleuth/clusters/prod-2.crt", "authz_token_env": "SLEUTH_AUTHZ_TOKEN_PROD_2",
        "mcp_servers": [{"name": "kube", "url": "https://kube-mcp.prod-2.example.internal/mcp", "identity": True}],
    }
    # values.config is merged in: maps merge, lists replace, false overrides true.
    assert cfg["gateway"]["channels"] == [{"name": "team-a-alerts", "members": ["group:team-a"]}]
    assert cfg["gateway"]["port"] == 8080
    assert cfg["limits"] == {"daily_llm_calls": 50}
    assert cfg["logging"] == {"level": "INFO", "json_format": False}


def _gateway_settings(objects: list[Obj], tmp_path: Path) -> Any:
    from sleuth_gateway.settings import Settings as GatewaySettings

    path = tmp_path / "sleuth.yaml"
    (cm,) = find(objects, "ConfigMap", "sleuth-config")
    path.write_text(cm["data"]["sleuth.yaml"])
    return load_settings(GatewaySettings, path)


@pytest.mark.parametrize("name", ["mattermost", "everything"])
def test_the_gateway_loads_the_mattermost_bot_as_given(name: str, rendered: dict[str, list[Obj]],
                                                       tmp_path: Path) -> None:
    """The values become the gateway's own ``MattermostSettings``: the server, the people (email →
    Kubernetes user and groups), the token as a file; nothing else is written."""
    from sleuth_gateway.settings import MattermostPerson

    values = PROFILES[name]["gateway"]["mattermost"]
    mm = _gateway_settings(rendered[name], tmp_path).gateway.mattermost
    assert mm.url == values["url"]
    assert mm.people == [MattermostPerson(email=p["email"], user=p["user"], groups=p.get("groups", []))
                         for p in values["people"]]
    assert mm.token_file == "/etc/sleuth/chat/mattermost-token"
    assert mm.token_env == "SLEUTH_MATTERMOST_TOKEN", "the default: no pod has it, so the file is read"
    assert mm.people_url == values.get("peopleUrl", "")
    assert mm.ignored_members == values.get("ignoredMembers", [])
    assert mm.ca_file == ("/etc/sleuth/mattermost-ca/ca.crt" if values.get("caBundle") else "")
    assert mm.people_token_env == ("SLEUTH_MATTERMOST_PEOPLE_TOKEN" if name == "everything" else "")
    written = set(service_config(rendered[name])["gateway"]["mattermost"])
    assert written <= {"url", "token_file", "ca_file", "people", "people_url", "people_token_env", "ignored_members"}


def test_no_mattermost_bot_unless_its_url_is_set(rendered: dict[str, list[Obj]], tmp_path: Path) -> None:
    assert "mattermost" not in service_config(rendered["defaults"])["gateway"]
    assert _gateway_settings(rendered["defaults"], tmp_path).gateway.mattermost.url == ""
    # The Secret alone turns nothing on.
    objects = render_chart({"chat": {"existingSecret": "sleuth-chat"}})
    assert "mattermost" not in service_config(objects)["gateway"]


def test_mattermost_needs_the_chat_secret() -> None:
    with pytest.raises(helm_python.HelmRenderError,
                       match=r"gateway\.mattermost\.url needs chat\.existingSecret: the Secret holding the "
                             r"Mattermost bot's access token under key \"mattermost-token\""):
        render_chart({"gateway": {"mattermost": {"url": "https://chat.example.com"}}})
    with pytest.raises(helm_python.HelmRenderError, match=r'key \"bot\".*--from-literal=bot=TOKEN'):
        render_chart({"gateway": {"mattermost": {"url": "https://chat.example.com"}},
                      "chat": {"mattermostTokenKey": "bot"}})
    # Through `config` the chart would not mount the token: it says where the setting goes.
    with pytest.raises(helm_python.HelmRenderError, match=r"config\.gateway\.mattermost\.url: set gateway\.mattermost\.url instead"):
        render_chart({"config": {"gateway": {"mattermost": {"url": "https://chat.example.com"}}}})
    # Other Mattermost settings do go through `config`.
    cfg = service_config(render_chart({**PROFILES["mattermost"], "config": {"gateway": {"mattermost": {"memory_turns": 4}}}}))
    assert (cfg["gateway"]["mattermost"]["memory_turns"], cfg["gateway"]["mattermost"]["url"]) == (4, "https://chat.example.com")


def test_mattermost_ca_bundle_is_mounted_and_rolls_the_gateway(rendered: dict[str, list[Obj]]) -> None:
    objects = rendered["everything"]
    (ca,) = find(objects, "ConfigMap", "sleuth-mattermost-ca")
    assert ca["data"] == {"ca.crt": MATTERMOST_CA}
    (gw,) = find(objects, "Deployment", "sleuth-gateway")
    pod = gw["spec"]["template"]["spec"]
    ca_file = service_config(objects)["gateway"]["mattermost"]["ca_file"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if ca_file.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == "sleuth-mattermost-ca"
    assert ca_file[len(mount["mountPath"]) + 1:] in ca["data"]

    def checksum(bundle: str) -> str:
        values = {**PROFILES["mattermost"], "gateway": {"mattermost": {**PROFILES["mattermost"]["gateway"]["mattermost"], "caBundle": bundle}}}
        (dep,) = find(render_chart(values), "Deployment", "sleuth-gateway")
        return str(dep["spec"]["template"]["metadata"]["annotations"]["checksum/mattermost-ca"])

    assert checksum(MATTERMOST_CA) != checksum(MATTERMOST_CA.replace("MIIB", "MIIC")), "a new CA restarts the gateway"
    assert not find(rendered["mattermost"], "ConfigMap", "sleuth-mattermost-ca")


def test_stream_replicas_need_a_nats_cluster() -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"jetstream\.replicas is 3 but the bundled NATS runs 1 server"):
        render_chart({"jetstream": {"replicas": 3}})
    clustered = {"jetstream": {"replicas": 3}, "nats": {"config": {"cluster": {"enabled": True, "replicas": 3}}}}
    assert service_config(render_chart(clustered))["jetstream"]["replicas"] == 3


def test_stream_limits_and_audit_settings_reach_every_service(rendered: dict[str, list[Obj]], tmp_path: Path) -> None:
    """The chart's defaults are the services' own (one place would drift from the other), and the
    values given reach every service that uses the bus as numbers (Helm reads values as floats:
    1 GiB must not become 1.073741824e+09)."""
    from sleuth_common.config import AuditSettings, JetStreamSettings

    on_the_bus = [s for s in _service_models() if s != "kube-mcp"]
    for service in on_the_bus:
        settings = _settings(rendered["defaults"], service, tmp_path)
        assert settings.audit == AuditSettings(), service
        assert settings.jetstream.model_dump(exclude={"replicas"}) == JetStreamSettings().model_dump(
            exclude={"replicas"}), service
    values = {"jetstream": {"resultsMaxAge": 600, "resultsMaxBytes": 5 << 30},
              "audit": {"maxAge": 90 * 86400, "maxBytes": 20 << 30, "publishTimeout": 0.5, "backlog": 50_000}}
    objects = render_chart(values)
    assert "e+" not in find(objects, "ConfigMap", "sleuth-config")[0]["data"]["sleuth.yaml"]
    for service in on_the_bus:
        settings = _settings(objects, service, tmp_path)
        assert (settings.jetstream.results_max_age, settings.jetstream.results_max_bytes) == (600, 5 << 30)
        assert settings.audit == AuditSettings(max_age=90 * 86400, max_bytes=20 << 30, publish_timeout=0.5,
                                               backlog=50_000), service
    with pytest.raises(helm_python.HelmValuesError, match="at '/audit/maxAge'"):
        render_chart({"audit": {"maxAge": 30}})  # below the services' own minimum: refused at install


def test_config_null_removes_a_key() -> None:
    cfg = service_config(render_chart({"config": {"gateway": {"trusted_proxies": None}}}))
    assert "trusted_proxies" not in cfg["gateway"]


# -- the schema refuses what would be a silent mistake ----------------------------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"gatewy": {"replicas": 3}}, "additional properties 'gatewy' not allowed"),
        ({"gateway": {"replica": 3}}, "at '/gateway': additional properties 'replica' not allowed"),
        ({"agent": {"autoscaling": {"keda": {"enable": True}}}}, "additional properties 'enable' not allowed"),
        ({"cluster": {"name": None}}, "at '/cluster': missing property 'name'"),
        ({"cluster": {"name": "prod 1"}}, "at '/cluster/name'"),
        ({"image": {"repository": None}}, "at '/image': missing property 'repository'"),
        ({"alerts": {"routes": [{"name": "team-a", "channel": "c"}], "existingSecret": "s"}},
         "missing property 'tokenSecretKey'"),
        ({"nats": {"enabled": False}}, "at '/externalNats/url': minLength"),
        ({"redis": {"enabled": False}}, "at '/externalRedis/url': minLength"),
        ({"image": {"tag": "latest"}}, "at '/image/tag'"),
        ({"scheduler": {"enabled": "yes"}}, "at '/scheduler/enabled'"),
        ({"scheduler": {"replica": 2}}, "at '/scheduler': additional properties 'replica' not allowed"),
        ({"reporter": {"smtp": {"hots": "smtp.example.com"}}}, "additional properties 'hots' not allowed"),
        ({"reporter": {"smtp": {"host": "smtp.example.com"}}}, "at '/reporter/smtp/from'"),
        ({"reporter": {"smtp": {"host": "smtp.example.com:587", "from": "s@example.com"}}}, "at '/reporter/smtp/host'"),
        ({"reporter": {"smtp": {"host": "smtp.example.com", "from": "s@example.com", "user": "sleuth"}}},
         "at '/smtp/existingSecret'"),
        ({"reporter": {"emails": {"web:team-a": ["team-a@example.com"]}}}, "at '/reporter/smtp/host'"),
        ({"reporter": {"emails": {"web:team-a": ["team-a"]}, "smtp": {"host": "smtp.example.com", "from": "s@example.com"}}},
         "at '/reporter/emails/web:team-a/0'"),
        ({"reporter": {"smtp": {"port": 0}}}, "at '/reporter/smtp/port'"),
        ({"smtp": {"passwordKey": ""}}, "at '/smtp/passwordKey'"),
        ({"gateway": {"resources": {"requests": {"memory": None}}}}, "missing property 'memory'"),
        ({"gateway": {"mattermost": {"url": "chat.example.com"}}}, "at '/gateway/mattermost/url'"),
        ({"gateway": {"mattermost": {"peple": []}}}, "additional properties 'peple' not allowed"),
        ({"gateway": {"mattermost": {"people": [{"email": "alice@example.com"}]}}}, "missing property 'user'"),
        ({"gateway": {"mattermost": {"people": [{"email": "alice", "user": "alice"}]}}},
         "at '/gateway/mattermost/people/0/email'"),
        ({"chat": {"mattermostTokenKey": ""}}, "at '/chat/mattermostTokenKey'"),
    ],
)
def test_schema_refuses_with_a_clear_message(values: Obj, message: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as err:
        load_chart().validate_schema(values)
    assert message in str(err.value)
    with pytest.raises(helm_python.HelmValuesError, match=re.escape(message)):
        render_chart(values)  # what `helm install` does first


def test_schema_accepts_every_profile() -> None:
    for values in PROFILES.values():
        load_chart().validate_schema(values)


def test_secrets_in_config_are_refused() -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"config\.agent\.llm\.api_key looks like a secret"):
        render_chart({"config": {"agent": {"llm": {"api_key": "sk-ant-api03-abc"}}}})
    with pytest.raises(helm_python.HelmRenderError, match=r"config\.alerts\.routes\[0\]\.token looks like a secret"):
        render_chart({"config": {"alerts": {"routes": [{"name": "x", "channel": "y", "token": "hunter2"}]}}})
    # References are fine: *_env and *_file name where the secret is.
    render_chart({"config": {"agent": {"llm": {"api_key_env": "MY_KEY"}}}})


def test_image_is_pinned_to_the_app_version(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    assert re.fullmatch(r"\d+\.\d+\.\d+", APP_VERSION)
    for dep in find(objects, "Deployment"):
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        assert c["image"] == f"ghcr.io/sleuth-dev/sleuth:{APP_VERSION}", name


def test_image_tag_and_digest_overrides() -> None:
    images = {c["image"] for d in find(render_chart({"image": {"tag": "0.1.1"}}), "Deployment")
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {"ghcr.io/sleuth-dev/sleuth:0.1.1"}
    digest = "sha256:" + "a" * 64
    images = {c["image"] for d in find(render_chart({"image": {"digest": digest}}), "Deployment")
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {f"ghcr.io/sleuth-dev/sleuth@{digest}"}


def test_tracing_values_reach_every_service_as_otel_variables() -> None:
    """Off by default; with an endpoint every service exports there, its OTLP headers (a backend's
    credentials) from a Secret, never as a literal."""
    from tests.deploy.chart import containers

    def otel(objects: list[Obj]) -> dict[str, dict[str, Obj]]:
        return {d["metadata"]["labels"]["app.kubernetes.io/component"]: {
            e["name"]: e for c in containers(d) for e in c.get("env", []) if e["name"].startswith("OTEL_")}
            for d in find(objects, "Deployment")}

    assert not any(otel(render_chart({})).values())
    values = {"tracing": {"endpoint": "http://otel-collector.observability:4318", "sampler": "parentbased_traceidratio",
                          "samplerArg": "0.25", "headersSecret": "otlp"}}
    per_service = otel(render_chart(values))
    assert set(per_service) == components({})
    for env in per_service.values():
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"]["value"] == "http://otel-collector.observability:4318"
        assert (env["OTEL_TRACES_SAMPLER"]["value"], env["OTEL_TRACES_SAMPLER_ARG"]["value"]) == (
            "parentbased_traceidratio", "0.25")
        assert env["OTEL_EXPORTER_OTLP_HEADERS"]["valueFrom"] == {"secretKeyRef": {"name": "otlp", "key": "otlp-headers"}}
    with pytest.raises(helm_python.HelmValuesError):
        render_chart({"tracing": {"sampler": "sometimes"}})


# -- what people read ---------------------------------------------------------------------------------


def _leaf_paths(data: Any, prefix: str = "") -> list[str]:
    if isinstance(data, dict) and data:
        return [p for k, v in data.items() for p in _leaf_paths(v, f"{prefix}.{k}" if prefix else k)]
    return [prefix]


def test_readme_documents_every_value() -> None:
    readme = (CHART_DIR / "README.md").read_text()
    rows = set(re.findall(r"^\| `([^`]+)` \|", readme, flags=re.MULTILINE))
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    missing = [p for p in _leaf_paths(values)
               if not any(p == r or p.startswith(f"{r}.") for r in rows)]
    assert missing == [], f"values without a row in README.md: {missing}"
    for needed in ("helm dependency build", "helm install", "subjectaccessreviews", "tokenreviews"):
        assert needed in readme


def test_notes_say_where_to_go_and_how_to_sign_in(rendered: dict[str, list[Obj]]) -> None:
    notes = render_notes({})
    assert "kubectl -n sleuth port-forward svc/sleuth-gateway 8080:8080" in notes
    assert "your own Kubernetes bearer token" in notes
    assert "http://sleuth-alerts.sleuth.svc:8090/v1/alertmanager/<route>" in notes
    assert "authorization:" in notes and "credentials_file" in notes
    notes = render_notes(PROFILES["everything"])
    assert "https://sleuth.example.com/" in notes
    assert "team-a → #team-a-alerts" in notes
    assert "Mattermost" not in render_notes({})
    notes = render_notes(PROFILES["mattermost"])
    assert "the Secret sleuth-chat with the Mattermost bot account's access token under key\n    mattermost-token" in notes
    assert "kubectl -n sleuth rollout restart deployment/sleuth-gateway" in notes


def test_notes_say_what_to_say_in_chat_and_how_reports_are_sent() -> None:
    notes = render_notes({})
    assert "schedule every weekday at 09:00" in notes and "report " in notes
    assert "Reports go to chat only: set reporter.smtp.* and reporter.emails to email them." in notes
    assert "lacks scheduler.key/reporter.key: run the same command" in notes
    notes = render_notes(PROFILES["everything"])
    assert "Reports are also emailed through smtp.example.com:465" in notes
    assert f"the Secret {SECRET_NAMES['smtp']} with the password of sleuth-prod under key smtp-pass-prod" in notes
    notes = render_notes(PROFILES["no-schedules-reports"])
    assert "Say in chat" not in notes and "scheduler.key" not in notes
    assert "sleuth-smtp" not in notes, "the SMTP Secret is not needed while the reporter is off"


def test_make_chart_renders_like_helm_template_and_refuses_a_typo(tmp_path, capsys) -> None:
    from tests.deploy.chart import main

    good = tmp_path / "v.yaml"
    good.write_text("cluster: {name: prod-1}\n")
    assert main(["-f", str(good)]) == 0
    out = capsys.readouterr().out
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert {d["kind"] for d in docs} >= {"Deployment", "ConfigMap", "ClusterRole", "Service"}
    assert "prod-1" in next(d for d in docs if d["kind"] == "ConfigMap")["data"]["sleuth.yaml"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("gateway: {replica: 3}\n")
    assert main(["-f", str(bad)]) == 1
    assert "additional properties 'replica' not allowed" in capsys.readouterr().err


def test_a_runbooks_configmap_is_mounted_into_the_agents_only() -> None:
    objects = render_chart({"agent": {"runbooks": {"configMap": "team-runbooks"}}})
    mounted = {}
    for dep in find(objects, "Deployment"):
        pod = dep["spec"]["template"]["spec"]
        volumes = [v for v in pod.get("volumes", []) if v.get("configMap", {}).get("name") == "team-runbooks"]
        if volumes:
            (c,) = [c for c in pod["containers"] if any(m["name"] == volumes[0]["name"] for m in c["volumeMounts"])]
            mounted[dep["metadata"]["name"]] = [m for m in c["volumeMounts"] if m["name"] == volumes[0]["name"]]
    assert list(mounted) == ["sleuth-agent"]
    assert mounted["sleuth-agent"] == [{"name": "runbooks", "mountPath": "/etc/sleuth/runbooks", "readOnly": True}]
    assert service_config(objects)["knowledge"] == {"runbooks_dir": "/etc/sleuth/runbooks"}
    assert "knowledge" not in service_config(render_chart({}))
