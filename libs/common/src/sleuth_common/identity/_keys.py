"""Loading the keys named by ``IdentitySettings`` (once per process and key source)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from sleuth_common.config import IdentitySettings
from sleuth_common.identity._assertion import (
    IdentityError,
    IdentitySigner,
    IdentityVerifier,
    load_private_key,
    load_public_key,
)

__all__ = ["CHAT_ISSUER", "job_verifier_from_settings", "signer_from_settings", "verifier_from_settings"]

CHAT_ISSUER = "sleuth-chat"
"""Issuer of the job assertions the gateway signs for the chat users it mapped (Mattermost: no
Kubernetes token to sign in with), with its own key (``chat.key``); the agent trusts it under
``identity.job_issuers``. The other issuers name themselves in their services
(``sleuth-authz`` in authz-cache, ``sleuth-alerts`` in alerts)."""


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise IdentityError(f"cannot read {what} {path}: {e.strerror}") from e


@functools.lru_cache(maxsize=8)
def _signer(pem: str, issuer: str, ttl: float) -> IdentitySigner:
    return IdentitySigner(load_private_key(pem), issuer=issuer, ttl=ttl)


def signer_from_settings(
    s: IdentitySettings, *, issuer: str | None = None, ttl: float | None = None
) -> IdentitySigner | None:
    """This process's signer (the environment variable wins over the file); ``None`` when no
    signing key is configured. ``issuer``/``ttl`` default to the agent's (``s.issuer``, ``s.ttl``).
    Raises :class:`IdentityError` for a key that cannot be read."""
    pem = os.environ.get(s.signing_key_env, "") if s.signing_key_env else ""
    if not pem and s.signing_key_file:
        pem = _read(s.signing_key_file, "the signing key")
    if not pem.strip():
        return None
    return _signer(pem, issuer or s.issuer, ttl or s.ttl)


def job_verifier_from_settings(s: IdentitySettings) -> IdentityVerifier | None:
    """The agent's verifier of job assertions (``job_issuers``); ``None`` when none is set."""
    bound = {
        issuer: [load_public_key(p) for path in paths for p in _split_pems(_read(path, "a job issuer key"))]
        for issuer, paths in s.job_issuers.items()
    }
    bound = {k: v for k, v in bound.items() if v}
    if not bound:
        return None
    return IdentityVerifier(
        issuer_keys=bound, issuers=(), audience=s.job_audience, leeway=s.leeway,
        max_ttl=max(s.max_ttl, s.job_ttl),
    )


def verifier_from_settings(s: IdentitySettings, audience: str) -> IdentityVerifier | None:
    """A verifier trusting every key of ``s`` for ``audience``; ``None`` when no key is set."""
    pems: list[str] = []
    if s.verify_keys_env and os.environ.get(s.verify_keys_env):
        pems += _split_pems(os.environ[s.verify_keys_env])
    for path in s.verify_key_files:
        pems += _split_pems(_read(path, "a verification key"))
    keys = [load_public_key(p) for p in pems]
    if not keys:
        return None
    return IdentityVerifier(
        keys, audience=audience, issuers=(s.issuer,), leeway=s.leeway, max_ttl=s.max_ttl
    )


def _split_pems(text: str) -> list[str]:
    """One or more PEM blocks (a file may hold the current and the next key during a rotation)."""
    end = "-----END PUBLIC KEY-----"
    if end not in text:
        return [text] if text.strip() else []
    return [block + end for block in text.split(end) if block.strip()]
