"""The authorization backend seam: what authz-cache asks a cluster, whatever answers it.

Implementations: :class:`sleuth_authz_cache.kubernetes.KubernetesBackend` (SubjectAccessReview /
TokenReview against each cluster's API server — a real one or simcluster). Failures are raised as
:class:`BackendError` with a short reason that is safe to show a user (never a token).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

__all__ = ["Access", "AuthzBackend", "BackendError", "Forbidden", "TokenIdentity"]


class BackendError(Exception):
    """A cluster could not answer (timeout, TLS, 5xx, the review itself refused …).

    ``str(err)`` is a short reason meant for the reply's ``errors`` map and logs.
    """


class Forbidden(BackendError):
    """The cluster refused authz-cache's own identity (403): a permission it lacks, not an outage."""


class TokenIdentity(NamedTuple):
    """What a TokenReview said: ``(authenticated, user, groups)``."""

    authenticated: bool
    user: str = ""
    groups: tuple[str, ...] = ()


class Access(NamedTuple):
    """What a SubjectAccessReview asks: ``verb`` on ``resource`` of API ``group`` in ``namespace``
    (None = cluster scope). ``resource``/``group`` may be ``*``."""

    verb: str
    resource: str
    group: str = ""
    namespace: str | None = None


class AuthzBackend(Protocol):
    """Answers authorization questions about one configured cluster at a time (by name)."""

    async def review(self, cluster: str, user: str, groups: tuple[str, ...], namespace: str | None) -> bool:
        """May ``user`` (in ``groups``) ``get pods`` in ``namespace`` (None = cluster scope)?"""
        ...

    async def access(self, cluster: str, user: str, groups: tuple[str, ...], access: Access) -> bool:
        """May ``user`` (in ``groups``) do ``access``? (``review`` is ``get pods``.)"""
        ...

    async def namespaces(self, cluster: str) -> list[str]:
        """Every namespace of the cluster, as the authz identity may list them."""
        ...

    async def token_review(self, cluster: str, token: str) -> TokenIdentity:
        """Who does ``token`` belong to on ``cluster``? Not authenticated is an answer, not an error."""
        ...

    async def list_objects(self, cluster: str, resource: str) -> list[dict[str, Any]]:
        """Every ``pods`` / ``services`` / ``endpoints`` object of the cluster (for IP resolution and
        the name inventory). A backend that cannot list answers ``BackendError`` (fail closed)."""
        ...

    async def role_bindings(self, cluster: str) -> list[dict[str, Any]]:
        """Every RoleBinding of the cluster (candidates of a scope, :mod:`sleuth_authz_cache.bindings`).
        :class:`Forbidden` when the authz identity may not list them. Optional: a backend without it
        is reviewed namespace by namespace."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
