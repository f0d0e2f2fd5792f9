"""Label and field selectors: parsed, printed and matched as the API server does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth_common.k8s import (
    FieldRequirement,
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectorError,
    as_label_selector,
    escape_field_value,
    parse_field_selector,
    parse_label_selector,
    selects,
)

WEB = {"app": "web", "tier": "front"}
CANARY = {"app": "web", "tier": "front", "canary": "true", "rank": "7"}
API = {"app": "api", "tier": "back", "rank": "12"}
JOB = {"job-name": "migrate", "example.com/team": "a"}
BARE: dict[str, str] = {}
LABELS = {"web": WEB, "canary": CANARY, "api": API, "job": JOB, "bare": BARE}


@dataclass(frozen=True)
class Case:
    selector: str
    selected: tuple[str, ...]
    printed: str | None = None  # str(parse(selector)) when it differs from the selector


CASES = [
    Case("", ("web", "canary", "api", "job", "bare")),
    Case("   ", ("web", "canary", "api", "job", "bare"), ""),
    Case("app=web", ("web", "canary")),
    Case("app==web", ("web", "canary"), "app=web"),
    Case("app!=web", ("api", "job", "bare")),
    Case("app in (web,api)", ("web", "canary", "api")),
    Case("app in (web, api)", ("web", "canary", "api"), "app in (web,api)"),
    Case("app  in(web)", ("web", "canary"), "app in (web)"),
    Case("app notin (web)", ("api", "job", "bare")),
    Case("canary", ("canary",)),
    Case("!canary", ("web", "api", "job", "bare")),
    Case("! canary", ("web", "api", "job", "bare"), "!canary"),
    Case("app=web,!canary", ("web",)),
    Case(" app = web , tier in ( front , back ) ", ("web", "canary"), "app=web,tier in (front,back)"),
    Case("tier in (front,back),app!=api", ("web", "canary")),
    Case("example.com/team=a", ("job",)),
    Case("job-name", ("job",)),
    Case("app=", ()),
    Case("app in (,web)", ("web", "canary")),
    Case("app notin ()", ("web", "canary", "api", "job", "bare")),
    Case("rank>5", ("canary", "api")),
    Case("rank<10", ("canary",)),
    Case("a=b,c!=d,e in (x,y),f notin (z),g,!h", ()),
    Case("in in (in)", ()),
]


@pytest.mark.parametrize("case", CASES, ids=[c.selector or "empty" for c in CASES])
def test_string_selectors(case: Case) -> None:
    sel = LabelSelector.parse(case.selector)
    assert tuple(name for name, labels in LABELS.items() if sel.matches(labels)) == case.selected
    assert str(sel) == (case.selector if case.printed is None else case.printed)
    assert parse_label_selector(str(sel)) == sel


BAD = [
    "app in web", "app in (web", "app in (web,", "=web", "app web", "app=web,,", "app=web,", ",app", "(app)",
    "app=web=x", "app in (a b)", "app in (a)(b)", "!app=web", "!", "!!app", "app=(web)", "app>x", "app>-1",
    "app-=web", "-app", "app=web-", "a/b/c=d", "/a=b", "Example.com/a=b", "app=" + "v" * 64, "a" * 64,
    "app=we b", "app=web;x",
]


@pytest.mark.parametrize("text", BAD)
def test_bad_string_selectors_are_refused(text: str) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.parse(text)


@dataclass(frozen=True)
class DictCase:
    name: str
    selector: dict[str, Any]
    text: str
    selected: tuple[str, ...]


DICT_CASES = [
    DictCase("empty selects everything", {}, "", ("web", "canary", "api", "job", "bare")),
    DictCase("null fields are absent", {"matchLabels": None, "matchExpressions": None}, "",
             ("web", "canary", "api", "job", "bare")),
    DictCase("matchLabels", {"matchLabels": {"app": "web", "tier": "front"}}, "app=web,tier=front",
             ("web", "canary")),
    DictCase("expressions", {"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["front", "back"]},
        {"key": "canary", "operator": "DoesNotExist"},
    ]}, "tier in (front,back),!canary", ("web", "api")),
    DictCase("both", {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "canary", "operator": "Exists"},
        {"key": "tier", "operator": "NotIn", "values": ["back"]},
    ]}, "app=web,canary,tier notin (back)", ("canary",)),
]


@pytest.mark.parametrize("case", DICT_CASES, ids=[c.name for c in DICT_CASES])
def test_dict_selectors(case: DictCase) -> None:
    sel = LabelSelector.parse(case.selector)
    assert sel == LabelSelector.from_dict(case.selector)
    assert str(sel) == case.text
    assert tuple(name for name, labels in LABELS.items() if sel.matches(labels)) == case.selected
    assert LabelSelector.from_dict(sel.to_dict()) == sel


@pytest.mark.parametrize("selector", [
    {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
    {"matchExpressions": [{"key": "a", "operator": "In"}]},
    {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
    {"matchExpressions": [{"operator": "Exists"}]},
    {"matchExpressions": "a"},
    {"matchLabels": {"a": 1}},
    {"matchLabels": {"a b": "c"}},
    {"matchLabels": ["a"]},
    {"app": "web"},
])
def test_bad_dict_selectors_are_refused(selector: dict[str, Any]) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.from_dict(selector)


def test_none_selects_nothing_and_empty_selects_everything() -> None:
    for labels in LABELS.values():
        assert selects(None, labels) is False
        assert selects({}, labels) is True
        assert selects("", labels) is True
        assert LabelSelector().matches(labels)
    assert as_label_selector(None) is None
    assert LabelSelector().is_empty and LabelSelector.parse({}).is_empty
    assert not LabelSelector.parse("a").is_empty


def test_as_label_selector_takes_every_form() -> None:
    want = LabelSelector((Requirement("app", "=", ("web",)),))
    assert as_label_selector("app=web") == want
    assert as_label_selector({"matchLabels": {"app": "web"}}) == want
    assert as_label_selector({"app": "web"}) == want  # a Service's plain map
    assert as_label_selector(want) is want
    assert LabelSelector.from_map({"app": "web"}) == want
    with pytest.raises(SelectorError):
        as_label_selector(["app=web"])  # type: ignore[arg-type]
    assert selects({"app": "web"}, WEB) and not selects({"app": "web"}, API)
    assert selects("app=web", None) is False and selects("!app", None) is True


def test_matches_object_reads_metadata_labels() -> None:
    sel = LabelSelector.parse("app=web")
    assert sel.matches_object({"metadata": {"labels": WEB}})
    assert not sel.matches_object({"metadata": {}})
    assert LabelSelector.parse("!app").matches_object({})


def test_canonical_orders_like_the_api_server() -> None:
    sel = LabelSelector.parse("tier in (front,back),app=web,!canary")
    assert str(sel.canonical()) == "app=web,!canary,tier in (back,front)"
    assert sel.canonical().matches(WEB) == sel.matches(WEB)


def test_to_dict() -> None:
    sel = LabelSelector.parse("a=b,a=c,d!=e,f")
    assert sel.to_dict() == {"matchLabels": {"a": "b"}, "matchExpressions": [
        {"key": "a", "operator": "In", "values": ["c"]},
        {"key": "d", "operator": "NotIn", "values": ["e"]},
        {"key": "f", "operator": "Exists"},
    ]}
    with pytest.raises(SelectorError):
        LabelSelector.parse("a>1").to_dict()


def test_requirements_validate_on_construction() -> None:
    with pytest.raises(SelectorError):
        Requirement("a", "in", ())
    with pytest.raises(SelectorError):
        Requirement("a", "=", ("x", "y"))
    with pytest.raises(SelectorError):
        Requirement("a", "exists", ("x",))
    with pytest.raises(SelectorError):
        Requirement("a", "~", ())  # type: ignore[arg-type]
    with pytest.raises(SelectorError):
        Requirement("a", "in", "xy")  # type: ignore[arg-type]
    assert Requirement("a", "in", ["x"]).values == ("x",)  # type: ignore[arg-type]
    assert LabelSelector.parse("a in (x,x,y)").requirements[0].values == ("x", "y")
    assert hash(LabelSelector.parse("a=b")) == hash(LabelSelector.parse("a==b"))


def test_gt_lt_need_integer_labels() -> None:
    sel = LabelSelector.parse("rank>5")
    assert not sel.matches({"rank": "x"}) and not sel.matches({}) and sel.matches({"rank": "+6"})


# -- properties --------------------------------------------------------------------------------

_name = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?", fullmatch=True)
_prefix = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]{1,5}){0,2}", fullmatch=True)
_key = st.one_of(_name, st.builds(lambda p, n: f"{p}/{n}", _prefix, _name))
_value = st.one_of(st.just(""), _name)
_small = st.sampled_from(["a", "b", "c", "x/d"])  # few keys and values, so selectors hit labels
_small_value = st.sampled_from(["", "1", "v", "w"])


def _requirement(keys: st.SearchStrategy[str], values: st.SearchStrategy[str]) -> st.SearchStrategy[Requirement]:
    return st.one_of(
        st.builds(lambda k, v, op: Requirement(k, op, (v,)), keys, values, st.sampled_from(["=", "!="])),
        st.builds(lambda k, vs, op: Requirement(k, op, tuple(dict.fromkeys(vs))), keys,
                  st.lists(values, min_size=1, max_size=3), st.sampled_from(["in", "notin"])),
        st.builds(lambda k, op: Requirement(k, op), keys, st.sampled_from(["exists", "!"])),
        st.builds(lambda k, n, op: Requirement(k, op, (str(n),)), keys, st.integers(0, 10**6),
                  st.sampled_from(["gt", "lt"])),
    )


_selectors = st.builds(lambda rs: LabelSelector(tuple(rs)), st.lists(_requirement(_key, _value), max_size=5))
_small_selectors = st.builds(lambda rs: LabelSelector(tuple(rs)),
                             st.lists(_requirement(_small, _small_value), max_size=4))
_labels = st.dictionaries(_small, st.one_of(_small_value, st.integers(0, 3).map(str)), max_size=4)


@given(_selectors)
def test_printed_selectors_parse_back(sel: LabelSelector) -> None:
    text = str(sel)
    assert LabelSelector.parse(text) == sel
    assert str(LabelSelector.parse(text)) == text


@given(_selectors, st.data())
def test_whitespace_between_tokens_changes_nothing(sel: LabelSelector, data: st.DataObject) -> None:
    def ws() -> str:
        return data.draw(st.sampled_from(["", " ", "  ", "\t", "\n"]))

    def spaced(r: Requirement) -> str:
        if r.operator == "exists":
            return f"{ws()}{r.key}{ws()}"
        if r.operator == "!":
            return f"{ws()}!{ws()}{r.key}{ws()}"
        if r.operator in ("in", "notin"):
            items = f"{ws()},{ws()}".join(r.values)
            return f"{ws()}{r.key} {ws()}{r.operator}{ws()}({ws()}{items}{ws()}){ws()}"
        op = {"=": data.draw(st.sampled_from(["=", "=="])), "!=": "!=", "gt": ">", "lt": "<"}[r.operator]
        return f"{ws()}{r.key}{ws()}{op}{ws()}{r.values[0]}{ws()}"

    assert LabelSelector.parse(",".join(spaced(r) for r in sel.requirements)) == sel


@given(st.dictionaries(_small, _small_value, max_size=4), _labels)
def test_match_labels_and_the_string_form_agree(match_labels: dict[str, str], labels: dict[str, str]) -> None:
    from_dict = LabelSelector.from_dict({"matchLabels": match_labels})
    from_text = LabelSelector.parse(",".join(f"{k}={v}" for k, v in match_labels.items()))
    expected = all(labels.get(k) == v for k, v in match_labels.items())
    assert from_dict.matches(labels) is from_text.matches(labels) is expected
    assert LabelSelector.from_map(match_labels).matches(labels) is expected


@given(_small_selectors, _labels)
def test_dict_form_string_form_and_canonical_select_alike(sel: LabelSelector, labels: dict[str, str]) -> None:
    expected = sel.matches(labels)
    assert sel.canonical().matches(labels) is expected
    assert LabelSelector.parse(str(sel)).matches(labels) is expected
    if not any(r.operator in ("gt", "lt") for r in sel.requirements):
        assert LabelSelector.from_dict(sel.to_dict()).matches(labels) is expected


@given(_small_selectors, _labels)
def test_each_requirement_and_its_negation_partition_labels(sel: LabelSelector, labels: dict[str, str]) -> None:
    negation = {"=": "!=", "!=": "=", "in": "notin", "notin": "in", "exists": "!", "!": "exists"}
    for r in sel.requirements:
        if r.operator in negation:
            assert r.matches(labels) != Requirement(r.key, negation[r.operator], r.values).matches(labels)  # type: ignore[arg-type]


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_selector_error(text: str) -> None:
    try:
        sel = LabelSelector.parse(text)
    except SelectorError:
        return
    assert LabelSelector.parse(str(sel)) == sel


# -- field selectors ---------------------------------------------------------------------------

@dataclass(frozen=True)
class FieldCase:
    text: str
    terms: tuple[tuple[str, str, bool], ...]
    printed: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    matches: bool = True


FIELD_CASES = [
    FieldCase("", ()),
    FieldCase("status.phase=Running", (("status.phase", "Running", False),), fields={"status.phase": "Running"}),
    FieldCase("status.phase==Running", (("status.phase", "Running", False),), "status.phase=Running",
              {"status.phase": "Running"}),
    FieldCase("status.phase!=Running", (("status.phase", "Running", True),), fields={"status.phase": "Running"},
              matches=False),
    FieldCase("spec.nodeName=", (("spec.nodeName", "", False),), fields={"spec.nodeName": ""}),
    FieldCase(" metadata.name = web ", (("metadata.name", " web ", False),), "metadata.name= web ",
              {"metadata.name": " web "}),
    FieldCase(r"metadata.name=a\,b\=c\\d,type=x", (("metadata.name", "a,b=c\\d", False), ("type", "x", False)),
              fields={"metadata.name": "a,b=c\\d", "type": "x"}),
    FieldCase("a=1,,b!=2", (("a", "1", False), ("b", "2", True)), "a=1,b!=2", {"a": "1", "b": "3"}),
]


@pytest.mark.parametrize("case", FIELD_CASES, ids=[c.text or "empty" for c in FIELD_CASES])
def test_field_selectors(case: FieldCase) -> None:
    sel = parse_field_selector(case.text)
    assert tuple((r.field, r.value, r.negate) for r in sel.requirements) == case.terms
    assert str(sel) == (case.text if case.printed is None else case.printed)
    assert parse_field_selector(str(sel)) == sel
    assert sel.matches(lambda name: case.fields.get(name, "")) is case.matches


@pytest.mark.parametrize("text", ["nonsense", "=x", r"a\b=c", "a=b=c", "a=b,c", r"a=\x", "a=b\\"])
def test_bad_field_selectors_are_refused(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_field_selector(text)


@given(st.lists(st.tuples(st.from_regex(r"[a-zA-Z][a-zA-Z.]{0,10}", fullmatch=True), st.text(max_size=8),
                          st.booleans()), max_size=4))
def test_field_selectors_print_and_parse_back(terms: list[tuple[str, str, bool]]) -> None:
    sel = FieldSelector(tuple(FieldRequirement(f, v, n) for f, v, n in terms))
    assert parse_field_selector(str(sel)) == sel


def test_escape_field_value() -> None:
    assert escape_field_value(r"a,b=c\d") == r"a\,b\=c\\d"
