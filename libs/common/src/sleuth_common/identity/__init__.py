"""Signed identity assertions: one library for issuing and verifying who a request acts for
(DESIGN §2). The agent signs the asker's identity for Sleuth's kube-mcp, which impersonates
that identity against the Kubernetes API and refuses any call without a valid assertion."""

from sleuth_common.identity._assertion import (
    ASSERTION_HEADER,
    Identity,
    IdentityError,
    IdentitySigner,
    IdentityVerifier,
    generate_keypair,
    key_id,
    load_private_key,
    load_public_key,
)
from sleuth_common.identity._http import AssertionAuth
from sleuth_common.identity._keys import (
    CHAT_ISSUER,
    job_verifier_from_settings,
    signer_from_settings,
    verifier_from_settings,
)

__all__ = [
    "ASSERTION_HEADER",
    "CHAT_ISSUER",
    "AssertionAuth",
    "Identity",
    "IdentityError",
    "IdentitySigner",
    "IdentityVerifier",
    "generate_keypair",
    "job_verifier_from_settings",
    "key_id",
    "load_private_key",
    "load_public_key",
    "signer_from_settings",
    "verifier_from_settings",
]
