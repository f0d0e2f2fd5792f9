"""Sleuth's own dashboard and alerts (helm/sleuth/files, linked from deploy/grafana and
deploy/prometheus): checked with the real promtool, against the metrics the services really
expose (their registries, built in-process, rendered as /metrics renders them), and as the chart
ships them."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import promql_parser as pp
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.chart import CHART_DIR, find, render_chart

ROOT = CHART_DIR.parents[1]
RULES = CHART_DIR / "files" / "sleuth-rules.yaml"
DASHBOARD = CHART_DIR / "files" / "sleuth-dashboard.json"
RULE_TESTS = Path(__file__).with_name("sleuth-rules.test.yaml")
SCRAPE_LABELS = {"job", "instance"}
"""Labels Prometheus adds to every scraped series."""
GRAFANA_VARS = {"$__rate_interval": "5m", "$__range": "1h", "$__interval": "1m"}

promtool = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(promtool is None, reason="promtool (Debian package prometheus) is not installed")


def _registries() -> dict[str, CollectorRegistry]:
    from sleuth_agent.metrics import Metrics as Agent
    from sleuth_alerts.metrics import Metrics as Alerts
    from sleuth_authz_cache.metrics import Metrics as Authz
    from sleuth_gateway.metrics import Metrics as Gateway
    from sleuth_kube_mcp._metrics import Metrics as KubeMcp
    from sleuth_reporter.metrics import Metrics as Reporter
    from sleuth_scheduler.metrics import Metrics as Scheduler

    made = {"agent": Agent(), "alerts": Alerts(), "authz-cache": Authz(), "gateway": Gateway(),
            "kube-mcp": KubeMcp(), "reporter": Reporter(), "scheduler": Scheduler()}
    registries = {name: m.registry for name, m in made.items()}
    # Every service's audit publisher counts into its service's registry (sleuth_common.audit).
    from sleuth_common.audit import AuditLog
    from sleuth_common.subjects import Subjects

    AuditLog(Subjects("sleuth"), "agent", registry=registries["agent"])
    return registries


_SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum", "_created"),
             "summary": ("_count", "_sum", "_created"), "info": ("_info",)}


@pytest.fixture(scope="module")
def exposed() -> dict[str, frozenset[str]]:
    """Every series name the services' /metrics can show, with its label names. Families are read
    from each registry's exposition (what Prometheus scrapes); label names of families with no
    series yet (labelled metrics never used) from the metric objects themselves."""
    out: dict[str, frozenset[str]] = {}
    for registry in _registries().values():
        text = generate_latest(registry).decode()
        labels_of = {c._name: tuple(c._labelnames) for c in registry._collector_to_names}  # type: ignore[attr-defined]
        for family in text_string_to_metric_families(text):
            base = family.name
            names = set(labels_of.get(base, ()))
            for suffix in _SUFFIXES[family.type]:
                extra = {"le"} if suffix == "_bucket" else set()
                out[base + suffix] = frozenset(names | extra)
    return out


def _selectors(node: Any) -> Iterator[Any]:
    if isinstance(node, pp.VectorSelector):
        yield node
    elif isinstance(node, pp.BinaryExpr):
        yield from _selectors(node.lhs)
        yield from _selectors(node.rhs)
    elif isinstance(node, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr):
        yield from _selectors(node.expr)
    elif isinstance(node, pp.AggregateExpr):
        yield from _selectors(node.expr)
        if node.param is not None:
            yield from _selectors(node.param)
    elif isinstance(node, pp.Call):
        for arg in node.args:
            yield from _selectors(arg)
    elif isinstance(node, pp.MatrixSelector):
        yield node.vector_selector
    else:
        assert isinstance(node, pp.NumberLiteral | pp.StringLiteral), type(node)


def _grouping(node: Any) -> Iterator[str]:
    """Label names of ``by (...)`` clauses."""
    children: list[Any] = []
    if isinstance(node, pp.AggregateExpr):
        if node.modifier is not None and str(node.modifier.type).endswith("By"):
            yield from node.modifier.labels
        children = [node.expr] + ([node.param] if node.param is not None else [])
    elif isinstance(node, pp.BinaryExpr):
        children = [node.lhs, node.rhs]
    elif isinstance(node, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr):
        children = [node.expr]
    elif isinstance(node, pp.Call):
        children = list(node.args)
    for c in children:
        yield from _grouping(c)


def check_expr(expr: str, exposed: dict[str, frozenset[str]]) -> list[str]:
    """Problems of ``expr``: not valid PromQL, a metric no service exposes, a label it does not have."""
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    tree = pp.parse(expr)
    assert str(pp.parse(str(tree))) == str(tree), "the expression prints as it parses"
    problems = []
    names = set()
    for sel in _selectors(tree):
        names.add(sel.name)
        if sel.name not in exposed:
            problems.append(f"{sel.name}: no service exposes it")
            continue
        for m in sel.matchers.matchers:
            if m.name not in exposed[sel.name] | SCRAPE_LABELS:
                problems.append(f"{sel.name}: no label {m.name}")
    known = set().union(*(exposed.get(n, frozenset()) for n in names)) | SCRAPE_LABELS
    problems += [f"by ({label}): no selected metric has it" for label in _grouping(tree) if label not in known]
    return problems


def _rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def _panel_targets() -> list[tuple[str, str]]:
    doc = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in doc["panels"] if p["type"] != "row" for t in p["targets"]]


# -- the real metrics ------------------------------------------------------------------------------


def test_every_rule_is_valid_promql_over_real_metrics(exposed: dict[str, frozenset[str]]) -> None:
    for rule in _rules():
        assert check_expr(rule["expr"], exposed) == [], rule["alert"]


def test_every_dashboard_panel_is_valid_promql_over_real_metrics(exposed: dict[str, frozenset[str]]) -> None:
    targets = _panel_targets()
    assert len(targets) >= 20
    for title, expr in targets:
        assert check_expr(expr, exposed) == [], title


def test_the_checker_catches_a_wrong_metric_or_label(exposed: dict[str, frozenset[str]]) -> None:
    assert check_expr("rate(sleuth_tool_errors_total[5m])", exposed) == []
    assert check_expr("rate(sleuth_tool_error_total[5m])", exposed) == ["sleuth_tool_error_total: no service exposes it"]
    assert check_expr('sleuth_jobs_pending{namespace="x"}', exposed) == ["sleuth_jobs_pending: no label namespace"]
    assert check_expr("sum by (user) (rate(sleuth_gateway_messages_total[5m]))", exposed) == [
        "by (user): no selected metric has it"]
    with pytest.raises(ValueError):
        check_expr("sum(rate(sleuth_jobs_pending[5m])", exposed)


def test_the_rule_tests_use_series_shaped_like_the_real_ones(exposed: dict[str, frozenset[str]]) -> None:
    doc = yaml.safe_load(RULE_TESTS.read_text())
    alerts_tested = set()
    for case in doc["tests"]:
        for s in case["input_series"]:
            sel = pp.parse(s["series"])
            assert isinstance(sel, pp.VectorSelector)
            labels = {m.name for m in sel.matchers.matchers}
            assert sel.name in exposed, sel.name
            assert labels - SCRAPE_LABELS == set(exposed[sel.name]) - {"le"}, s["series"]
        for t in case["alert_rule_test"]:
            alerts_tested.add(t["alertname"])
            for exp in t.get("exp_alerts", []):
                assert exp["exp_labels"]["severity"] in ("warning", "critical")
    assert alerts_tested == {r["alert"] for r in _rules()}, "every alert is tested"


def test_the_dashboard_covers_what_operators_watch() -> None:
    exprs = " ".join(e for _t, e in _panel_targets())
    for metric in ("sleuth_gateway_messages_total", "sleuth_gateway_query_seconds_bucket", "sleuth_jobs_pending",
                   "sleuth_jobs_oldest_seconds", "sleuth_tool_errors_total", "sleuth_tool_call_seconds_bucket",
                   "sleuth_llm_tokens_total", "sleuth_llm_circuit_open", "sleuth_llm_failover_changes_total",
                   "sleuth_alerts_received_total", "sleuth_authz_scope_requests_total",
                   "sleuth_handler_crashes_total", "sleuth_tool_results_truncated_total"):
        assert metric in exprs, metric
    assert "histogram_quantile(" in exprs
    doc = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    assert {v["name"] for v in doc["templating"]["list"]} == {"datasource"}


def test_every_alert_says_how_bad_what_and_where_to_look() -> None:
    for rule in _rules():
        assert rule["for"], rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert {"summary", "description", "runbook"} <= set(rule["annotations"]), rule["alert"]


# -- promtool ------------------------------------------------------------------------------------


@needs_promtool
def test_promtool_checks_the_rules_and_their_tests(tmp_path: Path) -> None:
    assert promtool is not None
    check = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in check.stdout
    run = subprocess.run([promtool, "test", "rules", RULE_TESTS.name], capture_output=True, text=True, timeout=60,
                         cwd=RULE_TESTS.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    # promtool really compares: a test that expects the wrong thing fails.
    doc = yaml.safe_load(RULE_TESTS.read_text())
    doc["rule_files"] = [str(RULES)]
    doc["tests"][0]["alert_rule_test"][0]["exp_alerts"] = [{"exp_labels": {"severity": "critical"}}]
    broken = tmp_path / "broken.test.yaml"
    broken.write_text(yaml.safe_dump(doc))
    run = subprocess.run([promtool, "test", "rules", str(broken)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "SleuthNoAgentConsuming" in run.stdout + run.stderr


# -- the chart -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def monitored() -> list[dict[str, Any]]:
    return render_chart({"monitoring": {"dashboard": {"enabled": True, "labels": {"team": "sre"}},
                                        "prometheusRule": {"enabled": True, "labels": {"release": "kps"}}}})


def test_the_chart_ships_the_dashboard_and_the_rules_when_asked(monitored: list[dict[str, Any]], tmp_path: Path) -> None:
    (cm,) = find(monitored, "ConfigMap", "sleuth-dashboard")
    kubernetes_validate.validate(cm, "1.30", strict=True)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["labels"]["team"] == "sre"
    assert json.loads(cm["data"]["sleuth-dashboard.json"]) == json.loads(DASHBOARD.read_text())
    (rule,) = find(monitored, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["labels"]["release"] == "kps"
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
    if promtool is not None:  # what the operator would load, checked as Prometheus would
        path = tmp_path / "rendered-rules.yaml"
        path.write_text(yaml.safe_dump(rule["spec"]))
        check = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr


def test_the_chart_ships_neither_by_default(rendered: dict[str, list[dict[str, Any]]]) -> None:
    objects = rendered["defaults"]
    assert not find(objects, "PrometheusRule")
    assert not find(objects, "ConfigMap", "sleuth-dashboard")


def test_deploy_links_to_the_chart_files() -> None:
    assert (ROOT / "deploy" / "grafana" / "sleuth-dashboard.json").resolve() == DASHBOARD.resolve()
    assert (ROOT / "deploy" / "prometheus" / "sleuth-rules.yaml").resolve() == RULES.resolve()
