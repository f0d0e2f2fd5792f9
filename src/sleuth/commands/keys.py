"""``sleuth keys``: the secrets a deployment needs, made once.

    sleuth keys --out DIR
        writes the Ed25519 identity key pairs ``agent.key agent.pub authz.key authz.pub alerts.key
        alerts.pub chat.key chat.pub scheduler.key scheduler.pub reporter.key reporter.pub`` (the
        agent signs the asker for kube-mcp; authz-cache a person's login, alerts a channel's
        alerts, the gateway a chat user it mapped, the scheduler a schedule's owner and the
        reporter a report's asker, for the agent) and ``authz-cache-key`` (the secret authz-cache replicas seal their Redis entries
        with). Private files are mode 0600 (DIR 0700 when made here). Files already there are
        kept, never replaced: a re-run does not rotate a key, and makes only what is missing (a
        pair added by a newer release); a key that cannot be kept as it is (unreadable, or its
        pair does not match) is refused, and nothing is written. Each line says created or kept.
    sleuth keys --secret NAME [--namespace NS]
        prints a Kubernetes Secret (type Opaque) with exactly those keys, for
        ``| kubectl apply -f -``. Alone it makes new keys every time (applying it over an existing
        Secret rotates them); with ``--out DIR`` it carries the files of DIR (made first if
        missing), so the same command can be run again safely.

Give each service only its own private key (``identity.signing_key_file`` or
``SLEUTH_IDENTITY__SIGNING_KEY_FILE``): ``agent.key`` to the agent, ``authz.key`` to authz-cache,
``alerts.key`` to alerts, ``chat.key`` to the gateway, ``scheduler.key`` to the scheduler,
``reporter.key`` to the reporter; the public keys go to kube-mcp (``agent.pub``) and the agent
(``authz.pub``, ``alerts.pub``, ``chat.pub``, ``scheduler.pub``, ``reporter.pub`` under
``identity.job_issuers``: issuers ``sleuth-authz``, ``sleuth-alerts``, ``sleuth-chat``,
``sleuth-scheduler``, ``sleuth-reporter``).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

__all__ = ["CACHE_KEY", "SIGNERS", "KeysError", "ensure_keys", "file_names", "new_keys", "register", "secret_manifest"]

CACHE_KEY = "authz-cache-key"
"""The authz-cache sealing secret (``SLEUTH_AUTHZ_CACHE_KEY``): 32 random bytes, URL-safe base64."""


class KeysError(Exception):
    """A file in the output directory cannot be kept as it is, and replacing it would rotate a key."""


SIGNERS = ("agent", "authz", "alerts", "chat", "scheduler", "reporter")
"""The key pairs, by signer: the same names as ``sleuth.embedded.stack.IDENTITY_SIGNERS`` (a test
keeps them equal; not imported from there, that module takes a second to import)."""


def file_names() -> list[str]:
    """Every file ``sleuth keys`` makes, in order: the key pairs, then ``authz-cache-key``."""
    return [*(f"{s}.{ext}" for s in SIGNERS for ext in ("key", "pub")), CACHE_KEY]


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode`` from the start; never overwrite (O_EXCL)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)  # whatever the umask
        f.write(data)


def _public_of(key: Path, pub: Path | None = None) -> bytes:
    """The public key PEM of the private key in ``key``, checked against the one in ``pub``."""
    from cryptography.hazmat.primitives import serialization

    from sleuth_common.identity import IdentityError, key_id, load_private_key, load_public_key

    try:
        public = load_private_key(key.read_bytes()).public_key()
    except IdentityError as e:
        raise KeysError(f"{key} is there but cannot be used ({e}); remove it to make a new pair") from e
    if pub is not None:
        try:
            same = key_id(load_public_key(pub.read_bytes())) == key_id(public)
        except IdentityError as e:
            raise KeysError(f"{pub} is there but cannot be used ({e}); remove it to derive it again") from e
        if not same:
            raise KeysError(f"{pub} is not the public key of {key.name}; remove the wrong one "
                            "(or both, for a new pair)")
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def ensure_keys(out: Path, say: Callable[[str], None]) -> dict[str, bytes]:
    """Make the missing files of ``out`` and keep the others (checked, never replaced); answers
    every file's content. Raises :class:`KeysError` where keeping a file is impossible and
    replacing it would rotate a key."""
    from sleuth_common.identity import generate_keypair

    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    pairs = [(out / f"{s}.key", out / f"{s}.pub") for s in SIGNERS]
    # Every check before the first write: a refusal leaves the directory as it was.
    derived: dict[Path, bytes] = {}
    for key, pub in pairs:
        if key.is_file():
            derived[key] = _public_of(key, pub if pub.is_file() else None)
        elif pub.is_file():
            raise KeysError(f"{pub} is there without {key.name} (the private key is lost): remove {pub.name} "
                            "to make a new pair, and give the new public key to every service that trusts it")
    for key, pub in pairs:
        if key in derived and pub.is_file():
            say(f"kept     {key}")
            say(f"kept     {pub}")
        elif key in derived:  # the public half follows from the private one: nothing rotates
            _write_new(pub, derived[key], 0o644)
            say(f"kept     {key}")
            say(f"created  {pub} (from {key.name})")
        else:
            private, public = generate_keypair()
            _write_new(key, private, 0o600)
            _write_new(pub, public, 0o644)
            say(f"created  {key}")
            say(f"created  {pub}")
    cache = out / CACHE_KEY
    if cache.is_file() and cache.read_text().strip():
        say(f"kept     {cache}")
    else:
        cache.unlink(missing_ok=True)  # an empty file holds no secret to keep
        _write_new(cache, secrets.token_urlsafe(32).encode(), 0o600)
        say(f"created  {cache}")
    for path in (*(out / f"{s}.key" for s in SIGNERS), cache):
        if path.stat().st_mode & 0o077:
            print(f"sleuth keys: warning: {path} is readable by others (chmod 600 {path})", file=sys.stderr)
    return {name: (out / name).read_bytes() for name in file_names()}


def new_keys() -> dict[str, bytes]:
    """Every file's content, made now (nothing written)."""
    from sleuth_common.identity import generate_keypair

    files: dict[str, bytes] = {}
    for signer in SIGNERS:
        files[f"{signer}.key"], files[f"{signer}.pub"] = generate_keypair()
    files[CACHE_KEY] = secrets.token_urlsafe(32).encode()
    return files


class _Dumper(yaml.SafeDumper):
    """PEM blocks as YAML literal blocks (``|``), readable as they are in the files."""


_Dumper.add_representer(str, lambda d, v: d.represent_scalar(
    "tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))


def secret_manifest(files: dict[str, bytes], name: str, namespace: str | None = None) -> str:
    """A ``v1/Secret`` (type Opaque) holding ``files`` under ``stringData``."""
    metadata: dict[str, object] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = {"app.kubernetes.io/name": "sleuth", "app.kubernetes.io/component": "identity"}
    doc = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque",
           "stringData": {k: v.decode() for k, v in files.items()}}
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False)


def _cmd_keys(args: argparse.Namespace) -> int:
    if not args.out and args.secret is None:
        args.parser.error("give --out DIR, --secret NAME, or both")
    if args.namespace and args.secret is None:
        args.parser.error("--namespace goes with --secret")
    to_stderr = args.secret is not None  # stdout carries the manifest then

    def say(line: str) -> None:
        print(line, file=sys.stderr if to_stderr else sys.stdout)

    try:
        files = ensure_keys(Path(args.out), say) if args.out else new_keys()
    except (KeysError, OSError) as e:
        print(f"sleuth keys: {e}", file=sys.stderr)
        return 1
    if args.secret is not None:
        if not args.out:
            print("sleuth keys: new keys; applying this over an existing Secret rotates them "
                  "(add --out DIR to keep them in DIR and print the same ones every time)", file=sys.stderr)
        sys.stdout.write(secret_manifest(files, args.secret, args.namespace))
    return 0


_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"


def _secret_name(value: str) -> str:
    """A DNS-1123 subdomain, as Kubernetes requires of a Secret's name."""
    if len(value) > 253 or not re.fullmatch(rf"{_LABEL}(\.{_LABEL})*", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a valid Secret name (lower case, digits, '-', '.')")
    return value


def _namespace(value: str) -> str:
    """A DNS-1123 label, as Kubernetes requires of a namespace."""
    if len(value) > 63 or not re.fullmatch(_LABEL, value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a valid namespace (lower case, digits, '-')")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "keys",
        help="make the identity key pairs and the authz-cache key (files, or a Kubernetes Secret)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", metavar="DIR", help="write the files here (kept when present)")
    p.add_argument("--secret", metavar="NAME", type=_secret_name, help="print a Kubernetes Secret of this name")
    p.add_argument("--namespace", metavar="NS", type=_namespace, default=None,
                   help="the Secret's namespace (default: none, kubectl's current one)")
    p.set_defaults(func=_cmd_keys, parser=p)

