"""PromQL pinning with the real parser: every selector, wherever it sits, gets the caller's
namespaces; a foreign namespace refuses the query; nothing can be smuggled past the pin."""

from __future__ import annotations

import promql_parser as pp
import pytest

from sleuth_common.scope import Scope, pin_promql

SCOPE = Scope.of(["team-a", "shop"])
PIN = 'namespace=~"shop|team-a"'


def _selectors(query: str) -> list[str]:
    found: list[str] = []

    def visit(node: object) -> bool:
        if isinstance(node, pp.VectorSelector):
            found.append(str(node))
        return True

    pp.walk(pp.parse(query), pre_visit=visit)
    return found


@pytest.mark.parametrize("query", [
    "up",
    "rate(http_requests_total{code=~\"5..\"}[5m])",
    "sum by (pod) (rate(container_cpu_usage_seconds_total[5m])) / on(pod) group_left kube_pod_info",
    "max_over_time(rate(x[1m])[30m:1m])",
    "histogram_quantile(0.9, sum by (le) (rate(h_bucket{namespace!=\"kube-system\"}[5m])))",
    "label_replace(up{namespace=~\".*\"}, \"a\", \"$1\", \"b\", \"(.*)\") or absent(up)",
    "-x + y offset 5m > bool 3",
])
def test_every_selector_is_pinned(query: str) -> None:
    out = pin_promql(query, SCOPE)
    assert out.outcome == "rewritten"
    selectors = _selectors(out.query)
    assert selectors and all(PIN in s for s in selectors)


def test_allowed_equality_is_kept_and_cluster_wide_untouched() -> None:
    assert pin_promql('up{namespace="shop"}', SCOPE).outcome == "kept"
    assert pin_promql("up", Scope.of([], cluster_wide=True)).query == "up"


@pytest.mark.parametrize("query", [
    'up{namespace="team-b"}',
    'sum(rate(x[5m])) + on() y{namespace="kube-system"}',
    'x{a="q\\",namespace=\\"team-b"}',
    'x{a="1" or namespace="team-b"}',
    "not promql (",
])
def test_refused(query: str) -> None:
    out = pin_promql(query, SCOPE)
    assert out.outcome == "refused" and out.reason
    assert "kube-system" not in out.reason or "kube-system" in query
