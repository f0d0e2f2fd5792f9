"""``sleuth filter`` on hostile input: whatever arrives on stdin — binary, invalid UTF-8, JSON
thousands of levels deep, a YAML alias bomb, YAML's non-JSON types, a PromQL query that would
crash the native parser — gives exit 0 and one outcome line; a bad SCOPE.json gives exit 2 and
one line. Never a traceback. Runs the real CLI as a process, as an operator would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SCOPE = {"namespaces": ["team-a"], "cluster_wide": False, "ips": {}}


def run(tmp_path: Path, stdin: bytes, *args: str, scope: Any = SCOPE) -> subprocess.CompletedProcess[bytes]:
    path = tmp_path / "scope.json"
    if isinstance(scope, bytes):
        path.write_bytes(scope)
    else:
        path.write_text(scope if isinstance(scope, str) else json.dumps(scope))
    return subprocess.run(
        [sys.executable, "-m", "sleuth.cli", "filter", "--scope", str(path), *args],
        input=stdin, capture_output=True, timeout=60,
    )


def outcome(proc: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1
    body: dict[str, Any] = json.loads(lines[0])
    return body


def alias_bomb() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return ("\n".join(lines) + "\nnamespace: team-a\n").encode()


@dataclass(frozen=True)
class Hostile:
    name: str
    stdin: bytes
    args: tuple[str, ...] = ()


HOSTILE = [
    Hostile("binary garbage", bytes(range(256)) * 64),
    Hostile("invalid utf-8", b"\xff\xfe pay-1 \xc3\x28 \xed\xa0\x80 team-b/pay-1\n"),
    Hostile("nul bytes", b"\x00" * 1000),
    Hostile("deep json", b"[" * 5000 + b"]" * 5000),
    Hostile("deep json, pinned", b"[" * 5000 + b"]" * 5000, ("--namespace", "team-a")),
    Hostile("deep objects", b'{"a":' * 5000 + b"1" + b"}" * 5000),
    Hostile("alias bomb", alias_bomb()),
    Hostile("alias bomb, pinned", alias_bomb(), ("--namespace", "team-a")),
    Hostile("self-referencing alias", b"a: &a [*a]\nnamespace: team-a\n"),
    Hostile("deep yaml", b"a: " + b"[" * 990 + b"]" * 990),
    Hostile("fenced bomb", b"Config:\n```yaml\n" + alias_bomb() + b"```\n"),
    Hostile("many open fences", b"```json\n{\n" * 20_000),
]


@pytest.mark.parametrize("case", HOSTILE, ids=[c.name for c in HOSTILE])
def test_any_input_gives_one_outcome_line(tmp_path: Path, case: Hostile) -> None:
    body = outcome(run(tmp_path, case.stdin, *case.args))
    assert set(body) >= {"outcome", "result", "removed", "reason"}
    assert body["outcome"] in ("kept", "filtered", "withheld")
    assert json.dumps(body["result"]).count("lol") < 20  # an alias bomb is never expanded
    if not case.args:  # nothing here can be checked: withheld, with the caller's namespaces named
        assert body["outcome"] == "withheld" and body["result"] is None and "team-a" in body["reason"]


def test_yaml_types_that_are_not_json_come_out_as_json(tmp_path: Path) -> None:
    stdin = (b"metadata:\n  namespace: team-a\n  created: 2026-11-30T09:00:00Z\n"
             b"cert: !!binary aGVsbG8=\nnodes: !!set {n1, n2}\nx: !!python/object/apply:os.system [id]\n"
             b"m: {1: a, true: b}\nv: .nan\n")
    body = outcome(run(tmp_path, stdin))
    assert body["outcome"] == "kept"
    assert body["result"] == {
        "metadata": {"namespace": "team-a", "created": "2026-11-30T09:00:00Z"},
        "cert": "aGVsbG8=", "nodes": ["n1", "n2"], "x": ["id"], "m": {"1": "a", "true": "b"}, "v": ".nan",
    }


def test_invalid_utf8_is_read_with_replacement_characters(tmp_path: Path) -> None:
    body = outcome(run(tmp_path, b'[{"namespace": "team-a", "name": "api-\xff"}, {"namespace": "team-b"}]'))
    assert body["outcome"] == "filtered" and body["removed"] == 1
    assert body["result"] == [{"namespace": "team-a", "name": "api-\ufffd"}]


@pytest.mark.parametrize("query", [
    "(" * 10_000 + "up" + ")" * 10_000,  # the native parser overflows its stack on this
    "-" * 9_999 + "up",
    " + ".join(["up"] * 2_500),
    "sum(" * 1_000 + "up" + ")" * 1_000,
])
def test_promql_too_complex_is_refused_not_crashed(tmp_path: Path, query: str) -> None:
    proc = run(tmp_path, b"", f"--promql={query}")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    body = json.loads(proc.stdout)
    assert body["outcome"] == "refused" and "too complex" in body["reason"]


@pytest.mark.parametrize("scope", [
    b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
    ("{\"namespaces\": " + "[" * 5000 + "]" * 5000 + "}").encode(),
    b'{"namespaces": ["team-a"], "ips": {"10.0.0.1": ' + b"[" * 3000 + b"]" * 3000 + b"}}",
    b"",
    b"[]",
])
def test_bad_scope_file_is_one_line_exit_2(tmp_path: Path, scope: bytes) -> None:
    proc = run(tmp_path, b"{}", scope=scope)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("sleuth filter:") and err.count("\n") == 1, err


def test_scope_path_that_is_a_directory_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sleuth.cli", "filter", "--scope", os.fspath(tmp_path)],
        input=b"{}", capture_output=True, timeout=60,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("sleuth filter:") and err.count("\n") == 1, err
