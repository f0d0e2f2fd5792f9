"""authz-cache: who may see what, per cluster, cached (DESIGN §2).

Answers ``<prefix>.authz.scope`` and ``<prefix>.authz.authenticate`` in queue group ``authz``, and
``<prefix>.authz.invalidate`` on every replica. See :func:`create_app`.
"""

from sleuth_authz_cache.app import AuthzCache, build, create_app
from sleuth_authz_cache.backend import AuthzBackend, BackendError, TokenIdentity
from sleuth_authz_cache.kubernetes import KubernetesBackend
from sleuth_authz_cache.settings import AuthzCacheSettings, Settings

__all__ = [
    "AuthzBackend",
    "AuthzCache",
    "AuthzCacheSettings",
    "BackendError",
    "KubernetesBackend",
    "Settings",
    "TokenIdentity",
    "build",
    "create_app",
]
