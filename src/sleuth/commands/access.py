"""``sleuth access``: the NATS users and the Redis ACL of a deployment, for its operator.

    sleuth access nats [--prefix sleuth]
        the ``authorization { users = [...] }`` block for nats-server's config. Passwords are
        references to nats-server's environment (``$SLEUTH_NATS_PASSWORD_GATEWAY`` …), so the
        file holds no secret; give each service its own as ``SLEUTH_NATS_PASSWORD``.
    sleuth access redis [--prefix sleuth]
        a Redis/Valkey ACL file (``aclfile``): ``default`` off, one user per service, passwords
        as SHA-256 of ``SLEUTH_REDIS_PASSWORD_<SERVICE>`` from this command's environment.

The same tables the embedded stack (``sleuth up``) uses, from ``sleuth.embedded.access``.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["register"]


def _env_name(kind: str, user: str) -> str:
    return f"SLEUTH_{kind}_PASSWORD_{user.upper().replace('-', '_')}"


def _cmd_access(args: argparse.Namespace) -> int:
    from sleuth.embedded.access import AUDIT_USER, SERVICES, nats_authorization, redis_acl_file

    if args.what == "nats":
        refs = {u: _env_name("NATS", u) for u in (*SERVICES, AUDIT_USER)}
        sys.stdout.write(nats_authorization(refs, args.prefix, env_refs=True))
        return 0
    missing = [_env_name("REDIS", u) for u in SERVICES if not os.environ.get(_env_name("REDIS", u))]
    if missing:
        print(f"sleuth access: set {', '.join(missing)} (each service's Redis password)", file=sys.stderr)
        return 2
    sys.stdout.write(redis_acl_file({u: os.environ[_env_name("REDIS", u)] for u in SERVICES}, args.prefix))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "access",
        help="print the NATS users and permissions, or the Redis ACL file, of a deployment",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("what", choices=["nats", "redis"], help="which server's configuration to print")
    p.add_argument("--prefix", default="sleuth", help="the deployment's subject and key prefix")
    p.set_defaults(func=_cmd_access)
