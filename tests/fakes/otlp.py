"""An OTLP/HTTP trace receiver for tests: what a collector would get, decoded from the real
protobuf payloads (``ExportTraceServiceRequest``).

``with OtlpReceiver() as rx:`` — point ``OTEL_EXPORTER_OTLP_ENDPOINT`` at ``rx.url``; ``rx.spans()``
lists every span received so far, ``rx.raw()`` the request bodies as sent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


class OtlpReceiver:
    def __init__(self) -> None:
        self._bodies: list[bytes] = []
        self._spans: list[Span] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._add(body)
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment that sends a process's spans here at once (small batches, short delay)."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.url, "OTEL_BSP_SCHEDULE_DELAY": "200", **extra}

    def _add(self, body: bytes) -> None:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        spans = []
        for rs in req.resource_spans:
            attrs = {a.key: _value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    spans.append(Span(
                        str(attrs.get("service.name", "")), s.name, s.trace_id.hex(), s.span_id.hex(),
                        s.parent_span_id.hex(), s.kind, {a.key: _value(a.value) for a in s.attributes},
                    ))
        with self._lock:
            self._bodies.append(body)
            self._spans.extend(spans)

    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def raw(self) -> list[bytes]:
        with self._lock:
            return list(self._bodies)

    def wait_for(self, found: Callable[[list[Span]], Any], within: float = 20.0) -> Any:
        deadline = time.monotonic() + within
        while True:
            got = found(self.spans())
            if got:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"not received within {within}s; spans: "
                                     f"{sorted({(s.service, s.name) for s in self.spans()})}")
            time.sleep(0.1)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
