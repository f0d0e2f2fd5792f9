"""The agent refuses to start when a server reads as the asker and no signing key is usable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sleuth_agent.__main__ import identity_problem
from sleuth_agent.settings import Settings
from sleuth_common.identity import generate_keypair

KUBE = [{"name": "prod-1", "mcp_servers": [{"name": "kube", "identity": True}]}]
NO_JOBS = {"require_job_identity": False}  # these tests are about the kube-mcp signing key


def test_no_key_no_identity_servers_is_fine() -> None:
    assert identity_problem(Settings(clusters=[{"name": "p", "mcp_servers": [{"name": "kube"}]}],
                                            identity=NO_JOBS)) == ""


def test_a_missing_or_broken_key_is_named(tmp_path: Path) -> None:
    assert "signing_key_file" in identity_problem(Settings(clusters=KUBE, identity={"signing_key_env": "", **NO_JOBS}))
    missing = Settings(clusters=KUBE, identity={**NO_JOBS, "signing_key_env": "", "signing_key_file": str(tmp_path / "nope")})
    assert "cannot read the signing key" in identity_problem(missing)
    (tmp_path / "pub").write_bytes(generate_keypair()[1])  # a public key where the private one belongs
    wrong = Settings(clusters=KUBE, identity={**NO_JOBS, "signing_key_env": "", "signing_key_file": str(tmp_path / "pub")})
    assert "signing key" in identity_problem(wrong)
    (tmp_path / "key").write_bytes(generate_keypair()[0])
    ok = Settings(clusters=KUBE, identity={**NO_JOBS, "signing_key_env": "", "signing_key_file": str(tmp_path / "key")})
    assert identity_problem(ok) == ""


def test_the_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("clusters:\n  - name: prod-1\n    mcp_servers: [{name: kube, identity: true}]\n"
                   "identity: {signing_key_env: '', require_job_identity: false}\n")
    proc = subprocess.run([sys.executable, "-m", "sleuth_agent", "--config", str(cfg)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "prod-1/kube" in proc.stderr and "Traceback" not in proc.stderr


def test_without_job_issuers_the_agent_will_not_trust_the_bus(tmp_path: Path) -> None:
    problem = identity_problem(Settings())
    assert "job_issuers" in problem
    (tmp_path / "authz.pub").write_bytes(generate_keypair()[1])
    assert identity_problem(Settings(identity={"job_issuers": {"sleuth-authz": [str(tmp_path / "authz.pub")]}})) == ""
