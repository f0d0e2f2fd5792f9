"""Log set-up for every Sleuth process: plain text locally, JSON lines in deployments.

Either way the `extra` fields (job_id, request_id, user, cluster …) travel with the line, and
while a span is active (tracing on) its ``trace_id`` and ``span_id``."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from sleuth_common.config import LoggingSettings
from sleuth_common.tracing import current_ids

__all__ = ["JsonFormatter", "TextFormatter", "configure_logging"]

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    # The active span's trace_id / span_id (tracing on): a log line leads to its trace.
    extras = current_ids()
    extras.update((k, v) for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_"))
    return extras


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_extras(record),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        extras = _extras(record)
        if extras:
            base += " " + " ".join(f"{k}={v}" for k, v in extras.items())
        return base


def configure_logging(settings: LoggingSettings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.json_format:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.level.upper())
