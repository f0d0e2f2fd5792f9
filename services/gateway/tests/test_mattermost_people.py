"""Who a Mattermost account is in Kubernetes (``sleuth_gateway.mattermost._people``), against the
fake Mattermost server, a real Valkey and a real HTTP people backend; and the Redis lease that lets
one gateway replica at a time listen to Mattermost (``_lease``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sleuth.embedded import ValkeyServer, free_port
from sleuth_gateway.mattermost._client import MattermostApi
from sleuth_gateway.mattermost._lease import Lease
from sleuth_gateway.mattermost._people import People, PeopleUnavailable, Person
from sleuth_gateway.settings import MattermostPerson, MattermostSettings
from tests.fakes.mattermost import FakeMattermost, User, new_id

pytestmark = pytest.mark.connected

ALICE = MattermostPerson(email="Alice@Example.COM", user="alice", groups=["team-a"])  # case differs
CAROL = MattermostPerson(email="carol@example.com", user="carol", groups=["sre", "team-b"])


# -- the people backend: a real HTTP server in the test's loop -------------------------------------
@dataclass
class Asked:
    email: str | None
    authorization: str | None


@dataclass
class Backend:
    """``GET /people?email=``: ``answers[email]`` (status, body), else 404; records every request.
    ``hang``: requests wait until the test ends."""

    url: str = ""
    answers: dict[str, tuple[int, str]] = field(default_factory=dict)
    asked: list[Asked] = field(default_factory=list)
    hang: bool = False
    _released: asyncio.Event = field(default_factory=asyncio.Event)

    async def _people(self, request: Request) -> Response:
        email = request.query_params.get("email")
        self.asked.append(Asked(email, request.headers.get("authorization")))
        if self.hang:
            await self._released.wait()
        status, body = self.answers.get(email or "", (404, '{"message": "unknown"}'))
        return Response(body, status, media_type="application/json")

    def emails(self) -> list[str | None]:
        return [a.email for a in self.asked]


class _Server(uvicorn.Server):
    """uvicorn's server, stopped at once by ``stop()`` (its own loop looks every 0.1 s)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stop = asyncio.Event()

    async def main_loop(self) -> None:
        await self._stop.wait()

    def stop(self) -> None:
        self.should_exit = True
        self._stop.set()


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[Backend]:
    """Serve ``backend`` with uvicorn in this event loop until the block ends."""
    port = free_port()
    app = Starlette(routes=[Route("/people", backend._people)])
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if task.done():
                    task.result()
                    raise RuntimeError("the people backend did not start")
                await asyncio.sleep(0.01)
        backend.url = f"http://127.0.0.1:{port}/people"
        yield backend
    finally:
        backend._released.set()
        server.stop()
        await asyncio.wait_for(task, 10)


# -- fixtures --------------------------------------------------------------------------------------
@dataclass
class Chat:
    mm: FakeMattermost
    bot: User
    alice: User
    carol: User
    dave: User  # nobody maps dave@example.com statically


@pytest.fixture
def chat() -> Iterator[Chat]:
    with FakeMattermost() as mm:
        bot = mm.add_user("sleuth", is_bot=True)
        yield Chat(mm, bot, mm.add_user("alice"), mm.add_user("carol"), mm.add_user("dave"))


@pytest.fixture
async def redis(valkey: ValkeyServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(valkey.url, decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


MakePeople = Callable[..., Awaitable[People]]


@pytest.fixture
async def make_people(chat: Chat, redis: Redis) -> AsyncIterator[MakePeople]:
    """``await make_people(**settings)``: People as the bot sees them (``mm``/``token``/``redis``
    to look through another server, account or Redis); all closed at the end."""
    async with AsyncExitStack() as stack:

        async def make(
            *,
            mm: FakeMattermost | None = None,
            token: str = "",
            redis_client: Redis | None = None,
            **cfg: Any,
        ) -> People:
            server = mm or chat.mm
            api = MattermostApi(server.url, token or chat.bot.token, timeout=2.0)
            stack.push_async_callback(api.aclose)
            settings = MattermostSettings(url=server.url, **{"people": [ALICE, CAROL], **cfg})
            people = People(api, redis_client or redis, "sleuth:gateway", settings)
            stack.push_async_callback(people.aclose)
            return people

        yield make


def user_calls(mm: FakeMattermost, user: User | str) -> int:
    return len(mm.calls("GET", f"/api/v4/users/{user if isinstance(user, str) else user.id}"))


# -- the static mapping ----------------------------------------------------------------------------
async def test_a_person_is_mapped_by_email_whatever_its_case(chat: Chat, make_people: MakePeople) -> None:
    people = await make_people()
    alice = await people.get(chat.alice.id)
    assert alice.mapped
    assert (alice.user, alice.groups, alice.username, alice.mm_id) == (
        "alice",
        ("team-a",),
        "alice",
        chat.alice.id,
    )
    assert (alice.why, alice.is_bot, alice.active) == ("", False, True)
    carol = await people.get(chat.carol.id)
    assert (carol.user, carol.groups) == ("carol", ("sre", "team-b"))


async def test_static_emails_are_trimmed_and_compared_case_insensitively(
    chat: Chat, make_people: MakePeople
) -> None:
    chat.mm.set_email(chat.dave, "Dave.Ops@Example.com")  # the server keeps it lowercased
    people = await make_people(people=[MattermostPerson(email="  DAVE.OPS@example.COM ", user="dave")])
    dave = await people.get(chat.dave.id)
    assert (dave.mapped, dave.user, dave.groups) == (True, "dave", ())


@dataclass(frozen=True)
class Unmapped:
    name: str
    why: str
    settings: dict[str, Any]
    before: Callable[[Chat], object] = lambda chat: None
    whom: Callable[[Chat], str] = lambda chat: chat.alice.id


UNMAPPED = [
    Unmapped("deactivated", "deactivated", {}, before=lambda c: c.mm.deactivate(c.alice)),
    Unmapped("no mapping for the email", "no_mapping", {}, whom=lambda c: c.dave.id),
    # The fake, like a server without SSO, gives every account auth_service "".
    Unmapped("not signed in through SSO", "not_sso", {"sso_only": True}),
    Unmapped("no such account", "deactivated", {}, whom=lambda c: new_id()),
]


@pytest.mark.parametrize("case", UNMAPPED, ids=[c.name for c in UNMAPPED])
async def test_unmapped_people_get_no_identity(case: Unmapped, chat: Chat, make_people: MakePeople) -> None:
    case.before(chat)
    person = await (await make_people(**case.settings)).get(case.whom(chat))
    assert not person.mapped
    assert (person.user, person.groups, person.why) == ("", (), case.why)


async def test_a_deactivated_account_is_told_apart_from_an_active_one(
    chat: Chat, make_people: MakePeople
) -> None:
    chat.mm.deactivate(chat.alice)
    alice = await (await make_people()).get(chat.alice.id)
    assert not alice.active and alice.username == "alice"


async def test_an_email_the_bot_cannot_see_maps_to_nobody(make_people: MakePeople) -> None:
    with FakeMattermost(show_email_address=False) as mm:
        bot = mm.add_user("sleuth", is_bot=True)
        admin_bot = mm.add_user("sleuth-admin", is_bot=True, system_admin=True)
        alice = mm.add_user("alice")
        hidden = await (await make_people(mm=mm, token=bot.token)).get(alice.id)
        assert not hidden.mapped and hidden.why == "no_email"
        # A bot with the system admin role sees every email (the answer above forgotten first).
        admin = await make_people(mm=mm, token=admin_bot.token)
        await admin.forget(alice.id)
        shown = await admin.get(alice.id)
        assert shown.mapped and shown.user == "alice"


async def test_a_bot_account_is_known_as_a_bot(chat: Chat, make_people: MakePeople) -> None:
    bot = await (await make_people()).get(chat.bot.id)
    assert bot.is_bot and not bot.mapped and bot.why == "no_mapping"


# -- the people backend ----------------------------------------------------------------------------
async def test_the_backend_maps_people_the_static_list_does_not(chat: Chat, make_people: MakePeople) -> None:
    answers = {"dave@example.com": (200, '{"user": "dave", "groups": ["team-c", "oncall"]}')}
    async with running(Backend(answers=answers)) as backend:
        people = await make_people(people_url=backend.url)
        dave = await people.get(chat.dave.id)
        assert (dave.mapped, dave.user, dave.groups, dave.why) == (True, "dave", ("team-c", "oncall"), "")
        alice = await people.get(chat.alice.id)  # in the static list: the backend is not asked
        assert alice.user == "alice"
        assert backend.emails() == ["dave@example.com"]
        assert backend.asked[0].authorization is None  # no people_token_env: no token sent


async def test_sso_only_keeps_accounts_without_sso_from_the_backend(
    chat: Chat, make_people: MakePeople
) -> None:
    answers = {"dave@example.com": (200, '{"user": "dave", "groups": []}')}
    async with running(Backend(answers=answers)) as backend:
        dave = await (await make_people(people_url=backend.url, sso_only=True)).get(chat.dave.id)
        assert (dave.mapped, dave.why) == (False, "not_sso")
        assert backend.asked == []


async def test_someone_the_backend_does_not_know_is_unmapped_and_remembered(
    chat: Chat, make_people: MakePeople
) -> None:
    async with running(Backend()) as backend:  # 404 for everyone
        people = await make_people(people_url=backend.url)
        dave = await people.get(chat.dave.id)
        assert (dave.mapped, dave.why) == (False, "no_mapping")
        assert await people.get(chat.dave.id) == dave
        assert len(backend.asked) == 1


async def test_an_empty_user_from_the_backend_is_no_identity(chat: Chat, make_people: MakePeople) -> None:
    async with running(
        Backend(answers={"dave@example.com": (200, '{"user": "  ", "groups": ["x"]}')})
    ) as backend:
        dave = await (await make_people(people_url=backend.url)).get(chat.dave.id)
        assert (dave.mapped, dave.user, dave.groups, dave.why) == (False, "", (), "no_mapping")


BROKEN_ANSWERS = {
    "HTTP 500": (500, '{"user": "dave", "groups": []}'),
    "HTTP 403": (403, '{"user": "dave", "groups": []}'),
    "not JSON": (200, "<html>login</html>"),
    "a list": (200, '["dave"]'),
    "no user": (200, '{"groups": ["team-c"]}'),
    "user not a string": (200, '{"user": 42, "groups": []}'),
    "groups not a list": (200, '{"user": "dave", "groups": "team-c"}'),
}


async def test_a_backend_that_fails_or_answers_garbage_is_unavailable_and_nothing_is_remembered(
    chat: Chat, make_people: MakePeople
) -> None:
    # One backend and one People for every answer (a backend started per case costs seconds).
    async with running(Backend()) as backend:
        people = await make_people(people_url=backend.url)
        for name, answer in BROKEN_ANSWERS.items():
            backend.answers["dave@example.com"] = answer
            try:
                person = await people.get(chat.dave.id)
            except PeopleUnavailable:
                continue
            pytest.fail(f"{name}: {person} instead of PeopleUnavailable")
        backend.answers["dave@example.com"] = (200, '{"user": "dave", "groups": ["team-c"]}')
        dave = await people.get(chat.dave.id)  # asked again: no failure was remembered
        assert (dave.user, dave.groups) == ("dave", ("team-c",))
        assert len(backend.asked) == len(BROKEN_ANSWERS) + 1


async def test_a_backend_that_does_not_answer_is_unavailable(chat: Chat, make_people: MakePeople) -> None:
    people = await make_people(people_url=f"http://127.0.0.1:{free_port()}/people")  # nothing listens
    with pytest.raises(PeopleUnavailable):
        await people.get(chat.dave.id)
    async with running(Backend(hang=True)) as backend:
        people = await make_people(people_url=backend.url, request_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(PeopleUnavailable):
            await people.get(chat.dave.id)
        assert time.monotonic() - started < 3  # the request timeout, not forever
        assert len(backend.asked) == 1


async def test_the_backend_gets_the_bearer_token_from_the_environment(
    chat: Chat, make_people: MakePeople, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLEUTH_TEST_PEOPLE_TOKEN", "s3cret-token")
    monkeypatch.delenv("SLEUTH_TEST_UNSET_TOKEN", raising=False)
    async with running(Backend()) as backend:
        with_token = await make_people(people_url=backend.url, people_token_env="SLEUTH_TEST_PEOPLE_TOKEN")
        unset = await make_people(people_url=backend.url, people_token_env="SLEUTH_TEST_UNSET_TOKEN")
        await with_token.get(chat.dave.id)
        await unset.forget(chat.dave.id)  # the same Redis: forgotten, so the backend is asked again
        await unset.get(chat.dave.id)
    assert [a.authorization for a in backend.asked] == ["Bearer s3cret-token", None]


# -- the cache -------------------------------------------------------------------------------------
async def test_a_remembered_person_is_not_looked_up_again_until_forgotten(
    chat: Chat, make_people: MakePeople
) -> None:
    people = await make_people()
    first = await people.get(chat.alice.id)
    assert user_calls(chat.mm, chat.alice) == 1
    assert await people.get(chat.alice.id) == first  # the same person, from Redis
    assert await (await make_people()).get(chat.alice.id) == first  # another replica: the same Redis
    assert user_calls(chat.mm, chat.alice) == 1
    await people.forget(chat.alice.id)
    assert await people.get(chat.alice.id) == first
    assert user_calls(chat.mm, chat.alice) == 2


async def test_an_unmapped_person_is_remembered_too(chat: Chat, make_people: MakePeople) -> None:
    people = await make_people()
    assert (await people.get(chat.dave.id)).why == "no_mapping"
    assert (await people.get(chat.dave.id)).why == "no_mapping"
    assert user_calls(chat.mm, chat.dave) == 1


async def test_a_changed_email_is_read_again_after_forget(chat: Chat, make_people: MakePeople) -> None:
    people = await make_people()
    assert (await people.get(chat.alice.id)).user == "alice"
    chat.mm.set_email(chat.alice, "carol@example.com")
    assert (await people.get(chat.alice.id)).user == "alice"  # still remembered
    await people.forget(chat.alice.id)
    now = await people.get(chat.alice.id)
    assert (now.username, now.user, now.groups) == ("alice", "carol", ("sre", "team-b"))
    chat.mm.set_email(chat.alice, "alice@elsewhere.example")
    await people.forget(chat.alice.id)
    gone = await people.get(chat.alice.id)
    assert (gone.mapped, gone.why) == (False, "no_mapping")


@pytest.mark.parametrize("ttl", [7, 300])
async def test_a_person_is_remembered_for_the_cache_ttl(
    ttl: int, chat: Chat, make_people: MakePeople, redis: Redis
) -> None:
    await (await make_people(people_cache_ttl=ttl)).get(chat.alice.id)
    keys = [k async for k in redis.scan_iter()]
    assert len(keys) == 1
    assert ttl - 2 <= await redis.ttl(keys[0]) <= ttl  # Redis forgets them then


@dataclass(frozen=True)
class Fault:
    name: str
    apply: Callable[[Chat], object]
    recover: Callable[[Chat], object] | None = None


FAULTS = [
    Fault("503 from the proxy", lambda c: c.mm.set_down(True), lambda c: c.mm.set_down(False)),
    Fault("connection refused", lambda c: c.mm.set_down(True, refuse=True), lambda c: c.mm.set_down(False)),
    Fault("bot token revoked", lambda c: c.mm.revoke_token(c.bot.token)),
]


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
async def test_mattermost_not_answering_is_unavailable_and_nothing_is_remembered(
    fault: Fault, chat: Chat, make_people: MakePeople, redis: Redis
) -> None:
    people = await make_people()
    fault.apply(chat)
    with pytest.raises(PeopleUnavailable):
        await people.get(chat.alice.id)
    assert [k async for k in redis.scan_iter()] == []
    if fault.recover is not None:
        fault.recover(chat)
        assert (await people.get(chat.alice.id)).user == "alice"


async def test_without_redis_people_are_still_looked_up(chat: Chat, make_people: MakePeople) -> None:
    nowhere = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", decode_responses=True, socket_timeout=0.5)
    try:
        people = await make_people(redis_client=nowhere)
        assert (await people.get(chat.alice.id)).user == "alice"
        await people.forget(chat.alice.id)  # says nothing
        assert (await people.get(chat.alice.id)).user == "alice"
        assert user_calls(chat.mm, chat.alice) == 2
    finally:
        await nowhere.aclose()


def test_a_person_survives_the_round_trip_through_json() -> None:
    person = Person(
        mm_id="id1", username="alice", user="alice", groups=("a", "b"), is_bot=False, active=True, why=""
    )
    assert Person.from_json("id1", person.to_json()) == person
    unmapped = Person(mm_id="id2", username="bot", is_bot=True, why="no_mapping")
    assert Person.from_json("id2", unmapped.to_json()) == unmapped


# -- the listener lease (Redis) --------------------------------------------------------------------
async def test_a_lease_is_held_by_one_holder_at_a_time(redis: Redis) -> None:
    a, b = Lease(redis, "sleuth:lease", 5.0, "a"), Lease(redis, "sleuth:lease", 5.0, "b")
    assert await a.acquire()
    assert not await b.acquire()
    assert await a.acquire()  # its own lease again
    assert await a.current() == "a" == await b.current()
    assert not await b.renew()
    assert await a.current() == "a"


async def test_renewing_keeps_the_lease(redis: Redis) -> None:
    a, b = Lease(redis, "sleuth:lease", 1.0, "a"), Lease(redis, "sleuth:lease", 1.0, "b")
    assert await a.acquire()
    await asyncio.sleep(0.4)
    assert await a.renew()
    assert await redis.pttl(a.key) > 700  # a full TTL again, not what was left of the first
    assert not await b.acquire()
    assert await a.current() == "a"


async def test_a_lease_nobody_renews_passes_to_another_after_its_ttl(redis: Redis) -> None:
    a, b = Lease(redis, "sleuth:lease", 0.3, "a"), Lease(redis, "sleuth:lease", 0.3, "b")
    assert await a.acquire()
    started = time.monotonic()
    assert not await b.acquire()
    for _ in range(150):
        if await b.acquire():
            break
        await asyncio.sleep(0.02)
    assert time.monotonic() - started >= 0.25
    assert await b.current() == "b"
    assert not await a.renew()  # the old holder learns it lost the lease
    assert not await a.acquire()


async def test_a_released_lease_is_free_at_once_and_only_its_holder_releases_it(redis: Redis) -> None:
    a, b = Lease(redis, "sleuth:lease", 30.0, "a"), Lease(redis, "sleuth:lease", 30.0, "b")
    assert await a.acquire()
    await b.release()  # not b's: nothing happens
    assert await a.current() == "a"
    assert not await b.acquire()
    await a.release()
    assert await a.current() is None
    assert await b.acquire()
    await a.release()  # a no longer holds it: b keeps it
    assert await b.current() == "b"


async def test_leases_without_a_holder_name_are_distinct(redis: Redis) -> None:
    a, b = Lease(redis, "sleuth:lease", 5.0), Lease(redis, "sleuth:lease", 5.0)
    assert a.holder != b.holder
    assert await a.acquire()
    assert not await b.acquire()
