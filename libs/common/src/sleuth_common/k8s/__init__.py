"""Kubernetes primitives every Sleuth member shares, one implementation each, as the API server
defines them: label and field selectors, resource quantities, timestamps and owner chains.
Pure functions on plain dicts (objects as the API serves them as JSON); no client, no I/O."""

from sleuth_common.k8s._owners import (
    POD_TEMPLATE_HASH_LABEL,
    OwnerRef,
    controller_of,
    controller_ref,
    deployment_of,
    owner_refs,
    pod_template_hash,
    strip_pod_template_hash,
)
from sleuth_common.k8s._quantities import (
    QuantityError,
    bytes_of,
    cpu_millicores,
    format_quantity,
    parse_quantity,
    quantity_or_none,
)
from sleuth_common.k8s._selectors import (
    FieldRequirement,
    FieldSelector,
    LabelSelector,
    Operator,
    Requirement,
    SelectorError,
    as_label_selector,
    escape_field_value,
    parse_field_selector,
    parse_label_selector,
    selects,
    validate_label_key,
    validate_label_value,
)
from sleuth_common.k8s._timestamps import format_time, parse_time, split_log_timestamp

__all__ = [
    "POD_TEMPLATE_HASH_LABEL",
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Operator",
    "OwnerRef",
    "QuantityError",
    "Requirement",
    "SelectorError",
    "as_label_selector",
    "bytes_of",
    "controller_of",
    "controller_ref",
    "cpu_millicores",
    "deployment_of",
    "escape_field_value",
    "format_quantity",
    "format_time",
    "owner_refs",
    "parse_field_selector",
    "parse_label_selector",
    "parse_quantity",
    "parse_time",
    "pod_template_hash",
    "quantity_or_none",
    "selects",
    "split_log_timestamp",
    "strip_pod_template_hash",
    "validate_label_key",
    "validate_label_value",
]
