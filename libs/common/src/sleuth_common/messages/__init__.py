"""Message models that cross process boundaries: frozen, tagged with ``kind``, versioned."""

from sleuth_common.messages.authz import (
    AuthenticateReply,
    AuthenticateRequest,
    ClusterScope,
    InvalidateRequest,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.messages.base import Message
from sleuth_common.messages.jobs import (
    Action,
    AlertRef,
    Candidate,
    Evidence,
    HistoryTurn,
    InvestigationJob,
    InvestigationResult,
    JobProgress,
    Requester,
    RootCause,
)

__all__ = [
    "Action",
    "AlertRef",
    "AuthenticateReply",
    "AuthenticateRequest",
    "Candidate",
    "ClusterScope",
    "Evidence",
    "HistoryTurn",
    "InvalidateRequest",
    "InvestigationJob",
    "InvestigationResult",
    "JobProgress",
    "Message",
    "Requester",
    "RootCause",
    "ScopeReply",
    "ScopeRequest",
]
