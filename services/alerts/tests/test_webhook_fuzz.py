"""The Alertmanager webhook of a real alerts service (on real NATS and Valkey) fed
Hypothesis-generated requests: random JSON, near-valid payloads with wrong types, huge strings,
invalid UTF-8, deep nesting, bad tokens, content types, origins and request ids. Every answer is a
2xx or a 4xx with a request id, never a 5xx or a hang, and only an accepted payload is stored.

``-s`` prints the inputs tried and 5xx seen."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.subjects import Subjects

from .conftest import alert, payload

pytestmark = pytest.mark.connected

FUZZ = settings(max_examples=200, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
json_values = st.recursive(
    _leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_text = st.text(max_size=60)
labels = st.one_of(
    st.dictionaries(st.sampled_from(["alertname", "namespace", "pod", "cluster", "severity", "x"]),
                    st.one_of(_text, st.integers(), st.none()), max_size=6),
    json_values,
)
alerts = st.one_of(
    st.builds(lambda pod, ns, fp: alert(pod=pod, namespace=ns, fp=fp), _text, _text, _text),
    st.fixed_dictionaries({}, optional={"status": st.one_of(_text, st.integers()), "labels": labels,
                                        "annotations": labels, "startsAt": st.one_of(_text, st.integers()),
                                        "fingerprint": st.one_of(_text, st.integers())}),
    json_values,
)
_valid = st.builds(lambda pod, ns, fp: alert(pod=pod, namespace=ns, fp=fp), _text, _text, _text)
payloads = st.one_of(
    st.lists(_valid, min_size=1, max_size=3).map(lambda xs: payload(*xs)),
    st.lists(alerts, max_size=5).map(lambda xs: payload(*xs)),
    st.fixed_dictionaries({}, optional={"version": st.one_of(_text, st.integers()), "status": _text,
                                        "alerts": st.one_of(st.lists(alerts, max_size=3), json_values),
                                        "groupKey": _text, "receiver": st.one_of(_text, st.none())}),
    json_values,
).map(lambda d: json.dumps(d).encode())
raw_bodies = st.one_of(
    st.binary(max_size=200),
    st.integers(1, 50_000).map(lambda n: b'{"alerts": ' + b"[" * n + b"]" * n + b"}"),
    st.integers(1, 2_000_000).map(lambda n: json.dumps(payload(alert(pod="p" * n))).encode()),
    st.sampled_from([b"", b"null", b"[]", b"{}", b"\xff\xfe{}", b'{"alerts": [{"labels": {"a": "\\ud800"}}]}',
                     b'{"alerts": [], "version": 1e999}', b'{"alerts": NaN}']),
)
_header = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=60)
tokens = st.one_of(st.just("Bearer tok-team-a"), st.just("Bearer tok-team-a"),
                   st.sampled_from([None, "Bearer", "Bearer s3cret", "Basic dG9rLXRlYW0tYQ==", "bearer tok-team-a",
                                    "Bearer tok-team-a ", "Bearer " + "x" * 5000]),
                   _header.map(lambda t: "Bearer " + t))
content_types = st.one_of(st.just("application/json"), st.just("application/json"),
                          st.sampled_from([None, "text/plain", "application/x-www-form-urlencoded",
                                           "application/json; charset=utf-8"]), _header)
origins = st.one_of(st.none(), st.none(), st.sampled_from(["https://evil.example", "null", ""]), _header)
request_ids = st.one_of(st.none(), _header, st.sampled_from(["ok-1", "a" * 65, "../x"]))
routes = st.one_of(st.just("team-a"), st.just("team-a"), st.sampled_from(["ops", "nope", "team-a.", "..", "%2e%2e", "a" * 300]))


def _fuzz(url: str, counts: Counter[str], errors: Counter[str], stored: Counter[str]) -> None:
    """Runs in a thread: the alerts service serves on the test's event loop meanwhile."""
    with httpx.Client(base_url=url, timeout=10.0) as client:

        @FUZZ
        @given(body=st.one_of(payloads, payloads, raw_bodies), token=tokens, ctype=content_types, origin=origins,
               rid=request_ids, route=routes)
        def post(body: bytes, token: str | None, ctype: str | None, origin: str | None, rid: str | None,
                 route: str) -> None:
            headers = {name.encode(): value.strip().encode("latin-1") for name, value in (
                ("authorization", token), ("content-type", ctype), ("origin", origin), ("x-request-id", rid))
                if value is not None}
            counts["POST /v1/alertmanager/{route}"] += 1
            resp = client.post(f"/v1/alertmanager/{route}", content=body, headers=headers)
            if resp.status_code >= 500:
                errors["POST /v1/alertmanager/{route}"] += 1
            assert resp.status_code < 500, (resp.status_code, resp.text[:300])
            rid_out = resp.headers.get("x-request-id", "")
            assert _ID.match(rid_out), dict(resp.headers)
            assert resp.headers.get("x-content-type-options") == "nosniff"
            answer = resp.json()
            assert answer["request_id"] == rid_out, answer
            if resp.status_code >= 400:
                assert isinstance(answer["error"], str) and "\n" not in answer["error"], answer
            else:
                stored["accepted"] += 1
                stored["new"] += not answer["duplicate"]

        post()


async def test_the_webhook_answers_fuzzed_requests_with_a_4xx_or_2xx(start_alerts):
    async with start_alerts(window=60.0, max_body_bytes=256 * 1024) as s:
        js = s.bus.nc.jetstream()
        stream = Subjects("sleuth").stream_alerts
        first = (await js.stream_info(stream)).state.last_seq
        counts: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        stored: Counter[str] = Counter()
        url = f"http://127.0.0.1:{s.settings.alerts.port}"
        await asyncio.to_thread(_fuzz, url, counts, errors, stored)
        for endpoint, n in counts.items():
            print(f"fuzz alerts {endpoint}: {n} inputs tried, {errors[endpoint]} 5xx; accepted {dict(stored)}")
        assert sum(errors.values()) == 0 and sum(counts.values()) >= 200
        # Some got through, and exactly those were stored (a duplicate once): nothing half-stored.
        assert stored["new"] > 0, stored
        last = (await js.stream_info(stream)).state.last_seq
        assert last - first == stored["new"], (first, last, stored)
        # Unknown paths and methods answer in the same shape.
        for method, path in (("GET", "/v1/alertmanager/team-a"), ("GET", "/nope")):
            resp = await s.client.request(method, path)
            assert resp.status_code in (404, 405) and resp.json()["request_id"] == resp.headers["x-request-id"]
