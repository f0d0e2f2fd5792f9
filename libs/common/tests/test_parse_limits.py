"""Parsing a tool result (``parse_checked`` / ``parse_result``, and through ``filter_result``):
hostile input is refused with a reason instead of crashing or stalling, YAML's non-JSON types come
out as plain JSON, and the formats servers really answer in (NDJSON, several YAML documents,
Markdown with fenced JSON/YAML, a BOM) are read as structured data."""

from __future__ import annotations

import json
import math
import os
import string
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.scope import Scope, _parse, filter_result, parse_result
from sleuth_common.scope._parse import MAX_ALIASES, MAX_DEPTH, Parsed, parse_checked

ALICE = Scope.of(["team-a"])
EXAMPLES = int(os.environ.get("SLEUTH_HYPOTHESIS_EXAMPLES", "1500"))


def billion_laughs(levels: int = 8, fan: int = 9) -> str:
    """A few hundred bytes that expand to ``fan ** levels`` strings."""
    lines = ["a: &a [" + ",".join(['"lol"'] * fan) + "]"]
    prev = "a"
    for name in "bcdefghijklmnop"[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * fan) + "]")
        prev = name
    return "\n".join(lines) + "\nnamespace: team-a\n"


def merge_bomb(levels: int = 30) -> str:
    """Merge keys doubling a mapping at every level (``<<: [*x, *x]``)."""
    lines = ["l0: &l0 {k: 1}"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i}\n  <<: [*l{i - 1}, *l{i - 1}]\n  own{i}: 1")
    return "\n".join(lines) + "\nnamespace: team-a\n"


def plain_json(value: Any) -> bool:
    """Only dict (string keys) / list / str / int / finite float / bool / None, at every depth."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return False
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, float):
            if not math.isfinite(v):
                return False
        elif not (v is None or isinstance(v, str | int | bool)):
            return False
    return True


# -- crashes and stalls ------------------------------------------------------------------------
@dataclass(frozen=True)
class Refused:
    name: str
    text: str
    says: str


REFUSED = [
    Refused("json 5000 deep", "[" * 5000 + "]" * 5000, "levels deep"),
    Refused("json objects 3000 deep", '{"a":' * 3000 + "1" + "}" * 3000, "levels deep"),
    Refused("json one level too deep", "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "levels deep"),
    Refused("ndjson with a deep line", '{"a": 1}\n' + "[" * 3000 + "]" * 3000, "levels deep"),
    Refused("yaml flow 900 deep", "a: " + "[" * 900 + "]" * 900, "levels deep"),
    Refused("yaml block 150 deep", "".join(f"{'  ' * i}k{i}:\n" for i in range(150)) + "  " * 150 + "v: 1\n",
            "levels deep"),
    Refused("billion laughs", billion_laughs(), "YAML aliases"),
    Refused("billion laughs within the alias count", billion_laughs(levels=6, fan=8), "expand to too much"),
    Refused("merge-key bomb", merge_bomb(), "YAML aliases"),
    Refused("merge-key bomb within the alias count", merge_bomb(levels=20), "expand to too much"),
    Refused("alias to itself", "a: &a [1, *a]\nnamespace: team-a\n", "refers to itself"),
    Refused("few aliases of a big string", 'a: &a "' + "x" * 300_000 + '"\nb: [' + ", ".join(["*a"] * 10) + "]\n",
            "expand to too much"),
    Refused("fenced bomb", "Result:\n```yaml\n" + billion_laughs() + "```\n", "YAML aliases"),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c.name for c in REFUSED])
def test_hostile_input_is_refused_with_a_reason(case: Refused) -> None:
    got = parse_checked(case.text)
    assert not got.structured and got.data == case.text
    assert case.says in got.refused
    assert parse_result(case.text) == (case.text, False)


def test_refusal_is_withheld_by_the_filter_and_never_raises() -> None:
    # The filter leaves JSON depth to its walk, whose own limit (200 levels) withholds instead;
    # "one level too deep" for the parser is within it, so it is checked one level past the walk's.
    from sleuth_common.scope._walk import MAX_DEPTH as WALK_DEPTH

    past_walk = "[" * (WALK_DEPTH + 2) + '"lol"' + "]" * (WALK_DEPTH + 2)
    for case in [*(c for c in REFUSED if c.name != "json one level too deep"), Refused("past the walk", past_walk, "")]:
        out = filter_result(case.text, ALICE)
        assert out.outcome == "withheld" and out.data is None, case.name
        assert "lol" not in out.text


def test_aliases_within_the_budget_are_read_and_copied() -> None:
    uses = ", ".join(["*p"] * (MAX_ALIASES - 1))
    text = f"base: &p {{port: 80, namespace: team-a}}\nports: [{uses}]\n"
    got = parse_checked(text)
    assert got.structured and not got.refused
    assert len(got.data["ports"]) == MAX_ALIASES - 1
    got.data["ports"][0]["port"] = 1  # the walk edits in place: aliases must not stay shared
    assert got.data["ports"][1]["port"] == 80 and got.data["base"]["port"] == 80
    too_many = f"base: &p {{port: 80}}\nports: [{uses}, *p, *p]\nnamespace: team-a\n"
    assert "aliases" in parse_checked(too_many).refused


def test_merge_keys_are_applied() -> None:
    got = parse_checked("defaults: &d {image: nginx, namespace: team-a}\napp:\n  <<: *d\n  replicas: 2\n")
    assert got.data["app"] == {"image": "nginx", "namespace": "team-a", "replicas": 2}


def test_depth_just_inside_the_limit_is_structured() -> None:
    depth = MAX_DEPTH - 2  # inside a list inside an object
    text = json.dumps({"items": [json.loads("[" * depth + "]" * depth)]})
    got = parse_checked(text)
    assert got.structured and not got.refused


# -- non-JSON YAML -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Converted:
    name: str
    yaml: str
    expect: dict[str, Any]


CONVERTED = [
    Converted("binary stays base64 text", "namespace: team-a\ncert: !!binary |\n  aGVs\n  bG8=\n",
              {"namespace": "team-a", "cert": "aGVsbG8="}),
    Converted("timestamps stay as written", "namespace: team-a\nat: 2026-11-30T09:00:00Z\nday: 2026-11-30\n",
              {"namespace": "team-a", "at": "2026-11-30T09:00:00Z", "day": "2026-11-30"}),
    Converted("set becomes a list", "namespace: team-a\nnodes: !!set {n1, n2}\n",
              {"namespace": "team-a", "nodes": ["n1", "n2"]}),
    Converted("omap and pairs become lists", "namespace: team-a\no: !!omap [a: 1, b: 2]\np: !!pairs [a: 1, a: 2]\n",
              {"namespace": "team-a", "o": [{"a": 1}, {"b": 2}], "p": [{"a": 1}, {"a": 2}]}),
    Converted("python tags are plain data", "namespace: team-a\nx: !!python/object/apply:os.system [echo hi]\n"
              "y: !!python/name:os.system\nz: !Ref {a: 1}\n",
              {"namespace": "team-a", "x": ["echo hi"], "y": "", "z": {"a": 1}}),
    Converted("keys become strings", "namespace: team-a\nm: {1: a, true: b, null: c, 1.5: d, [x, y]: e}\n",
              {"namespace": "team-a", "m": {"1": "a", "true": "b", "null": "c", "1.5": "d", '["x","y"]': "e"}}),
    Converted("non-finite floats become their text", "namespace: team-a\nv: [.nan, .inf, -.inf, 1.5]\n",
              {"namespace": "team-a", "v": [".nan", ".inf", "-.inf", 1.5]}),
    Converted("huge integers stay text", f"namespace: team-a\nn: {'9' * 5000}\n",
              {"namespace": "team-a", "n": "9" * 5000}),
]


@pytest.mark.parametrize("case", CONVERTED, ids=[c.name for c in CONVERTED])
def test_yaml_types_come_out_as_plain_json(case: Converted) -> None:
    got = parse_checked(case.yaml)
    assert got.structured and not got.refused
    assert got.data == case.expect
    assert plain_json(got.data)
    json.dumps(got.data, allow_nan=False)


def test_json_non_finite_numbers_come_out_as_text() -> None:
    got = parse_checked('{"a": NaN, "b": Infinity, "c": 1e999, "d": 2.5}')
    assert got.data == {"a": "NaN", "b": "Infinity", "c": "1e999", "d": 2.5}


# -- formats -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Format:
    name: str
    text: str
    expect: Any
    prose: str = ""


FORMATS = [
    Format("ndjson", '{"namespace": "team-a", "msg": "a"}\n\n{"namespace": "team-b", "msg": "b"}\n',
           [{"namespace": "team-a", "msg": "a"}, {"namespace": "team-b", "msg": "b"}]),
    Format("concatenated json", '{\n  "namespace": "team-a"\n}\n[\n  1\n]\n', [{"namespace": "team-a"}, [1]]),
    Format("multi-document yaml", "---\nmetadata:\n  namespace: team-a\n---\nmetadata:\n  namespace: team-b\n...\n",
           [{"metadata": {"namespace": "team-a"}}, {"metadata": {"namespace": "team-b"}}]),
    Format("fenced json in markdown", 'Here are the pods:\n\n```json\n[{"namespace": "team-b", "name": "pay-1"}]\n```\n'
           "pay-1 looks unhealthy.\n", [{"namespace": "team-b", "name": "pay-1"}],
           "Here are the pods:\npay-1 looks unhealthy."),
    Format("two fenced blocks", "A:\n```yaml\n- namespace: team-a\n```\nB:\n~~~\n{\"namespace\": \"team-b\"}\n~~~\n",
           [[{"namespace": "team-a"}], {"namespace": "team-b"}], "A:\nB:"),
    Format("json with a bom", '\ufeff{"metadata": {"namespace": "team-a"}}', {"metadata": {"namespace": "team-a"}}),
    Format("yaml after a comment line", "# The following pods were found:\n- name: a\n  Namespace: team-a\n",
           [{"name": "a", "Namespace": "team-a"}]),
]


@pytest.mark.parametrize("case", FORMATS, ids=[c.name for c in FORMATS])
def test_formats_are_structured(case: Format) -> None:
    got = parse_checked(case.text)
    assert got == Parsed(case.expect, True, "", case.prose)


@pytest.mark.parametrize("text", [
    "ERROR: boom",
    "2026-11-30T09:00:00Z GET /healthz 200\n2026-11-30T09:00:01Z GET /healthz 200\n",
    "[INFO] started\n[INFO] ready\n",
    '{"a": 1}\nnot json\n',
    "a: 1\n---\nb:\n  c: 2\n",  # one document is a log-like line
    "Run this:\n```bash\nkubectl get pods -n team-b\n```\n",
    "Unclosed:\n```json\n{\"namespace\": \"team-a\"}\n",
    "",
])
def test_text_stays_text(text: str) -> None:
    assert parse_checked(text) == Parsed(text, False)


def test_fenced_data_is_filtered_and_unpinned_prose_is_not_shown() -> None:
    text = ('Found:\n```json\n[{"metadata": {"namespace": "team-a", "name": "api-1"}},'
            ' {"metadata": {"namespace": "team-b", "name": "pay-1"}}]\n```\nsecret-pod in team-b is failing\n')
    out = filter_result(text, ALICE)
    assert out.outcome == "filtered" and "api-1" in out.text
    assert "pay-1" not in out.text and "secret-pod" not in out.text and "team-b" not in out.text


def test_long_yaml_is_refused_but_a_long_log_stays_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parse, "MAX_YAML_CHARS", 2_000)
    manifests = "items:\n" + "".join(f"- metadata:\n    name: p{i}\n    namespace: team-a\n" for i in range(200))
    got = parse_checked(manifests)
    assert not got.structured and "more YAML than can be read in time (2000 characters" in got.refused
    log = "".join(f"2026-11-30T09:00:{i % 60:02d}Z level=info msg=ready n={i}\n" for i in range(200))
    assert parse_checked(log) == Parsed(log, False)


def test_yaml_with_too_many_values_is_refused_before_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parse, "MAX_YAML_VALUES", 1_000)
    short_but_dense = "ports:\n  - [" + ", ".join(["80"] * 2_000) + "]\n" + "  - [443]\n" * 10
    assert "more YAML than can be read" in parse_checked(short_but_dense).refused
    spread = "".join(f"---\nmetadata:\n  namespace: team-a\n  name: p{i}\n" for i in range(300))
    assert "more YAML than can be read" in parse_checked(spread).refused  # the budget covers all documents
    assert parse_checked(spread[: spread.index("---", 200)]).structured


def test_many_unclosed_fences_are_text() -> None:
    text = "```json\n{\n" * 20_000
    assert parse_checked(text) == Parsed(text, False)


# -- properties --------------------------------------------------------------------------------
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
YAMLISH = st.text(alphabet=st.sampled_from(list("&*[]{}:-!|>'\"#,?%@`\n\t ~<=") + list("ab01.x")), max_size=300)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),  # NaN, ±Infinity too
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=40,
)


def _nest(draw: st.DrawFn, value: Any) -> Any:
    for _ in range(draw(st.integers(0, 2 * MAX_DEPTH))):
        value = [value] if draw(st.booleans()) else {"k": value}
    return value


@st.composite
def documents(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["text", "yamlish", "json", "deep-json", "yaml", "deep-yaml", "ndjson", "fenced"]))
    if kind == "text":
        return draw(st.text(max_size=300))
    if kind == "yamlish":
        return draw(YAMLISH)
    value = draw(json_values)
    if kind == "deep-json":
        return json.dumps(_nest(draw, value))
    if kind == "json":
        return json.dumps(value)  # NaN / Infinity written as Python writes them
    if kind in ("yaml", "deep-yaml"):
        import yaml

        doc = _nest(draw, value) if kind == "deep-yaml" else value
        return yaml.safe_dump(doc, default_flow_style=draw(st.booleans()))
    if kind == "ndjson":
        return "\n".join(json.dumps(v) for v in draw(st.lists(json_values, min_size=2, max_size=4)))
    lang = draw(st.sampled_from(["json", "yaml", "", "bash"]))
    return f"{draw(st.text(string.printable, max_size=40))}\n```{lang}\n{json.dumps(value)}\n```\n{draw(YAMLISH)}"


@SETTINGS
@given(documents())
def test_parse_never_raises_and_gives_plain_json(text: str) -> None:
    got = parse_checked(text)
    if got.structured:
        assert plain_json(got.data)
        assert json.loads(json.dumps(got.data, allow_nan=False)) == got.data
        assert not got.refused
    else:
        assert got.data == text and not got.prose
    assert parse_result(text) == (got.data, got.structured)
