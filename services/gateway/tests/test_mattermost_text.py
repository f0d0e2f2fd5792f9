"""Text in and out of Mattermost (``sleuth_gateway.mattermost._text``): when a post names the bot,
the question left without the mention, evidence references as Mattermost shows them, and long
answers split into numbered posts that each render on their own."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_gateway.mattermost import _text
from sleuth_gateway.mattermost._text import for_mattermost, mentions, split_post, without_mention

FENCE = "```"
NUMBER = re.compile(r"\*\((\d+)/(\d+)\)\*\n\n")


# -- helpers that read posts back -----------------------------------------------------------------
def bodies(parts: list[str]) -> list[str]:
    """The parts without their ``*(i/n)*`` numbering (checked: 1..n in order, n the count)."""
    out = []
    for i, part in enumerate(parts, 1):
        m = NUMBER.match(part)
        assert m is not None, f"part {i} is not numbered: {part[:40]!r}"
        assert (int(m.group(1)), int(m.group(2))) == (i, len(parts))
        out.append(part[m.end() :])
    return out


def without_fence_lines(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith(FENCE))


def visible(text: str) -> str:
    """What a reader reads, give or take spacing: every non-blank character in order."""
    return "".join(text.split())


def fence_lines(body: str) -> int:
    return sum(1 for line in body.split("\n") if line.lstrip().startswith(FENCE))


# -- split_post: properties -----------------------------------------------------------------------
_WORD = st.sampled_from(
    ["pod", "api-7d9", "OOMKilled", "restarted", "12", "times,", "team-a", "the", "limit"]
)
# Longer than half a post: no line end to cut at, it is cut anywhere.
_LONG_WORD = st.builds(
    lambda c, n: (c * n)[:n], st.sampled_from(["xyz", "0123456789"]), st.integers(150, 900)
)
_LINE = st.lists(st.one_of(_WORD, _WORD, _WORD, _WORD, _LONG_WORD), min_size=1, max_size=12).map(" ".join)
_PROSE = st.lists(_LINE, min_size=1, max_size=6).map("\n".join)
_CODE = st.builds(
    lambda info, lines: f"{FENCE}{info}\n" + "\n".join(lines) + f"\n{FENCE}",
    st.sampled_from(["", "yaml", "console", "text-of-kubectl-describe-pod-output"]),
    st.lists(st.one_of(_LINE, _LINE, st.just("")), min_size=1, max_size=25),  # "" : blank lines in code
)


@st.composite
def answers(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(st.one_of(_PROSE, _CODE), min_size=1, max_size=8))
    text = blocks[0]
    for block in blocks[1:]:
        text += draw(st.sampled_from(["\n\n", "\n", "\n\n\n"])) + block
    return text


PROPERTY = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@PROPERTY
@given(text=answers(), limit=st.integers(min_value=500, max_value=1200))
def test_split_post_keeps_every_post_under_the_limit_and_loses_nothing(text: str, limit: int) -> None:
    parts = split_post(text, limit)
    if len(text) <= limit:
        assert parts == [text]
        return
    assert len(parts) >= 2
    assert all(len(p) <= limit for p in parts), [len(p) for p in parts]
    found = bodies(parts)
    assert all(b.strip() for b in found), "an empty post"
    # Nothing lost or added but numbering and the fence lines that close and reopen a cut block.
    assert visible("".join(without_fence_lines(b) for b in found)) == visible(without_fence_lines(text))
    # Every post renders on its own: its code fences are balanced.
    for b in found:
        assert b.count(FENCE) % 2 == 0, b
        assert fence_lines(b) % 2 == 0, b


@PROPERTY
@given(
    text=st.text(alphabet=st.characters(codec="utf-8", exclude_characters="`"), min_size=501, max_size=3000),
    limit=st.integers(min_value=500, max_value=900),
)
def test_split_post_handles_any_text_without_fences(text: str, limit: int) -> None:
    parts = split_post(text, limit)
    if len(text) <= limit:
        assert parts == [text]
        return
    assert all(len(p) <= limit for p in parts)
    assert visible("".join(bodies(parts))) == visible(text)


# -- split_post: examples -------------------------------------------------------------------------
def test_a_text_that_fits_is_one_post_unchanged() -> None:
    text = "## Problem\n\n`api` keeps restarting [E01].\n\n"
    assert split_post(text, 500) == [text]
    exact = "a" * 500
    assert split_post(exact, 500) == [exact]


def test_a_long_text_is_cut_at_paragraphs() -> None:
    paragraphs = [f"Paragraph {i}: " + " ".join(["word"] * 45) for i in range(6)]  # ~240 chars each
    parts = split_post("\n\n".join(paragraphs), 600)
    assert len(parts) > 1
    assert all(len(p) <= 600 for p in parts)
    for body in bodies(parts):
        # Each post holds whole paragraphs, never a paragraph cut in two.
        assert all(p in paragraphs for p in body.split("\n\n")), body
    assert visible("".join(bodies(parts))) == visible("".join(paragraphs))


def test_one_long_paragraph_is_cut_at_lines() -> None:
    lines = [f"pod/api-{i:03d} restarted {i} times, last state OOMKilled" for i in range(60)]
    parts = split_post("\n".join(lines), 700)
    assert len(parts) > 1
    assert all(len(p) <= 700 for p in parts)
    seen = [line for body in bodies(parts) for line in body.split("\n")]
    assert seen == lines  # whole lines, in order, none cut


def test_one_long_word_is_cut_anywhere() -> None:
    word = "".join(chr(ord("a") + i % 26) for i in range(2500))
    parts = split_post(word, 500)
    assert len(parts) >= 5
    assert all(len(p) <= 500 for p in parts)
    assert "".join(bodies(parts)) == word


def test_a_code_block_cut_in_two_is_closed_and_reopened() -> None:
    code = "\n".join(f"  ready: false  # replica {i} of api in team-a" for i in range(40))
    text = f"The pods say:\n\n```yaml\n{code}\n```\n\nSo the readiness probe fails."
    parts = split_post(text, 600)
    found = bodies(parts)
    assert len(found) > 2
    assert all(len(p) <= 600 for p in parts)
    assert found[0] == "The pods say:"  # a paragraph of its own: the cut before the block
    with_code = found[1:]
    for i, body in enumerate(with_code):
        lines = body.split("\n")
        assert body.count(FENCE) % 2 == 0, body
        assert lines[0] == "```yaml", body  # opened, or reopened with its language
        if i < len(with_code) - 1:  # and closed before the post ends
            assert lines[-1] == FENCE, body
    assert found[-1].endswith("So the readiness probe fails.")
    code_read = [line for body in found for line in body.split("\n") if line.startswith("  ready: false")]
    assert code_read == code.split("\n")


SPLIT_SMALL = """
import runpy, sys
split_post = runpy.run_path(sys.argv[1])["split_post"]
parts = split_post("a" * 100, 60)
assert parts and all(len(p) <= 60 for p in parts), parts
"""


def test_a_small_limit_still_splits() -> None:
    module = Path(_text.__file__)
    try:
        subprocess.run([sys.executable, "-c", SPLIT_SMALL, str(module)], check=True, timeout=2.0)
    except subprocess.TimeoutExpired:
        pytest.fail('split_post("a" * 100, 60) did not return within 2 s')


def test_posts_are_numbered_in_order() -> None:
    parts = split_post("\n\n".join(["x" * 300] * 5), 500)
    assert [p.split("\n", 1)[0] for p in parts] == [f"*({i}/{len(parts)})*" for i in range(1, len(parts) + 1)]


# -- mentions and without_mention -----------------------------------------------------------------
@dataclass(frozen=True)
class Mention:
    text: str
    named: bool


MENTIONS = [
    Mention("@sleuth why is checkout-api crashing?", True),
    Mention("hey @sleuth, what changed?", True),
    Mention("(@sleuth) alerts on", True),
    Mention("thanks @sleuth.", True),
    Mention("@sleuth: status", True),
    Mention("line one\n@sleuth line two", True),
    Mention("@Sleuth help", True),  # Mattermost usernames and mentions ignore case
    Mention("ask @sleuth! now", True),
    Mention("@sleuthbot help", False),  # another account
    Mention("@sleuth_ops help", False),
    Mention("@sleuth-dev help", False),
    Mention("@sleuth.dev help", False),
    Mention("mail bob@sleuth.io about it", False),  # an email, not a mention
    Mention("mail x@sleuth about it", False),
    Mention("sleuth, are you there?", False),
    Mention("run `@sleuth help` to see", False),  # inside a code span
    Mention("```\n@sleuth status\n```", False),  # inside a code block
    Mention("```text\nsay @sleuth\n```\nno mention here", False),
    Mention("`code` then @sleuth status", True),
    Mention("", False),
]


@pytest.mark.parametrize("case", MENTIONS, ids=[c.text for c in MENTIONS])
def test_mentions(case: Mention) -> None:
    assert mentions(case.text, "sleuth") is case.named


def test_mentions_of_a_username_with_a_dot_or_dash() -> None:
    assert mentions("@sleuth.bot status", "sleuth.bot")
    assert mentions("@sleuth-bot status", "sleuth-bot")
    assert not mentions("@sleuthXbot status", "sleuth.bot")  # the dot is no wildcard


def test_no_username_is_never_mentioned() -> None:
    assert not mentions("@sleuth status", "")
    assert not mentions("@ status", "")


@dataclass(frozen=True)
class Stripped:
    text: str
    question: str


STRIPPED = [
    Stripped("@sleuth why is checkout-api crashing?", "why is checkout-api crashing?"),
    Stripped("@sleuth, alerts on", "alerts on"),
    Stripped("@sleuth: refresh", "refresh"),
    Stripped("@Sleuth   status", "status"),
    Stripped("what is failing in team-a @sleuth", "what is failing in team-a"),
    Stripped("why is @sleuth so slow", "why is so slow"),
    Stripped("@sleuthbot help", "@sleuthbot help"),  # not the bot
    Stripped("mail bob@sleuth.io", "mail bob@sleuth.io"),
    Stripped("  just a question  ", "just a question"),
]


@pytest.mark.parametrize("case", STRIPPED, ids=[c.text for c in STRIPPED])
def test_without_mention(case: Stripped) -> None:
    assert without_mention(case.text, "sleuth") == case.question


def test_without_mention_keeps_the_lines_of_a_question() -> None:
    assert without_mention("@sleuth why?\n\n```\nkubectl get pods\n```", "sleuth") == (
        "why?\n\n```\nkubectl get pods\n```"
    )


def test_without_mention_and_no_username() -> None:
    assert without_mention("  @sleuth status ", "") == "@sleuth status"


# -- for_mattermost -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rendered:
    markdown: str
    shown: str


RENDERED = [
    Rendered("OOM-killed at 256Mi [E01].", "OOM-killed at 256Mi `E01`."),
    Rendered("see [E01][E02] and [E1234]", "see `E01``E02` and `E1234`"),
    Rendered("not refs: [E12345] [e01] [X01] [E] E01", "not refs: [E12345] [e01] [X01] [E] E01"),
    Rendered("in code `[E01]` stays", "in code `[E01]` stays"),
    Rendered("```\nlog [E01]\n```\nafter [E02]", "```\nlog [E01]\n```\nafter `E02`"),
    Rendered("[E03] `a` [E04] `b` [E05]", "`E03` `a` `E04` `b` `E05`"),
    Rendered("", ""),
]


@pytest.mark.parametrize("case", RENDERED, ids=[c.markdown for c in RENDERED])
def test_for_mattermost(case: Rendered) -> None:
    assert for_mattermost(case.markdown) == case.shown


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab [E0]1`\n", max_size=80))
def test_for_mattermost_changes_only_evidence_refs(markdown: str) -> None:
    shown = for_mattermost(markdown)
    # Only brackets turn into backticks: take both away and the text is the same.
    assert re.sub(r"[\[\]`]", "", shown) == re.sub(r"[\[\]`]", "", markdown)
