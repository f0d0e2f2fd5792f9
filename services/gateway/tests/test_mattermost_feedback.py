"""Feedback in Mattermost against the fake server: 👍/👎 reactions on an answer post and a "fixed by:"
reply in its thread reach the agent as the Kubernetes identity the person maps to; unmapped people are
ignored; reactions are taken silently."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth_gateway.mattermost._feedback import fixed_by_text

from .conftest import PREFIX
from .test_mattermost import World, start_bot, world  # noqa: F401  (fixtures)

pytestmark = pytest.mark.connected


def test_fixed_by_is_read_at_the_start_in_any_case() -> None:
    assert fixed_by_text("Fixed by: raised the limit ") == "raised the limit"
    assert fixed_by_text("  FIXED-BY:rolled back") == "rolled back"
    assert fixed_by_text("fixedby:\nline two") == "line two"
    assert fixed_by_text("it was fixed by: nobody") is None
    assert fixed_by_text("fixed by the team") is None


async def test_reactions_and_fixed_by_become_feedback_on_the_answers_job(
    start_bot: Any, world: World,  # noqa: F811  (the fixtures imported above)
) -> None:
    mm = world.mm
    async with start_bot() as bot:
        metrics = bot.replicas[0].adapter.gw.metrics

        def counted(how: str, outcome: str) -> float:
            return metrics.mattermost_feedback.labels(how=how, outcome=outcome)._value.get()

        question = mm.post_as(world.alice, world.shared, "@sleuth what is failing in team-a?")
        [answer] = await bot.answered(question)
        [job] = bot.agent.jobs
        posts_before = len(mm.posts_by(world.bot))

        # alice (the asker) reacts 👍 on the answer: taken as alice, silently. Other emoji are no verdict.
        mm.react_as(world.alice, answer["id"], "eyes")
        mm.react_as(world.alice, answer["id"], "+1")
        await mm.wait_for_async(lambda: bot.agent.feedback)
        [up] = bot.agent.feedback
        assert (up.job_id, up.user, up.groups, up.verdict, up.fixed_by, up.origin) == (
            job.id, "alice", ("team-a",), "up", "", "mattermost")

        # bob reads the channel but the (fake) agent takes feedback from the asker only: refused there.
        mm.react_as(world.bob, answer["id"], "-1")
        await mm.wait_for_async(lambda: counted("reaction", "unknown") == 1)
        # mallory joins and reacts: no Kubernetes identity, ignored before anything reaches the agent.
        mm.add_member(world.shared, world.mallory)
        mm.react_as(world.mallory, answer["id"], "thumbsdown")
        await mm.wait_for_async(lambda: counted("reaction", "unmapped") == 1)
        # A reaction on a post that is no answer (the question) is nobody's feedback.
        mm.react_as(world.alice, question["id"], "-1")
        assert len(mm.posts_by(world.bot)) == posts_before  # no post per reaction
        assert len(bot.agent.feedback) == 1 and counted("reaction", "taken") == 1

        # "Fixed by:" in the answer's thread (no mention needed): kept, and acknowledged in the thread.
        fix = mm.post_as(world.alice, world.shared, "Fixed by: raised the memory limit to 1Gi", root_id=question["id"])
        [ack] = await bot.answered(fix)
        assert ack["root_id"] == question["id"] and "noted" in ack["message"]
        assert [(f.user, f.verdict, f.fixed_by) for f in bot.agent.feedback[1:]] == [
            ("alice", "", "raised the memory limit to 1Gi")]
        # bob's is refused by the agent, and told so; mallory's is ignored (no reply).
        refused = mm.post_as(world.bob, world.shared, "fixed by: nothing", root_id=question["id"])
        [told] = await bot.answered(refused)
        assert "No answer" in told["message"]
        mm.post_as(world.mallory, world.shared, "fixed by: me", root_id=question["id"])
        await mm.wait_for_async(lambda: counted("fixed_by", "unmapped") == 1)
        assert len(bot.agent.feedback) == 2 and not bot.agent.jobs[1:]  # nothing was taken for a question

        # The post → job map is the gateway's, bounded by feedback_ttl, and holds the job id only.
        redis = bot.replicas[0].adapter.gw.redis
        assert redis is not None
        key = f"{PREFIX}:gateway:mattermost:feedback:answer:{answer['id']}"
        assert await redis.get(key) in (job.id, job.id.encode())
        assert 0 < await redis.ttl(key) <= bot.replicas[0].adapter.cfg.feedback_ttl
