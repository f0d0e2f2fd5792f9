"""PromQL pinning with the real parser: every selector, wherever it sits, gets the caller's
namespaces; a foreign namespace refuses the query; nothing can be smuggled past the pin."""

from __future__ import annotations

import os

import promql_parser as pp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth_common.scope import Scope, pin_promql
from sleuth_common.scope._promql import (
    MAX_DEPTH,
    MAX_NESTING,
    MAX_OPERATORS,
    MAX_QUERY_CHARS,
    MAX_SELECTORS,
    promql_complexity,
)

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


def test_aggregation_parameters_are_pinned_too() -> None:
    out = pin_promql("quantile(scalar(min(threshold)), latency) > topk(3, up)", SCOPE)
    assert out.outcome == "rewritten"
    assert len(_selectors(out.query)) == 3 and all(PIN in s for s in _selectors(out.query))


# -- complexity limits: refused early, with a reason, never a crash or a stall ------------------
def _chain(n: int) -> str:
    return " + ".join(f"m{i}" for i in range(n))


def _balanced(lo: int, hi: int) -> str:
    if hi - lo == 1:
        return f"m{lo}"
    mid = (lo + hi) // 2
    return f"({_balanced(lo, mid)} / {_balanced(mid, hi)})"


@pytest.mark.parametrize(("query", "says"), [
    ("up{a=\"" + "x" * MAX_QUERY_CHARS + "\"}", "characters"),
    ("(" * (MAX_NESTING + 1) + "up" + ")" * (MAX_NESTING + 1), "brackets nested"),
    ("sum(" * 1000 + "up" + ")" * 1000, "brackets nested"),
    ("-" * 9000 + "up", "operators"),  # one run of signs, 9000 levels deep
    (_chain(MAX_OPERATORS + 2), "operators"),
    ("up" + "[5m:]" * 600, "operators"),
    (_chain(MAX_DEPTH + 5), "nested more than"),  # few enough operators, too deep a tree
    (_balanced(0, MAX_SELECTORS + 1), "selectors"),
])
def test_complex_queries_are_refused_with_a_reason(query: str, says: str) -> None:
    out = pin_promql(query, SCOPE)
    assert out.outcome == "refused" and says in out.reason and "too complex" in out.reason
    assert out.query == query


@pytest.mark.parametrize("query", [
    "(" * (MAX_NESTING - 2) + "rate(up[5m])" + ")" * (MAX_NESTING - 2),
    _chain(MAX_DEPTH - 10),
    _balanced(0, MAX_SELECTORS),
    'sum by (pod) (rate(x{job="' + "j" * 5000 + '"}[5m]))',
])
def test_queries_within_the_limits_are_pinned(query: str) -> None:
    assert promql_complexity(query) == ""
    out = pin_promql(query, SCOPE)
    assert out.outcome == "rewritten"
    selectors = _selectors(out.query)
    assert selectors and all(PIN in s for s in selectors)


def test_brackets_in_strings_and_comments_do_not_count() -> None:
    query = 'up{path=~"' + "(" * 100 + '"} # ' + "(" * 100 + "\n"
    assert promql_complexity(query) == ""
    assert pin_promql(query, SCOPE).outcome in ("rewritten", "refused")


PROMQL_ATOMS = ["up", "x", "rate(", "sum(", " by (a)", ")", "(", "[5m]", "[5m:1m]", "{", "}", "namespace",
                "=", "=~", "!=", '"team-b"', '"shop"', "'a'", "+", "-", "*", "/", "^", " and ", " or ",
                " unless ", " offset 5m", " @ start()", "1", "NaN", ",", "#c\n", "\\", '"', "topk(", "quantile(",
                "scalar(", " bool ", " on(a) ", " group_left ", "__name__", "absent(", "vector(1)", ":", "\n"]


@settings(max_examples=int(os.environ.get("SLEUTH_HYPOTHESIS_EXAMPLES", "1500")), deadline=None)
@given(st.lists(st.sampled_from(PROMQL_ATOMS), max_size=60).map("".join) | st.text(max_size=200))
def test_pinning_never_raises_and_never_lets_an_unpinned_selector_through(query: str) -> None:
    out = pin_promql(query, SCOPE)
    assert out.outcome in ("kept", "rewritten", "refused")
    if out.outcome == "refused":
        assert out.reason and out.query == query
    else:
        for selector in _selectors(out.query):
            assert PIN in selector or 'namespace="shop"' in selector or 'namespace="team-a"' in selector
