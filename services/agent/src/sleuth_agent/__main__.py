"""``python -m sleuth_agent --config FILE`` / ``sleuth-agent``."""

from __future__ import annotations

import argparse
import asyncio
import sys

from sleuth_agent.app import create_app
from sleuth_agent.settings import Settings
from sleuth_common.config import load_settings
from sleuth_common.health import run_until_signalled
from sleuth_common.identity import IdentityError, job_verifier_from_settings, signer_from_settings
from sleuth_common.logs import configure_logging
from sleuth_common.tracing import setup_tracing


def identity_problem(settings: Settings) -> str:
    """Why the agent cannot start ("" = fine): it must be able to check who each job is for, and
    to sign that identity for every server that reads as the asker."""
    try:
        verifier = job_verifier_from_settings(settings.identity)
    except IdentityError as e:
        return str(e)
    if verifier is None and settings.identity.require_job_identity:
        return (
            "no key to check who a job is for: set identity.job_issuers (issuer → public key files, "
            "e.g. sleuth-authz: [authz.pub]) or, on a bus nobody else can publish on, "
            "identity.require_job_identity: false"
        )
    needs = [f"{c.name}/{s.name}" for c in settings.clusters for s in c.mcp_servers if s.identity]
    if not needs:
        return ""
    try:
        signer = signer_from_settings(settings.identity)
    except IdentityError as e:
        return str(e)
    if signer is None:
        return (
            f"{', '.join(needs)} read as the asker and need a signed identity: set "
            "identity.signing_key_file (or the SLEUTH_IDENTITY_SIGNING_KEY environment variable)"
        )
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sleuth-agent", description="Sleuth investigation worker")
    parser.add_argument("--config", help="YAML config file (the stack's shared file)")
    args = parser.parse_args(argv)
    settings = load_settings(Settings, args.config)
    configure_logging(settings.logging)
    setup_tracing("sleuth-agent")
    if problem := identity_problem(settings):
        print(f"sleuth-agent: {problem}", file=sys.stderr)
        return 2
    app = create_app(settings)
    try:
        # The health server answers at once; the app waits for NATS until SIGTERM ends the wait.
        asyncio.run(run_until_signalled(app.start, app.stop))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
