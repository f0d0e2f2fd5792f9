"""Reading logs the way an engineer does: the real exception of a stack trace is its last line
(Python), its deepest ``Caused by:`` (Java) or its ``panic:`` (Go), not the first line that says
"error"; and a log that says an environment variable is missing names it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._observe import WorkloadObservation, error_lines, exception_lines, missing_env_names
from sleuth_agent.rca._records import PodView
from sleuth_agent.rca._signatures import match_all

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
rca_fakes = importlib.util.module_from_spec(_spec)
sys.modules["agent_rca_fakes"] = rca_fakes
_spec.loader.exec_module(rca_fakes)
FakeTools, follow = rca_fakes.FakeTools, rca_fakes.follow

PY_TRACE = """\
2026-05-01T10:00:00.000Z [INFO] starting app
2026-05-01T10:00:00.100Z [ERROR] Exception in application startup
2026-05-01T10:00:00.200Z Traceback (most recent call last):
2026-05-01T10:00:00.300Z   File "/srv/app/boot.py", line 12, in <module>
2026-05-01T10:00:00.400Z     import numpy_financial
2026-05-01T10:00:00.450Z     ^^^^^^^^^^^^^^^^^^^^^^
2026-05-01T10:00:00.500Z ImportError: cannot import name 'npv' from 'numpy_financial'
2026-05-01T10:00:00.600Z [ERROR] Application startup failed. Exiting.
"""

PY_CHAINED = """\
Traceback (most recent call last):
  File "a.py", line 3, in load
    return cfg["db"]
KeyError: 'db'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 9, in <module>
    load()
app.errors.ConfigurationError: database settings are incomplete
"""

JAVA_TRACE = """\
2026-05-01T10:00:00Z Exception in thread "main" org.springframework.beans.factory.BeanCreationException: Error creating bean 'ds'
2026-05-01T10:00:00Z \tat org.springframework.Foo.bar(Foo.java:12)
2026-05-01T10:00:00Z \tat org.springframework.Foo.baz(Foo.java:40)
2026-05-01T10:00:00Z Caused by: java.lang.IllegalStateException: pool init failed
2026-05-01T10:00:00Z \tat com.zaxxer.Pool.init(Pool.java:7)
2026-05-01T10:00:00Z Caused by: java.net.UnknownHostException: ledger-db.internal
2026-05-01T10:00:00Z \t... 12 more
"""

GO_PANIC = """\
2026-05-01T10:00:00Z level=info msg="listening"
2026-05-01T10:00:01Z panic: runtime error: index out of range [3] with length 3
2026-05-01T10:00:01Z
2026-05-01T10:00:01Z goroutine 1 [running]:
2026-05-01T10:00:01Z main.main()
2026-05-01T10:00:01Z \t/src/main.go:42 +0x1d
"""


def test_python_traceback_yields_its_final_exception_line_not_the_announcement() -> None:
    assert exception_lines(PY_TRACE) == ["ImportError: cannot import name 'npv' from 'numpy_financial'"]
    # ...and the exception line is also an error line, even though "ImportError" is one word.
    assert "ImportError: cannot import name 'npv' from 'numpy_financial'" in error_lines(PY_TRACE, 10)


def test_chained_python_exceptions_keep_the_last_one() -> None:
    assert exception_lines(PY_CHAINED) == ["app.errors.ConfigurationError: database settings are incomplete"]


def test_java_trace_yields_the_deepest_caused_by() -> None:
    assert exception_lines(JAVA_TRACE) == ["java.net.UnknownHostException: ledger-db.internal"]


def test_go_panic_line() -> None:
    assert exception_lines(GO_PANIC) == ["panic: runtime error: index out of range [3] with length 3"]


def test_plain_logs_have_no_exception_lines() -> None:
    assert exception_lines("2026-05-01T10:00:00Z Exception in worker process\nall good\n") == []


def test_missing_env_names_from_environ_keyerror_and_messages() -> None:
    py = 'Traceback (most recent call last):\n  File "x.py", line 2\n    region = os.environ["SHIP_REGION"]\nKeyError: \'SHIP_REGION\'\n'
    assert missing_env_names(py) == ["SHIP_REGION"]
    assert missing_env_names("FATAL environment variable LEDGER_DSN is not set") == ["LEDGER_DSN"]
    assert missing_env_names("Error: missing required env: STRIPE_WEBHOOK_KEY") == ["STRIPE_WEBHOOK_KEY"]
    assert missing_env_names("envconfig: required key QUEUE_URL missing value") == ["QUEUE_URL"]
    # A KeyError on an ordinary dict is not an environment variable.
    assert missing_env_names("Traceback (most recent call last):\n  File \"x\"\n    d['X_Y']\nKeyError: 'X_Y'\n") == []


# -- a missing environment variable, confirmed against the container's env sources ------------

_ENV_LOG = (
    "2026-05-01T10:00:00Z booting\n"
    "2026-05-01T10:00:00Z Traceback (most recent call last):\n"
    '2026-05-01T10:00:00Z   File "/app/settings.py", line 4, in <module>\n'
    '2026-05-01T10:00:00Z     WAREHOUSE = os.environ["WAREHOUSE_CODE"]\n'
    "2026-05-01T10:00:00Z KeyError: 'WAREHOUSE_CODE'\n"
)


def _env_obs(env=({"name": "LOG_LEVEL", "value": "info"},), env_from=({"config_map": "picker-config"},)) -> WorkloadObservation:
    pod = PodView.parse(
        {
            "namespace": "wh", "name": "picker-6c9f-abcde", "phase": "Running",
            "owner": {"kind": "DaemonSet", "name": "picker"}, "restart_policy": "Always",
            "containers": [{
                "name": "picker", "image": "reg/picker:2", "ready": False, "restart_count": 7,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "last_termination": {"reason": "Error", "exit_code": 1},
                "env": list(env), "env_from": list(env_from),
            }],
        }
    )
    obs = WorkloadObservation("wh", "DaemonSet", "picker", pods=[pod])
    obs.logs[(pod.name, "picker", True)] = _ENV_LOG
    return obs


async def test_env_var_missing_everywhere_is_missing_config_with_high_confidence() -> None:
    tools = FakeTools({("get_resource", "picker-config"): {"kind": "ConfigMap", "data": {"BATCH_SIZE": "5", "QUEUE": "q"}}})
    fu, _ = follow(tools)
    obs = _env_obs()
    await fu.run(obs)
    assert "WAREHOUSE_CODE" in " ".join(obs.derived["env_missing"])
    assert "BATCH_SIZE" in " ".join(obs.derived["env_missing"])  # keys, never values
    assert "5" not in " ".join(obs.derived["env_missing"]).replace("WAREHOUSE", "")
    m = match_all(obs.facts())[0]
    assert (m.signature.family, m.confidence) == ("missing_config", "high")


async def test_env_var_present_in_configmap_is_not_missing_config() -> None:
    tools = FakeTools({("get_resource", "picker-config"): {"kind": "ConfigMap", "data": {"WAREHOUSE_CODE": "x"}}})
    fu, _ = follow(tools)
    obs = _env_obs()
    await fu.run(obs)
    assert "env_present" in obs.derived
    assert match_all(obs.facts())[0].signature.family == "crash_loop_app_error"


async def test_unreadable_secret_leaves_it_unconfirmed_at_medium() -> None:
    tools = FakeTools({}, errors={("get_resource", "picker-secrets"): "denied: secrets are outside your access"})
    fu, _ = follow(tools)
    obs = _env_obs(env_from=({"secret": "picker-secrets"},))
    await fu.run(obs)
    assert "env_unconfirmed" in obs.derived
    m = match_all(obs.facts())[0]
    assert (m.signature.family, m.confidence) == ("missing_config", "medium")


def test_crash_loop_summary_quotes_the_final_exception_line() -> None:
    from sleuth_agent.rca.engine.match import _variables

    obs = _env_obs()
    obs.logs[(obs.pods[0].name, "picker", True)] = (
        "[ERROR] Exception in worker process\nTraceback (most recent call last):\n  File \"x\", line 1\n"
        "ModuleNotFoundError: No module named 'orjson'\n[ERROR] Worker failed to boot.\n"
    )
    m = match_all(obs.facts())[0]
    assert m.signature.family == "crash_loop_app_error"
    assert "orjson" in _variables(obs, m)["log_line"]
