"""docker-compose.yml, without Docker: the file is valid Compose, every Sleuth container runs a
command the image accepts with the one config file, that file loads into each service's own
settings with nothing misspelt and the same sections `make run` writes, every path a service reads
is mounted into it, and every container is probed, restarted and locked down.
(tests/deploy/test_compose_run.py runs the services themselves.)"""

from __future__ import annotations

import copy
import json
import re
import tomllib
import typing
from dataclasses import dataclass
from importlib import import_module
from importlib.resources import files
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from sleuth.commands.keys import ensure_keys, file_names
from sleuth.embedded.stack import IDENTITY_SIGNERS, Stack, StackPorts, StackSpec
from sleuth_common.config import load_settings
from sleuth_common.identity import (
    CHAT_ISSUER,
    IdentityError,
    job_verifier_from_settings,
    signer_from_settings,
)
from sleuth_common.tracing._setup import exporter_from_env
from sleuth_reporter.asking import REPORTER_ISSUER
from sleuth_scheduler.firing import SCHEDULER_ISSUER
from sleuth_simcluster import SimCluster

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
CONFIG_TARGET = "/etc/sleuth/sleuth.yaml"
IMAGE = "sleuth:local"

SETTINGS = {  # compose service → the module of its Settings model
    "gateway": "sleuth_gateway.settings",
    "alerts": "sleuth_alerts.settings",
    "agent": "sleuth_agent.settings",
    "authz-cache": "sleuth_authz_cache.settings",
    "kube-mcp": "sleuth_kube_mcp.settings",
    "scheduler": "sleuth_scheduler.settings",
    "reporter": "sleuth_reporter.settings",
}

PORTS = StackPorts()  # make run's ports: compose listens on the same ones
PROBED_PORT = {  # service → the port its /healthz and /readyz are on, per its settings
    "gateway": lambda s: s.gateway.port,
    "alerts": lambda s: s.alerts.port,
    "agent": lambda s: s.agent.metrics_port,
    "authz-cache": lambda s: s.authz_cache.metrics_port,
    "kube-mcp": lambda s: s.kube_mcp.port,
    "scheduler": lambda s: s.scheduler.port,
    "reporter": lambda s: s.reporter.port,
}

READS = {  # service → the files it reads, per its settings (its environment applied)
    "gateway": lambda s: [s.identity.signing_key_file],
    "alerts": lambda s: [s.identity.signing_key_file],
    "agent": lambda s: [s.identity.signing_key_file, *(p for ps in s.identity.job_issuers.values() for p in ps)],
    "authz-cache": lambda s: [s.identity.signing_key_file, *(f for c in s.clusters for f in (c.ca_file, c.authz_token_file))],
    "kube-mcp": lambda s: [s.kube_mcp.kubeconfig, *s.identity.verify_key_files],
    "scheduler": lambda s: [s.identity.signing_key_file],
    "reporter": lambda s: [s.identity.signing_key_file, *(f for f in (s.reporter.smtp.password_file,
                                                                      s.reporter.smtp.ca_file) if f)],
}


@dataclass(frozen=True)
class Difference:
    """A key one of the two configs has and the other has not, and why."""

    section: str
    key: str
    only_in: str
    why: str


DIFFERENCES = (
    Difference("clusters[]", "authz_token_file", "compose",
               "simcluster writes authz-cache's token to tokens/sleuth-authz on the shared volume"),
    Difference("clusters[]", "authz_token_env", "make run", "make run passes that token in the environment"),
    Difference("gateway", "public_url", "compose", "listening on 0.0.0.0, the logs say where people reach it"),
    Difference("gateway", "allowed_hosts", "compose", "other containers call it http://gateway:8080"),
    Difference("alerts", "allowed_hosts", "compose", "an Alertmanager on the compose network posts to alerts:8090"),
)


def load_compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


DOC = load_compose()
SERVICES: dict[str, dict[str, Any]] = DOC["services"]
SLEUTH = sorted(n for n, s in SERVICES.items() if s.get("image") == IMAGE)
JOBS = sorted(n for n, s in SERVICES.items() if s.get("restart") == "no")


def interpolate(value: str) -> str:
    """Compose's ``${VAR:-default}`` / ``${VAR}`` with nothing in the environment or .env."""
    return re.sub(r"\$\{\w+(?::?-([^}]*))?\}", lambda m: m.group(1) or "", value)


def environment(name: str) -> dict[str, str]:
    env = SERVICES[name].get("environment") or {}
    assert isinstance(env, dict), f"{name}: environment as a mapping"
    return {k: interpolate(str(v)) for k, v in env.items()}


@dataclass(frozen=True)
class Mount:
    kind: str  # "bind" or "volume"
    source: str
    target: str
    read_only: bool


def mounts(name: str) -> list[Mount]:
    out = []
    for v in SERVICES[name].get("volumes") or []:
        if isinstance(v, str):
            source, target, *mode = v.split(":")
            kind = "bind" if source.startswith((".", "/")) else "volume"
            out.append(Mount(kind, source, target, "ro" in ",".join(mode).split(",")))
        else:
            out.append(Mount(v["type"], v["source"], v["target"], bool(v.get("read_only"))))
    return out


def settings_of(name: str, monkeypatch: pytest.MonkeyPatch, config_file: Path | None = None) -> Any:
    """The service's settings as it loads them: the mounted file (or ``config_file`` in its
    place), then its compose environment."""
    for key in [k for k in __import__("os").environ if k.startswith("SLEUTH_")]:
        monkeypatch.delenv(key)
    for key, value in environment(name).items():
        monkeypatch.setenv(key, value)
    config = next(m for m in mounts(name) if m.target == CONFIG_TARGET)
    return load_settings(import_module(SETTINGS[name]).Settings, config_file or ROOT / config.source)


def config_path() -> Path:
    return ROOT / next(m for m in mounts("gateway") if m.target == CONFIG_TARGET).source


# --------------------------------------------------------------------------- the file itself


def test_the_file_is_valid_compose() -> None:
    schema = json.loads((files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [e.message for e in validator.iter_errors(DOC)] == []
    broken = copy.deepcopy(DOC)
    broken["services"]["gateway"]["healthchek"] = broken["services"]["gateway"].pop("healthcheck")
    assert list(validator.iter_errors(broken)), "the schema must refuse a misspelt key"


def entrypoint_commands() -> set[str]:
    text = (ROOT / "deploy" / "entrypoint.sh").read_text()
    m = re.search(r'case "\$\{1:-\}" in\s*\n\s*([\w|-]+)\)', text)
    assert m, "no case list in deploy/entrypoint.sh"
    return set(m.group(1).split("|"))


def console_scripts() -> set[str]:
    names: set[str] = set()
    for pyproject in [ROOT / "pyproject.toml", *ROOT.glob("libs/*/pyproject.toml"), *ROOT.glob("services/*/pyproject.toml")]:
        names |= set(tomllib.loads(pyproject.read_text()).get("project", {}).get("scripts", {}))
    return names


def test_every_sleuth_container_runs_a_command_the_image_has() -> None:
    assert set(SETTINGS) | {"keys", "simcluster"} == set(SLEUTH)
    accepted, scripts = entrypoint_commands(), console_scripts()
    for name in SLEUTH:
        svc = SERVICES[name]
        assert "entrypoint" not in svc, f"{name}: the image's entrypoint stays"
        assert svc["build"] == {"context": ".", "dockerfile": "Dockerfile"}, name
        command = svc["command"]
        assert command[0] in accepted, f"{name}: the entrypoint refuses {command[0]}"
        assert command[0] in scripts, f"{name}: {command[0]} is no console script of the workspace"


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_each_service_runs_with_the_one_config_file(name: str) -> None:
    assert SERVICES[name]["command"] == [f"sleuth-{name}", "--config", CONFIG_TARGET]
    configs = [m for m in mounts(name) if m.target == CONFIG_TARGET]
    assert configs == [Mount("bind", "./deploy/compose/sleuth.yaml", CONFIG_TARGET, True)], name
    assert config_path().is_file()
    others = [m for m in mounts(name) if m.kind == "bind" and m.target.endswith((".yaml", ".yml", ".json"))]
    assert others == configs, f"{name}: one config file only"


# --------------------------------------------------------------------------- the config file


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_config_loads_into_each_services_settings(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings_of(name, monkeypatch)
    assert s.nats.url == "nats://nats:4222" and s.redis.url == "redis://valkey:6379/0"
    assert [c.name for c in s.clusters] == ["demo"]
    key = environment(name).get("SLEUTH_IDENTITY__SIGNING_KEY_FILE")
    if name in IDENTITY_SIGNERS:  # its own signing key, nobody else's
        assert s.identity.signing_key_file == key == f"/etc/sleuth/identity/{IDENTITY_SIGNERS[name]}.key"
    else:
        assert key is None and s.identity.signing_key_file == ""
    if name == "alerts":  # the demo route is open with the documented default token
        route = s.route("team-a")
        assert route is not None and route.token() is not None
        assert route.token().get_secret_value() == "demo-alerts-token"


def _model(annotation: Any) -> tuple[type[BaseModel], str] | None:
    """The pydantic model an annotation holds, and how: ``one``, ``list`` of, or ``dict`` of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, "one"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is list and args:
        inner = _model(args[0])
        return (inner[0], "list") if inner else None
    if origin is dict and len(args) == 2:
        inner = _model(args[1])
        return (inner[0], "dict") if inner else None
    for arg in args:  # X | None
        inner = _model(arg)
        if inner:
            return inner
    return None


def unknown_keys(model: type[BaseModel], data: dict[str, Any], where: str = "") -> set[str]:
    """Keys of ``data`` that ``model`` (recursively) has no field for."""
    out: set[str] = set()
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            out.add(where + key)
            continue
        sub = _model(field.annotation)
        if sub is None:
            continue
        cls, how = sub
        if how == "one":
            items = [("", value)]
        elif how == "list":
            items = [(f"[{i}]", v) for i, v in enumerate(value or [])]
        else:
            items = [(f".{k}", v) for k, v in (value or {}).items()]
        for suffix, item in items:
            if isinstance(item, dict):
                out |= unknown_keys(cls, item, f"{where}{key}{suffix}.")
    return out


def unread_keys(config: dict[str, Any]) -> set[str]:
    """Keys no service's settings have a field for (each section judged by the services reading it)."""
    models = [import_module(m).Settings for m in SETTINGS.values()]
    out: set[str] = set()
    for key, value in config.items():
        readers = [m for m in models if key in m.model_fields]
        out |= set.intersection(*(unknown_keys(m, {key: value}) for m in readers)) if readers else {key}
    return out


def test_no_key_in_the_config_is_one_no_service_reads() -> None:
    """The settings models ignore unknown keys; a misspelt one would silently fall back to a default."""
    config = yaml.safe_load(config_path().read_text())
    assert unread_keys(config) == set()
    # and the check sees a misspelling, at any depth
    broken = copy.deepcopy(config)
    broken["kube_mcp"]["kubeconfg"] = broken["kube_mcp"].pop("kubeconfig")
    broken["alerts"]["routes"][0]["run_as"]["group"] = []
    broken["clusters"][0]["mcp_servers"][0]["identiy"] = True
    broken["gatway"] = {}
    assert unread_keys(broken) == {"kube_mcp.kubeconfg", "alerts.routes[0].run_as.group",
                                   "clusters[0].mcp_servers[0].identiy", "gatway"}


@pytest.fixture(scope="module")
def make_run_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What `make run` writes (``Stack._write_config``), with stand-ins for the running servers."""
    stack = Stack(StackSpec(snapshot=ROOT / "scenarios" / "demo", state_dir=tmp_path_factory.mktemp("stack")))
    stack.nats = SimpleNamespace(url=f"nats://127.0.0.1:{PORTS.nats}")  # type: ignore[assignment]
    stack.valkey = SimpleNamespace(url=f"redis://127.0.0.1:{PORTS.valkey}/0")  # type: ignore[assignment]
    stack.sim_info = {"url": f"https://127.0.0.1:{PORTS.simcluster}", "ca_file": "/sim/tls/ca.crt",
                      "kubeconfigs": {"sleuth-reader": "/sim/kubeconfig/sleuth-reader.yaml"}}
    stack._write_config()
    return yaml.safe_load(stack.config_path.read_text())


def test_the_config_has_the_sections_make_run_writes(make_run_config: dict[str, Any]) -> None:
    ours = yaml.safe_load(config_path().read_text())
    theirs = make_run_config
    assert list(ours) == list(theirs)
    sections = {name: (ours[name], theirs[name]) for name in ours if isinstance(ours[name], dict)}
    sections["clusters[]"] = (ours["clusters"][0], theirs["clusters"][0])
    sections["clusters[].mcp_servers[]"] = (ours["clusters"][0]["mcp_servers"][0], theirs["clusters"][0]["mcp_servers"][0])
    sections["identity.job_issuers"] = (ours["identity"]["job_issuers"], theirs["identity"]["job_issuers"])
    for section, (a, b) in sections.items():
        only_compose = {d.key for d in DIFFERENCES if d.section == section and d.only_in == "compose"}
        only_make_run = {d.key for d in DIFFERENCES if d.section == section and d.only_in == "make run"}
        assert (set(a) - set(b), set(b) - set(a)) == (only_compose, only_make_run), section
    # the same demo: cluster, channel, alert route, ports
    for key in ("prefix",):
        assert ours[key] == theirs[key]
    assert (ours["clusters"][0]["name"], ours["clusters"][0]["aliases"]) == \
        (theirs["clusters"][0]["name"], theirs["clusters"][0]["aliases"])
    assert ours["kube_mcp"]["cluster_name"] == theirs["kube_mcp"]["cluster_name"]
    assert ours["gateway"]["channels"] == theirs["gateway"]["channels"]
    assert ours["alerts"]["routes"] == theirs["alerts"]["routes"]
    for section, key in (("gateway", "port"), ("alerts", "port"), ("kube_mcp", "port"),
                         ("authz_cache", "metrics_port"), ("agent", "metrics_port"),
                         ("scheduler", "port"), ("reporter", "port")):
        assert ours[section][key] == theirs[section][key], (section, key)
    # the scheduler and the reporter run here, so the gateway offers their commands
    for key in ("schedules", "reports"):
        assert ours["gateway"][key] is theirs["gateway"][key] is True, key
    assert [Path(p).name for p in ours["identity"]["verify_key_files"]] == \
        [Path(p).name for p in theirs["identity"]["verify_key_files"]]
    assert {k: [Path(p).name for p in v] for k, v in ours["identity"]["job_issuers"].items()} == \
        {k: [Path(p).name for p in v] for k, v in theirs["identity"]["job_issuers"].items()}


# --------------------------------------------------------------------------- files and volumes


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_every_file_a_service_reads_is_mounted_into_it(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings_of(name, monkeypatch)
    targets = [m.target.rstrip("/") + "/" for m in mounts(name) if m.target != CONFIG_TARGET]
    for path in READS[name](s):
        assert path, f"{name}: an empty path"
        assert any(path.startswith(t) for t in targets), f"{name} reads {path}, mounted nowhere in it"
    for m in mounts(name):
        assert m.read_only, f"{name}: {m.target} is mounted writable"


def test_the_config_names_the_files_simcluster_writes(tmp_path: Path) -> None:
    """simcluster, started as the compose command says, writes the CA, the reader's kubeconfig and
    authz-cache's token where the config looks for them, for the name the others use."""
    command = SERVICES["simcluster"]["command"]
    arg = dict(zip(command[1::2], command[2::2], strict=False))
    snapshot = next(m for m in mounts("simcluster") if m.target == arg["--snapshot"])
    state = next(m for m in mounts("simcluster") if m.target == arg["--state-dir"])
    assert snapshot.kind == "bind" and snapshot.read_only and (ROOT / snapshot.source / "snapshot.yaml").is_file()
    assert state.kind == "volume" and not state.read_only
    for reader in ("kube-mcp", "authz-cache"):
        assert Mount("volume", state.source, state.target, True) in mounts(reader), reader
    config = yaml.safe_load(config_path().read_text())
    cluster = config["clusters"][0]
    api = urlsplit(cluster["api_server"])
    assert (api.hostname, str(api.port)) == (arg["--advertise"], arg["--port"])
    assert api.hostname in SERVICES  # the compose network's name for it
    with SimCluster(ROOT / snapshot.source, tmp_path, host="127.0.0.1", port=0, advertise=[arg["--advertise"]]) as sim:
        def here(path: str) -> Path:
            assert path.startswith(state.target + "/"), path
            return tmp_path / path[len(state.target) + 1:]

        assert here(cluster["ca_file"]) == sim.ca_file
        assert here(cluster["authz_token_file"]).read_text() == sim.token("sleuth-authz")
        kubeconfig = yaml.safe_load(here(config["kube_mcp"]["kubeconfig"]).read_text())
        assert kubeconfig["users"][0]["name"] == "sleuth-reader"
        assert urlsplit(kubeconfig["clusters"][0]["cluster"]["server"]).hostname == api.hostname
        # the CA path in the kubeconfig is the one every container mounts the volume at
        ca = kubeconfig["clusters"][0]["cluster"]["certificate-authority"]
        assert ca == str(sim.ca_file.resolve())
        assert state.target + ca[len(str(tmp_path.resolve())):] == cluster["ca_file"]
    # the healthcheck trusts the same CA
    assert SERVICES["simcluster"]["healthcheck"]["test"][-1] == cluster["ca_file"]


def test_volumes_are_declared_and_written_only_by_their_owner() -> None:
    writers: dict[str, set[str]] = {}
    for name in SERVICES:
        for m in mounts(name):
            if m.kind == "volume":
                assert m.source in DOC["volumes"], f"{name}: volume {m.source} is not declared"
                if not m.read_only:
                    writers.setdefault(m.source, set()).add(name)
    assert writers == {"nats-data": {"volumes-init", "nats"}, "valkey-data": {"volumes-init", "valkey"},
                       "identity": {"volumes-init", "keys"}, "simcluster-state": {"simcluster"}}
    assert set(DOC["volumes"]) == set(writers)
    assert mounts("gateway") == [Mount("bind", "./deploy/compose/sleuth.yaml", CONFIG_TARGET, True),
                                 Mount("volume", "identity", "/etc/sleuth/identity", True)]


@dataclass(frozen=True)
class JobSigner:
    """A service that signs investigation jobs for the agent, with its key file and issuer."""

    service: str
    key: str
    issuer: str


JOB_SIGNERS = (
    JobSigner("gateway", "chat.key", CHAT_ISSUER),            # the chat users it maps
    JobSigner("scheduler", "scheduler.key", SCHEDULER_ISSUER),  # a schedule's owner, at each run
    JobSigner("reporter", "reporter.key", REPORTER_ISSUER),     # a report's asker
)


@pytest.mark.parametrize("case", JOB_SIGNERS, ids=lambda c: c.service)
def test_each_job_signer_alone_signs_as_its_issuer_and_the_agent_trusts_it(
        case: JobSigner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway, the scheduler and the reporter sign job identities with their own key
    (issuers ``sleuth-chat``, ``sleuth-scheduler``, ``sleuth-reporter``); no other service is told
    that key, and the agent verifies it under ``job_issuers``, bound to that issuer only. Checked
    with the files the ``keys`` job writes."""
    signing = {n: environment(n).get("SLEUTH_IDENTITY__SIGNING_KEY_FILE", "") for n in SERVICES}
    assert {n for n, key in signing.items() if Path(key).name == case.key} == {case.service}
    assert {Path(key).name for key in signing.values() if key} <= set(file_names())
    command = SERVICES["keys"]["command"]
    (volume,) = [m for m in mounts("keys") if m.source == "identity"]
    assert command[:2] == ["sleuth", "keys"] and command[command.index("--out") + 1] == volume.target
    ensure_keys(tmp_path, lambda line: None)  # what the keys job writes into the volume

    def here(path: str) -> str:
        assert path.startswith(volume.target + "/"), path
        return str(tmp_path / path[len(volume.target) + 1:])

    signer_settings, agent = settings_of(case.service, monkeypatch), settings_of("agent", monkeypatch)
    public = "/etc/sleuth/identity/" + case.key.replace(".key", ".pub")
    assert agent.identity.job_issuers[case.issuer] == [public]
    assert [i for i, paths in agent.identity.job_issuers.items() if public in paths] == [case.issuer]
    verifier = job_verifier_from_settings(agent.identity.model_copy(update={
        "job_issuers": {k: [here(p) for p in v] for k, v in agent.identity.job_issuers.items()}}))

    def sign_as(issuer: str) -> str:
        identity = signer_settings.identity.model_copy(update={
            "signing_key_file": here(signer_settings.identity.signing_key_file), "signing_key_env": ""})
        signer = signer_from_settings(identity, issuer=issuer, ttl=identity.job_ttl)
        assert signer is not None
        return signer.mint("alice", ["team-a"], audience=agent.identity.job_audience)

    assert verifier is not None
    assert verifier.verify(sign_as(case.issuer)).issuer == case.issuer
    for other in JOB_SIGNERS:  # it cannot pass for another signer, nor for authz-cache
        if other != case:
            with pytest.raises(IdentityError, match="issuer"):
                verifier.verify(sign_as(other.issuer))
    with pytest.raises(IdentityError, match="issuer"):
        verifier.verify(sign_as("sleuth-authz"))


def test_secrets_reach_only_the_service_that_uses_them() -> None:
    holders = {k: {n for n in SERVICES if k in environment(n)}
               for k in ("SLEUTH_AUTHZ_CACHE_KEY", "SLEUTH_DEMO_ALERTS_TOKEN", "SLEUTH_IDENTITY__SIGNING_KEY_FILE",
                         "SLEUTH_MATTERMOST_TOKEN", "SLEUTH_SMTP_PASSWORD")}
    assert holders == {"SLEUTH_AUTHZ_CACHE_KEY": {"authz-cache"}, "SLEUTH_DEMO_ALERTS_TOKEN": {"alerts"},
                       "SLEUTH_IDENTITY__SIGNING_KEY_FILE": set(IDENTITY_SIGNERS),
                       "SLEUTH_MATTERMOST_TOKEN": {"gateway"}, "SLEUTH_SMTP_PASSWORD": {"reporter"}}
    # each signer is told its own private key, so each key reaches only its signer
    told = {n: Path(environment(n)["SLEUTH_IDENTITY__SIGNING_KEY_FILE"]).name for n in IDENTITY_SIGNERS}
    assert told == {n: f"{signer}.key" for n, signer in IDENTITY_SIGNERS.items()}
    assert len(set(told.values())) == len(told)
    for name in SERVICES:  # from .env or the documented default, never a literal in the file
        for key, raw in (SERVICES[name].get("environment") or {}).items():
            if key != "SLEUTH_IDENTITY__SIGNING_KEY_FILE":
                assert str(raw).startswith("${"), f"{name}: {key}"


# --------------------------------------------------------------------------- the Mattermost bot


def uncomment(text: str, key: str) -> str:
    """The config file with its commented-out ``<key>:`` block (``mattermost:``, ``smtp:`` …)
    uncommented, as the comment above it tells a reader to."""
    lines = text.splitlines(keepends=True)
    (start,) = [i for i, line in enumerate(lines) if line.rstrip() == f"  # {key}:"]
    end = start + 1
    while end < len(lines) and lines[end].startswith("  #   "):
        end += 1
    assert end > start + 1, "the block has no body"
    block = [line.replace("  # ", "  ", 1) for line in lines[start:end]]
    return "".join([*lines[:start], *block, *lines[end:]])


def test_only_the_gateway_gets_the_mattermost_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot's token is in the gateway's environment only, under the name its settings read
    (``gateway.mattermost.token_env``), from .env or the shell, never a value in the file."""
    from sleuth_gateway.settings import MattermostSettings

    name = MattermostSettings().token_env
    assert {n for n in SERVICES if name in (SERVICES[n].get("environment") or {})} == {"gateway"}
    assert SERVICES["gateway"]["environment"][name] == "${SLEUTH_MATTERMOST_TOKEN:-}"
    assert not any(name in json.dumps(SERVICES[n]) for n in SERVICES if n != "gateway")
    # As shipped the bot is off: no url, and an empty token is no token.
    gateway = settings_of("gateway", monkeypatch)
    assert gateway.gateway.mattermost.url == "" and gateway.gateway.mattermost.bot_token() is None


def test_the_commented_mattermost_block_works_uncommented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sleuth_gateway.settings import MattermostPerson

    text = config_path().read_text()
    assert "mattermost" not in yaml.safe_load(text)["gateway"], "off as shipped"
    config = tmp_path / "sleuth.yaml"
    config.write_text(uncomment(text, "mattermost"))
    data = yaml.safe_load(config.read_text())
    assert unread_keys(data) == set()
    assert set(data["gateway"]["mattermost"]) == {"url", "people"}
    mm = settings_of("gateway", monkeypatch, config).gateway.mattermost
    assert mm.url == "https://chat.example.com"
    # The people are the demo cluster's users, with their own groups.
    users = yaml.safe_load((ROOT / "scenarios" / "demo" / "snapshot.yaml").read_text())["users"]
    assert [p.user for p in mm.people] == ["alice", "bob", "carol"]
    for person in mm.people:
        assert isinstance(person, MattermostPerson)
        assert person.groups == users[person.user]["groups"], person
    # The token the compose file passes is the one the bot reads.
    assert mm.bot_token() is None
    monkeypatch.setenv(mm.token_env, "bot-token-from-dotenv")
    token = mm.bot_token()
    assert token is not None and token.get_secret_value() == "bot-token-from-dotenv"


# --------------------------------------------------------------------------- the reporter's email


def test_only_the_reporter_gets_the_smtp_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SMTP password is in the reporter's environment only, under the name its settings read
    (``reporter.smtp.password_env``), from .env or the shell, never a value in the file."""
    from sleuth_reporter.settings import SmtpSettings

    name = SmtpSettings().password_env
    assert {n for n in SERVICES if name in (SERVICES[n].get("environment") or {})} == {"reporter"}
    assert SERVICES["reporter"]["environment"][name] == "${SLEUTH_SMTP_PASSWORD:-}"
    assert not any(name in json.dumps(SERVICES[n]) for n in SERVICES if n != "reporter")
    # As shipped there is no email: no server, no sender, and an empty password is no password.
    smtp = settings_of("reporter", monkeypatch).reporter.smtp
    assert not smtp.enabled and smtp.password() is None
    assert settings_of("reporter", monkeypatch).reporter.emails == {}


def test_the_commented_smtp_block_works_uncommented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = config_path().read_text()
    assert not {"smtp", "emails"} & set(yaml.safe_load(text)["reporter"]), "off as shipped"
    config = tmp_path / "sleuth.yaml"
    config.write_text(uncomment(uncomment(text, "smtp"), "emails"))
    data = yaml.safe_load(config.read_text())
    assert unread_keys(data) == set()
    reporter = settings_of("reporter", monkeypatch, config).reporter
    smtp = reporter.smtp
    assert smtp.enabled and (smtp.host, smtp.port, smtp.starttls, smtp.tls) == ("smtp.example.com", 587, True, False)
    assert smtp.user == "sleuth" and smtp.sender == "Sleuth <sleuth@example.com>"
    # The demo channel's reports go to the example address; the password is the one compose passes.
    assert [f"web:{c['name']}" for c in data["gateway"]["channels"]] == list(reporter.emails)
    assert reporter.addresses("web:team-a-alerts") == ["team-a@example.com"]
    assert smtp.password() is None
    monkeypatch.setenv(smtp.password_env, "smtp-password-from-dotenv")
    password = smtp.password()
    assert password is not None and password.get_secret_value() == "smtp-password-from-dotenv"


# --------------------------------------------------------------------------- running them


def test_agents_run_two_replicas() -> None:
    assert SERVICES["agent"]["deploy"]["replicas"] == 2
    assert not SERVICES["agent"].get("ports"), "replicas cannot share a published port"


def test_only_the_gateway_and_alerts_are_published_on_loopback() -> None:
    published = {n: s["ports"] for n, s in SERVICES.items() if s.get("ports")}
    assert published == {"gateway": [f"127.0.0.1:{PORTS.gateway}:{PORTS.gateway}"],
                         "alerts": [f"127.0.0.1:{PORTS.alerts}:{PORTS.alerts}"]}


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_container_is_probed_restarted_and_locked_down(name: str) -> None:
    svc = SERVICES[name]
    check = svc["healthcheck"]
    if name in JOBS:  # a job has nothing to probe; others wait for it to exit 0
        assert check == {"disable": True}
    else:
        assert check["test"][0] in ("CMD", "CMD-SHELL") and check["interval"] and check["retries"]
        assert svc["restart"] == "unless-stopped"
    assert svc["read_only"] is True
    assert svc["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in svc["security_opt"]
    assert "/tmp" in svc["tmpfs"]
    assert "privileged" not in svc
    if name == "volumes-init":  # hands the fresh volumes to 10001, nothing else
        assert (svc["user"], svc["cap_add"], svc["network_mode"]) == ("0:0", ["CHOWN"], "none")
        assert svc["command"][:2] == ["chown", "10001:10001"]
        assert sorted(svc["command"][2:]) == sorted(m.target for m in mounts(name))
    else:
        assert svc["user"] == "10001:10001" and "cap_add" not in svc


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_probe_asks_the_services_own_readiness_port(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    test = SERVICES[name]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    m = re.search(r"urlopen\('http://127\.0\.0\.1:(\d+)(/\w+)'", test[3])
    assert m, test
    assert (int(m.group(1)), m.group(2)) == (PROBED_PORT[name](settings_of(name, monkeypatch)), "/readyz")


def test_dependencies_wait_for_what_each_service_needs() -> None:
    deps = {n: s.get("depends_on") or {} for n, s in SERVICES.items()}
    for name, on in deps.items():
        for dep, how in on.items():
            assert dep in SERVICES, f"{name} depends on unknown {dep}"
            want = "service_completed_successfully" if dep in JOBS else "service_healthy"
            assert how["condition"] == want, (name, dep)

    def upstream(name: str) -> set[str]:
        seen: set[str] = set()
        todo = list(deps[name])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo += list(deps[d])
        return seen

    assert "volumes-init" in upstream("keys")
    for name in SERVICES:
        assert name not in upstream(name), f"{name} depends on itself"
        used = {m.source for m in mounts(name) if m.kind == "volume"}
        if "identity" in used and name not in ("keys", "volumes-init"):
            assert "keys" in upstream(name), name
        if "simcluster-state" in used and name != "simcluster":
            assert deps[name]["simcluster"] == {"condition": "service_healthy", "restart": True}, name
        if used & {"nats-data", "valkey-data", "identity"} and name != "volumes-init":
            assert "volumes-init" in upstream(name), name
    config = yaml.safe_load(config_path().read_text())
    for name in SETTINGS:  # those on the bus wait for it and for Redis
        if name != "kube-mcp":
            assert {"nats", "valkey"} <= set(deps[name]), name
    assert {"authz-cache", "kube-mcp"} <= upstream("agent") and "agent" in upstream("gateway")
    assert urlsplit(config["clusters"][0]["mcp_servers"][0]["url"]).hostname == "kube-mcp"


def test_every_service_takes_tracing_from_the_shell_and_is_off_without_it() -> None:
    services = {"gateway", "authz-cache", "agent", "alerts", "kube-mcp", "scheduler", "reporter"}
    for name in services:
        env = environment(name)
        assert SERVICES[name]["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "${OTEL_EXPORTER_OTLP_ENDPOINT:-}", name
        assert exporter_from_env(env) is None, name
        assert exporter_from_env({**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}) == "otlp", name
