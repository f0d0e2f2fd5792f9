"""The scope filter (DESIGN §2): nothing a caller may not read reaches a model or a chat.

``check_arguments`` refuses a call before it is sent; ``filter_result`` drops foreign records
from what came back, or withholds it. Both work for one caller on one cluster (``Scope``).
This is the first, already-safe version; see ``_results`` for what the full filter adds.
"""

from sleuth_common.scope._arguments import (
    check_arguments,
    default_rules,
    namespaces_in_arguments,
    pinned_by_arguments,
)
from sleuth_common.scope._model import (
    CLUSTER_ADMIN_META_KEY,
    FilterOutcome,
    Refusal,
    Scope,
    ToolRule,
    ToolRules,
)
from sleuth_common.scope._results import filter_data, filter_result

__all__ = [
    "CLUSTER_ADMIN_META_KEY",
    "FilterOutcome",
    "Refusal",
    "Scope",
    "ToolRule",
    "ToolRules",
    "check_arguments",
    "default_rules",
    "filter_data",
    "filter_result",
    "namespaces_in_arguments",
    "pinned_by_arguments",
]
