"""Signed identity assertions (DESIGN §2): who a Sleuth component acts for, in a form the next
component can check without trusting the wire.

An assertion is a compact JWS (a JWT) signed with Ed25519 (``EdDSA``): issuer, subject (the
Kubernetes user name), groups, audience (the one component it is for, e.g.
``kube-mcp/prod-1``), the job it belongs to, issued-at and a short expiry (seconds, not
minutes). The signer holds the private key; verifiers hold only public keys, so a verifier can
never mint one. Several public keys may be trusted at once (key rotation); each key is named by
a ``kid`` derived from its bytes.

A verifier refuses: a bad signature or unknown key, another audience or issuer, an expired or
not-yet-valid assertion, one whose lifetime (``exp - iat``) exceeds ``max_ttl`` (so a leaked
signing key cannot mint long-lived ones unnoticed), and malformed claims (empty user, groups
that are not a list of strings).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "ASSERTION_HEADER",
    "Identity",
    "IdentityError",
    "IdentitySigner",
    "IdentityVerifier",
    "generate_keypair",
    "key_id",
    "load_private_key",
    "load_public_key",
]

ASSERTION_HEADER = "Sleuth-Identity"
"""HTTP header carrying an assertion (MCP requests to Sleuth's kube-mcp)."""

_ALGORITHM = "EdDSA"
_MAX_GROUPS = 256
_MAX_NAME = 512


class IdentityError(Exception):
    """An assertion was refused. ``str(exc)`` says why, naming no secret."""


@dataclass(frozen=True)
class Identity:
    """A verified (or about to be signed) identity."""

    user: str
    groups: tuple[str, ...] = ()
    job: str = ""
    audience: str = ""
    issuer: str = ""
    expires_at: float = 0.0
    assertion_id: str = field(default="", compare=False)
    members: tuple[str, ...] = ()
    """For a post read by several people (a channel): every member (``user:NAME`` /
    ``group:NAME``), whose access the answer must fit (the intersection of their scopes)."""


def key_id(public_key: Ed25519PublicKey) -> str:
    """A short stable name for a public key (first 16 hex digits of the SHA-256 of its bytes)."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def generate_keypair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair as PEM: ``(private PKCS#8, public SubjectPublicKeyInfo)``."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def _pem(data: bytes | str) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    raw = raw.strip()
    if raw and not raw.startswith(b"-----"):
        # a PEM passed through an environment variable base64-encoded once more
        try:
            raw = base64.b64decode(raw, validate=True).strip()
        except ValueError as e:
            raise IdentityError("the key is neither PEM nor base64-encoded PEM") from e
    return raw


def load_private_key(data: bytes | str) -> Ed25519PrivateKey:
    """An Ed25519 private key from PEM (or base64 of PEM). Raises :class:`IdentityError`."""
    try:
        key = serialization.load_pem_private_key(_pem(data), password=None)
    except (ValueError, TypeError) as e:
        raise IdentityError(f"cannot read the signing key: {type(e).__name__}") from e
    if not isinstance(key, Ed25519PrivateKey):
        raise IdentityError("the signing key is not an Ed25519 key")
    return key


def load_public_key(data: bytes | str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM (or base64 of PEM). Raises :class:`IdentityError`."""
    try:
        key = serialization.load_pem_public_key(_pem(data))
    except (ValueError, TypeError) as e:
        raise IdentityError(f"cannot read a verification key: {type(e).__name__}") from e
    if not isinstance(key, Ed25519PublicKey):
        raise IdentityError("a verification key is not an Ed25519 key")
    return key


def _check_identity(user: str, groups: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    if not isinstance(user, str) or not user.strip() or len(user) > _MAX_NAME:
        raise IdentityError("the assertion names no valid user")
    out: list[str] = []
    for g in groups:
        if not isinstance(g, str) or not g or len(g) > _MAX_NAME:
            raise IdentityError("the assertion's groups are not valid group names")
        out.append(g)
    if len(out) > _MAX_GROUPS:
        raise IdentityError("the assertion names too many groups")
    if any(c in user + "".join(out) for c in "\r\n\x00"):
        raise IdentityError("the assertion holds control characters")
    return user, tuple(dict.fromkeys(out))


class IdentitySigner:
    """Mints assertions with one private key. ``ttl`` is the default lifetime in seconds."""

    def __init__(self, private_key: Ed25519PrivateKey, *, issuer: str = "sleuth-agent", ttl: float = 30.0) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self._key = private_key
        self.issuer = issuer
        self.ttl = ttl
        self.kid = key_id(private_key.public_key())

    @classmethod
    def from_pem(cls, pem: bytes | str, **kw: object) -> IdentitySigner:
        return cls(load_private_key(pem), **kw)  # type: ignore[arg-type]

    def public_pem(self) -> bytes:
        return self._key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def mint(
        self,
        user: str,
        groups: Iterable[str] = (),
        *,
        audience: str,
        job: str = "",
        ttl: float | None = None,
        now: float | None = None,
        members: Iterable[str] = (),
    ) -> str:
        """A signed assertion that ``user`` (with ``groups``) is acting, for ``audience`` only;
        ``members``: everyone who will read the answer (a channel)."""
        user, grp = _check_identity(user, groups)
        if not audience:
            raise IdentityError("an assertion needs an audience")
        issued = time.time() if now is None else now
        life = self.ttl if ttl is None else ttl
        claims = {
            "iss": self.issuer,
            "sub": user,
            "grp": list(grp),
            "aud": audience,
            "job": job,
            "iat": int(issued),
            "nbf": int(issued),
            "exp": int(issued + life) + 1,
            "jti": secrets.token_hex(8),
        }
        if mem := sorted(set(members)):
            claims["mem"] = mem
        return jwt.encode(claims, self._key, algorithm=_ALGORITHM, headers={"kid": self.kid})


class IdentityVerifier:
    """Checks assertions against trusted public keys for one ``audience``."""

    def __init__(
        self,
        public_keys: Sequence[Ed25519PublicKey] = (),
        *,
        audience: str,
        issuers: Iterable[str] = ("sleuth-agent",),
        issuer_keys: Mapping[str, Sequence[Ed25519PublicKey]] | None = None,
        leeway: float = 5.0,
        max_ttl: float = 300.0,
    ) -> None:
        """``public_keys`` are trusted for any of ``issuers``; ``issuer_keys`` binds keys to one
        issuer each (an assertion must name the issuer its key belongs to)."""
        self._keys: dict[str, tuple[Ed25519PublicKey, str | None]] = {key_id(k): (k, None) for k in public_keys}
        for issuer, keys in (issuer_keys or {}).items():
            self._keys.update({key_id(k): (k, issuer) for k in keys})
        if not self._keys:
            raise ValueError("a verifier needs at least one public key")
        if not audience:
            raise ValueError("a verifier needs an audience")
        self.audience = audience
        self.issuers = frozenset(issuers) | frozenset(issuer_keys or ())
        self.leeway = leeway
        self.max_ttl = max_ttl

    def verify(self, token: str, *, now: float | None = None) -> Identity:
        """The identity in ``token``; raises :class:`IdentityError` saying why it was refused."""
        if not isinstance(token, str) or not token or len(token) > 16_384:
            raise IdentityError("no identity assertion")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as e:
            raise IdentityError("the identity assertion is malformed") from e
        if header.get("alg") != _ALGORITHM:
            raise IdentityError("the identity assertion is not signed with EdDSA")
        found = self._keys.get(str(header.get("kid") or ""))
        if found is None:
            raise IdentityError("the identity assertion is signed by an unknown key")
        key, bound_issuer = found
        # Times are judged here (one clock, testable), the rest by PyJWT.
        options = {
            "require": ["exp", "iat", "nbf", "aud", "sub", "iss"],
            "verify_exp": False,
            "verify_nbf": False,
            "verify_iat": False,
        }
        try:
            claims = jwt.decode(
                token, key, algorithms=[_ALGORITHM], audience=self.audience, options=options  # type: ignore[arg-type]
            )
        except jwt.InvalidAudienceError as e:
            raise IdentityError(f"the identity assertion is not for {self.audience}") from e
        except jwt.MissingRequiredClaimError as e:
            raise IdentityError(f"the identity assertion lacks the {e.claim!r} claim") from e
        except jwt.InvalidSignatureError as e:
            raise IdentityError("the identity assertion's signature does not verify") from e
        except jwt.PyJWTError as e:
            raise IdentityError(f"the identity assertion is invalid: {type(e).__name__}") from e
        if claims.get("iss") not in self.issuers or (bound_issuer is not None and claims.get("iss") != bound_issuer):
            raise IdentityError("the identity assertion comes from an issuer that is not trusted")
        try:
            exp, iat, nbf = float(claims["exp"]), float(claims["iat"]), float(claims["nbf"])
        except (TypeError, ValueError) as e:
            raise IdentityError("the identity assertion's times are not numbers") from e
        at = time.time() if now is None else now
        if exp + self.leeway < at:
            raise IdentityError("the identity assertion has expired")
        if nbf - self.leeway > at or iat - self.leeway > at:
            raise IdentityError("the identity assertion is not valid yet")
        lifetime = exp - iat
        if lifetime > self.max_ttl + 1:
            raise IdentityError(f"the identity assertion lives longer than {self.max_ttl:g}s")
        groups = claims.get("grp", [])
        if not isinstance(groups, list):
            raise IdentityError("the assertion's groups are not a list")
        user, grp = _check_identity(claims.get("sub"), groups)  # type: ignore[arg-type]
        members = claims.get("mem", [])
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise IdentityError("the assertion's members are not a list of names")
        return Identity(
            user=user,
            groups=grp,
            job=str(claims.get("job") or ""),
            audience=self.audience,
            issuer=str(claims["iss"]),
            expires_at=float(claims["exp"]),
            assertion_id=str(claims.get("jti") or ""),
            members=tuple(members),
        )
