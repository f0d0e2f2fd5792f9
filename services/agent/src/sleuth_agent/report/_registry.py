"""The rule registry: every best-practice rule is one small module under ``report/rules/`` that
registers a check with ``@rule(...)``; ``run_rules`` runs them all over an inventory.

A check gets one object (of the kinds it names) and the whole inventory (for look-ups: the PDBs
of a namespace, the Jobs of a CronJob) and yields ``Hit``s; the engine fills in the rest of the
``Finding``. A check that raises on an object costs that object only: it is reported as "not
checked" by that rule, and every other object and rule goes on. A rule that reads other kinds
(``reads``) skips the namespaces where one of them could not be listed, and says so once."""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sleuth_agent.report._model import Inventory, K8sObject
from sleuth_common.messages import SEVERITIES, Finding, NotChecked, Severity

__all__ = ["RULES", "Check", "Hit", "Outcome", "Rule", "load_rules", "rule", "run_rules"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hit:
    """What a check found on one object: the rest of the ``Finding`` comes from the rule and the
    object. ``severity`` overrides the rule's default (a privileged container is worse than one
    that merely may run as root)."""

    why: str
    fix: str
    observed: dict[str, Any] = field(default_factory=dict)
    severity: Severity | None = None


Check = Callable[[K8sObject, Inventory], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: Severity
    kinds: tuple[str, ...]
    """The kinds of the objects it judges."""
    check: Check
    reads: tuple[str, ...] = ()
    """Other kinds it looks at (a namespace where one of them could not be listed is skipped)."""
    requires: Callable[[Inventory], str] | None = None
    """Returns why the rule cannot run on this inventory (e.g. no metrics), or ``""``."""
    module: str = ""


RULES: dict[str, Rule] = {}


def rule(
    id: str,
    *,
    title: str,
    severity: Severity,
    kinds: tuple[str, ...],
    reads: tuple[str, ...] = (),
    requires: Callable[[Inventory], str] | None = None,
) -> Callable[[Check], Check]:
    """Register ``check`` as the rule ``id`` (ids are unique; severities from the closed list)."""
    if severity not in SEVERITIES:
        raise ValueError(f"rule {id}: severity {severity!r} is not one of {SEVERITIES}")
    if not kinds:
        raise ValueError(f"rule {id}: name the kinds it judges")

    def register(check: Check) -> Check:
        if id in RULES and RULES[id].module != check.__module__:
            raise ValueError(f"rule {id} is registered twice ({RULES[id].module}, {check.__module__})")
        RULES[id] = Rule(id, title, severity, tuple(kinds), check, tuple(reads), requires, check.__module__)
        return check

    return register


def load_rules() -> dict[str, Rule]:
    """Import every module of ``report.rules`` (each registers its rules) and return the registry."""
    from sleuth_agent.report import rules

    for mod in pkgutil.iter_modules(rules.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{rules.__name__}.{mod.name}")
    return RULES


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: int = 0
    """(rule, object) pairs judged."""


def _finding(r: Rule, obj: K8sObject, hit: Hit, cluster: str) -> Finding:
    return Finding(
        rule=r.id, severity=hit.severity or r.severity, cluster=cluster, namespace=obj.namespace,
        kind=obj.kind, name=obj.name, why=hit.why, fix=hit.fix, observed=hit.observed,
    )


def run_rules(inv: Inventory, rules: Iterable[Rule] | None = None, out: Outcome | None = None) -> Outcome:
    """Run ``rules`` (default: every registered rule) over ``inv``."""
    out = out or Outcome()
    for r in rules if rules is not None else load_rules().values():
        why_not = r.requires(inv) if r.requires is not None else ""
        if why_not:
            out.notes.append(f"{r.title} ({r.id}) not checked on {inv.cluster}: {why_not}")
            continue
        skipped: dict[str, set[str]] = {}
        for obj in inv.subjects(r.kinds):
            missing = [k for k in r.reads if not inv.readable(k, obj.namespace)]
            if missing:
                for k in missing:
                    skipped.setdefault(k, set()).add(obj.namespace)
                continue
            try:
                found = [_finding(r, obj, h, inv.cluster) for h in r.check(obj, inv)]
            # The crash boundary of one rule on one object (the "not checked"): whatever a
            # rule trips over in an odd object must not cost the rest of the report.
            except Exception as e:
                log.warning("rule %s failed on %s: %s", r.id, obj.ref, type(e).__name__)
                out.not_checked.append(NotChecked(
                    rule=r.id, cluster=inv.cluster, namespace=obj.namespace, kind=obj.kind, name=obj.name,
                    reason=f"{type(e).__name__}: {str(e)[:200]}",
                ))
                continue
            out.checked += 1
            out.findings.extend(found)
        by_kinds: dict[tuple[str, ...], set[str]] = {}
        for ns in {n for nss in skipped.values() for n in nss}:
            by_kinds.setdefault(tuple(sorted(k for k, nss in skipped.items() if ns in nss)), set()).add(ns)
        for kinds, namespaces in sorted(by_kinds.items()):
            out.notes.append(
                f"{r.title} ({r.id}) skipped in {', '.join(sorted(namespaces))} on {inv.cluster}: "
                f"the {' and '.join(kinds)} objects it reads could not be listed there"
            )
    return out
