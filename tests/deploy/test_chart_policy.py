"""What a platform team checks before it accepts helm/sleuth, over every rendered profile: RBAC
(DESIGN §5), container hardening and probes, secrets only by reference, one private key per pod,
network policies, disruption budgets and autoscaling."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sleuth_kube_mcp.kube._kinds import BUILTIN_KINDS
from tests.deploy.chart import containers, find, render_chart, service_config
from tests.deploy.conftest import PROFILES, SECRET_NAMES, components

Obj = dict[str, Any]

SERVICES = ("gateway", "authz-cache", "agent", "alerts", "kube-mcp", "scheduler", "reporter")
PORTS = {"gateway": 8080, "alerts": 8090, "kube-mcp": 8181, "authz-cache": 9101, "agent": 9102,
         "scheduler": 8091, "reporter": 9104}
SIGNER = {"agent": "agent", "authz-cache": "authz", "alerts": "alerts", "gateway": "chat", "kube-mcp": None,
          "scheduler": "scheduler", "reporter": "reporter"}
PUBLIC_KEYS = {"agent.pub", "authz.pub", "alerts.pub", "chat.pub"}
"""Every pod's public keys; the agent also gets those of the job issuers that run (TRUSTED)."""
TRUSTED = {"scheduler": "scheduler.pub", "reporter": "reporter.pub"}
JOB_ISSUERS = {"gateway": "sleuth-chat", "scheduler": "sleuth-scheduler", "reporter": "sleuth-reporter",
               "alerts": "sleuth-alerts", "authz-cache": "sleuth-authz"}
BUS = {"gateway", "authz-cache", "agent", "alerts", "scheduler", "reporter"}
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "bind", "escalate", "approve", "sign", "*"}
KUBE_API_DIR = "/var/run/secrets/sleuth/kube"


def _component(obj: Obj) -> str:
    return str(obj["metadata"]["labels"]["app.kubernetes.io/component"])


def _pod(dep: Obj) -> Obj:
    pod: Obj = dep["spec"]["template"]["spec"]
    return pod


def _deployments(objects: list[Obj]) -> dict[str, Obj]:
    return {_component(d): d for d in find(objects, "Deployment")}


def _env(container: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in container.get("env", [])}


# -- RBAC ------------------------------------------------------------------------------------------


def _bound_roles(objects: list[Obj]) -> dict[str, list[Obj]]:
    """ServiceAccount name → the (Cluster)Roles bound to it, checking each binding's roleRef
    names a role rendered beside it and each subject is a ServiceAccount of this release."""
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] in ("Role", "ClusterRole")}
    accounts = {o["metadata"]["name"] for o in find(objects, "ServiceAccount")}
    out: dict[str, list[Obj]] = {}
    for binding in [*find(objects, "RoleBinding"), *find(objects, "ClusterRoleBinding")]:
        ref = binding["roleRef"]
        assert ref["apiGroup"] == "rbac.authorization.k8s.io"
        role = roles.get((ref["kind"], ref["name"]))
        assert role is not None, f"{binding['metadata']['name']} binds {ref['name']}, which the chart does not define"
        for subject in binding["subjects"]:
            assert subject["kind"] == "ServiceAccount" and subject["namespace"] == "sleuth", subject
            assert subject["name"] in accounts
            out.setdefault(subject["name"], []).append(role)
    return out


def _rules(roles: list[Obj]) -> list[Obj]:
    return [r for role in roles for r in role["rules"]]


def test_only_authz_cache_and_kube_mcp_hold_cluster_rights(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    bound = _bound_roles(objects)
    assert set(bound) == {"sleuth-authz-cache", "sleuth-kube-mcp"}, name
    assert not find(objects, "Role") and not find(objects, "RoleBinding")
    defined = {o["metadata"]["name"] for o in find(objects, "ClusterRole")}
    used = {r["metadata"]["name"] for roles in bound.values() for r in roles}
    assert defined == used, f"{name}: ClusterRoles bound to nobody: {defined - used}"


def test_no_write_verbs_no_secrets_no_wildcards(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    for role in find(objects, "ClusterRole"):
        for rule in role["rules"]:
            where = f"{name}: {role['metadata']['name']} {rule}"
            assert "*" not in rule["resources"] and "*" not in rule["apiGroups"] and "*" not in rule["verbs"], where
            assert not any(r == "secrets" or r.startswith("secrets/") for r in rule["resources"]), where
            assert "nonResourceURLs" not in rule, where
            if rule["resources"] not in (["subjectaccessreviews"], ["tokenreviews"]):
                assert not set(rule["verbs"]) & WRITE_VERBS, where


def test_authz_cache_may_review_and_list_namespaces_rolebindings_pods_and_services_only(rendered: dict[str, list[Obj]]) -> None:
    reviews = [
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["list"]},
    ]
    index = {"apiGroups": [""], "resources": ["pods", "services"], "verbs": ["list"]}

    def same(rules: list[Obj], want: list[Obj]) -> bool:
        return sorted(json.dumps(r, sort_keys=True) for r in rules) == sorted(json.dumps(r, sort_keys=True) for r in want)

    # Default: the reviews, and list on pods and services for the IP index and the name inventory.
    assert same(_rules(_bound_roles(rendered["defaults"])["sleuth-authz-cache"]), [*reviews, index])
    # ipIndex off: the reviews alone.
    off = render_chart({"authzCache": {"rbac": {"ipIndex": False}}})
    assert same(_rules(_bound_roles(off)["sleuth-authz-cache"]), reviews)


def _grants(rules: list[Obj], verb: str) -> set[str]:
    return {f"{g}/{r}" if g else r for rule in rules if verb in rule["verbs"]
            for g in rule["apiGroups"] for r in rule["resources"]}


def test_kube_mcp_reads_exactly_its_kinds_and_impersonates(rendered: dict[str, list[Obj]]) -> None:
    rules = _rules(_bound_roles(rendered["defaults"])["sleuth-kube-mcp"])
    reads = [r for r in rules if "impersonate" not in r["verbs"]]
    assert all(r["verbs"] == ["get", "list", "watch"] for r in reads)
    wanted = {f"{k.group}/{k.plural}" if k.group else k.plural for k in BUILTIN_KINDS if k.plural != "secrets"}
    assert _grants(reads, "get") == wanted | {"pods/log"}, "the tools' kinds (kube/_kinds.py), pod logs, no Secrets"
    # Impersonation (DESIGN §2): users, groups and service accounts, and nothing else.
    imp = [r for r in rules if "impersonate" in r["verbs"]]
    assert all(r["verbs"] == ["impersonate"] and r["apiGroups"] == [""] for r in imp)
    assert _grants(imp, "impersonate") == {"users", "groups", "serviceaccounts"}
    assert not any("resourceNames" in r for r in imp)
    # Narrowed: only the listed groups.
    imp = [r for r in _rules(_bound_roles(rendered["everything"])["sleuth-kube-mcp"]) if "impersonate" in r["verbs"]]
    (groups,) = [r for r in imp if r["resources"] == ["groups"]]
    assert groups["resourceNames"] == ["team-a", "team-b", "platform-admins"]


def test_caller_token_mode_drops_kube_mcps_own_reads(rendered: dict[str, list[Obj]]) -> None:
    rules = _rules(_bound_roles(rendered["caller-token"])["sleuth-kube-mcp"])
    assert {v for r in rules for v in r["verbs"]} == {"impersonate"}
    cfg = service_config(rendered["caller-token"])["kube_mcp"]
    assert (cfg["accept_caller_token"], cfg["require_identity"]) == (True, True)


# -- every container hardened, probed and sized ------------------------------------------------------


def test_every_pod_and_container_is_hardened(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    accounts = {o["metadata"]["name"]: o for o in find(objects, "ServiceAccount")}
    assert accounts and all(a["automountServiceAccountToken"] is False for a in accounts.values())
    for component, dep in _deployments(objects).items():
        where = f"{name}/{component}"
        pod = _pod(dep)
        assert pod["automountServiceAccountToken"] is False, where
        assert pod["serviceAccountName"] == f"sleuth-{component}" and pod["serviceAccountName"] in accounts
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert not any("hostPath" in v for v in volumes.values()), where
        for c in containers(dep):
            sc = c["securityContext"]
            assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 10001, where
            assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False, where
            assert sc["capabilities"] == {"drop": ["ALL"]} and "add" not in sc["capabilities"], where
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"} and not sc.get("privileged"), where
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c["resources"][kind]), f"{where}: {kind}"
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            assert "emptyDir" in volumes[mounts["/tmp"]["name"]], f"{where}: /tmp is an emptyDir"
            assert all(m.get("readOnly") for p, m in mounts.items() if p != "/tmp"), where


def test_probes_hit_healthz_and_readyz_on_the_service_port(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    for component, dep in _deployments(objects).items():
        (c,) = containers(dep)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert list(ports.values()) == [PORTS[component]], f"{name}/{component}"
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
            get = c[probe]["httpGet"]
            port = ports.get(get["port"], get["port"])
            assert (get["path"], port) == (path, PORTS[component]), f"{name}/{component} {probe}"


def test_every_container_runs_its_service_with_the_config_file(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    for component, dep in _deployments(objects).items():
        (c,) = containers(dep)
        assert "command" not in c, f"{name}/{component}: the image's entrypoint runs the service named in args"
        assert c["args"] == [f"sleuth-{component}", "--config", "/etc/sleuth/sleuth.yaml"], f"{name}/{component}"
        (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/sleuth/sleuth.yaml"]
        assert mount["subPath"] == "sleuth.yaml" and mount["readOnly"] is True
        volume = next(v for v in _pod(dep)["volumes"] if v["name"] == mount["name"])
        assert volume["configMap"]["name"] == "sleuth-config"
        annotations = dep["spec"]["template"]["metadata"]["annotations"]
        assert len(annotations["checksum/config"]) == 64, "pods roll when the config changes"


# -- identity keys: the public keys everywhere, each private key in one pod -------------------------------


def test_each_pod_gets_only_its_own_private_key(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    secret = SECRET_NAMES["identity"] if name == "everything" else "sleuth-identity"
    for component, dep in _deployments(objects).items():
        (c,) = containers(dep)
        (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/sleuth/identity"]
        volume = next(v for v in _pod(dep)["volumes"] if v["name"] == mount["name"])["secret"]
        assert volume["secretName"] == secret
        files = {i["key"] for i in volume["items"]}
        assert all(i["key"] == i["path"] for i in volume["items"])
        signer = SIGNER[component]
        trusted = {TRUSTED[s] for s in TRUSTED if s in components(PROFILES[name])} if component == "agent" else set()
        assert files == PUBLIC_KEYS | trusted | ({f"{signer}.key"} if signer else set()), f"{name}/{component}"
        env = _env(c)
        if signer:
            assert env["SLEUTH_IDENTITY__SIGNING_KEY_FILE"]["value"] == f"/etc/sleuth/identity/{signer}.key"
        else:
            assert "SLEUTH_IDENTITY__SIGNING_KEY_FILE" not in env
        has_cache_key = "SLEUTH_AUTHZ_CACHE_KEY" in env
        assert has_cache_key == (component == "authz-cache"), f"{name}/{component}"
        if has_cache_key:
            assert env["SLEUTH_AUTHZ_CACHE_KEY"]["valueFrom"]["secretKeyRef"] == {"name": secret, "key": "authz-cache-key"}


def _secret_keys_seen(dep: Obj, secret: str) -> set[str]:
    """The keys of ``secret`` a pod can read, by any route: secret volumes (all keys without
    ``items``: ``*``), projected secret sources, env ``secretKeyRef`` and ``envFrom``."""
    pod = _pod(dep)
    seen: set[str] = set()
    sources = [v["secret"] | {"name": v["secret"]["secretName"]} for v in pod["volumes"] if "secret" in v]
    sources += [src["secret"] for v in pod["volumes"] for src in v.get("projected", {}).get("sources", [])
                if "secret" in src]
    for src in sources:
        if src["name"] == secret:
            seen |= {i["key"] for i in src["items"]} if src.get("items") else {"*"}
    for c in containers(dep):
        seen |= {e["valueFrom"]["secretKeyRef"]["key"] for e in c.get("env", [])
                 if e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == secret}
        seen |= {"*" for e in c.get("envFrom", []) if e.get("secretRef", {}).get("name") == secret}
    return seen


@pytest.mark.parametrize("signer", sorted(JOB_ISSUERS))
def test_only_each_job_signer_reads_its_key_and_the_agent_trusts_it(signer: str, profile: tuple[str, list[Obj]]) -> None:
    """The gateway (chat users it maps, ``sleuth-chat``), the scheduler (a schedule's owner,
    ``sleuth-scheduler``), the reporter (a report's asker, ``sleuth-reporter``), alerts and
    authz-cache sign job identities for the agent: each private key is readable by its own pod
    only, by any route (no pod reads the whole Secret), and the agent verifies with the public
    half, bound to that one issuer. A signer that does not run has no key anywhere and no trust."""
    name, objects = profile
    secret = SECRET_NAMES["identity"] if name == "everything" else "sleuth-identity"
    seen = {component: _secret_keys_seen(dep, secret) for component, dep in _deployments(objects).items()}
    assert not any("*" in keys for keys in seen.values()), f"{name}: {seen}"
    key, pub, issuer = f"{SIGNER[signer]}.key", f"/etc/sleuth/identity/{SIGNER[signer]}.pub", JOB_ISSUERS[signer]
    issuers = service_config(objects)["identity"]["job_issuers"]
    if signer not in components(PROFILES[name]):
        assert not any(key in keys for keys in seen.values()) and issuer not in issuers, name
        return
    assert {c for c, keys in seen.items() if key in keys} == {signer}, f"{name}: {seen}"
    assert pub.rsplit("/", 1)[1] in seen["agent"]
    assert issuers[issuer] == [pub]
    assert [i for i, paths in issuers.items() if pub in paths] == [issuer], "one issuer per key"


def _smtp_secret(name: str) -> tuple[str, str]:
    """(smtp.existingSecret, smtp.passwordKey) of a profile."""
    smtp = PROFILES[name].get("smtp", {})
    return smtp.get("existingSecret", ""), smtp.get("passwordKey", "password")


def test_only_the_reporter_reads_the_smtp_password(profile: tuple[str, list[Obj]]) -> None:
    """The SMTP password reaches the reporter only, by its one key, as the file the config names,
    and only when the reporter logs in to a server; no other pod can read the Secret by any route."""
    name, objects = profile
    secret, key = _smtp_secret(name)
    deployments = _deployments(objects)
    smtp = service_config(objects).get("reporter", {}).get("smtp", {})
    if not smtp.get("user"):
        assert not secret or all(_secret_keys_seen(d, secret) == set() for d in deployments.values()), name
        for component, dep in deployments.items():
            assert "smtp" not in {v["name"] for v in _pod(dep)["volumes"]}, f"{name}/{component}"
        return
    seen = {component: _secret_keys_seen(dep, secret) for component, dep in deployments.items()}
    assert seen == {c: ({key} if c == "reporter" else set()) for c in deployments}, f"{name}: {seen}"
    reporter = deployments["reporter"]
    (c,) = containers(reporter)
    password_file = smtp["password_file"]
    (mount,) = [m for m in c["volumeMounts"] if password_file.startswith(m["mountPath"].rstrip("/") + "/")]
    assert mount["readOnly"] is True
    volume = next(v for v in _pod(reporter)["volumes"] if v["name"] == mount["name"])["secret"]
    assert volume["secretName"] == secret and volume["defaultMode"] == 0o440
    assert volume["items"] == [{"key": key, "path": password_file[len(mount["mountPath"].rstrip("/")) + 1:]}]
    # Nothing in the pod's environment overrides the file (password_env wins over password_file).
    assert smtp.get("password_env", "SLEUTH_SMTP_PASSWORD") not in _env(c)


def _chat_secret(name: str) -> tuple[str, str, str]:
    """(chat.existingSecret, chat.mattermostTokenKey, chat.peopleTokenKey) of a profile."""
    chat = PROFILES[name].get("chat", {})
    return chat.get("existingSecret", ""), chat.get("mattermostTokenKey", "mattermost-token"), chat.get("peopleTokenKey", "")


def test_only_the_gateway_reads_the_chat_secret(profile: tuple[str, list[Obj]]) -> None:
    """The Mattermost bot's token (and the people backend's) reach the gateway only, each by its
    own key, and only when the bot is on; no other pod can read the chat Secret by any route."""
    name, objects = profile
    secret, token_key, people_key = _chat_secret(name)
    mattermost = service_config(objects)["gateway"].get("mattermost")
    deployments = _deployments(objects)
    if not mattermost:
        assert not secret or all(_secret_keys_seen(d, secret) == set() for d in deployments.values()), name
        for component, dep in deployments.items():
            assert "chat" not in {v["name"] for v in _pod(dep)["volumes"]}, f"{name}/{component}"
            assert not any(n.startswith("SLEUTH_MATTERMOST") for n in _env(containers(dep)[0])), f"{name}/{component}"
        return
    seen = {component: _secret_keys_seen(dep, secret) for component, dep in deployments.items()}
    want = {token_key} | ({people_key} if people_key and mattermost.get("people_url") else set())
    assert seen == {c: (want if c == "gateway" else set()) for c in deployments}, f"{name}: {seen}"
    # The token is the file the config names: that one key, read-only, owner and fsGroup only.
    gateway = deployments["gateway"]
    (c,) = containers(gateway)
    token_file = mattermost["token_file"]
    (mount,) = [m for m in c["volumeMounts"] if token_file.startswith(m["mountPath"].rstrip("/") + "/")]
    assert mount["readOnly"] is True
    volume = next(v for v in _pod(gateway)["volumes"] if v["name"] == mount["name"])["secret"]
    assert volume["secretName"] == secret and volume["defaultMode"] == 0o440
    assert volume["items"] == [{"key": token_key, "path": token_file[len(mount["mountPath"].rstrip("/")) + 1:]}]
    # Nothing in the pod's environment overrides the file (token_env wins over token_file).
    assert mattermost.get("token_env", "SLEUTH_MATTERMOST_TOKEN") not in _env(c)
    if people_key:
        ref = _env(c)[mattermost["people_token_env"]]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": secret, "key": people_key}


def test_the_chat_secret_is_not_mounted_without_the_bot() -> None:
    objects = render_chart({"chat": {"existingSecret": "sleuth-chat", "peopleTokenKey": "people"}})
    assert all(_secret_keys_seen(d, "sleuth-chat") == set() for d in find(objects, "Deployment"))
    # Without peopleUrl the people token is not handed out either.
    objects = render_chart({**PROFILES["mattermost"], "chat": {"existingSecret": "sleuth-chat", "peopleTokenKey": "people"}})
    seen = {_component(d): _secret_keys_seen(d, "sleuth-chat") for d in find(objects, "Deployment")}
    assert seen == {s: ({"mattermost-token"} if s == "gateway" else set()) for s in SERVICES}


def test_the_smtp_secret_is_not_mounted_without_a_login() -> None:
    """A relay without a login gets no password; the Secret alone mounts nothing."""
    relay = {"reporter": {"smtp": {"host": "relay.mail.svc", "port": 25, "starttls": False, "from": "sleuth@example.com"}},
             "smtp": {"existingSecret": "sleuth-smtp"}}
    for values in ({"smtp": {"existingSecret": "sleuth-smtp"}}, relay):
        objects = render_chart(values)
        assert all(_secret_keys_seen(d, "sleuth-smtp") == set() for d in find(objects, "Deployment"))


def test_the_mattermost_bot_can_connect_out(rendered: dict[str, list[Obj]]) -> None:
    """The bot connects to Mattermost (HTTPS and its WebSocket) and Mattermost never calls in:
    the release's policies restrict ingress only, and open nothing new for it."""
    policies = {p["metadata"]["name"]: p["spec"] for p in find(rendered["mattermost"], "NetworkPolicy")}
    assert all(spec["policyTypes"] == ["Ingress"] for spec in policies.values())
    assert policies == {p["metadata"]["name"]: p["spec"] for p in find(rendered["defaults"], "NetworkPolicy")}


def test_only_authz_cache_and_kube_mcp_get_a_kubernetes_token(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    for component, dep in _deployments(objects).items():
        (c,) = containers(dep)
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in _pod(dep)["volumes"]}
        tokens = [v for v in volumes.values() if any("serviceAccountToken" in s for s in v.get("projected", {}).get("sources", []))]
        if component in ("authz-cache", "kube-mcp"):
            (vol,) = tokens
            assert mounts[KUBE_API_DIR] == vol["name"]
            sources = vol["projected"]["sources"]
            assert sources[0]["serviceAccountToken"]["path"] == "token"
            assert sources[1]["configMap"] == {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
        else:
            assert tokens == [] and KUBE_API_DIR not in mounts, f"{name}/{component}"


# -- secrets only by reference ----------------------------------------------------------------------------


def _strings(data: Any) -> list[str]:
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return [data] if isinstance(data, str) else []


def test_secrets_appear_only_as_references(rendered: dict[str, list[Obj]]) -> None:
    """Render with secret-looking names and keys: they may appear only in secretKeyRef and secret
    volumes of the pods that use them, never in a ConfigMap or a literal env value."""
    objects = rendered["everything"]
    sentinels = [*SECRET_NAMES.values(), "sk-live-key", "route-team-a-token", "route-platform-token",
                 "mm-bot-token-prod", "people-api-token-prod", "smtp-pass-prod"]
    for cm in find(objects, "ConfigMap"):
        for text in _strings(cm["data"]):
            assert not any(s in text for s in sentinels), f"{cm['metadata']['name']} names a secret"
    refs: dict[str, set[tuple[str, str]]] = {}
    for component, dep in _deployments(objects).items():
        (c,) = containers(dep)
        for e in c.get("env", []):
            if "value" in e:
                assert not any(s in e["value"] for s in sentinels), f"{component}: {e['name']} is a literal secret"
            else:
                ref = e["valueFrom"]["secretKeyRef"]
                refs.setdefault(component, set()).add((e["name"], f"{ref['name']}/{ref['key']}"))
    auth = SECRET_NAMES["auth"]
    for component in BUS:
        assert {("SLEUTH_NATS_PASSWORD", f"{auth}/nats-{component}"),
                ("SLEUTH_REDIS_PASSWORD", f"{auth}/redis-{component}")} <= refs[component]
        env = _env(containers(_deployments(objects)[component])[0])
        assert env["SLEUTH_NATS__USER"]["value"] == env["SLEUTH_REDIS__USERNAME"]["value"] == component
    assert not any(n.startswith("SLEUTH_NATS") or n.startswith("SLEUTH_REDIS") for n, _ in refs.get("kube-mcp", set()))
    assert ("SLEUTH_LLM_API_KEY", f"{SECRET_NAMES['llm']}/sk-live-key") in refs["agent"]
    assert {("SLEUTH_ALERTS_TOKEN_TEAM_A", f"{SECRET_NAMES['alerts']}/route-team-a-token"),
            ("PLATFORM_ALERTS_TOKEN", f"{SECRET_NAMES['alerts']}/route-platform-token")} <= refs["alerts"]
    assert ("SLEUTH_AUTHZ_TOKEN_PROD_2", f"{SECRET_NAMES['cluster']}/token") in refs["authz-cache"]
    assert ("SLEUTH_MATTERMOST_PEOPLE_TOKEN", f"{SECRET_NAMES['chat']}/people-api-token-prod") in refs["gateway"]
    # Each secret only where it is used.
    for component, pairs in refs.items():
        names = {n for n, _ in pairs}
        assert ("SLEUTH_LLM_API_KEY" in names) == (component == "agent")
        assert bool(names & {"SLEUTH_ALERTS_TOKEN_TEAM_A", "PLATFORM_ALERTS_TOKEN"}) == (component == "alerts")
        assert ("SLEUTH_AUTHZ_TOKEN_PROD_2" in names) == (component == "authz-cache")
        assert ("SLEUTH_MATTERMOST_PEOPLE_TOKEN" in names) == (component == "gateway")


def test_without_auth_secret_services_log_in_as_nobody(rendered: dict[str, list[Obj]]) -> None:
    for dep in find(rendered["defaults"], "Deployment"):
        env = _env(containers(dep)[0])
        assert not {"SLEUTH_NATS__USER", "SLEUTH_NATS_PASSWORD", "SLEUTH_REDIS__USERNAME", "SLEUTH_REDIS_PASSWORD"} & set(env)


def test_alert_routes_need_their_token_secret() -> None:
    import helm_python

    with pytest.raises(helm_python.HelmValuesError, match="existingSecret"):
        render_chart({"alerts": {"routes": [{"name": "a", "channel": "c", "tokenSecretKey": "k"}]}})


# -- network ------------------------------------------------------------------------------------------


def _policy(objects: list[Obj], name: str) -> Obj:
    (p,) = find(objects, "NetworkPolicy", name)
    spec: Obj = p["spec"]
    return spec


def test_network_policies(rendered: dict[str, list[Obj]]) -> None:
    objects = rendered["defaults"]
    deny = _policy(objects, "sleuth-default-deny")
    assert deny["podSelector"] == {"matchLabels": {"app.kubernetes.io/instance": "sleuth"}}
    assert deny["policyTypes"] == ["Ingress"] and "ingress" not in deny
    # Only the gateway and alerts take traffic from outside the release (anyone, by default).
    for name, port in (("sleuth-gateway", 8080), ("sleuth-alerts", 8090)):
        (rule,) = _policy(objects, name)["ingress"]
        assert "from" not in rule and rule["ports"] == [{"port": port, "protocol": "TCP"}]
    # kube-mcp only from the agent.
    (rule,) = _policy(objects, "sleuth-kube-mcp")["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": "sleuth", "app.kubernetes.io/instance": "sleuth", "app.kubernetes.io/component": "agent"}}}]
    # NATS and Valkey only from the release's services that use them (those that run).
    for profile, bus in (("defaults", BUS), ("no-schedules-reports", BUS - {"scheduler", "reporter"})):
        for name, port in (("sleuth-allow-nats", 4222), ("sleuth-allow-redis", 6379)):
            rules = _policy(rendered[profile], name)["ingress"]
            clients = next(r for r in rules if {"port": port, "protocol": "TCP"} in r["ports"])
            selector = clients["from"][0]["podSelector"]
            assert selector["matchLabels"] == {"app.kubernetes.io/name": "sleuth", "app.kubernetes.io/instance": "sleuth"}
            (expr,) = selector["matchExpressions"]
            assert (expr["key"], expr["operator"]) == ("app.kubernetes.io/component", "In")
            assert set(expr["values"]) == bus, profile
            assert all("namespaceSelector" not in peer for r in rules for peer in r.get("from", []))
    # Nothing calls the scheduler or the reporter: no policy opens a port of theirs (probes are
    # the kubelet's, which policies do not stop).
    for spec in (p["spec"] for p in find(objects, "NetworkPolicy") if p["metadata"]["name"] != "sleuth-metrics"):
        assert not {PORTS["scheduler"], PORTS["reporter"]} & {
            port["port"] for rule in spec.get("ingress", []) for port in rule.get("ports", [])}
    # Metrics only from the configured namespaces.
    assert not find(objects, "NetworkPolicy", "sleuth-metrics")
    everything = rendered["everything"]
    (rule,) = _policy(everything, "sleuth-metrics")["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    assert {p["port"] for p in rule["ports"]} == {8080, 8090, 9101, 9102, 8091, 9104}
    metrics = {**PROFILES["no-schedules-reports"], "networkPolicy": PROFILES["everything"]["networkPolicy"]}
    (rule,) = _policy(render_chart(metrics), "sleuth-metrics")["ingress"]
    assert {p["port"] for p in rule["ports"]} == {8080, 8090, 9101, 9102}
    (gw,) = _policy(everything, "sleuth-gateway")["ingress"]
    assert gw["from"] == PROFILES["everything"]["networkPolicy"]["gatewayFrom"]


def test_keda_reaches_nats_monitoring(rendered: dict[str, list[Obj]]) -> None:
    rules = _policy(rendered["keda"], "sleuth-allow-nats")["ingress"]
    (monitor,) = [r for r in rules if {"port": 8222, "protocol": "TCP"} in r["ports"]]
    assert monitor["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}}}]
    assert not [r for r in _policy(rendered["defaults"], "sleuth-allow-nats")["ingress"]
                if {"port": 8222, "protocol": "TCP"} in r["ports"]]


# -- availability -------------------------------------------------------------------------------------


def test_disruption_budgets_for_multi_replica_services(profile: tuple[str, list[Obj]]) -> None:
    name, objects = profile
    pdbs = {o["metadata"]["name"]: o for o in find(objects, "PodDisruptionBudget")}
    for component, dep in _deployments(objects).items():
        replicas = dep["spec"].get("replicas")
        if replicas is None:  # the agent under an autoscaler
            scaler = (find(objects, "ScaledObject") or find(objects, "HorizontalPodAutoscaler"))[0]["spec"]
            replicas = scaler.get("minReplicaCount", scaler.get("minReplicas"))
        assert (f"sleuth-{component}" in pdbs) == (replicas > 1), f"{name}/{component}: {replicas} replicas"
        if replicas > 1:
            pdb = pdbs[f"sleuth-{component}"]["spec"]
            assert pdb["selector"] == dep["spec"]["selector"] and pdb["maxUnavailable"] == 1


def test_hpa_on_cpu_when_keda_is_off(rendered: dict[str, list[Obj]]) -> None:
    (hpa,) = find(rendered["defaults"], "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "sleuth-agent"
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu" and metric["resource"]["target"]["averageUtilization"] == 70
    (agent,) = find(rendered["fixed"], "Deployment", "sleuth-agent")
    assert agent["spec"]["replicas"] == 1


def test_gateway_answers_to_its_service_and_public_names(rendered: dict[str, list[Obj]]) -> None:
    gw = service_config(rendered["everything"])["gateway"]
    assert {"sleuth-gateway", "sleuth-gateway.sleuth.svc", "sleuth-gateway.sleuth.svc.cluster.local"} <= set(gw["allowed_hosts"])
    assert gw["refused_identities"] == [f"system:serviceaccount:sleuth:sleuth-{s}" for s in SERVICES]
    gw = service_config(rendered["no-schedules-reports"])["gateway"]
    assert gw["refused_identities"] == [f"system:serviceaccount:sleuth:sleuth-{s}" for s in SERVICES[:5]]
    (ing,) = find(rendered["everything"], "Ingress", "sleuth-gateway")
    assert ing["spec"]["tls"] == [{"hosts": ["sleuth.example.com"], "secretName": "sleuth-tls"}]
    (ing,) = find(rendered["everything"], "Ingress", "sleuth-alerts")
    (path,) = ing["spec"]["rules"][0]["http"]["paths"]
    assert path["path"] == "/v1/alertmanager", "only the webhook is published"
