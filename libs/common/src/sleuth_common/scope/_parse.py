"""Parsing a tool result into a value the filter can walk (DESIGN §2 step 2): JSON (a leading BOM
is ignored), NDJSON (or JSON values one after another), YAML (one document or several; a ``#``
comment line may come first), JSON or YAML fenced in Markdown (```` ```json ```` … ```` ``` ````),
or text.

Parsing never raises and never runs away. Before a value reaches the walk:

- text longer than ``MAX_CHARS`` is not parsed; YAML beyond ``MAX_YAML_CHARS`` characters or
  (estimated before reading) ``MAX_YAML_VALUES`` values is not read: refused when its start
  reads as structured YAML, else it is text (a long log);
- YAML is composed by libyaml (which stops at 1,000 levels). When the text has an anchor
  (``&``), the node graph is checked before anything is constructed: at most ``MAX_ALIASES``
  aliases written (merge keys included), adding at most ``MAX_ALIAS_VALUES`` values and
  ``MAX_ALIAS_CHARS`` characters when expanded, no alias to its own ancestor, at most
  ``MAX_DEPTH`` levels and ``MAX_VALUES`` values — so a few hundred bytes of "billion laughs" is
  refused at once (the budget is shared by all documents and fenced blocks of one result).
  Without an anchor nothing can expand, and the constructed value is checked for depth;
- JSON deeper than ``MAX_DEPTH`` is refused (the decoder's own recursion limit included);
- what comes out is plain JSON: dicts with string keys, lists, strings, ints, finite floats,
  booleans, None. YAML's other types are converted: timestamps stay the text they were written
  as, ``!!binary`` stays its base64 text, a set becomes the list of its members, ordered maps
  and pairs the list of their one-entry mappings, unknown tags (``!!python/object:…``, ``!Ref``)
  are read as the plain mapping/list/string under them, keys that are not strings become
  strings (``1`` → ``"1"``, ``true`` → ``"true"``, a list key → its JSON), NaN and infinities
  become their text, integers too long to convert stay text, and a value shared through an
  alias is copied (the walk edits in place).

``parse_checked`` says what happened (``Parsed``: the value, whether it is structured, why it
was refused, the prose around fenced blocks); ``parse_result`` is the two-value form.
"""

from __future__ import annotations

import base64
import contextvars
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "MAX_ALIASES",
    "MAX_ALIAS_CHARS",
    "MAX_ALIAS_VALUES",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_VALUES",
    "MAX_YAML_CHARS",
    "MAX_YAML_VALUES",
    "REFUSED_MESSAGE",
    "Parsed",
    "parse_checked",
    "parse_result",
]

MAX_CHARS = 16_000_000
"""Longest text parsed (characters); longer text is refused (``filter_bytes`` is usually lower)."""
MAX_YAML_CHARS = 2_000_000
"""Most YAML characters read for one result (YAML is read at well under 1 MB/s)."""
MAX_YAML_VALUES = 200_000
"""Most YAML values read for one result (estimated from the text before reading it)."""
MAX_DEPTH = 100
"""Deepest nesting of lists and objects accepted."""
MAX_ALIASES = 50
"""Most YAML alias references (``*name``, merge keys included) accepted in one result."""
MAX_VALUES = 2_000_000
"""Most values (containers and scalars) in one result, YAML aliases expanded."""
MAX_ALIAS_VALUES = 10_000
"""Most values YAML aliases may add to a result when expanded."""
MAX_ALIAS_CHARS = 1_000_000
"""Most characters of strings YAML aliases may add to a result when expanded."""

REFUSED_MESSAGE = (
    "This result was withheld: {refused}, so it cannot be checked. Narrow the query (a namespace, "
    "a label selector, a name, fewer lines) — your namespaces: {scope}."
)
"""How a refused parse reads to a model or a person (``format(refused=..., scope=...)``)."""

_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FENCE_OPEN = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^`]*")
_FENCE_LANGS = frozenset({"", "json", "jsonl", "ndjson", "json5", "yaml", "yml"})
_JSON_OPEN = ("{", "[")
_WHITESPACE = re.compile(r"[ \t\r\n]*")
_MAX_STREAM_VALUES = 100_000  # JSON values one after another, not one per line

@dataclass(frozen=True)
class Parsed:
    """What ``parse_checked`` made of a text.

    ``data``: the value (plain JSON types only) when ``structured``, else the text itself.
    ``refused``: "" or why the text was not parsed although it looked structured — a clause such
    as ``"it is nested more than 100 levels deep"`` that fits ``REFUSED_MESSAGE`` (``data`` is
    then the text and ``structured`` False: withhold it, do not show it as text).
    ``prose``: for Markdown with fenced JSON/YAML, the text outside the parsed blocks ("" when
    there is none); ``data`` holds only the blocks (one block: its value; several: a list).
    Prose is unchecked text: show it only where text may be shown (a pinned call).
    """

    data: Any
    structured: bool
    refused: str = ""
    prose: str = ""


class _Refused(Exception):
    """A limit was hit; the message is the clause for ``Parsed.refused``."""


def parse_result(text: str) -> tuple[Any, bool]:
    """``(data, True)`` when ``text`` is structured (see ``parse_checked``), else ``(text, False)``.

    A refused text (too deep, too many aliases …) also comes back as ``(text, False)``; use
    ``parse_checked`` to tell it apart from plain text. For fenced Markdown only the blocks are
    returned (the prose is dropped: it could not be checked).
    """
    p = parse_checked(text)
    return p.data, p.structured


def parse_checked(text: str, *, depth_bounded_by_caller: bool = False) -> Parsed:
    """Parse one tool result. Never raises.

    ``depth_bounded_by_caller``: skip the separate depth check of parsed JSON (about a fifth of
    the filter's time on a large list) because the caller walks the value with a depth limit of
    its own and withholds what exceeds it (the scope filter's walk does). ``json.loads`` itself
    never builds a value deeper than the interpreter's recursion limit.

    Structured: a JSON object or array; NDJSON or concatenated JSON (two or more objects or
    arrays separated only by whitespace → a list); YAML that is a list holding objects or lists, or an object with a nested object/list
    or a namespace key (so a log line such as ``ERROR: boom`` stays text); several YAML
    documents each like that (→ a list); fenced blocks of any of these inside Markdown.
    """
    token = _DEPTH_BOUNDED.set(depth_bounded_by_caller)
    try:
        return _parse_checked(text)
    finally:
        _DEPTH_BOUNDED.reset(token)


def _parse_checked(text: str) -> Parsed:
    try:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8", errors="replace") if isinstance(text, bytes | bytearray) else str(text)
        if len(text) > MAX_CHARS:
            return Parsed(text, False, f"it is longer than {MAX_CHARS} characters")
        return _parse(text)
    except _Refused as exc:
        return Parsed(text, False, str(exc))
    except RecursionError:
        return Parsed(text, False, f"it is nested more than {MAX_DEPTH} levels deep")
    except MemoryError:
        return Parsed(text, False, "it is too large to read")


def _parse(text: str) -> Parsed:
    s = text.lstrip("\ufeff \t\r\n")
    if not s:
        return Parsed(text, False)
    budget = _Budget()
    got = _parse_plain(s, budget)
    if got is not None:
        return Parsed(got, True)
    if "```" in s or "~~~" in s:
        return _parse_fenced(text, s, budget)
    return Parsed(text, False)


def _parse_plain(s: str, budget: _Budget) -> Any | None:
    """The value of JSON, NDJSON or structured YAML ``s``, or None for text. Raises ``_Refused``."""
    if s[0] in _JSON_OPEN:
        try:
            return _checked_json(json.loads(s, parse_constant=str, parse_float=_float))
        except RecursionError as exc:
            raise _Refused(f"it is nested more than {MAX_DEPTH} levels deep") from exc
        except ValueError:
            pass
        values = _json_stream(s)
        if values is not None:
            return values
    if "\n" not in s.rstrip() and ": " not in s and not s.startswith("- "):
        return None
    budget.yaml_chars += len(s)
    # an upper bound on the values (each is on its own line, or after a comma, colon or dash)
    budget.yaml_values += sum(map(s.count, ("\n", ",", ": ", "- ", "[", "{")))
    if budget.yaml_chars > MAX_YAML_CHARS or budget.yaml_values > MAX_YAML_VALUES:
        # Too long to construct in time; refused when its start reads as structured YAML
        # (else it is text, such as a long log).
        head = s[: 64 * 1024].rpartition("\n")[0]
        start = [d for d in _load_yaml(head, _Budget()) or () if d is not None] if head else []
        if start and all(_structured_yaml(d) for d in start):
            raise _Refused(f"it is more YAML than can be read in time ({MAX_YAML_CHARS} characters, "
                           f"{MAX_YAML_VALUES} values)")
        return None
    docs = _load_yaml(s, budget)
    if docs is None:
        return None
    docs = [d for d in docs if d is not None]
    if not docs or not all(_structured_yaml(d) for d in docs):
        return None
    return docs[0] if len(docs) == 1 else docs


def _json_stream(s: str) -> list[Any] | None:
    """NDJSON, or JSON values one after another (``kubectl … -o json`` per object): two or more
    objects/arrays separated only by whitespace → a list. None when ``s`` is not that."""
    rows = [r for r in s.splitlines() if r and not r.isspace()]
    if len(rows) > 1 and all(r.lstrip()[0] in _JSON_OPEN and r.rstrip()[-1] in "]}" for r in rows):
        # NDJSON, read in one call: the lines as the items of one array
        try:
            values = json.loads("[" + ",".join(rows) + "]", parse_constant=str, parse_float=_float)
        except RecursionError as exc:
            raise _Refused(f"it is nested more than {MAX_DEPTH} levels deep") from exc
        except ValueError:
            values = None
        if isinstance(values, list) and len(values) == len(rows):
            return _checked_json(values)
    decoder = json.JSONDecoder(parse_constant=str, parse_float=_float)
    skip = _WHITESPACE.match
    out: list[Any] = []
    at = 0
    while at < len(s):
        if s[at] not in _JSON_OPEN or len(out) >= _MAX_STREAM_VALUES:
            return None
        try:
            value, at = decoder.raw_decode(s, at)
        except RecursionError as exc:
            raise _Refused(f"it is nested more than {MAX_DEPTH} levels deep") from exc
        except ValueError:
            return None
        out.append(value)
        gap = skip(s, at)
        at = gap.end() if gap else at
    return _checked_json(out) if len(out) > 1 else None


def _structured_yaml(data: Any) -> bool:
    if isinstance(data, list):
        return not data or any(isinstance(x, dict | list) for x in data)
    if isinstance(data, dict) and data:
        return any(isinstance(v, dict | list) for v in data.values()) or any(
            "namespace" in k.lower() for k in data
        )
    return False


def _parse_fenced(text: str, s: str, budget: _Budget) -> Parsed:
    """Markdown: the fenced JSON/YAML blocks parsed, the rest kept apart as prose. One pass over
    the lines (an unclosed fence is prose)."""
    blocks: list[Any] = []
    prose: list[str] = []
    lines = s.splitlines(keepends=True)
    i = 0
    start = 0  # first line of the current stretch of prose
    while i < len(lines):
        m = _FENCE_OPEN.fullmatch(lines[i].rstrip("\r\n"))
        if m is None:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        end = i + 1
        while end < len(lines):
            close = lines[end].strip()
            if close.startswith(fence) and close == fence[0] * len(close):
                break
            end += 1
        if end == len(lines):
            break  # never closed: the rest is prose
        got = None
        if lang in _FENCE_LANGS:
            body = "".join(lines[i + 1:end]).lstrip("\ufeff \t\r\n")
            got = _parse_plain(body, budget) if body else None
        if got is not None:
            prose.append("".join(lines[start:i]))
            blocks.append(got)
            start = end + 1
        i = end + 1
    if not blocks:
        return Parsed(text, False)
    prose.append("".join(lines[start:]))
    rest = "\n".join(p.strip("\r\n") for p in prose if p.strip())
    data = blocks[0] if len(blocks) == 1 else blocks
    if len(blocks) > 1:
        _check_tree(data)
    return Parsed(data, True, prose=rest)


# -- JSON --------------------------------------------------------------------------------------
def _float(s: str) -> float | str:
    f = float(s)
    return f if math.isfinite(f) else s


_DEPTH_BOUNDED = contextvars.ContextVar("sleuth_parse_depth_bounded", default=False)


def _checked_json(data: Any) -> Any:
    if not _DEPTH_BOUNDED.get():
        _check_tree(data)
    return data


def _check_tree(data: Any) -> None:
    """Refuse a parsed JSON value (a tree) deeper than ``MAX_DEPTH``: level by level, iteratively."""
    level = [data] if type(data) is dict or type(data) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise _Refused(f"it is nested more than {MAX_DEPTH} levels deep")
        below: list[Any] = []
        for node in level:
            below.extend([v for v in (node.values() if type(node) is dict else node)
                          if type(v) is dict or type(v) is list])
        level = below


# -- YAML --------------------------------------------------------------------------------------
class _Budget:
    """What one result may cost, shared by all its YAML documents and fenced blocks."""

    def __init__(self) -> None:
        self.yaml_chars = 0
        self.yaml_values = 0
        self.values = 0
        self.aliases = 0
        self.alias_values = 0
        self.alias_chars = 0

    def check(self, root: yaml.Node) -> None:
        """Walk a composed YAML node graph as construction would see it (aliases expanded),
        counting values, alias references and what they expand to; refuse early."""
        seen: set[int] = set()
        path: set[int] = set()  # mapping/sequence nodes being walked (an alias to one is a loop)
        # (node, depth, inside an alias, leaving): ``leaving`` entries take a node off ``path``
        stack: list[tuple[yaml.Node, int, bool, bool]] = [(root, 1, False, False)]
        while stack:
            node, depth, aliased, leaving = stack.pop()
            key = id(node)
            if leaving:
                path.discard(key)
                continue
            self.values += 1
            if self.values > MAX_VALUES:
                raise _Refused(f"it holds more than {MAX_VALUES} values")
            if key in seen:
                if key in path:
                    raise _Refused("a YAML alias in it refers to itself")
                if not aliased:  # an alias written in the text (inside an expansion: its cost)
                    self.aliases += 1
                    if self.aliases > MAX_ALIASES:
                        raise _Refused(f"it uses more than {MAX_ALIASES} YAML aliases")
                aliased = True
            seen.add(key)
            if aliased:
                self.alias_values += 1
                if isinstance(node, yaml.ScalarNode):
                    self.alias_chars += len(node.value)
                if self.alias_values > MAX_ALIAS_VALUES or self.alias_chars > MAX_ALIAS_CHARS:
                    raise _Refused("its YAML aliases expand to too much data")
            if isinstance(node, yaml.ScalarNode):
                continue
            if depth > MAX_DEPTH:
                raise _Refused(f"it is nested more than {MAX_DEPTH} levels deep")
            path.add(key)
            stack.append((node, depth, aliased, True))
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    stack.append((k, depth + 1, aliased, False))
                    stack.append((v, depth + 1, aliased, False))
            else:
                stack.extend((c, depth + 1, aliased, False) for c in node.value)


class _Loader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    """A safe loader that checks each document's node graph before constructing it, and
    constructs only plain JSON types (see the module docstring)."""

    def __init__(self, stream: str, budget: _Budget) -> None:
        super().__init__(stream)
        self.budget = budget
        # Without an ``&`` there is no anchor, so no alias and no shared node: the constructed
        # value is a tree of plain types, and only its depth needs checking (the fast path).
        self.anchors = "&" in stream

    def construct_document(self, node: yaml.Node) -> Any:
        if not self.anchors:
            data = super().construct_document(node)
            _check_tree(data)
            return data
        self.budget.check(node)
        return _plain(super().construct_document(node))

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:
        """Like ``SafeConstructor``'s (merge keys applied), with every key made a string."""
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping node, but found {node.id}", node.start_mark
            )
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _key(self.construct_object(key_node, deep=True))
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int | str:
        try:
            return int(super().construct_yaml_int(node))
        except ValueError:  # more digits than Python converts
            return str(self.construct_scalar(node))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float | str:
        f = super().construct_yaml_float(node)
        return f if math.isfinite(f) else str(self.construct_scalar(node))

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> str:
        return str(self.construct_scalar(node))

    def construct_yaml_binary(self, node: yaml.ScalarNode) -> str:
        return "".join(str(self.construct_scalar(node)).split())

    def construct_yaml_set(self, node: yaml.MappingNode) -> Iterator[list[str]]:
        """``!!set``: the list of its members."""
        members: list[str] = []
        yield members
        members.extend(self.construct_mapping(node))

    def construct_by_kind(self, node: yaml.Node) -> Any:
        """An unknown tag: the plain mapping, list or string under it."""
        if isinstance(node, yaml.MappingNode):
            return self.construct_yaml_map(node)
        if isinstance(node, yaml.SequenceNode):
            return self.construct_yaml_seq(node)
        return self.construct_scalar(node)


for _tag, _fn in {
    "tag:yaml.org,2002:int": _Loader.construct_yaml_int,
    "tag:yaml.org,2002:float": _Loader.construct_yaml_float,
    "tag:yaml.org,2002:timestamp": _Loader.construct_yaml_timestamp,
    "tag:yaml.org,2002:binary": _Loader.construct_yaml_binary,
    "tag:yaml.org,2002:set": _Loader.construct_yaml_set,
    # ordered maps and pairs: the list of their one-entry mappings, as written
    "tag:yaml.org,2002:omap": _Loader.construct_yaml_seq,
    "tag:yaml.org,2002:pairs": _Loader.construct_yaml_seq,
    None: _Loader.construct_by_kind,
}.items():
    _Loader.add_constructor(_tag, _fn)


def _load_yaml(s: str, budget: _Budget) -> list[Any] | None:
    """Every document of ``s``, or None when it is not YAML. Raises ``_Refused``."""
    loader = _Loader(s, budget)
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    except (yaml.YAMLError, ValueError, TypeError, AttributeError, OverflowError):
        return None
    finally:
        loader.dispose()


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int):
        return json.dumps(key)
    if isinstance(key, float):
        return json.dumps(key) if math.isfinite(key) else str(key)
    return json.dumps(_plain(key), separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any) -> Any:
    """A fresh tree of plain JSON types (shared nodes copied; depth and size already checked)."""
    if type(value) in (str, int, bool) or value is None:
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        node, parent, slot = stack.pop()
        t = type(node)
        if t is str or t is bool or t is int or node is None:
            out = node
        elif isinstance(node, dict):
            out = {}
            for k, v in node.items():
                out[_key(k)] = None
                stack.append((v, out, _key(k)))
        elif isinstance(node, list | tuple | set | frozenset):
            items = sorted(node, key=str) if isinstance(node, set | frozenset) else list(node)
            out = [None] * len(items)
            stack.extend((v, out, i) for i, v in enumerate(items))
        elif isinstance(node, float):
            out = node if math.isfinite(node) else str(node)
        elif isinstance(node, bytes | bytearray):
            out = base64.b64encode(bytes(node)).decode("ascii")
        elif isinstance(node, int):  # bool/int subclasses
            out = int(node)
        elif hasattr(node, "isoformat"):
            out = node.isoformat()
        else:
            out = str(node)
        parent[slot] = out
    return root[0]
