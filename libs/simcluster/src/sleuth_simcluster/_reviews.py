"""SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview,
TokenReview and SelfSubjectReview: the write verbs simcluster answers."""

from __future__ import annotations

import json
from typing import Any

from ._loader import Snapshot, User
from ._protobuf import MAGIC, PROTOBUF, ProtobufError, decode_review
from ._rbac import AUTHENTICATED, UNAUTHENTICATED, Attributes, Authorizer
from ._status import ApiError, bad_request, invalid

Obj = dict[str, Any]

AUTHZ = "authorization.k8s.io"
AUTHN = "authentication.k8s.io"


def parse_body(body: bytes, content_type: str) -> Obj:
    """A review request sent as JSON (or YAML-free JSON) or as Kubernetes protobuf."""
    if content_type.startswith(PROTOBUF) or body.startswith(MAGIC):
        try:
            return decode_review(body)
        except ProtobufError as exc:
            raise bad_request(f"the body of the request was in an unknown format: {exc}") from exc
    try:
        obj = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"the body of the request was in an unknown format: {exc}") from exc
    if not isinstance(obj, dict):
        raise bad_request("the body of the request was in an unknown format")
    return obj


def identity_groups(user: User) -> tuple[str, ...]:
    """The groups a request of ``user`` is authorized with: a snapshot user is always in
    ``system:authenticated``; an impersonated identity already carries its final groups."""
    groups = tuple(dict.fromkeys(user.groups))
    return groups if AUTHENTICATED in groups or UNAUTHENTICATED in groups else (*groups, AUTHENTICATED)


def user_info(user: User) -> Obj:
    """``authentication.k8s.io/v1`` ``UserInfo`` (empty uid and extra left out, as upstream)."""
    info: Obj = {"username": user.name}
    if user.uid:
        info["uid"] = user.uid
    info["groups"] = list(identity_groups(user))
    if user.extra:
        info["extra"] = {k: list(v) for k, v in user.extra}
    return info


def _attributes(kind: str, spec: Obj, user: str, groups: tuple[str, ...], namespace: str | None) -> Attributes:
    ra: Obj = spec.get("resourceAttributes") or {}
    nra: Obj = spec.get("nonResourceAttributes") or {}
    if bool(ra) == bool(nra):
        raise invalid(kind, AUTHZ, "spec.resourceAttributes",
                      "exactly one of nonResourceAttributes or resourceAttributes must be specified")
    if nra:
        return Attributes(user=user, groups=groups, verb=str(nra.get("verb") or ""), path=str(nra.get("path") or ""))
    ns = namespace if namespace is not None else str(ra.get("namespace") or "")
    return Attributes(
        user=user, groups=groups, verb=str(ra.get("verb") or ""), namespace=ns,
        api_group=str(ra.get("group") or ""), resource=str(ra.get("resource") or ""),
        subresource=str(ra.get("subresource") or ""), name=str(ra.get("name") or ""),
    )


def _answer(req: Obj, kind: str, group: str, spec: Obj, status: Obj) -> Obj:
    meta = dict(req.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    return {"kind": kind, "apiVersion": f"{group}/v1", "metadata": meta, "spec": spec, "status": status}


def _decision_status(authz: Authorizer, attrs: Attributes) -> Obj:
    decision = authz.authorize(attrs)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def review(plural: str, req: Obj, caller: User, snapshot: Snapshot, authz: Authorizer, namespace: str = "") -> Obj:
    """Answer one review `req` (already parsed) POSTed to `plural` by `caller`."""
    spec = dict(req.get("spec") or {})
    if plural == "subjectaccessreviews":
        user, groups = str(spec.get("user") or ""), tuple(str(g) for g in spec.get("groups") or ())
        if not user and not groups:
            raise invalid("SubjectAccessReview", AUTHZ, "spec.user", "at least one of user or group must be specified")
        attrs = _attributes("SubjectAccessReview", spec, user, groups, None)
        return _answer(req, "SubjectAccessReview", AUTHZ, spec, _decision_status(authz, attrs))
    if plural == "localsubjectaccessreviews":
        user, groups = str(spec.get("user") or ""), tuple(str(g) for g in spec.get("groups") or ())
        attrs = _attributes("LocalSubjectAccessReview", spec, user, groups, namespace)
        return _answer(req, "LocalSubjectAccessReview", AUTHZ, spec, _decision_status(authz, attrs))
    if plural == "selfsubjectaccessreviews":
        attrs = _attributes("SelfSubjectAccessReview", spec, caller.name, identity_groups(caller), None)
        return _answer(req, "SelfSubjectAccessReview", AUTHZ, spec, _decision_status(authz, attrs))
    if plural == "selfsubjectrulesreviews":
        resource_rules, non_resource = authz.rules_for(caller.name, identity_groups(caller),
                                                       str(spec.get("namespace") or ""))
        return _answer(req, "SelfSubjectRulesReview", AUTHZ, spec, {
            "resourceRules": resource_rules, "nonResourceRules": non_resource, "incomplete": False})
    if plural == "tokenreviews":
        token = str(spec.get("token") or "")
        found = snapshot.user_by_token(token) if token else None
        status: Obj = {"authenticated": False, "user": {}}
        if found is not None:
            status = {"authenticated": True,
                      "user": {"username": found.name, "groups": list(identity_groups(found))},
                      "audiences": list(spec.get("audiences") or ())}
        else:
            status["error"] = "invalid bearer token"
        spec.pop("token", None)  # never echo a credential back
        return _answer(req, "TokenReview", AUTHN, spec, status)
    if plural == "selfsubjectreviews":
        return _answer(req, "SelfSubjectReview", AUTHN, spec, {"userInfo": user_info(caller)})
    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})
