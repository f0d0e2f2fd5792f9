"""sleuth-simcluster: a simulated Kubernetes API server (HTTPS) over a snapshot directory.

It answers discovery, list/get with selectors, Table responses, pod logs, RBAC-checked reads with the
API server's error wording, user impersonation (``Impersonate-*`` headers, authorized like kube-apiserver),
an in-memory audit log, SubjectAccessReview / SelfSubjectAccessReview / TokenReview; writes get 405.
"""

from ._audit import AuditLog, AuditRecord
from ._loader import Snapshot, SnapshotError, User, load_snapshot
from ._rbac import Attributes, Authorizer, Decision
from .app import create_app
from .server import SimCluster, SimClusterError

__all__ = [
    "Attributes",
    "AuditLog",
    "AuditRecord",
    "Authorizer",
    "Decision",
    "SimCluster",
    "SimClusterError",
    "Snapshot",
    "SnapshotError",
    "User",
    "create_app",
    "load_snapshot",
]
