"""PromQL pinning (DESIGN §2 step 1): every vector selector of a query — in matrix selectors,
subqueries, both sides of binary operators, function and aggregation arguments — is limited to
the caller's namespaces with ``namespace=~"a|b"``. An equality matcher on one of the caller's
namespaces is kept (already pinned); an explicit foreign ``namespace="x"`` refuses the whole
query; negative and regex namespace matchers are replaced.

Uses the real parser (``promql-parser``); after editing a selector it is re-parsed from its
text (the library renders edits but does not apply returned nodes otherwise), and the final query
is parsed once more and checked, so a label value that breaks out of its quotes cannot smuggle a
matcher in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import promql_parser as pp

from sleuth_common.scope._model import Scope

__all__ = ["PromqlOutcome", "pin_promql"]

_DNS_LABEL = re.compile(r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$")
_NS = "namespace"


@dataclass(frozen=True)
class PromqlOutcome:
    """``kept`` (already pinned), ``rewritten`` (``query`` is the pinned query) or ``refused``
    (``reason`` says why, naming only the caller's namespaces or what the caller typed)."""

    outcome: Literal["kept", "rewritten", "refused"]
    query: str
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "query": self.query, "reason": self.reason}


class _Refused(Exception):
    pass


def _pin_value(scope: Scope) -> str:
    names = sorted(n for n in scope.namespaces if _DNS_LABEL.match(n))
    return "|".join(names)


def pin_promql(query: str, scope: Scope) -> PromqlOutcome:
    """Pin ``query`` to ``scope`` (cluster-wide callers get it back unchanged)."""
    try:
        tree = pp.parse(query)
    except (ValueError, TypeError) as exc:
        return PromqlOutcome("refused", query, f"the PromQL query does not parse: {exc}")
    if scope.cluster_wide:
        return PromqlOutcome("kept", query)
    pin = _pin_value(scope)
    if not pin:
        return PromqlOutcome("refused", query, "You do not have read access to any namespace on this cluster.")
    changed = False

    def post(node: Any) -> Any:
        nonlocal changed
        if not isinstance(node, pp.VectorSelector):
            return None
        ms = node.matchers
        if ms.or_matchers:
            raise _Refused(
                "selectors with `or` between label matchers are not supported; write them as separate "
                "selectors joined with the `or` operator"
            )
        keep = []
        pinned = False
        for m in ms.matchers:
            if m.name != _NS:
                keep.append(m)
                continue
            if m.op == pp.MatchOp.Equal:
                if m.value not in scope.namespaces:
                    raise _Refused(
                        f'You do not have access to namespace "{m.value}". Your namespaces: {scope.describe()}.'
                    )
                keep.append(m)
                pinned = True
            # NotEqual, Re and NotRe namespace matchers are replaced by the pin.
        if pinned and len(keep) == len(ms.matchers):
            return None
        changed = True
        if not pinned:
            keep.append(pp.Matcher(pp.MatchOp.Re, _NS, pin))
        node.matchers = pp.Matchers(keep)
        try:
            return pp.parse(str(node))
        except ValueError as exc:
            raise _Refused(f"a label value in the query cannot be rewritten safely ({exc})") from exc

    try:
        out = pp.transform(tree, post_visit=post)
        text = str(out)
        final = pp.parse(text)
    except _Refused as exc:
        return PromqlOutcome("refused", query, str(exc))
    except ValueError as exc:
        return PromqlOutcome("refused", query, f"the query cannot be rewritten safely ({exc})")
    problem = _check_pinned(final, scope, pin)
    if problem:
        return PromqlOutcome("refused", query, problem)
    return PromqlOutcome("rewritten" if changed else "kept", text if changed else query)


def _check_pinned(tree: Any, scope: Scope, pin: str) -> str:
    """"" when every selector of the final query has exactly the pin, or an allowed equality."""
    problems: list[str] = []

    def visit(node: Any) -> bool:
        if isinstance(node, pp.VectorSelector):
            ns = [m for m in node.matchers.matchers if m.name == _NS]
            if node.matchers.or_matchers or len(ns) != 1:
                problems.append("the rewritten query is not pinned to your namespaces")
            else:
                m = ns[0]
                ok = (m.op == pp.MatchOp.Re and m.value == pin) or (
                    m.op == pp.MatchOp.Equal and m.value in scope.namespaces
                )
                if not ok:
                    problems.append("the rewritten query is not pinned to your namespaces")
        return True

    pp.walk(tree, pre_visit=visit)
    return problems[0] if problems else ""
