"""Every service logs through one set-up: JSON lines that stay valid JSON and keep `extra`."""

from __future__ import annotations

import json
import logging

from sleuth_common.logs import JsonFormatter, TextFormatter


def _record(msg: str, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("sleuth_agent.worker", logging.INFO, __file__, 1, msg, (), None)
    for k, v in extra.items():
        setattr(rec, k, v)
    return rec


def test_json_line_is_valid_json_with_quotes_and_extras() -> None:
    line = JsonFormatter().format(_record('pod "api-1" said: {"err": "x"}', job_id="j1", cluster="demo"))
    doc = json.loads(line)
    assert doc["message"] == 'pod "api-1" said: {"err": "x"}'
    assert doc["job_id"] == "j1" and doc["cluster"] == "demo"
    assert doc["level"] == "INFO" and doc["logger"] == "sleuth_agent.worker"


def test_text_line_keeps_extras() -> None:
    line = TextFormatter("%(levelname)s %(message)s").format(_record("job finished", job_id="j1"))
    assert line == "INFO job finished job_id=j1"
