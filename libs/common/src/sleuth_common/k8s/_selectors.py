"""Label selectors and field selectors, parsed, validated and matched as the API server does
(k8s.io/apimachinery ``pkg/labels``, ``pkg/fields`` and ``metav1.LabelSelectorAsSelector``).

Empty versus absent, as the API defines it:

- a ``LabelSelector`` with no requirements (the string ``""``, the dict ``{}``) selects **everything**:
  a NetworkPolicy's ``podSelector: {}`` applies to every pod in its namespace, a policy/v1
  PodDisruptionBudget's ``selector: {}`` covers every pod;
- an absent selector (``None``) selects **nothing**: a Service without ``spec.selector`` gets no
  endpoints from pods, a PodDisruptionBudget with a null selector covers no pod. ``selects(None, …)``
  is always False, and ``as_label_selector(None)`` is None rather than a selector.

A Service's ``spec.selector`` is a plain ``map[string]string`` that the API server drops when empty,
so for Services pass ``LabelSelector.from_map(sel) if sel else None``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorError",
    "as_label_selector",
    "escape_field_value",
    "parse_field_selector",
    "parse_label_selector",
    "selects",
    "validate_label_key",
    "validate_label_value",
]

Operator = Literal["=", "!=", "in", "notin", "exists", "!", "gt", "lt"]
"""``selection.Operator`` values (``==`` is read as ``=``): ``exists`` is a bare ``key``, ``!`` is
``!key``, ``gt``/``lt`` are ``key>N``/``key<N``."""

_OPERATORS: frozenset[str] = frozenset(("=", "!=", "in", "notin", "exists", "!", "gt", "lt"))
_EXPRESSION_OPS: dict[str, Operator] = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
_OP_TEXT = {"=": "=", "!=": "!=", "gt": ">", "lt": "<"}


class SelectorError(ValueError):
    """A selector the API server would refuse (400 BadRequest); the message says why."""


# -- validation (k8s.io/apimachinery/pkg/util/validation) ---------------------------------------

_QNAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT64 = re.compile(r"[+-]?[0-9]+")


def validate_label_key(key: str) -> None:
    """Raise SelectorError unless ``key`` is a qualified name: ``[prefix/]name``, the prefix a DNS
    subdomain (253 characters at most), the name 63 alphanumerics, ``-``, ``_``, ``.`` at most,
    starting and ending alphanumeric."""
    parts = key.split("/")
    if len(parts) > 2:
        raise SelectorError(f"invalid label key {key!r}: a qualified name has at most one '/'")
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            raise SelectorError(f"invalid label key {key!r}: prefix part must be non-empty")
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            raise SelectorError(f"invalid label key {key!r}: prefix part must be a DNS-1123 subdomain")
    name = parts[-1]
    if not name:
        raise SelectorError(f"invalid label key {key!r}: name part must be non-empty")
    if len(name) > 63:
        raise SelectorError(f"invalid label key {key!r}: name part must be no more than 63 characters")
    if not _QNAME.fullmatch(name):
        raise SelectorError(
            f"invalid label key {key!r}: name part must consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character"
        )


def validate_label_value(value: str) -> None:
    """Raise SelectorError unless ``value`` is a label value: empty, or 63 alphanumerics, ``-``,
    ``_``, ``.`` at most, starting and ending alphanumeric."""
    if len(value) > 63:
        raise SelectorError(f"invalid label value {value!r}: must be no more than 63 characters")
    if value and not _QNAME.fullmatch(value):
        raise SelectorError(
            f"invalid label value {value!r}: a valid label must be an empty string or consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )


def _dedupe(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


# -- label selectors ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Requirement:
    """One term of a label selector: ``key`` ``operator`` ``values``. Invalid terms raise
    SelectorError on construction (as ``labels.NewRequirement`` does)."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.key, str):
            raise SelectorError(f"invalid label key {self.key!r}: not a string")
        validate_label_key(self.key)
        op = self.operator
        if op not in _OPERATORS:
            raise SelectorError(f"{op!r} is not a valid label selector operator")
        values = self.values
        if isinstance(values, str) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"values of {self.key!r} must be a sequence of strings")
        values = tuple(values)
        object.__setattr__(self, "values", values)
        if op in ("in", "notin") and not values:
            raise SelectorError(f"{self.key}: for 'in', 'notin' operators, values set can't be empty")
        if op in ("=", "!=") and len(values) != 1:
            raise SelectorError(f"{self.key}: exact-match compatibility requires one single value")
        if op in ("exists", "!") and values:
            raise SelectorError(f"{self.key}: values set must be empty for exists and does not exist")
        if op in ("gt", "lt"):
            if len(values) != 1:
                raise SelectorError(f"{self.key}: for 'Gt', 'Lt' operators, exactly one value is required")
            if not _INT64.fullmatch(values[0]) or not -(2**63) <= int(values[0]) < 2**63:
                raise SelectorError(f"{self.key}: for 'Gt', 'Lt' operators, the value must be an integer")
        for v in values:
            validate_label_value(v)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        present = self.key in labels
        op = self.operator
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("=", "in"):
            return present and labels[self.key] in self.values
        if op in ("!=", "notin"):  # objects without the label match, as the API server has it
            return not present or labels[self.key] not in self.values
        # gt / lt: the label must be there and hold an integer
        if not present:
            return False
        text = labels[self.key]
        if not isinstance(text, str) or not _INT64.fullmatch(text):
            return False
        have, want = int(text), int(self.values[0])
        return have > want if op == "gt" else have < want

    def to_expression(self) -> dict[str, Any]:
        """This term as a ``matchExpressions`` entry (``=`` is ``In``, ``!=`` is ``NotIn``);
        ``gt``/``lt`` have none and raise SelectorError."""
        ops = {"=": "In", "in": "In", "!=": "NotIn", "notin": "NotIn", "exists": "Exists", "!": "DoesNotExist"}
        if self.operator not in ops:
            raise SelectorError(f"{self}: {self.operator!r} has no metav1.LabelSelector form")
        out: dict[str, Any] = {"key": self.key, "operator": ops[self.operator]}
        if self.values:
            out["values"] = list(self.values)
        return out

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return "!" + self.key
        if op in ("in", "notin"):
            return f"{self.key} {op} ({','.join(self.values)})"
        return f"{self.key}{_OP_TEXT[op]}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: every requirement must hold (AND). No requirements selects
    everything; see the module docstring for the absent (None) selector, which selects nothing.

    Requirements keep the order they were written in, so ``str()`` gives back the text parsed
    (spaces aside, ``==`` written ``=``); ``canonical()`` orders them as the API server prints."""

    requirements: tuple[Requirement, ...] = ()

    def __post_init__(self) -> None:
        reqs = tuple(self.requirements)
        if not all(isinstance(r, Requirement) for r in reqs):
            raise SelectorError("a LabelSelector holds Requirement objects")
        object.__setattr__(self, "requirements", reqs)

    # construction ------------------------------------------------------------------------------

    @classmethod
    def parse(cls, value: str | Mapping[str, Any]) -> LabelSelector:
        """From the string form (``a=b,c!=d,e in (x,y),f notin (z),g,!h``) or a metav1.LabelSelector
        dict (``matchLabels`` / ``matchExpressions``)."""
        if isinstance(value, str):
            return cls.from_string(value)
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise SelectorError(f"a label selector is a string or a dict, not {type(value).__name__}")

    @classmethod
    def from_string(cls, text: str) -> LabelSelector:
        """Parse ``labels.Parse`` syntax; ``""`` (or only spaces) selects everything."""
        if not isinstance(text, str):
            raise SelectorError(f"a label selector string is a str, not {type(text).__name__}")
        return cls(_Parser(text).parse())

    @classmethod
    def from_dict(cls, selector: Mapping[str, Any]) -> LabelSelector:
        """From a metav1.LabelSelector: ``matchLabels`` (key=value each) then ``matchExpressions``
        (In / NotIn / Exists / DoesNotExist); ``{}`` selects everything. Other keys are refused."""
        if not isinstance(selector, Mapping):
            raise SelectorError(f"a metav1.LabelSelector is a dict, not {type(selector).__name__}")
        unknown = set(selector) - {"matchLabels", "matchExpressions"}
        if unknown:
            raise SelectorError(f"unknown field(s) in a LabelSelector: {', '.join(sorted(map(str, unknown)))}")
        match_labels = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
        if not isinstance(match_labels, Mapping):
            raise SelectorError("matchLabels must be a map of strings")
        if not isinstance(expressions, list | tuple):
            raise SelectorError("matchExpressions must be a list")
        reqs = [Requirement(_text(k, "key"), "=", (_text(v, "value"),)) for k, v in match_labels.items()]
        for expr in expressions:
            if not isinstance(expr, Mapping):
                raise SelectorError("each matchExpressions entry must be a dict")
            op = expr.get("operator")
            if op not in _EXPRESSION_OPS:
                raise SelectorError(f"{op!r} is not a valid label selector operator")
            values = expr.get("values") or []
            if isinstance(values, str) or not isinstance(values, list | tuple):
                raise SelectorError("matchExpressions values must be a list of strings")
            key = _text(expr.get("key"), "key")
            reqs.append(Requirement(key, _EXPRESSION_OPS[op], _dedupe(_text(v, "value") for v in values)))
        return cls(tuple(reqs))

    @classmethod
    def from_map(cls, labels: Mapping[str, str]) -> LabelSelector:
        """From a plain ``map[string]string`` (Service / ReplicationController ``spec.selector``,
        a pod's ``nodeSelector``): one ``key=value`` per entry; ``{}`` selects everything."""
        if not isinstance(labels, Mapping):
            raise SelectorError(f"a selector map is a dict, not {type(labels).__name__}")
        return cls(tuple(Requirement(_text(k, "key"), "=", (_text(v, "value"),)) for k, v in labels.items()))

    # use ---------------------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        """No requirements: selects everything."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Do ``labels`` (None: no labels) satisfy every requirement?"""
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """``matches`` on a Kubernetes object's ``metadata.labels``."""
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return self.matches(labels)

    def canonical(self) -> LabelSelector:
        """The same selector ordered as the API server's ``Selector.String()`` prints it:
        requirements sorted by key (stably), ``in``/``notin`` values sorted."""
        reqs = sorted(self.requirements, key=lambda r: r.key)
        return LabelSelector(tuple(
            Requirement(r.key, r.operator, tuple(sorted(r.values))) if r.operator in ("in", "notin") else r
            for r in reqs
        ))

    def to_dict(self) -> dict[str, Any]:
        """As a metav1.LabelSelector dict: ``key=value`` terms in ``matchLabels`` (the first per key),
        the rest in ``matchExpressions``; ``gt``/``lt`` terms raise SelectorError."""
        match_labels: dict[str, str] = {}
        expressions: list[dict[str, Any]] = []
        for r in self.requirements:
            if r.operator == "=" and r.key not in match_labels:
                match_labels[r.key] = r.values[0]
            else:
                expressions.append(r.to_expression())
        out: dict[str, Any] = {}
        if match_labels:
            out["matchLabels"] = match_labels
        if expressions:
            out["matchExpressions"] = expressions
        return out

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise SelectorError(f"label selector {what} {value!r} is not a string")
    return value


def parse_label_selector(text: str) -> LabelSelector:
    """``LabelSelector.from_string``: the ``?labelSelector=`` / ``kubectl -l`` syntax."""
    return LabelSelector.from_string(text)


def as_label_selector(value: LabelSelector | str | Mapping[str, Any] | None) -> LabelSelector | None:
    """Any selector form as a LabelSelector, None staying None (selects nothing). A dict whose keys
    are only ``matchLabels``/``matchExpressions`` (or none: ``{}`` selects everything) is a
    metav1.LabelSelector; any other dict is a plain ``map[string]string``."""
    if value is None or isinstance(value, LabelSelector):
        return value
    if isinstance(value, str):
        return LabelSelector.from_string(value)
    if isinstance(value, Mapping):
        if set(value) <= {"matchLabels", "matchExpressions"}:
            return LabelSelector.from_dict(value)
        return LabelSelector.from_map(value)
    raise SelectorError(f"a label selector is a string or a dict, not {type(value).__name__}")


def selects(selector: LabelSelector | str | Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Does ``selector`` (any form ``as_label_selector`` takes) select ``labels``? None selects
    nothing; an empty selector selects everything. Invalid selectors raise SelectorError."""
    sel = as_label_selector(selector)
    return sel is not None and sel.matches(labels)


# The lexer of k8s.io/apimachinery/pkg/labels: identifiers run to whitespace or a special symbol.
_WHITESPACE = " \t\r\n"
_SPECIAL = "=!(),><"
_SYMBOLS = ("!=", "==", "=", "!", "(", ")", ",", ">", "<")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = self._lex(text)
        self.pos = 0

    def _lex(self, text: str) -> list[tuple[str, str]]:
        """``(kind, literal)`` pairs; kind is ``id`` or the symbol itself."""
        out: list[tuple[str, str]] = []
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch in _WHITESPACE:
                i += 1
            elif ch in _SPECIAL:
                sym = next(s for s in _SYMBOLS if text.startswith(s, i))
                out.append((sym, sym))
                i += len(sym)
            else:
                j = i
                while j < n and text[j] not in _WHITESPACE and text[j] not in _SPECIAL:
                    j += 1
                out.append(("id", text[i:j]))
                i = j
        return out

    def _error(self, found: str, expected: str) -> SelectorError:
        return SelectorError(f"unable to parse requirement: found '{found}', expected: {expected} in {self.text!r}")

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "end of string")

    def _take(self) -> tuple[str, str]:
        tok = self._peek()
        self.pos += tok[0] != "end"
        return tok

    def parse(self) -> tuple[Requirement, ...]:
        reqs: list[Requirement] = []
        if self._peek()[0] == "end":
            return ()
        while True:
            kind, lit = self._peek()
            if kind not in ("id", "!"):
                raise self._error(lit, "!, identifier, or 'end of string'")
            reqs.append(self._requirement())
            kind, lit = self._take()
            if kind == "end":
                return tuple(reqs)
            if kind != ",":
                raise self._error(lit, "',' or 'end of string'")
            kind, lit = self._peek()
            if kind not in ("id", "!"):
                raise self._error(lit, "identifier after ','")

    def _requirement(self) -> Requirement:
        negated = self._peek()[0] == "!"
        if negated:
            self._take()
        kind, key = self._take()
        if kind != "id":
            raise self._error(key, "identifier")
        validate_label_key(key)
        nxt = self._peek()[0]
        if nxt in ("end", ","):
            return Requirement(key, "!" if negated else "exists")
        if negated:  # `!a=b` is `a=b` to the API server's parser; refused here as the slip it is
            raise self._error(self._peek()[1], "',' or 'end of string' after '!key'")
        kind, lit = self._take()
        if kind == "id" and lit in ("in", "notin"):
            return Requirement(key, cast(Operator, lit), self._set())
        ops: dict[str, Operator] = {"=": "=", "==": "=", "!=": "!=", ">": "gt", "<": "lt"}
        if kind not in ops:
            raise self._error(lit, "'=', '==', '!=', 'in', 'notin', '>' or '<'")
        return Requirement(key, ops[kind], (self._exact(),))

    def _exact(self) -> str:
        kind, lit = self._peek()
        if kind in ("end", ","):
            return ""
        self._take()
        if kind != "id":
            raise self._error(lit, "identifier")
        return lit

    def _set(self) -> tuple[str, ...]:
        kind, lit = self._take()
        if kind != "(":
            raise self._error(lit, "'('")
        values, current = [], ""  # an empty item (`(,x)`, `(x,)`, `()`) is the empty value
        while True:
            kind, lit = self._take()
            if kind == ")":
                values.append(current)
                return _dedupe(values)
            if kind == ",":
                values.append(current)
                current = ""
            elif kind == "id" and not current:
                current = lit
            else:
                raise self._error(lit, "',', ')' or identifier")


# -- field selectors ----------------------------------------------------------------------------

def escape_field_value(value: str) -> str:
    r"""``fields.EscapeValue``: ``\``, ``,`` and ``=`` escaped with a backslash."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(text: str, selector: str) -> str:
    out: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch} in {selector!r}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped character {ch!r} in {selector!r}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError(f"invalid field selector: invalid escape sequence: \\ in {selector!r}")
    return "".join(out)


def _split_unescaped_commas(text: str) -> list[str]:
    parts, start, i = [], 0, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == ",":
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


@dataclass(frozen=True)
class FieldRequirement:
    """``field=value`` (or ``==``), or ``field!=value`` when ``negate``."""

    field: str
    value: str
    negate: bool = False

    def matches(self, actual: str) -> bool:
        """Does the object's value of ``field`` (as the API server renders it: ``""`` when unset,
        ``true``/``false`` for booleans) satisfy this term?"""
        return (actual == self.value) != self.negate

    def __str__(self) -> str:
        return f"{self.field}{'!=' if self.negate else '='}{escape_field_value(self.value)}"


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector (terms ANDed; none selects everything). Which fields exist is per
    resource and up to the caller (the API server's field label conversion)."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.requirements

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.field for r in self.requirements))

    def matches(self, value_of: Callable[[str], str]) -> bool:
        """Every term holds, ``value_of(field)`` giving an object's value of each field."""
        return all(r.matches(value_of(r.field)) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def parse_field_selector(text: str) -> FieldSelector:
    r"""``fields.ParseSelector``: ``a=b,c==d,e!=f``, values escaped with ``\`` (``\,`` ``\=`` ``\\``);
    the first operator in a term splits it, field names are stripped of surrounding spaces."""
    if not isinstance(text, str):
        raise SelectorError(f"a field selector is a str, not {type(text).__name__}")
    reqs: list[FieldRequirement] = []
    for part in _split_unescaped_commas(text):
        if not part.strip():
            continue
        m = re.search(r"!=|==|=", part)
        name = part[: m.start()].strip() if m else ""
        if m is None or not name or "\\" in name:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        value = _unescape_field_value(part[m.end():], text)
        reqs.append(FieldRequirement(name, value, m.group() == "!="))
    return FieldSelector(tuple(reqs))
