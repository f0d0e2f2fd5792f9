"""``sleuth filter``: what a user would be shown — the operator's view of the scope filter
(DESIGN §2), the same code every tool result passes through.

    sleuth filter --scope SCOPE.json [--tool NAME] < RESULT
        {"outcome": "kept"|"filtered"|"withheld", "result": <JSON or null>, "removed": N, "reason": "..."}
    sleuth filter --scope SCOPE.json --promql 'EXPR'
        {"outcome": "kept"|"rewritten"|"refused", "query": "...", "reason": "..."}

``SCOPE.json`` = ``{"namespaces": [...], "cluster_wide": false, "ips": {"10.1.2.3": "team-a"}}``;
an IP absent from ``ips`` is unresolvable. Optional keys: ``"cluster_kinds": ["nodes", ...]``
(cluster-scoped resources the user may list), ``"secret_namespaces": [...]`` (where they may get
secrets), ``"inventory": {"team-b": ["pay-1", ...]}`` (object names per namespace: kept text naming
a foreign one loses that line). RESULT is JSON, YAML or text (``result`` is JSON when the input was
structured, else a string). ``--namespace`` (repeatable) says the call was limited to those
namespaces, as a call limited by its arguments would be: when all are in scope, records naming no
namespace are attributed to them and text may pass. Exit status 0
whatever the outcome, for any RESULT (binary, invalid UTF-8, too deep, a YAML alias bomb: an
outcome, withheld if it cannot be checked); 2 with a one-line error for a bad SCOPE.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def _fail(message: str) -> int:
    print(f"sleuth filter: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _load_scope(path: str) -> tuple[Any, dict[str, str]]:
    from sleuth_common.scope import Scope

    raw = sys.stdin.read() if path == "-" else Path(path).read_text()
    doc = json.loads(raw)
    if not isinstance(doc, dict):
        raise ValueError("SCOPE.json must be a JSON object")
    namespaces = doc.get("namespaces", [])
    if not isinstance(namespaces, list) or not all(isinstance(n, str) for n in namespaces):
        raise ValueError('"namespaces" must be a list of strings')
    if not isinstance(doc.get("cluster_wide", False), bool):
        raise ValueError('"cluster_wide" must be true or false')
    return Scope.from_json(doc), Scope.ips_from_json(doc)


def _cmd_filter(args: argparse.Namespace) -> int:
    from sleuth_common.scope import default_rules, filter_result, pin_promql, pinned_by_arguments

    try:
        scope, ips = _load_scope(args.scope)
    except RecursionError:
        return _fail(f"cannot read --scope {args.scope}: it is nested too deeply")
    except Exception as exc:  # the edge of the process: a bad SCOPE.json is one line, never a traceback
        return _fail(f"cannot read --scope {args.scope}: {_first_line(exc)}")
    if args.promql is not None:
        print(json.dumps(pin_promql(args.promql, scope).as_json(), ensure_ascii=False))
        return 0
    if args.scope == "-":
        return _fail("--scope - cannot be used when the result is read from stdin")
    try:
        data = sys.stdin.buffer.read()
    except OSError as exc:
        return _fail(f"cannot read the result from stdin: {_first_line(exc)}")
    # Whatever came in gets an outcome: invalid UTF-8 is read with replacement characters (as a
    # tool result is), and a filter failure withholds the result instead of showing a traceback.
    text = data.decode("utf-8", errors="replace")
    try:
        named = [n for n in args.namespace if n]
        call_args = {"namespace": named[0]} if len(named) == 1 else {"namespaces": named} if named else {}
        pinned = bool(call_args) and pinned_by_arguments(args.tool or "", call_args, scope, default_rules())
        out = filter_result(text, scope, pinned=pinned, pinned_namespaces=named if pinned else (),
                            max_bytes=args.max_bytes, ips=ips)
        body = out.as_json()
        if out.redacted:
            body["redacted"] = out.redacted
        line = json.dumps(body, ensure_ascii=False)
        line.encode("utf-8")  # a lone surrogate from a JSON escape cannot be printed: escape it
    except UnicodeEncodeError:
        line = json.dumps(body, ensure_ascii=True)
    except Exception as exc:  # the edge of the process: fail closed, say so in one line
        reason = f"This result was withheld: it could not be checked ({type(exc).__name__})."
        line = json.dumps({"outcome": "withheld", "result": None, "removed": 0, "reason": reason})
    print(line)
    return 0


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "filter",
        help="show what a user would see of a tool result (or a PromQL query) under a scope",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--scope", required=True, help='SCOPE.json: {"namespaces": [...], "cluster_wide": false, "ips": {...}, '
                   '"cluster_kinds": [...], "secret_namespaces": [...], "inventory": {ns: [names]}}')
    p.add_argument("--tool", default="", help="the tool that produced the result (for its argument rules)")
    p.add_argument("--namespace", action="append", default=[],
                   help="a namespace the call was limited to (repeatable; attributes records, lets text through)")
    p.add_argument("--promql", default=None, metavar="EXPR", help="pin a PromQL query instead of filtering stdin")
    p.add_argument("--max-bytes", type=int, default=4_000_000, help="withhold results larger than this (filter_bytes)")
    p.set_defaults(func=_cmd_filter)
