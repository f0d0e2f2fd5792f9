"""Who a Mattermost account is in Kubernetes: by the email Mattermost's users API shows for it,
from the static ``people`` mapping or the ``people_url`` backend, remembered in Redis.

An account nobody mapped (no email visible, a deactivated account, an email no source knows)
is *unmapped*: it gets no identity at all, never a default one.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace

import httpx
from redis.asyncio import Redis
from redis.exceptions import RedisError

from sleuth_gateway.mattermost._client import MattermostApi, MattermostError
from sleuth_gateway.settings import MattermostSettings

log = logging.getLogger(__name__)

__all__ = ["People", "PeopleUnavailable", "Person"]


class PeopleUnavailable(Exception):
    """The mapping could not be looked up now (Mattermost or the backend did not answer)."""


@dataclass(frozen=True)
class Person:
    """A Mattermost account and, when mapped, its Kubernetes identity."""

    mm_id: str
    username: str
    user: str = ""
    groups: tuple[str, ...] = ()
    is_bot: bool = False
    active: bool = True
    why: str = ""
    """Why an account is unmapped: ``deactivated``, ``no_email`` (none visible to the bot),
    ``not_sso`` (``sso_only``), ``no_mapping``; "" when mapped."""

    @property
    def mapped(self) -> bool:
        return bool(self.user) and self.active

    def to_json(self) -> str:
        return json.dumps({
            "username": self.username, "user": self.user, "groups": list(self.groups),
            "is_bot": self.is_bot, "active": self.active, "why": self.why,
        })

    @classmethod
    def from_json(cls, mm_id: str, raw: str) -> Person:
        doc = json.loads(raw)
        return cls(
            mm_id=mm_id, username=str(doc["username"]), user=str(doc["user"]),
            groups=tuple(str(g) for g in doc["groups"]), is_bot=bool(doc["is_bot"]), active=bool(doc["active"]),
            why=str(doc.get("why", "")),
        )


class People:
    def __init__(self, api: MattermostApi, redis: Redis, key_prefix: str, cfg: MattermostSettings) -> None:
        self._api = api
        self._redis = redis
        self._prefix = f"{key_prefix}:mattermost:person"
        self._cfg = cfg
        self._static = {p.email.strip().lower(): p for p in cfg.people}
        self._http: httpx.AsyncClient | None = (
            httpx.AsyncClient(timeout=cfg.request_timeout, verify=cfg.ca_file or True) if cfg.people_url else None
        )

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    def _key(self, mm_id: str) -> str:
        return f"{self._prefix}:{mm_id}"

    async def forget(self, mm_id: str) -> None:
        try:
            await self._redis.delete(self._key(mm_id))
        except RedisError as exc:
            log.warning("could not forget a chat user's mapping: %s", exc)

    async def get(self, mm_id: str) -> Person:
        """The account ``mm_id`` (mapped or not); ``PeopleUnavailable`` when it cannot be told now."""
        try:
            cached = await self._redis.get(self._key(mm_id))
        except RedisError:
            cached = None
        if cached:
            try:
                return Person.from_json(mm_id, cached if isinstance(cached, str) else cached.decode())
            except (ValueError, KeyError, TypeError):
                pass
        person = await self._look_up(mm_id)
        try:
            await self._redis.set(self._key(mm_id), person.to_json(), ex=self._cfg.people_cache_ttl)
        except RedisError as exc:
            log.warning("could not remember a chat user's mapping: %s", exc)
        return person

    async def _look_up(self, mm_id: str) -> Person:
        try:
            doc = await self._api.user(mm_id)
        except MattermostError as exc:
            if exc.status == 404:
                return Person(mm_id=mm_id, username="", active=False, why="deactivated")
            raise PeopleUnavailable(f"Mattermost did not say who the user is ({exc})") from exc
        base = Person(
            mm_id=mm_id,
            username=str(doc.get("username", "")),
            is_bot=bool(doc.get("is_bot", False)),
            active=not doc.get("delete_at"),
        )
        email = str(doc.get("email", "") or "").strip().lower()
        if not base.active:
            return replace(base, why="deactivated")
        if not email:
            return replace(base, why="no_email")
        if self._cfg.sso_only and not doc.get("auth_service"):
            return replace(base, why="not_sso")
        static = self._static.get(email)
        if static is not None:
            return replace(base, user=static.user, groups=tuple(static.groups))
        if self._http is None:
            return replace(base, why="no_mapping")
        return await self._from_backend(base, email)

    async def _from_backend(self, base: Person, email: str) -> Person:
        assert self._http is not None
        headers = {}
        token = os.environ.get(self._cfg.people_token_env, "") if self._cfg.people_token_env else ""
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            resp = await self._http.get(self._cfg.people_url, params={"email": email}, headers=headers)
        except httpx.HTTPError as exc:
            raise PeopleUnavailable(f"the people backend did not answer ({type(exc).__name__})") from exc
        if resp.status_code == 404:
            return replace(base, why="no_mapping")
        if resp.status_code != 200:
            raise PeopleUnavailable(f"the people backend answered HTTP {resp.status_code}")
        try:
            doc = resp.json()
            user = doc["user"]
            groups = doc.get("groups", [])
            if not isinstance(user, str) or not isinstance(groups, list):
                raise TypeError
        except (ValueError, KeyError, TypeError) as exc:
            raise PeopleUnavailable("the people backend's answer is not {\"user\", \"groups\"}") from exc
        if not user.strip():
            return replace(base, why="no_mapping")
        return replace(base, user=user.strip(), groups=tuple(str(g) for g in groups))
