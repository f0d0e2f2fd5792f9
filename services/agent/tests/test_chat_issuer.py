"""The agent trusts the gateway's chat issuer (``sleuth-chat``): a job the gateway signs for a
chat user it mapped (Mattermost: no Kubernetes token) is acted on, and the gateway's key cannot
pass for another issuer, nor another issuer's key for it (each key is bound to its issuer)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sleuth_agent.handlers import JobHandler
from sleuth_agent.metrics import Metrics
from sleuth_agent.settings import Settings
from sleuth_common.config import IdentitySettings
from sleuth_common.identity import (
    CHAT_ISSUER,
    IdentityError,
    IdentitySigner,
    IdentityVerifier,
    generate_keypair,
    job_verifier_from_settings,
    signer_from_settings,
)
from sleuth_common.messages import InvestigationJob, Requester

ALICE = Requester(user="alice", groups=("team-a",))


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    """``chat.key chat.pub authz.key authz.pub``, as ``sleuth keys`` writes them."""
    for pair in ("chat", "authz"):
        private, public = generate_keypair()
        (tmp_path / f"{pair}.key").write_bytes(private)
        (tmp_path / f"{pair}.pub").write_bytes(public)
    (tmp_path / "stranger.key").write_bytes(generate_keypair()[0])  # a key nobody lists
    return tmp_path


def agent_settings(keys: Path) -> Settings:
    """The agent's identity section as every deployment writes it (chat and authz issuers)."""
    return Settings(identity={"job_issuers": {CHAT_ISSUER: [str(keys / "chat.pub")],
                                              "sleuth-authz": [str(keys / "authz.pub")]}})


def signer(keys: Path, key: str, issuer: str) -> IdentitySigner:
    """What the gateway (or authz-cache) loads: ``signer_from_settings`` on its key file."""
    identity = IdentitySettings(signing_key_file=str(keys / key), signing_key_env="")
    s = signer_from_settings(identity, issuer=issuer, ttl=identity.job_ttl)
    assert s is not None
    return s


def verifier(keys: Path) -> IdentityVerifier:
    v = job_verifier_from_settings(agent_settings(keys).identity)
    assert v is not None
    return v


def test_the_chat_key_signing_as_sleuth_chat_is_accepted(keys: Path) -> None:
    token = signer(keys, "chat.key", CHAT_ISSUER).mint("alice", ["team-a"], audience="sleuth-agent", job="j1")
    who = verifier(keys).verify(token)
    assert (who.user, who.groups, who.issuer, who.job) == ("alice", ("team-a",), "sleuth-chat", "j1")


@dataclass(frozen=True)
class Refused:
    name: str
    key: str
    issuer: str
    why: str


REFUSED = [
    Refused("the chat key passing for authz-cache", "chat.key", "sleuth-authz", "issuer"),
    Refused("authz-cache's key passing for the chat issuer", "authz.key", CHAT_ISSUER, "issuer"),
    Refused("a key the agent does not list", "stranger.key", CHAT_ISSUER, "unknown key"),
]


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.name)
def test_a_key_signs_only_as_its_own_issuer(keys: Path, case: Refused) -> None:
    token = signer(keys, case.key, case.issuer).mint("alice", ["team-a"], audience="sleuth-agent")
    with pytest.raises(IdentityError, match=case.why):
        verifier(keys).verify(token)


def test_without_sleuth_chat_in_job_issuers_the_chat_key_is_refused(keys: Path) -> None:
    only_authz = IdentitySettings(job_issuers={"sleuth-authz": [str(keys / "authz.pub")]})
    v = job_verifier_from_settings(only_authz)
    assert v is not None
    with pytest.raises(IdentityError):
        v.verify(signer(keys, "chat.key", CHAT_ISSUER).mint("alice", audience="sleuth-agent"))


def job_for(token_of: Any) -> InvestigationJob:
    job = InvestigationJob(origin="chat", requester=ALICE, question="what is failing in team-a?")
    return job.model_copy(update={"identity": token_of(job)})


async def test_the_agent_acts_on_a_chat_job_only_under_the_chat_issuer(keys: Path) -> None:
    """Through the agent's own check of a job (``JobHandler.identity_problem``)."""
    settings = agent_settings(keys)
    handler = JobHandler(None, settings, Metrics(), None, verifier=verifier(keys))  # type: ignore[arg-type]

    def minted(issuer: str) -> Any:
        return lambda job: signer(keys, "chat.key", issuer).mint(
            job.requester.user, job.requester.groups, audience=settings.identity.job_audience, job=job.id)

    assert await handler.identity_problem(job_for(minted(CHAT_ISSUER))) == ""
    assert "issuer" in await handler.identity_problem(job_for(minted("sleuth-authz")))
