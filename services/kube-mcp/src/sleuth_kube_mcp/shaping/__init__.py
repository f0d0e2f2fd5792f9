"""Pure functions that turn Kubernetes objects into the records the tools return."""

from sleuth_kube_mcp.shaping._common import compact, conditions, owner, parse_quantity, selector_string
from sleuth_kube_mcp.shaping._extra import (
    LIST_ALIASES,
    LIST_KINDS,
    STORAGE_ALIASES,
    STORAGE_KINDS,
    resource_record,
    storage_record,
)
from sleuth_kube_mcp.shaping._pods import log_lines, pod_detail, pod_status_text, pod_summary, secretish_name
from sleuth_kube_mcp.shaping._resources import (
    REDACTED,
    clean_object,
    event_record,
    limit_range_record,
    node_record,
    pvc_record,
    quota_record,
    service_record,
    sort_events,
)
from sleuth_kube_mcp.shaping._workloads import WORKLOAD_KINDS, normalize_workload_kinds, workload_summary

__all__ = [
    "LIST_ALIASES",
    "LIST_KINDS",
    "REDACTED",
    "STORAGE_ALIASES",
    "STORAGE_KINDS",
    "WORKLOAD_KINDS",
    "clean_object",
    "compact",
    "conditions",
    "event_record",
    "limit_range_record",
    "log_lines",
    "node_record",
    "normalize_workload_kinds",
    "owner",
    "parse_quantity",
    "pod_detail",
    "pod_status_text",
    "pod_summary",
    "pvc_record",
    "quota_record",
    "resource_record",
    "secretish_name",
    "selector_string",
    "service_record",
    "sort_events",
    "storage_record",
    "workload_summary",
]
