"""The alert-channel case end to end, in a real Chromium, as alice would meet it: carol (cluster
admin, a member of team-a-alerts through platform-admins) says `alerts on` there; an alert about
team-b arrives on the team's route. alice opens the channel: it says an alert was outside the
channel's access, and not one team-b name is on her page (before the fix, carol's mark made the
whole channel see team-b's diagnosis)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sleuth.embedded.stack import Stack, StackPorts, StackSpec
from tests.snapshot_names import tenant_names
from tests.test_alerts_e2e import crash_looping, post_alert
from tests.test_webchat_stack_browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, demo_snapshot: Path) -> Iterator[Stack]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{CHROMIUM} is missing")
    spec = StackSpec(
        snapshot=demo_snapshot, state_dir=tmp_path_factory.mktemp("alert-browser"), ports=StackPorts.free(),
        extra_config={"alerts": {"window": 2.0, "tick": 0.2, "cooldown": 600.0, "investigation_timeout": 60.0}},
    )
    with Stack(spec) as s:
        yield s


def bot_posts(stack: Stack, user: str) -> list[dict]:
    r = httpx.get(f"{stack.gateway_url}/v1/channels/team-a-alerts/messages",
                  headers={"Authorization": f"Bearer {stack.token(user)}"}, timeout=10)
    assert r.status_code == 200, r.text
    return [m for m in r.json()["messages"] if m["author"] == "sleuth"]


def test_alice_sees_team_b_counted_never_named_after_an_admins_mark(stack: Stack, demo_snapshot: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    r = httpx.post(f"{stack.gateway_url}/v1/channels/team-a-alerts/messages", json={"text": "alerts on"},
                   headers={"Authorization": f"Bearer {stack.token('carol')}"}, timeout=30)
    assert r.status_code == 200, r.text
    before = len(bot_posts(stack, "alice"))
    team_b = tenant_names(demo_snapshot, "team-b")
    pod = sorted(n for n in team_b if n.startswith("billing-api"))[0]
    assert post_alert(stack, crash_looping(pod, "team-b", "g-browser")).status_code == 200
    deadline = time.monotonic() + 90
    while len(bot_posts(stack, "alice")) <= before:
        assert time.monotonic() < deadline, "no answer to the alert reached the channel"
        time.sleep(0.3)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(stack.gateway_url + "/")
            page.fill("#token", stack.token("alice"))
            page.click("#signin")
            expect(page.locator("#whoami")).to_contain_text("signed in as alice")
            page.click("#channels button[data-channel='team-a-alerts']")
            expect(page.locator("#channel-messages")).to_contain_text("outside", timeout=15_000)
            page.wait_for_load_state("networkidle")
            whole = page.content()
            leaked = sorted(n for n in team_b if n in whole)
            assert not leaked, f"team-b names on alice's page: {leaked}"
        finally:
            browser.close()
