"""The scope filter (DESIGN §2): nothing a caller may not read reaches a model or a chat.

``check_arguments`` refuses a call before it is sent; ``filter_result`` keeps only what it can
attribute to the caller's namespaces (an allowlist that fails closed) and withholds the rest.
Both work for one caller on one cluster (``Scope``).
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
    CLUSTER_SCOPED_KINDS,
    FilterOutcome,
    Refusal,
    Scope,
    ToolRule,
    ToolRules,
)
from sleuth_common.scope._names import ForeignNames
from sleuth_common.scope._promql import PromqlOutcome, pin_promql
from sleuth_common.scope._results import dump_result, filter_data, filter_result, parse_result

__all__ = [
    "CLUSTER_ADMIN_META_KEY",
    "CLUSTER_SCOPED_KINDS",
    "DATA_CLOSE",
    "DATA_OPEN",
    "FilterOutcome",
    "ForeignNames",
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
