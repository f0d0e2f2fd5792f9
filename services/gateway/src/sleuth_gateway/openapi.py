"""``GET /openapi.json``: the OpenAPI 3.1 document of the gateway's HTTP API (what a client, or a
fuzzer, may send and what it gets back). Every error is ``{"error", "request_id"}``."""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sleuth_common.messages import FIXED_BY_MAX

__all__ = ["document", "spec"]

_ERROR_CODES = {
    "400": "Malformed request (body, JSON, host, question)",
    "401": "No or invalid bearer token",
    "403": "A refused identity, or not allowed",
    "404": "Not found (or not a member of that channel)",
    "408": "The request head or body did not arrive in time",
    "413": "Body or question too large",
    "429": "Rate limited; see Retry-After",
    "503": "A dependency (NATS, Redis, authz-cache) is unavailable, or the queue is full; see Retry-After",
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json_content(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _op(summary: str, ok: dict[str, Any], *, errors: tuple[str, ...], body: dict[str, Any] | None = None,
        secured: bool = True, **extra: Any) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _json_content(ok)}}
    for code in errors:
        responses[code] = {"$ref": f"#/components/responses/E{code}"}
    op: dict[str, Any] = {"summary": summary, "responses": responses, **extra}
    if body is not None:
        op["requestBody"] = {"required": True, "content": _json_content(body)}
    if not secured:
        op["security"] = []
    return op


def _obj(required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": list(required), "properties": props}


def _version() -> str:
    try:
        return metadata.version("sleuth-gateway")
    except metadata.PackageNotFoundError:
        return "0"


@lru_cache(maxsize=1)
def spec() -> dict[str, Any]:
    """The document (built once)."""
    s, rid = {"type": "string"}, {"type": "string", "description": "X-Request-Id of this request"}
    message = {"type": "object", "additionalProperties": True,
               "properties": {"role": s, "text": s, "html": s, "request_id": s}}
    asking = ("400", "401", "403", "408", "413", "429", "503")
    reading = ("400", "401", "403", "429", "503")
    request_id_header = {
        "name": "X-Request-Id", "in": "header", "required": False,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
        "description": "Reused as the request id when it matches; a retry with the same id resumes its job",
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Sleuth gateway", "version": _version()},
        "security": [{"bearer": []}],
        "paths": {
            "/v1/whoami": {"get": _op("Who the token belongs to and what they can read", _ref("WhoAmI"),
                                      errors=reading)},
            "/v1/query": {"post": _op(
                "Ask a question (or a chat command); ?stream=1 or Accept: text/event-stream for SSE",
                _ref("Answer"), errors=(*asking, "504"), body=_ref("Query"),
                parameters=[request_id_header,
                            {"name": "stream", "in": "query", "required": False,
                             "schema": {"type": "string", "enum": ["1", "true", "yes"]}}],
            )},
            "/v1/conversation": {
                "get": _op("The caller's conversation", _obj(("user", "messages"), user=s, request_id=rid,
                                                               messages={"type": "array", "items": message}),
                           errors=reading),
                "delete": _op("Forget the caller's conversation",
                              _obj(("user", "cleared"), user=s, cleared={"type": "boolean"}, request_id=rid),
                              errors=reading),
            },
            "/v1/feedback": {"post": _op(
                "Feedback on an answer you asked or were shown: verdict up/down and/or what fixed it "
                "(404, as for an unknown job id, on an answer you did not get)",
                _obj(("ok", "text", "job_id"), ok={"type": "boolean"}, text=s, job_id=s, request_id=rid),
                errors=(*reading, "404", "408", "413"), body=_ref("Feedback"))},
            "/v1/channels": {"get": _op("Channels the caller is a member of", _obj(
                ("user", "channels"), user=s, channels={"type": "array", "items": s}, request_id=rid),
                errors=reading)},
            "/v1/channels/{channel}/messages": {
                "parameters": [{"name": "channel", "in": "path", "required": True, "schema": s}],
                "get": _op("A channel's messages", _ref("ChannelMessages"), errors=(*reading, "404")),
                "post": _op("Post to a channel (a chat command is answered there)", _ref("ChannelMessages"),
                            errors=(*asking, "404"), body=_obj(("text",), text={"type": "string", "minLength": 1})),
            },
            "/mcp": {"post": {
                "summary": "Streamable HTTP MCP (JSON-RPC 2.0): the tools ask and whoami",
                "requestBody": {"required": True, "content": _json_content({"type": "object"})},
                "responses": {"200": {"description": "JSON-RPC response (JSON or SSE)"},
                              "202": {"description": "Notification accepted"},
                              **{c: {"$ref": f"#/components/responses/E{c}"} for c in ("400", "401", "403")}},
            }},
            "/healthz": {"get": _op("Liveness", {"type": "object"}, errors=(), secured=False)},
            "/readyz": {"get": _op("Readiness (503 when NATS or Redis is down)", {"type": "object"},
                                   errors=("503",), secured=False)},
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "The caller's Kubernetes bearer token"}},
            "schemas": {
                "Error": _obj(("error", "request_id"), error=s, request_id=rid),
                "Query": {**_obj(("query",), query={"type": "string", "minLength": 1, "maxLength": 4000},
                                 history={"type": ["array", "null"], "items": _ref("HistoryTurn")},
                                 review={"type": "boolean"})},
                "Feedback": {**_obj(("job_id",), job_id={"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,100}$"},
                                    verdict={"type": "string", "enum": ["", "up", "down"]},
                                    fixed_by={"type": "string", "maxLength": FIXED_BY_MAX}),
                             "description": "A verdict, a fix text (one line: no control or invisible formatting characters) or both"},
                "HistoryTurn": _obj(("role", "text"), role={"type": "string", "enum": ["user", "assistant"]},
                                    text=s),
                "Answer": _obj(("answer", "user", "request_id"), answer=s, answer_html=s,
                               result={"type": ["object", "null"]}, user=s, job_id=s, command=s, request_id=rid),
                "WhoAmI": _obj(("user", "groups", "access"), user=s, groups={"type": "array", "items": s},
                               access={"type": ["object", "null"]}, access_error=s, request_id=rid),
                "ChannelMessages": _obj(("channel", "messages"), channel=s,
                                        messages={"type": "array", "items": message}, request_id=rid),
            },
            "responses": {
                f"E{code}": {"description": why, "content": _json_content(_ref("Error"))}
                for code, why in {**_ERROR_CODES, "504": "No answer in time"}.items()
            },
        },
    }


async def document(request: Request) -> Response:
    return JSONResponse(spec())
