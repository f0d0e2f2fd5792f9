"""sleuth_common.connect: settings → NATS / FastStream / Redis connections with the right login,
inbox prefix, TLS and a bounded Redis pool — against real nats-server and Valkey."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import nats
import nkeys
import pytest
from faststream.nats.security import NatsCredentials, NatsNKey, NatsUserPassword
from nacl.signing import SigningKey
from nats.aio.msg import Msg
from redis.asyncio import BlockingConnectionPool
from redis.asyncio.connection import SSLConnection
from redis.exceptions import AuthenticationError, ResponseError

from sleuth.embedded import NatsServer, ValkeyServer
from sleuth_common.config import NatsSettings, RedisSettings
from sleuth_common.connect import (
    ConnectConfigError,
    nats_broker,
    nats_broker_options,
    nats_connect_options,
    nats_tls_context,
    redis_client,
)

PASSWORD_ENV = "SLEUTH_TEST_CONNECT_PASSWORD"

# A user who may ask ``svc.echo`` and read only its own inbox; a responder on ``svc.echo``
# who may answer into that inbox only; a user known by its nkey.
_AUTH = """
authorization {{
  users = [
    {{user: "asker", password: "pw-asker", permissions: {{publish: {{allow: ["svc.echo"]}},
      subscribe: {{allow: ["_INBOX.asker.>"]}}}}}},
    {{user: "echo", password: "pw-echo", permissions: {{publish: {{allow: ["_INBOX.asker.>"]}},
      subscribe: {{allow: ["svc.echo"]}}}}}},
    {{nkey: "{nkey}", permissions: {{publish: {{allow: ["svc.echo"]}}, subscribe: {{allow: ["_INBOX.nk.>"]}}}}}},
  ]
}}
"""


async def _echo(msg: Msg) -> None:
    await msg.respond(msg.data)


@pytest.fixture
def password_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(PASSWORD_ENV, "pw-asker")
    return PASSWORD_ENV


@pytest.fixture
def nkey_seed(tmp_path: Path) -> tuple[Path, str]:
    seed = nkeys.encode_seed(bytes(SigningKey.generate()), nkeys.PREFIX_BYTE_USER)
    path = tmp_path / "user.nk"
    path.write_bytes(seed)
    return path, nkeys.from_seed(seed).public_key.decode()


@pytest.fixture
def secure_nats(tmp_path: Path, nkey_seed: tuple[Path, str]) -> Iterator[NatsServer]:
    srv = NatsServer(tmp_path / "nats", log_path=tmp_path / "nats.log",
                     authorization=_AUTH.format(nkey=nkey_seed[1])).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_user_and_password_come_from_the_environment(password_env: str) -> None:
    s = NatsSettings(url="nats://a:4222, nats://b:4222", user="asker", password_env=password_env)
    opts = nats_connect_options(s, name="sleuth-test")
    assert opts["servers"] == ["nats://a:4222", "nats://b:4222"]
    assert (opts["user"], opts["password"]) == ("asker", "pw-asker")
    assert opts["inbox_prefix"] == "_INBOX.asker"  # derived from the user: its permissions allow it
    assert "tls" not in opts


def test_an_explicit_inbox_prefix_wins() -> None:
    assert NatsSettings(user="gateway", inbox_prefix="_INBOX.gw2").inbox() == "_INBOX.gw2"
    assert NatsSettings().inbox() == "_INBOX"


def test_a_user_without_a_password_fails_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    s = NatsSettings(user="asker", password_env=PASSWORD_ENV)
    with pytest.raises(ConnectConfigError, match=PASSWORD_ENV):
        nats_connect_options(s, name="x")
    with pytest.raises(ConnectConfigError, match=PASSWORD_ENV):
        nats_broker_options(s, name="x")


def test_two_kinds_of_credentials_are_refused(password_env: str) -> None:
    s = NatsSettings(user="asker", password_env=password_env, creds_file="/x.creds")
    with pytest.raises(ConnectConfigError, match="creds_file and user"):
        nats_connect_options(s, name="x")


def test_creds_and_nkey_files_are_passed_as_files() -> None:
    opts = nats_connect_options(NatsSettings(creds_file="/etc/sleuth/gw.creds"), name="x")
    assert opts["user_credentials"] == "/etc/sleuth/gw.creds" and "user" not in opts
    opts = nats_connect_options(NatsSettings(nkey_seed_file="/etc/sleuth/gw.nk"), name="x")
    assert opts["nkeys_seed"] == "/etc/sleuth/gw.nk"
    assert isinstance(nats_broker_options(NatsSettings(creds_file="/x.creds"), name="x")["security"],
                      NatsCredentials)
    assert isinstance(nats_broker_options(NatsSettings(nkey_seed_file="/x.nk"), name="x")["security"], NatsNKey)


def test_broker_options_carry_the_same_login(password_env: str) -> None:
    opts = nats_broker_options(NatsSettings(user="asker", password_env=password_env, connect_timeout=1.5),
                               name="x")
    sec = opts["security"]
    assert isinstance(sec, NatsUserPassword) and (sec.username, sec.password) == ("asker", "pw-asker")
    assert opts["connect_timeout"] == 2 and opts["inbox_prefix"] == "_INBOX.asker"


def test_tls_turns_on_with_a_ca_file_or_a_tls_url(tmp_path: Path) -> None:
    assert nats_tls_context(NatsSettings()) is None
    ctx = nats_tls_context(NatsSettings(url="tls://127.0.0.1:4222"))
    assert ctx is not None and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    ctx = nats_tls_context(NatsSettings(url="tls://127.0.0.1:4222", tls_verify=False))
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE
    with pytest.raises(ConnectConfigError, match="tls_cert_file"):
        nats_tls_context(NatsSettings(tls_key_file=str(tmp_path / "k.pem")))
    with pytest.raises(FileNotFoundError):
        nats_tls_context(NatsSettings(tls_ca_file=str(tmp_path / "missing-ca.pem")))


@pytest.mark.connected
async def test_nats_py_logs_in_and_gets_its_reply_in_its_own_inbox(
    secure_nats: NatsServer, password_env: str
) -> None:
    responder = await nats.connect(secure_nats.url, user="echo", password="pw-echo")
    await responder.subscribe("svc.echo", cb=_echo)
    await responder.flush()
    nc = await nats.connect(**nats_connect_options(
        NatsSettings(url=secure_nats.url, user="asker", password_env=password_env), name="t"))
    try:
        # A request's reply comes back on _INBOX.asker.…, the only inbox the asker may read.
        assert (await nc.request("svc.echo", b"ping", timeout=2)).data == b"ping"
    finally:
        await nc.close()
        await responder.close()


@pytest.mark.connected
async def test_faststream_broker_passes_login_and_inbox_prefix(secure_nats: NatsServer, password_env: str) -> None:
    responder = await nats.connect(secure_nats.url, user="echo", password="pw-echo")
    await responder.subscribe("svc.echo", cb=_echo)
    await responder.flush()
    broker = nats_broker(NatsSettings(url=secure_nats.url, user="asker", password_env=password_env), name="t")
    nc = await broker.connect()
    try:
        assert (await nc.request("svc.echo", b"fs", timeout=2)).data == b"fs"
    finally:
        await broker.stop()
        await responder.close()


@pytest.mark.connected
async def test_nkey_seed_file_logs_in(secure_nats: NatsServer, nkey_seed: tuple[Path, str]) -> None:
    s = NatsSettings(url=secure_nats.url, nkey_seed_file=str(nkey_seed[0]), inbox_prefix="_INBOX.nk")
    nc = await nats.connect(**nats_connect_options(s, name="t"))
    try:
        assert nc.is_connected
    finally:
        await nc.close()
    broker = nats_broker(s, name="t")
    assert (await broker.connect()).is_connected
    await broker.stop()


@pytest.mark.connected
async def test_a_wrong_password_is_refused(secure_nats: NatsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "not-the-password")
    opts = nats_connect_options(NatsSettings(url=secure_nats.url, user="asker", password_env=PASSWORD_ENV), name="t")
    with pytest.raises(nats.errors.Error, match=r"(?i)authorization"):
        await nats.connect(**opts, allow_reconnect=False)


# --------------------------------------------------------------------------------------- Redis
@pytest.fixture
def acl_valkey(tmp_path: Path) -> Iterator[ValkeyServer]:
    acl = "user default off\nuser svc on >pw-svc ~svc:* -@all +@read +@write +@connection +@blocking\n"
    srv = ValkeyServer(tmp_path / "valkey", log_path=tmp_path / "valkey.log", acl=acl).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.connected
async def test_redis_client_logs_in_as_its_user(acl_valkey: ValkeyServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_TEST_REDIS_PW", "pw-svc")
    r = redis_client(RedisSettings(url=acl_valkey.url, username="svc", password_env="SLEUTH_TEST_REDIS_PW"),
                     decode_responses=True)
    try:
        await r.set("svc:k", "v")
        assert await r.get("svc:k") == "v"
        with pytest.raises(ResponseError, match=r"(?i)no permissions"):
            await r.set("other:k", "v")
    finally:
        await r.aclose()
    anonymous = redis_client(RedisSettings(url=acl_valkey.url))
    try:
        with pytest.raises(AuthenticationError):
            await anonymous.ping()
    finally:
        await anonymous.aclose()


@pytest.mark.connected
async def test_redis_pool_is_bounded(acl_valkey: ValkeyServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """With one connection, a second command waits for the first to give it back."""
    monkeypatch.setenv("SLEUTH_TEST_REDIS_PW", "pw-svc")
    r = redis_client(RedisSettings(url=acl_valkey.url, username="svc", password_env="SLEUTH_TEST_REDIS_PW",
                                   timeout=2.0, max_connections=1))
    assert isinstance(r.connection_pool, BlockingConnectionPool)
    done: list[str] = []

    async def slow() -> None:
        await r.blpop(["svc:never"], timeout=0.3)
        done.append("slow")

    async def quick() -> None:
        await r.ping()
        done.append("quick")

    try:
        first = asyncio.create_task(slow())
        await asyncio.sleep(0.05)
        await asyncio.gather(first, quick())
        assert done == ["slow", "quick"]
    finally:
        await r.aclose()


def test_redis_tls_and_a_user_without_password(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SLEUTH_REDIS_PASSWORD", raising=False)
    with pytest.raises(ConnectConfigError, match="SLEUTH_REDIS_PASSWORD"):
        redis_client(RedisSettings(username="gateway"))
    ca = tmp_path / "ca.pem"
    r = redis_client(RedisSettings(url="redis://127.0.0.1:6380/0", tls=True, ca_file=str(ca)))
    pool = r.connection_pool
    assert pool.connection_class is SSLConnection
    assert pool.connection_kwargs["ssl_ca_certs"] == str(ca)
    assert pool.connection_kwargs["ssl_cert_reqs"] == "required"
