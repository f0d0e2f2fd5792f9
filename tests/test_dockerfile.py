"""The image (Dockerfile): no Docker engine here, so its build stage's install step is run for
real in a scratch directory, exactly as written, and checked against what `make install` does;
the runtime stage is checked for what a platform team requires (non-root numeric user, no build
tools, an entrypoint that runs any service by name, OCI labels, no HEALTHCHECK)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".venv" / "bin" / "uv"
SERVICES = ("sleuth-gateway", "sleuth-agent", "sleuth-authz-cache", "sleuth-alerts", "sleuth-scheduler",
            "sleuth-reporter", "sleuth-kube-mcp", "sleuth-simcluster", "sleuth")


def _stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's stages as (instruction, arguments), continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, rest = line.partition(" ")
        if op.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((op.upper(), rest.strip()))
    return stages


def _env(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for op, rest in stage:
        if op == "ENV":
            for pair in shlex.split(rest):
                k, _, v = pair.partition("=")
                env[k] = v
    return env


def test_the_runtime_stage_is_what_a_platform_team_accepts() -> None:
    build, runtime = _stages()
    ops = [op for op, _ in runtime]
    assert "RUN" not in ops, "the runtime stage installs nothing: no compiler, no cache, no package manager"
    assert "HEALTHCHECK" not in ops, "probes come from the orchestrator"
    user = next(rest for op, rest in runtime if op == "USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) >= 10000, user
    copies = [rest for op, rest in runtime if op == "COPY"]
    assert any(c.startswith("--from=build /opt/sleuth ") for c in copies), copies
    labels = " ".join(rest for op, rest in runtime if op == "LABEL")
    for label in ("title", "description", "version", "source", "licenses"):
        assert f"org.opencontainers.image.{label}=" in labels
    assert next(rest for op, rest in runtime if op == "ENTRYPOINT") == '["/usr/local/bin/sleuth-entrypoint"]'
    assert _env(runtime)["PATH"].startswith("/opt/sleuth/bin:")
    assert build[0][1].split(" AS ")[0] == runtime[0][1].split(" AS ")[0], "both stages run the same Python"


def test_the_install_step_is_make_installs_and_runs_as_written(tmp_path: Path) -> None:
    build, _runtime = _stages()
    runs = [rest for op, rest in build if op == "RUN"]
    sync = next(r for r in runs if r.startswith("uv sync"))
    make_sync = re.search(r"\$\(UV\) (sync [^\n]*)", (ROOT / "Makefile").read_text())
    assert make_sync is not None
    make_flags = {f for f in make_sync.group(1).split() if f.startswith("--") and f != "--quiet"}
    assert make_flags <= set(sync.split()), f"the image installs what make install does: {make_flags} in {sync}"
    assert {"--no-dev", "--no-editable"} <= set(sync.split())
    pin = next(r for r in runs if "pip install" in r)
    installed = subprocess.run([str(UV), "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
    assert f'"uv=={installed}"' in pin, f"the image pins the uv `make install` uses ({installed})"
    # The COPY'd sources into a scratch directory, then the RUN line itself with the stage's env.
    for op, rest in build:
        if op == "COPY":
            *sources, _dest = rest.split()
            for src in sources:
                (shutil.copytree if (ROOT / src).is_dir() else shutil.copy)(ROOT / src, tmp_path / src)
    venv = tmp_path / "venv"
    env = {**os.environ, **_env(build), "UV_PROJECT_ENVIRONMENT": str(venv), "UV_COMPILE_BYTECODE": "0"}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run([str(UV), *shlex.split(sync)[1:], "--quiet"], cwd=tmp_path, env=env, check=True, timeout=300)
    for script in SERVICES:
        assert (venv / "bin" / script).is_file(), f"{script} is missing from the image's environment"
    assert not list((venv / "lib").glob("python*/site-packages/pytest")), "no dev tools in the image"
    out = subprocess.run([str(venv / "bin" / "sleuth"), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "investigate" in out.stdout
    # The entrypoint runs a service by name from that environment, and refuses anything else.
    entry = ROOT / "deploy" / "entrypoint.sh"
    path_env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    ok = subprocess.run(["sh", str(entry), "sleuth", "--help"], capture_output=True, text=True, env=path_env, timeout=60)
    assert ok.returncode == 0 and "investigate" in ok.stdout
    bad = subprocess.run(["sh", str(entry), "bash"], capture_output=True, text=True, env=path_env, timeout=10)
    assert bad.returncode == 64 and "sleuth-gateway" in bad.stderr


@pytest.mark.parametrize("needed", ["pyproject.toml", "uv.lock", "README.md", "libs/", "services/", "src/", "deploy/entrypoint.sh"])
def test_the_build_context_holds_what_the_build_copies_and_no_tests(needed: str) -> None:
    rules = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert rules[0] == "*", "everything is excluded unless named"
    assert f"!{needed}" in rules
    assert "**/tests/" in rules
