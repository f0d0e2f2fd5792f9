"""``sleuth keys``: the identity key pairs and the authz-cache key, as files (kept on re-runs, never
rotated) or as a Kubernetes Secret. The keys are checked with the code the services use to load
them (``sleuth_common.identity``'s settings loaders), not by looking at the PEM headers."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from sleuth.cli import main as cli_main
from sleuth.commands.keys import CACHE_KEY, SIGNERS, ensure_keys
from sleuth.embedded.stack import IDENTITY_SIGNERS
from sleuth_common.config import IdentitySettings
from sleuth_common.identity import (
    IdentityError,
    job_verifier_from_settings,
    signer_from_settings,
    verifier_from_settings,
)

FILES = {"agent.key", "agent.pub", "authz.key", "authz.pub", "alerts.key", "alerts.pub", "chat.key", "chat.pub",
         "scheduler.key", "scheduler.pub", "reporter.key", "reporter.pub", CACHE_KEY}
PRIVATE = {"agent.key", "authz.key", "alerts.key", "chat.key", "scheduler.key", "reporter.key", CACHE_KEY}
JOB_ISSUERS = {"authz": "sleuth-authz", "alerts": "sleuth-alerts", "chat": "sleuth-chat",
               "scheduler": "sleuth-scheduler", "reporter": "sleuth-reporter"}
"""The pairs that sign jobs for the agent, and their issuers (``identity.job_issuers``)."""


def test_the_pairs_are_the_ones_the_stack_signs_with() -> None:
    assert set(SIGNERS) == set(IDENTITY_SIGNERS.values())


def sleuth_keys(*args: str) -> subprocess.CompletedProcess[str]:
    """``sleuth keys ARGS`` in this process (the CLI's own ``main``; a usage error exits 2 as
    argparse does); ``test_the_command_runs_as_installed`` runs the real console entry once."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(["keys", *args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(["sleuth", "keys", *args], code, out.getvalue(), err.getvalue())


def test_the_command_runs_as_installed(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "sleuth.cli", "keys", "--out", str(tmp_path / "k")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert FILES <= {p.name for p in (tmp_path / "k").iterdir()}


def contents(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.iterdir()}


def assert_usable(d: Path) -> None:
    """What the services do with these files: the agent signs for kube-mcp; authz-cache, alerts,
    the gateway (chat users) and the scheduler (a schedule's owner) sign jobs for the agent; each
    key verifies only its own issuer's assertions."""
    no_env = {"signing_key_env": "", "verify_keys_env": ""}

    def signer(name: str, issuer: str):  # type: ignore[no-untyped-def]
        s = signer_from_settings(IdentitySettings(signing_key_file=str(d / name), **no_env), issuer=issuer)
        assert s is not None
        return s

    kube_mcp = verifier_from_settings(IdentitySettings(verify_key_files=[str(d / "agent.pub")], **no_env),
                                      "kube-mcp/demo")
    assert kube_mcp is not None
    token = signer("agent.key", "sleuth-agent").mint("alice", ["team-a"], audience="kube-mcp/demo")
    assert kube_mcp.verify(token).user == "alice"
    with pytest.raises(IdentityError):  # another pair's key is not the agent's
        kube_mcp.verify(signer("authz.key", "sleuth-agent").mint("alice", audience="kube-mcp/demo"))

    agent = job_verifier_from_settings(IdentitySettings(
        job_issuers={issuer: [str(d / f"{pair}.pub")] for pair, issuer in JOB_ISSUERS.items()}, **no_env))
    assert agent is not None
    for pair, issuer in JOB_ISSUERS.items():
        assert agent.verify(signer(f"{pair}.key", issuer).mint("bob", audience="sleuth-agent")).issuer == issuer
        for other in set(JOB_ISSUERS.values()) - {issuer}:  # a key is bound to its issuer
            with pytest.raises(IdentityError):
                agent.verify(signer(f"{pair}.key", other).mint("bob", audience="sleuth-agent"))

    assert len(base64.urlsafe_b64decode((d / CACHE_KEY).read_text() + "==")) == 32


def test_out_writes_every_file_private_ones_0600(tmp_path: Path) -> None:
    out = tmp_path / "identity"
    proc = sleuth_keys("--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == FILES
    assert sorted(line.split()[0] for line in proc.stdout.splitlines()) == ["created"] * len(FILES)
    assert out.stat().st_mode & 0o777 == 0o700
    for p in out.iterdir():
        assert p.stat().st_mode & 0o777 == (0o600 if p.name in PRIVATE else 0o644), p.name
    assert_usable(out)


def test_rerun_keeps_every_file(tmp_path: Path) -> None:
    out = tmp_path / "identity"
    assert sleuth_keys("--out", str(out)).returncode == 0
    before = contents(out)
    proc = sleuth_keys("--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert contents(out) == before
    assert sorted(line.split()[0] for line in proc.stdout.splitlines()) == ["kept"] * len(FILES)


def test_a_lost_public_key_is_derived_again_not_rotated(tmp_path: Path) -> None:
    out = tmp_path / "identity"
    assert sleuth_keys("--out", str(out)).returncode == 0
    before = contents(out)
    (out / "authz.pub").unlink()
    (out / CACHE_KEY).write_text("")  # empty: nothing to keep
    proc = sleuth_keys("--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"created  {out / 'authz.pub'} (from authz.key)" in proc.stdout
    after = contents(out)
    assert after["authz.pub"] == before["authz.pub"]
    assert {k for k in FILES if after[k] != before[k]} == {CACHE_KEY}
    assert_usable(out)


@pytest.mark.parametrize("pair", ["chat", "scheduler", "reporter"])
def test_a_directory_of_an_older_release_gets_only_the_new_pair(tmp_path: Path, pair: str) -> None:
    """Keys made before the gateway signed for chat users (``chat``), or before the scheduler
    signed for schedule owners (``scheduler``): a re-run (as the upgrade notes say) adds that pair
    and rotates nothing, in the Secret as in the directory."""
    out = tmp_path / "identity"
    assert sleuth_keys("--out", str(out)).returncode == 0
    (out / f"{pair}.key").unlink()
    (out / f"{pair}.pub").unlink()
    before = contents(out)
    proc = sleuth_keys("--out", str(out), "--secret", "sleuth-identity")
    assert proc.returncode == 0, proc.stderr
    created = sorted(line.split()[1] for line in proc.stderr.splitlines() if line.startswith("created"))
    assert created == [str(out / f"{pair}.key"), str(out / f"{pair}.pub")]
    after = contents(out)
    assert {k: after[k] for k in before} == before
    assert (out / f"{pair}.key").stat().st_mode & 0o777 == 0o600
    assert {k: v.encode() for k, v in load_secret(proc.stdout, tmp_path)["stringData"].items()} == after


@pytest.mark.parametrize("damage", ["lost private key", "mismatched pair", "unreadable key"])
def test_refuses_what_it_cannot_keep_and_changes_nothing(tmp_path: Path, damage: str) -> None:
    out, other = tmp_path / "identity", tmp_path / "other"
    assert sleuth_keys("--out", str(out)).returncode == 0
    assert sleuth_keys("--out", str(other)).returncode == 0
    if damage == "lost private key":
        (out / "alerts.key").unlink()
    elif damage == "mismatched pair":
        (out / "agent.pub").write_bytes((other / "agent.pub").read_bytes())
    else:
        (out / "authz.key").write_text("not a key\n")
    (out / CACHE_KEY).unlink()
    before = contents(out)
    proc = sleuth_keys("--out", str(out))
    assert proc.returncode == 1
    assert proc.stderr.startswith("sleuth keys: ") and "remove" in proc.stderr
    assert contents(out) == before  # not even the missing authz-cache-key was made


def test_modes_hold_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        ensure_keys(tmp_path / "identity", lambda line: None)
    finally:
        os.umask(old)
    for name in PRIVATE:
        assert (tmp_path / "identity" / name).stat().st_mode & 0o777 == 0o600, name


def load_secret(text: str, tmp_path: Path) -> dict[str, str]:
    docs = list(yaml.safe_load_all(text))
    assert len(docs) == 1
    doc = docs[0]
    assert kubernetes_validate.validate(doc, "1.30", strict=True)
    assert (doc["apiVersion"], doc["kind"], doc["type"]) == ("v1", "Secret", "Opaque")
    data: dict[str, str] = doc["stringData"]
    assert set(data) == FILES
    d = tmp_path / "from-secret"
    d.mkdir()
    for name, value in data.items():
        (d / name).write_text(value)
    assert_usable(d)
    return doc


def test_secret_prints_a_manifest_of_new_keys(tmp_path: Path) -> None:
    proc = sleuth_keys("--secret", "sleuth-identity", "--namespace", "sleuth")
    assert proc.returncode == 0, proc.stderr
    doc = load_secret(proc.stdout, tmp_path)
    assert doc["metadata"]["name"] == "sleuth-identity" and doc["metadata"]["namespace"] == "sleuth"
    assert "rotates" in proc.stderr  # new keys every time: applying it over an old Secret rotates
    again = yaml.safe_load(sleuth_keys("--secret", "sleuth-identity").stdout)
    assert "namespace" not in again["metadata"]
    assert again["stringData"]["agent.key"] != doc["stringData"]["agent.key"]


def test_secret_with_out_carries_the_files_and_is_stable(tmp_path: Path) -> None:
    out = tmp_path / "identity"
    first = sleuth_keys("--out", str(out), "--secret", "sleuth-identity")
    assert first.returncode == 0, first.stderr
    assert "created" in first.stderr and "rotates" not in first.stderr
    doc = load_secret(first.stdout, tmp_path)
    assert {k: v.encode() for k, v in doc["stringData"].items()} == contents(out)
    second = sleuth_keys("--out", str(out), "--secret", "sleuth-identity")
    assert second.returncode == 0 and second.stdout == first.stdout
    assert "kept" in second.stderr


@pytest.mark.parametrize("args", [(), ("--out", "x", "--namespace", "sleuth"), ("--secret", "Sleuth_Identity"),
                                  ("--secret", "sleuth-idéntity"), ("--secret", "s", "--namespace", "-bad"),
                                  ("--secret", "s", "--namespace", "a.b")])
def test_usage_errors(args: tuple[str, ...]) -> None:
    proc = sleuth_keys(*args)
    assert proc.returncode == 2 and proc.stdout == ""
