"""The best-practice report (issue 14): rules in code, never a model, over everything the asker
may read, collected through the same scoped tools as an investigation.

``report(job, scope_reply, settings)`` is the entry point (the agent, and ``sleuth report``
offline). Rules live one per module in ``report/rules/`` and register with ``@rule(...)``; their
thresholds are data in ``thresholds.yaml``. To add one: a module with a check and its test in
``services/agent/tests/report/``.
"""

from sleuth_agent.report._collect import Reads, collect
from sleuth_agent.report._model import Inventory, K8sObject
from sleuth_agent.report._registry import RULES, Hit, Outcome, Rule, load_rules, rule, run_rules
from sleuth_agent.report._render import EVERY_FINDING, render
from sleuth_agent.report._run import ProgressCallback, report

__all__ = [
    "EVERY_FINDING",
    "RULES",
    "Hit",
    "Inventory",
    "K8sObject",
    "Outcome",
    "ProgressCallback",
    "Reads",
    "Rule",
    "collect",
    "load_rules",
    "render",
    "report",
    "rule",
    "run_rules",
]
