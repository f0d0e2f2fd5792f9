"""The scope filter (DESIGN §2): nothing a caller may not read reaches a model or a chat.

``check_arguments`` refuses a call before it is sent; ``filter_result`` drops foreign records
from what came back, or withholds it. Both work for one caller on one cluster (``Scope``).
``prepare_call`` is the whole argument step (JSON schema, namespace rules, PromQL pinning,
fan-out); ``filter_result`` parses JSON/YAML/text, filters, redacts (``sleuth_common.redact``);
``mark`` wraps what a model reads in data markers; ``cap_text``/``RoundBudget`` apply budgets.
"""

from sleuth_common.scope._arguments import (
    PreparedCall,
    check_arguments,
    default_rules,
    namespaces_in_arguments,
    pinned_by_arguments,
    prepare_call,
    validate_schema,
)
from sleuth_common.scope._caps import RoundBudget, cap_text
from sleuth_common.scope._markers import DATA_CLOSE, DATA_OPEN, mark, strip_markers
from sleuth_common.scope._model import (
    CLUSTER_ADMIN_META_KEY,
    FilterOutcome,
    Refusal,
    Scope,
    ToolRule,
    ToolRules,
)
from sleuth_common.scope._promql import PromqlOutcome, pin_promql
from sleuth_common.scope._results import dump_result, filter_data, filter_result, parse_result

__all__ = [
    "CLUSTER_ADMIN_META_KEY",
    "DATA_CLOSE",
    "DATA_OPEN",
    "FilterOutcome",
    "PreparedCall",
    "PromqlOutcome",
    "Refusal",
    "RoundBudget",
    "Scope",
    "ToolRule",
    "ToolRules",
    "cap_text",
    "check_arguments",
    "default_rules",
    "dump_result",
    "filter_data",
    "filter_result",
    "mark",
    "namespaces_in_arguments",
    "parse_result",
    "pin_promql",
    "pinned_by_arguments",
    "prepare_call",
    "strip_markers",
    "validate_schema",
]
