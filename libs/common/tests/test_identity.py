"""Signed identity assertions: what a verifier accepts and what it refuses."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sleuth_common.config import IdentitySettings
from sleuth_common.identity import (
    ASSERTION_HEADER,
    AssertionAuth,
    Identity,
    IdentityError,
    IdentitySigner,
    IdentityVerifier,
    generate_keypair,
    load_public_key,
    signer_from_settings,
    verifier_from_settings,
)

NOW = 1_800_000_000.0
AUD = "kube-mcp/prod-1"


@pytest.fixture
def signer() -> IdentitySigner:
    return IdentitySigner.from_pem(generate_keypair()[0], ttl=30)


def verifier_for(signer: IdentitySigner, **kw: Any) -> IdentityVerifier:
    return IdentityVerifier([load_public_key(signer.public_pem())], audience=kw.pop("audience", AUD), **kw)


def test_a_minted_assertion_verifies_to_the_same_identity(signer: IdentitySigner) -> None:
    token = signer.mint("alice", ["team-a-devs", "team-a-devs", "oncall"], audience=AUD, job="j1", now=NOW)
    who = verifier_for(signer).verify(token, now=NOW + 10)
    assert who == Identity("alice", ("team-a-devs", "oncall"), job="j1", audience=AUD,
                           issuer="sleuth-agent", expires_at=who.expires_at)
    assert NOW + 30 <= who.expires_at <= NOW + 32


def _resign(token: str, key: Ed25519PrivateKey, kid: str, **changes: Any) -> str:
    claims = jwt.decode(token, options={"verify_signature": False})
    claims.update(changes)
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": kid})


@dataclass(frozen=True)
class Bad:
    name: str
    make: Any  # (signer, token) -> token
    why: str
    at: float = NOW + 1


def _tamper_payload(signer: IdentitySigner, token: str) -> str:
    head, body, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=="))
    claims["sub"] = "carol"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{forged}.{sig}"


BAD = [
    Bad("expired", lambda s, t: t, "expired", at=NOW + 60),
    Bad("not yet valid", lambda s, t: t, "not valid yet", at=NOW - 60),
    Bad("payload changed after signing", _tamper_payload, "signature"),
    Bad("another audience", lambda s, t: s.mint("alice", audience="kube-mcp/prod-2", now=NOW), "not for"),
    Bad("signed by another key", lambda s, t: IdentitySigner.from_pem(generate_keypair()[0]).mint(
        "alice", audience=AUD, now=NOW), "unknown key"),
    Bad("alg none", lambda s, t: jwt.encode({"sub": "carol", "aud": AUD}, None, algorithm="none"), "EdDSA"),
    Bad("HS256 with the public key as secret", lambda s, t: jwt.encode(
        {"sub": "carol"}, "x" * 32, algorithm="HS256", headers={"kid": s.kid}), "EdDSA"),
    Bad("long-lived", lambda s, t: s.mint("alice", audience=AUD, ttl=86_400, now=NOW), "longer than"),
    Bad("no user", lambda s, t: _resign(t, s._key, s.kid, sub=""), "user"),
    Bad("groups not a list", lambda s, t: _resign(t, s._key, s.kid, grp="system:masters"), "groups"),
    Bad("missing expiry", lambda s, t: _resign(t, s._key, s.kid, exp=None), "exp"),
    Bad("other issuer", lambda s, t: _resign(t, s._key, s.kid, iss="someone"), "issuer"),
    Bad("newline in user", lambda s, t: _resign(t, s._key, s.kid, sub="alice\nImpersonate-User: carol"),
        "control"),
    Bad("garbage", lambda s, t: "not-a-token", "malformed"),
    Bad("empty", lambda s, t: "", "no identity"),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_refused(signer: IdentitySigner, case: Bad) -> None:
    token = case.make(signer, signer.mint("alice", ["team-a"], audience=AUD, now=NOW))
    with pytest.raises(IdentityError, match=case.why):
        verifier_for(signer).verify(token, now=case.at)


def test_rotation_accepts_old_and_new_keys() -> None:
    old, new = (IdentitySigner.from_pem(generate_keypair()[0]) for _ in range(2))
    v = IdentityVerifier([load_public_key(old.public_pem()), load_public_key(new.public_pem())], audience=AUD)
    assert {v.verify(s.mint("bob", audience=AUD)).user for s in (old, new)} == {"bob"}


def test_keys_from_settings_files_and_env(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    private, public = generate_keypair()
    (tmp_path / "k").write_bytes(private)
    (tmp_path / "p").write_bytes(public + generate_keypair()[1])  # current + next key in one file
    s = IdentitySettings(signing_key_file=str(tmp_path / "k"), signing_key_env="",
                         verify_key_files=[str(tmp_path / "p")], verify_keys_env="")
    signer = signer_from_settings(s)
    verifier = verifier_from_settings(s, AUD)
    assert signer is not None and verifier is not None
    assert verifier.verify(signer.mint("alice", audience=AUD)).user == "alice"
    monkeypatch.setenv("SLEUTH_TEST_KEY", base64.b64encode(private).decode())
    from_env = signer_from_settings(IdentitySettings(signing_key_env="SLEUTH_TEST_KEY"))
    assert from_env is not None and from_env.kid == signer.kid
    assert signer_from_settings(IdentitySettings(signing_key_env="")) is None
    with pytest.raises(IdentityError, match="cannot read"):
        signer_from_settings(IdentitySettings(signing_key_env="", signing_key_file=str(tmp_path / "missing")))
    (tmp_path / "bad").write_text("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    with pytest.raises(IdentityError, match="signing key"):
        signer_from_settings(IdentitySettings(signing_key_env="", signing_key_file=str(tmp_path / "bad")))


def test_the_http_auth_signs_a_fresh_assertion_per_request(signer: IdentitySigner) -> None:
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers[ASSERTION_HEADER])
        return httpx2.Response(200)

    auth = AssertionAuth(signer, Identity("alice", ("team-a",), job="j9"), AUD)
    with httpx2.Client(transport=httpx2.MockTransport(handler), auth=auth) as http:
        http.get("http://kube-mcp/mcp")
        http.get("http://kube-mcp/mcp")
    assert len(set(seen)) == 2
    who = verifier_for(signer).verify(seen[-1])
    assert (who.user, who.groups, who.job) == ("alice", ("team-a",), "j9")
