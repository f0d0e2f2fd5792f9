"""PromQL pinning (DESIGN §2 step 1): every vector selector of a query — in matrix selectors,
subqueries, both sides of binary operators, function and aggregation arguments and parameters —
is limited to the caller's namespaces with ``namespace=~"a|b"``. An equality matcher on one of
the caller's namespaces is kept (already pinned); an explicit foreign ``namespace="x"`` refuses
the whole query; negative and regex namespace matchers are replaced.

Uses the real parser (``promql-parser``). Selectors are edited in place (the Python tree the
binding builds is shared, so ``str(tree)`` renders the edits); the final query is parsed once
more and checked, so a label value that breaks out of its quotes cannot smuggle a matcher in.

Never raises, never stalls. Before anything is parsed, a linear scan refuses queries over
``MAX_QUERY_CHARS`` characters, ``MAX_NESTING`` levels of brackets or ``MAX_OPERATORS``
operators (the native parser's cost grows faster than linearly with nesting, and it crashes the
process on a few thousand levels). After parsing, an iterative walk refuses trees deeper than
``MAX_DEPTH`` or with more than ``MAX_SELECTORS`` selectors before anything is rendered. The
binding's own ``walk``/``transform`` are not used: they rebuild each subtree for every node they
visit, which made pinning roughly cubic in the nesting depth.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import promql_parser as pp

from sleuth_common.scope._model import Scope

__all__ = ["MAX_DEPTH", "MAX_NESTING", "MAX_OPERATORS", "MAX_QUERY_CHARS", "MAX_SELECTORS", "PromqlOutcome",
           "pin_promql", "promql_complexity"]

MAX_QUERY_CHARS = 10_000
"""Longest query accepted (characters)."""
MAX_NESTING = 64
"""Deepest bracket nesting (``(``, ``[``, ``{``) accepted, counted outside strings and comments."""
MAX_OPERATORS = 500
"""Most operators (each sign of ``+``, ``==``, ``-`` …, each ``and``/``or``/``unless``, each
range or subquery ``[``; label matchers inside ``{}`` not counted) accepted: a chain of
operators nests as deeply as brackets do."""
MAX_DEPTH = 128
"""Deepest parsed expression tree accepted."""
MAX_SELECTORS = 200
"""Most vector selectors accepted in one query."""

_DNS_LABEL = re.compile(r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$")
_NS = "namespace"
# The tokens that matter for nesting: strings (skipped; a ``"``/``'`` string ends at a newline as
# the lexer's does, or the query is invalid anyway), comments (skipped), brackets and operators.
_TOKENS = re.compile(
    r'"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|`[^`]*`?|#[^\n]*'
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<op>[-+*/%^<>=!~]+|\b(?:and|or|unless|atan2)\b)"
)
_TOO_COMPLEX = "the PromQL query is too complex to check ({what}); split it into simpler queries"


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


def promql_complexity(query: str) -> str:
    """"" when ``query`` is within the length, nesting and operator limits, else why not.
    Linear in the length of the query; parses nothing."""
    if len(query) > MAX_QUERY_CHARS:
        return _TOO_COMPLEX.format(what=f"{len(query)} characters, the limit is {MAX_QUERY_CHARS}")
    depth = deepest = ops = braces = 0
    for m in _TOKENS.finditer(query):
        kind, token = m.lastgroup, m.group()
        if kind == "open":
            depth += 1
            braces += token == "{"
            ops += token == "["  # a range or subquery adds a level of its own
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING:
                    return _TOO_COMPLEX.format(what=f"brackets nested more than {MAX_NESTING} deep")
        elif kind == "close":
            depth = max(depth - 1, 0)
            braces = max(braces - (token == "}"), 0)
        elif kind == "op" and not braces:  # label matchers (``=~``, ``!=``) nest nothing
            # every sign of a run counts: ``----x`` nests four unary minuses
            ops += 1 if token[0].isalpha() else len(token)
        if ops > MAX_OPERATORS:
            return _TOO_COMPLEX.format(what=f"more than {MAX_OPERATORS} operators")
    return ""


def _native(fn: Callable[[], Any]) -> Any:
    """Call into the native parser, turning any failure — a Rust panic arrives as pyo3's
    ``PanicException``, a ``BaseException`` — into ``_Refused``."""
    try:
        return fn()
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except RecursionError as exc:
        raise _Refused(_TOO_COMPLEX.format(what="nested too deeply")) from exc
    except BaseException as exc:  # a native library's panic is not an Exception
        first = (str(exc).splitlines() or [""])[0][:200]
        raise _Refused(f"the PromQL query does not parse: {first}".rstrip(": ")) from exc


def _children(node: Any) -> list[Any]:
    """The sub-expressions of ``node`` (raises ``_Refused`` for a node type not understood, so a
    selector can never hide in one)."""
    if isinstance(node, pp.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr):
        return [node.expr]
    if isinstance(node, pp.AggregateExpr):
        param = node.param
        return [node.expr] if param is None else [node.expr, param]
    if isinstance(node, pp.Call):
        return list(node.args)
    if isinstance(node, pp.MatrixSelector):
        return [node.vector_selector]
    if isinstance(node, pp.VectorSelector | pp.NumberLiteral | pp.StringLiteral):
        return []
    raise _Refused(f"the PromQL query uses an expression that cannot be checked ({type(node).__name__})")


def _selectors(tree: Any) -> Iterator[Any]:
    """Every vector selector of ``tree``, iteratively, refusing early on depth or count."""
    stack: list[tuple[Any, int]] = [(tree, 1)]
    found = 0
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _Refused(_TOO_COMPLEX.format(what=f"expressions nested more than {MAX_DEPTH} deep"))
        if isinstance(node, pp.VectorSelector):
            found += 1
            if found > MAX_SELECTORS:
                raise _Refused(_TOO_COMPLEX.format(what=f"more than {MAX_SELECTORS} selectors"))
            yield node
            continue
        stack.extend((c, depth + 1) for c in reversed(_children(node)))


def _pin_value(scope: Scope) -> str:
    names = sorted(n for n in scope.namespaces if _DNS_LABEL.match(n))
    return "|".join(names)


def pin_promql(query: str, scope: Scope) -> PromqlOutcome:
    """Pin ``query`` to ``scope`` (cluster-wide callers get it back unchanged, once it parses
    within the limits). Never raises."""
    if not isinstance(query, str):
        return PromqlOutcome("refused", str(query), "the PromQL query must be a string")
    problem = promql_complexity(query)
    if problem:
        return PromqlOutcome("refused", query, problem)
    try:
        return _pin(query, scope)
    except _Refused as exc:
        return PromqlOutcome("refused", query, str(exc))


def _pin(query: str, scope: Scope) -> PromqlOutcome:
    tree = _native(lambda: pp.parse(query))
    selectors = list(_selectors(tree))
    if scope.cluster_wide:
        return PromqlOutcome("kept", query)
    pin = _pin_value(scope)
    if not pin:
        return PromqlOutcome("refused", query, "You do not have read access to any namespace on this cluster.")
    changed = False
    for node in selectors:
        changed = _pin_selector(node, scope, pin) or changed
    if not changed:
        problem = _check_pinned(selectors, scope, pin)
        return PromqlOutcome("refused", query, problem) if problem else PromqlOutcome("kept", query)
    text = _native(lambda: str(tree))
    try:
        final = _native(lambda: pp.parse(text))
    except _Refused as exc:
        raise _Refused(f"a label value in the query cannot be rewritten safely ({exc})") from exc
    problem = _check_pinned(list(_selectors(final)), scope, pin)
    if problem:
        return PromqlOutcome("refused", query, problem)
    return PromqlOutcome("rewritten", text)


def _pin_selector(node: Any, scope: Scope, pin: str) -> bool:
    """Pin one selector in place; True when it was changed."""
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
                raise _Refused(f'You do not have access to namespace "{m.value}". Your namespaces: {scope.describe()}.')
            keep.append(m)
            pinned = True
        # NotEqual, Re and NotRe namespace matchers are replaced by the pin.
    if pinned and len(keep) == len(ms.matchers):
        return False
    if not pinned:
        keep.append(pp.Matcher(pp.MatchOp.Re, _NS, pin))
    node.matchers = pp.Matchers(keep)
    return True


def _check_pinned(selectors: list[Any], scope: Scope, pin: str) -> str:
    """"" when every selector has exactly the pin, or an allowed equality."""
    for node in selectors:
        ns = [m for m in node.matchers.matchers if m.name == _NS]
        if node.matchers.or_matchers or len(ns) != 1:
            return "the rewritten query is not pinned to your namespaces"
        m = ns[0]
        ok = (m.op == pp.MatchOp.Re and m.value == pin) or (m.op == pp.MatchOp.Equal and m.value in scope.namespaces)
        if not ok:
            return "the rewritten query is not pinned to your namespaces"
    return ""
