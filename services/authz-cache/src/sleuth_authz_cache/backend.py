"""The authorization backend seam: what authz-cache asks a cluster, whatever answers it.

Implementations: :class:`sleuth_authz_cache.kubernetes.KubernetesBackend` (SubjectAccessReview /
TokenReview against each cluster's API server — a real one or simcluster). Failures are raised as
:class:`BackendError` with a short reason that is safe to show a user (never a token).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

__all__ = ["AuthzBackend", "BackendError", "TokenIdentity"]


class BackendError(Exception):
    """A cluster could not answer (timeout, TLS, 5xx, the review itself refused …).

    ``str(err)`` is a short reason meant for the reply's ``errors`` map and logs.
    """


class TokenIdentity(NamedTuple):
    """What a TokenReview said: ``(authenticated, user, groups)``."""

    authenticated: bool
    user: str = ""
    groups: tuple[str, ...] = ()


class AuthzBackend(Protocol):
    """Answers authorization questions about one configured cluster at a time (by name)."""

    async def review(self, cluster: str, user: str, groups: tuple[str, ...], namespace: str | None) -> bool:
        """May ``user`` (in ``groups``) ``get pods`` in ``namespace`` (None = cluster scope)?"""
        ...

    async def namespaces(self, cluster: str) -> list[str]:
        """Every namespace of the cluster, as the authz identity may list them."""
        ...

    async def token_review(self, cluster: str, token: str) -> TokenIdentity:
        """Who does ``token`` belong to on ``cluster``? Not authenticated is an answer, not an error."""
        ...

    async def list_objects(self, cluster: str, resource: str) -> list[dict[str, Any]]:
        """Every ``pods`` / ``services`` / ``endpoints`` object of the cluster (for IP resolution)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
