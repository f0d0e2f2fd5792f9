"""`Status` objects worded like kube-apiserver's (`k8s.io/apimachinery/pkg/api/errors`)."""

from __future__ import annotations

from typing import Any

from ._rbac import Attributes

Obj = dict[str, Any]


class ApiError(Exception):
    """An error the server answers as a `Status` object."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> Obj:
        out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": self.message, "reason": self.reason}
        if self.details is not None:
            out["details"] = self.details
        out["code"] = self.code
        return out


def _details(resource: str, group: str, name: str) -> Obj:
    d: Obj = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = resource
    return d


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                    _details(resource, group, name))


def unknown_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(kind: str, group: str, field: str, message: str) -> ApiError:
    return ApiError(422, "Invalid", f'{kind}.{group} "" is invalid: {field}: {message}',
                    {"group": group, "kind": kind, "causes": [{"reason": "FieldValueInvalid",
                                                               "message": message, "field": field}]})


def forbidden_message(a: Attributes) -> str:
    """kube-apiserver's `forbiddenMessage`."""
    if not a.is_resource_request:
        return f'User "{a.user}" cannot {a.verb} path "{a.path}"'
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    return f'User "{a.user}" cannot {a.verb} resource "{resource}" in API group "{a.api_group}" {where}'


def forbidden(a: Attributes) -> ApiError:
    reason = forbidden_message(a)
    if not a.is_resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {reason}", {})
    q = _qualified(a.resource, a.api_group)
    head = f'{q} "{a.name}" is forbidden' if a.name else f"{q} is forbidden"
    return ApiError(403, "Forbidden", f"{head}: {reason}", _details(a.resource, a.api_group, a.name))
