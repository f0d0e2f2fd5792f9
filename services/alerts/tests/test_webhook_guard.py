"""What the webhook refuses, through real HTTP: cross-site "simple requests" (content type, Origin,
Host), posts without the route's bearer token, and bodies it cannot parse safely. Every refusal
is a 4xx with a one-line error, counted by reason and logged at INFO without the payload."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from .conftest import TOKENS, alert, payload

pytestmark = pytest.mark.connected

MARKER = "PAYLOAD-MARKER-7f3a"  # in every body: must never reach a log line


def body(**extra: Any) -> bytes:
    a = alert()
    a["annotations"]["description"] = MARKER
    return json.dumps({**payload(a), **extra}).encode()


def nested(depth: int) -> bytes:
    """A valid payload whose ignored extra field makes the document ``depth`` levels deep
    (the payload object itself is level 1)."""
    return body()[:-1] + b', "x": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


JSON = {"Content-Type": "application/json"}
TOKEN = {"Authorization": f"Bearer {TOKENS['TEST_ALERTS_TOKEN_A']}"}


@dataclass(frozen=True)
class Case:
    id: str
    status: int
    reason: str = ""
    """Refusal reason counted in ``sleuth_alerts_webhook_refused_total`` ("" = accepted)."""
    route: str = "team-a"
    headers: dict[str, str] = field(default_factory=lambda: {**JSON, **TOKEN})
    content: bytes = field(default_factory=body)
    settings: dict[str, Any] = field(default_factory=dict)


CASES = [
    # 1. content type: only JSON (a web page can POST text/plain or a form without a preflight)
    Case("json", 200),
    Case("json-utf8", 200, headers={"Content-Type": "application/json; charset=utf-8", **TOKEN}),
    Case("json-utf8-caps", 200, headers={"Content-Type": "Application/JSON; Charset=\"UTF-8\"", **TOKEN}),
    Case("text-plain", 415, "content_type", headers={"Content-Type": "text/plain", **TOKEN}),
    Case("form", 415, "content_type", headers={"Content-Type": "application/x-www-form-urlencoded", **TOKEN}),
    Case("multipart", 415, "content_type", headers={"Content-Type": "multipart/form-data; boundary=x", **TOKEN}),
    Case("no-content-type", 415, "content_type", headers=dict(TOKEN)),
    Case("json-latin1", 415, "content_type", headers={"Content-Type": "application/json; charset=latin-1", **TOKEN}),
    Case("json-lookalike", 415, "content_type", headers={"Content-Type": "application/jsonx", **TOKEN}),
    # 1. Origin: Alertmanager sends none; a browser always does on a cross-site POST
    Case("origin-evil", 403, "origin", headers={**JSON, **TOKEN, "Origin": "https://evil.example"}),
    Case("origin-null", 403, "origin", headers={**JSON, **TOKEN, "Origin": "null"}),
    Case("origin-self", 403, "origin", headers={**JSON, **TOKEN, "Origin": "http://127.0.0.1"}),
    Case(
        "origin-allowed",
        200,
        headers={**JSON, **TOKEN, "Origin": "https://am.example"},
        settings={"allowed_origins": ["https://am.example"]},
    ),
    # 1. Host: DNS rebinding names the attacker's host
    Case("host-evil", 400, "host", headers={**JSON, **TOKEN, "Host": "evil.example"}),
    Case("host-evil-port", 400, "host", headers={**JSON, **TOKEN, "Host": "evil.example:8090"}),
    Case("host-localhost", 200, headers={**JSON, **TOKEN, "Host": "localhost:8090"}),
    Case("host-ipv6-loopback", 200, headers={**JSON, **TOKEN, "Host": "[::1]:8090"}),
    Case(
        "host-configured",
        200,
        headers={**JSON, **TOKEN, "Host": "sleuth-alerts.monitoring.svc:8090"},
        settings={"allowed_hosts": ["sleuth-alerts.monitoring.svc"]},
    ),
    Case(
        "host-not-in-list",
        400,
        "host",
        headers={**JSON, **TOKEN, "Host": "127.0.0.1"},
        settings={"allowed_hosts": ["sleuth-alerts.monitoring.svc"]},
    ),
    Case("host-any", 200, headers={**JSON, **TOKEN, "Host": "anything.example"}, settings={"allowed_hosts": ["*"]}),
    # 2. a bearer token on every route
    Case("unknown-route", 404, "unknown_route", route="nope"),
    Case("no-token", 401, "token", headers=dict(JSON)),
    Case("wrong-token", 401, "token", headers={**JSON, "Authorization": "Bearer tok-team-b"}),
    Case("token-prefix", 401, "token", headers={**JSON, "Authorization": "Bearer tok-team"}),
    Case("basic-scheme", 401, "token", headers={**JSON, "Authorization": "Basic dG9rLXRlYW0tYQ=="}),
    Case("other-routes-token", 401, "token", headers={**JSON, "Authorization": "Bearer s3cret"}),
    Case("closed-route", 401, "no_token_configured", route="open", headers=dict(JSON)),
    Case("closed-route-any-bearer", 401, "no_token_configured", route="open"),
    Case("open-for-demos", 200, route="open", headers=dict(JSON), settings={"require_token": False}),
    # 6. size, depth and parse errors: 413 or 400 with one line, never 500
    Case("too-large", 413, "too_large", content=body(pad="x" * 1_100_000)),
    Case("depth-32", 200, content=nested(32)),
    Case("depth-33", 400, "too_deep", content=nested(33)),
    Case("depth-100k", 400, "too_deep", content=nested(100_000)),
    Case("depth-in-labels", 400, "too_deep", content=b'{"alerts": [{"labels": ' + b'{"a": ' * 40 + b"1" + b"}" * 40 + b"}]}"),
    Case("brackets-in-strings", 200, content=body(note='\\"' + "[" * 1000 + "{" * 1000 + '"]}')),
    Case("malformed", 400, "malformed_json", content=b"{not json"),
    Case("empty", 400, "malformed_json", content=b""),
    Case("truncated", 400, "malformed_json", content=body()[:-10]),
    Case("not-utf8", 400, "malformed_json", content=b'{"version": "4", "x": "\xff\xfe"}'),
    Case("nan", 400, "malformed_json", content=body()[:-1] + b', "x": NaN}'),
    Case("array", 400, "invalid_payload", content=b"[1, 2]"),
    Case("version-3", 400, "invalid_payload", content=body(version="3")),
    Case("no-alertname", 400, "invalid_payload", content=json.dumps(payload({"status": "firing", "labels": {}})).encode()),
]


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of ``name`` with exactly these labels (0 when absent)."""
    for line in text.splitlines():
        m = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if m and dict(re.findall(r'(\w+)="([^"]*)"', m.group(1))) == labels:
            return float(m.group(2))
    return 0.0


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_webhook_refusals(start_alerts, caplog: pytest.LogCaptureFixture, case: Case) -> None:
    caplog.set_level(logging.INFO)
    async with start_alerts(**case.settings) as s:
        r = await s.client.post(f"/v1/alertmanager/{case.route}", content=case.content, headers=case.headers)
        assert r.status_code == case.status, r.text
        metrics = (await s.client.get("/metrics")).text
        route = case.route if s.settings.route(case.route) else "unknown"
        refused = sum(
            float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("sleuth_alerts_webhook_refused_total{")
        )
        if not case.reason:
            assert r.json()["status"] == "stored" and refused == 0
            return
        error = r.json()["error"]
        assert "\n" not in error and 0 < len(error) <= 300, error
        assert "Traceback" not in error and MARKER not in error
        assert metric(metrics, "sleuth_alerts_webhook_refused_total", route=route, reason=case.reason) == 1
        assert refused == 1
        logged = [
            rec
            for rec in caplog.records
            if rec.name.startswith("sleuth_alerts") and rec.getMessage().startswith("webhook refused")
        ]
        assert len(logged) == 1 and logged[0].levelno == logging.INFO, caplog.text
        assert f"({case.reason}," in logged[0].getMessage()
        assert MARKER not in caplog.text and "Traceback" not in caplog.text


async def test_closed_routes_are_named_at_start(start_alerts, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with start_alerts():
        pass
    closed = [r.getMessage() for r in caplog.records if "closed" in r.getMessage()]
    assert len(closed) == 1 and "'open'" in closed[0] and "token_env" in closed[0], closed
    # Routes with a token are not reported as closed or open.
    assert not any("'team-a'" in m and ("closed" in m or "unauthenticated" in m) for m in closed)


async def test_require_token_false_reopens_routes_without_token_and_says_so(
    start_alerts, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with start_alerts(require_token=False) as s:
        assert (await s.post("open", payload(alert()), token=None)).status_code == 200
        # A route with a token still needs it.
        assert (await s.post("team-a", payload(alert()), token=None)).status_code == 401
    warned = [r for r in caplog.records if "'open'" in r.getMessage() and "unauthenticated" in r.getMessage()]
    assert warned and warned[0].levelno == logging.WARNING
