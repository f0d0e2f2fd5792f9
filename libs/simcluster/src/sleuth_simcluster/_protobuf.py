"""Just enough protobuf to read the review requests Kubernetes clients POST as protobuf.

A body is `k8s\\x00` followed by a `runtime.Unknown` (1: typeMeta{1: apiVersion, 2: kind}, 2: raw,
3: contentEncoding, 4: contentType); `raw` is the review message itself. Field numbers below are
from k8s.io/api/{authorization,authentication}/v1/generated.proto.
"""

from __future__ import annotations

from typing import Any

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """The body is not the protobuf message it claims to be."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def fields(data: bytes) -> dict[int, list[bytes | int]]:
    """Decode one message into field number -> values (bytes for length-delimited, int otherwise)."""
    out: dict[int, list[bytes | int]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: bytes | int
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos : pos + length], pos + length
        elif wire == 1:
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _str(msg: dict[int, list[bytes | int]], number: int) -> str:
    values = msg.get(number)
    if not values or not isinstance(values[-1], bytes):
        return ""
    return values[-1].decode("utf-8", errors="replace")


def _strs(msg: dict[int, list[bytes | int]], number: int) -> list[str]:
    return [v.decode("utf-8", errors="replace") for v in msg.get(number, ()) if isinstance(v, bytes)]


def _msg(msg: dict[int, list[bytes | int]], number: int) -> dict[int, list[bytes | int]] | None:
    values = msg.get(number)
    if not values or not isinstance(values[-1], bytes):
        return None
    return fields(values[-1])


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw message) from a `k8s\\x00` + runtime.Unknown envelope."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing k8s protobuf magic")
    unknown = fields(body[len(MAGIC) :])
    type_meta = _msg(unknown, 1) or {}
    raw = unknown.get(2, [b""])[-1]
    if not isinstance(raw, bytes):
        raise ProtobufError("runtime.Unknown raw is not bytes")
    return _str(type_meta, 1), _str(type_meta, 2), raw


def _resource_attributes(msg: dict[int, list[bytes | int]]) -> dict[str, str]:
    names = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
    return {n: v for i, n in enumerate(names, start=1) if (v := _str(msg, i))}


def _access_spec(spec: dict[int, list[bytes | int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if (ra := _msg(spec, 1)) is not None:
        out["resourceAttributes"] = _resource_attributes(ra)
    if (nra := _msg(spec, 2)) is not None:
        out["nonResourceAttributes"] = {n: v for i, n in ((1, "path"), (2, "verb")) if (v := _str(nra, i))}
    return out


def _metadata(obj: dict[int, list[bytes | int]]) -> dict[str, Any]:
    meta = _msg(obj, 1) or {}
    return {k: v for k, v in (("name", _str(meta, 1)), ("namespace", _str(meta, 3))) if v}


def decode_review(body: bytes) -> dict[str, Any]:
    """A review request body (protobuf) as the JSON object the same request would have sent."""
    api_version, kind, raw = unwrap(body)
    obj = fields(raw)
    spec = _msg(obj, 2) or {}
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": _metadata(obj)}
    if kind in ("SelfSubjectAccessReview", "LocalSubjectAccessReview", "SubjectAccessReview"):
        out["spec"] = _access_spec(spec)
        if kind != "SelfSubjectAccessReview":
            out["spec"].update({"user": _str(spec, 3), "groups": _strs(spec, 4), "uid": _str(spec, 6)})
    elif kind == "SelfSubjectRulesReview":
        out["spec"] = {"namespace": _str(spec, 1)}
    elif kind == "TokenReview":
        out["spec"] = {"token": _str(spec, 1), "audiences": _strs(spec, 2)}
    else:
        out["spec"] = {}
    return out


# -- writing (tests and tools build request bodies with these) -----------------------------------

def _enc_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_bytes(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _enc_varint(number << 3 | 2) + _enc_varint(len(data)) + data


def encode_ssar(resource_attributes: dict[str, str] | None = None,
                non_resource_attributes: dict[str, str] | None = None) -> bytes:
    """A SelfSubjectAccessReview body as kubectl `auth can-i` sends it."""
    spec = b""
    if resource_attributes is not None:
        names = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
        ra = b"".join(field_bytes(i, resource_attributes[n])
                      for i, n in enumerate(names, start=1) if resource_attributes.get(n))
        spec += field_bytes(1, ra)
    if non_resource_attributes is not None:
        nra = b"".join(field_bytes(i, non_resource_attributes[n])
                       for i, n in ((1, "path"), (2, "verb")) if non_resource_attributes.get(n))
        spec += field_bytes(2, nra)
    raw = field_bytes(1, b"") + field_bytes(2, spec) + field_bytes(3, b"")
    type_meta = field_bytes(1, "authorization.k8s.io/v1") + field_bytes(2, "SelfSubjectAccessReview")
    return MAGIC + field_bytes(1, type_meta) + field_bytes(2, raw) + field_bytes(3, "") + field_bytes(4, "")
