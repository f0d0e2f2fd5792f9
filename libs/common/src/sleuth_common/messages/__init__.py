"""Message models that cross process boundaries: frozen, tagged with ``kind``, versioned."""

from sleuth_common.messages.alerts import (
    AlertChannelReply,
    AlertChannelRequest,
    AlertmanagerAlert,
    AlertmanagerWebhook,
)
from sleuth_common.messages.authz import (
    CLUSTER_KINDS,
    AuthenticateReply,
    AuthenticateRequest,
    ClusterScope,
    InvalidateRequest,
    InventoryReply,
    InventoryRequest,
    ResolveReply,
    ResolveRequest,
    ScopeReply,
    ScopeRequest,
)
from sleuth_common.messages.base import Message
from sleuth_common.messages.chat import ChatPost, web_channel, web_target
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
    "CLUSTER_KINDS",
    "Action",
    "AlertChannelReply",
    "AlertChannelRequest",
    "AlertRef",
    "AlertmanagerAlert",
    "AlertmanagerWebhook",
    "AuthenticateReply",
    "AuthenticateRequest",
    "Candidate",
    "ChatPost",
    "ClusterScope",
    "Evidence",
    "HistoryTurn",
    "InvalidateRequest",
    "InventoryReply",
    "InventoryRequest",
    "InvestigationJob",
    "InvestigationResult",
    "JobProgress",
    "Message",
    "Requester",
    "ResolveReply",
    "ResolveRequest",
    "RootCause",
    "ScopeReply",
    "ScopeRequest",
    "web_channel",
    "web_target",
]
