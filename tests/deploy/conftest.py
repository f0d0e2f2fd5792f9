"""Chart fixtures: the value profiles every chart test renders, rendered once per session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.chart import render_chart

# Secret names and keys that look like the real thing: they must appear only as references.
SECRET_NAMES = {
    "identity": "prod-sleuth-identity-keys",
    "llm": "prod-llm-credentials",
    "alerts": "prod-alertmanager-route-tokens",
    "auth": "prod-bus-passwords",
    "cluster": "prod-2-authz-reviewer-token",
    "chat": "prod-chat-bot-tokens",
    "smtp": "prod-smtp-relay-password",
}

# A private CA for the Mattermost server (public, so it may be in a ConfigMap).
MATTERMOST_CA = "-----BEGIN CERTIFICATE-----\nMIIBmattermost\n-----END CERTIFICATE-----\n"

PROFILES: dict[str, dict[str, Any]] = {
    # What `helm install sleuth helm/sleuth` renders.
    "defaults": {},
    # NATS and Redis run elsewhere (no subcharts, no policies for them).
    "external": {
        "nats": {"enabled": False},
        "redis": {"enabled": False},
        "externalNats": {"url": "nats://nats.messaging.svc:4222"},
        "externalRedis": {"url": "rediss://valkey.cache.svc:6380/2"},
    },
    # Agents scale on the JOBS consumer's lag (KEDA installed).
    "keda": {"agent": {"autoscaling": {"keda": {"enabled": True}}}},
    # No autoscaler (KEDA off, HPA off) and single replicas: fixed counts, no PodDisruptionBudgets.
    "fixed": {
        "agent": {"replicas": 1, "autoscaling": {"hpa": {"enabled": False}}},
        "gateway": {"replicas": 1},
        "authzCache": {"replicas": 1},
        "alerts": {"replicas": 1},
        "kubeMcp": {"replicas": 1},
        "scheduler": {"replicas": 1},
        "reporter": {"replicas": 1},
        "networkPolicy": {"enabled": False},
    },
    # Everything a production install turns on.
    "everything": {
        "cluster": {"name": "prod-1", "aliases": ["eu-west-1"]},
        "identity": {"existingSecret": SECRET_NAMES["identity"]},
        "llm": {"provider": "openai", "baseUrl": "https://llm.internal/v1", "model": "qwen2.5:14b",
                "existingSecret": SECRET_NAMES["llm"], "existingSecretKey": "sk-live-key"},
        "auth": {"existingSecret": SECRET_NAMES["auth"]},
        "jetstream": {"replicas": 3},
        "nats": {"config": {"cluster": {"enabled": True, "replicas": 3}}},
        "gateway": {"ingress": {"enabled": True, "className": "nginx", "host": "sleuth.example.com",
                                "tls": {"secretName": "sleuth-tls"}},
                    "trustedProxies": ["10.0.0.0/8"],
                    "mattermost": {
                        "url": "https://chat.example.com",
                        "people": [{"email": "alice@example.com", "user": "alice", "groups": ["team-a"]},
                                   {"email": "Carol@Example.com", "user": "carol"}],
                        "peopleUrl": "https://people.example.internal/k8s-identity",
                        "caBundle": MATTERMOST_CA,
                        "ignoredMembers": ["jira-bot"],
                    }},
        "chat": {"existingSecret": SECRET_NAMES["chat"], "mattermostTokenKey": "mm-bot-token-prod",
                 "peopleTokenKey": "people-api-token-prod"},
        "alerts": {
            "existingSecret": SECRET_NAMES["alerts"],
            "routes": [
                {"name": "team-a", "channel": "team-a-alerts", "tokenSecretKey": "route-team-a-token",
                 "runAs": {"user": "alice", "groups": ["team-a"]}},
                {"name": "platform", "channel": "platform-alerts", "tokenSecretKey": "route-platform-token",
                 "tokenEnv": "PLATFORM_ALERTS_TOKEN"},
            ],
            "ingress": {"enabled": True, "host": "alerts.sleuth.example.com"},
        },
        "agent": {"autoscaling": {"keda": {"enabled": True, "minReplicas": 1, "maxReplicas": 20}}},
        "authzCache": {"rbac": {"ipIndex": True}},
        "scheduler": {"replicas": 3},
        # Reports emailed through a server with a login (implicit TLS on 465).
        "smtp": {"existingSecret": SECRET_NAMES["smtp"], "passwordKey": "smtp-pass-prod"},
        "reporter": {
            "smtp": {"host": "smtp.example.com", "port": 465, "tls": True, "from": "Sleuth <sleuth@example.com>",
                     "user": "sleuth-prod"},
            "emails": {"web:team-a-alerts": ["team-a@example.com"],
                       "mattermost:4xp9fdt7pbgium38k5k6w95oqr": ["platform@example.com", "sre@example.com"]},
        },
        "kubeMcp": {"impersonate": {"groups": ["team-a", "team-b", "platform-admins"]}},
        "extraClusters": [{
            "name": "prod-2",
            "aliases": ["us-east-1"],
            "apiServer": "https://prod-2.example.internal:6443",
            "caBundle": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            "authzTokenSecret": {"name": SECRET_NAMES["cluster"], "key": "token"},
            "mcpServers": [{"name": "kube", "url": "https://kube-mcp.prod-2.example.internal/mcp", "identity": True}],
        }],
        "networkPolicy": {
            "gatewayFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}],
            "alertsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "metricsNamespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        },
        "config": {
            "gateway": {"channels": [{"name": "team-a-alerts", "members": ["group:team-a"]}]},
            "limits": {"daily_llm_calls": 50},
            "logging": {"json_format": False},
        },
    },
    # The gateway's Mattermost bot, as the chart README sets it up: a server, the people, the Secret.
    "mattermost": {
        "chat": {"existingSecret": "sleuth-chat"},
        "gateway": {"mattermost": {
            "url": "https://chat.example.com",
            "people": [{"email": "alice@example.com", "user": "alice", "groups": ["team-a"]},
                       {"email": "bob@example.com", "user": "bob", "groups": ["team-b"]}],
        }},
    },
    # kube-mcp also reads with the caller's own token; no read-only ClusterRole of its own.
    "caller-token": {"kubeMcp": {"readWithCallerToken": True}},
    # Neither the scheduler nor the reporter (their commands off, their issuers not trusted); the
    # SMTP settings and Secret, left over, reach nobody.
    "no-schedules-reports": {
        "scheduler": {"enabled": False},
        "reporter": {"enabled": False, "smtp": {"host": "smtp.example.com", "from": "sleuth@example.com",
                                                "user": "sleuth"}},
        "smtp": {"existingSecret": "sleuth-smtp"},
    },
}


def runs(values: dict[str, Any], service: str) -> bool:
    """Whether a profile's values run the scheduler or the reporter (both on by default)."""
    return bool(values.get(service, {}).get("enabled", True))


def components(values: dict[str, Any]) -> set[str]:
    """The services (Deployments, by component label) a profile's values run."""
    return {"gateway", "authz-cache", "agent", "alerts", "kube-mcp"} | {
        s for s in ("scheduler", "reporter") if runs(values, s)}


@pytest.fixture(scope="session")
def rendered() -> dict[str, list[dict[str, Any]]]:
    """Every profile's objects, rendered once."""
    return {name: render_chart(values) for name, values in PROFILES.items()}


@pytest.fixture(params=sorted(PROFILES))
def profile(request: pytest.FixtureRequest, rendered: dict[str, list[dict[str, Any]]]) -> tuple[str, list[dict[str, Any]]]:
    """(name, objects) of each profile in turn."""
    return request.param, rendered[request.param]
