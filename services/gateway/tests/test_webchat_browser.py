"""The web chat in a real Chromium (Debian's /usr/bin/chromium driven by Playwright)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.connected]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


async def test_sign_in_ask_and_conversations_stay_private(start_stack, chromium):
    from playwright.async_api import async_playwright, expect

    async with start_stack() as s, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d: dialogs.append(d.message))
            await page.goto(s.url + "/")

            # Sign in as alice.
            await page.fill("#token", "t-alice")
            await page.click("#signin")
            await expect(page.locator("#whoami")).to_contain_text("signed in as alice")

            # Ask; progress lines arrive, then the answer with its evidence.
            await page.fill("#question", "why is api in team-a crashing?")
            await page.click("#ask")
            await expect(page.locator("#answer h2").first).to_have_text("Problem")
            await expect(page.locator("#answer")).to_contain_text("keeps restarting")
            progress = page.locator("#progress li")
            await expect(progress).to_have_count(3)  # accepted, plan, collect
            await expect(page.locator("#progress")).to_contain_text("finding the target")
            await expect(page.locator("#progress")).to_contain_text("reading pods and events")
            await expect(page.locator("#evidence li")).to_have_count(1)
            await expect(page.locator("#evidence")).to_contain_text("E01")
            await expect(page.locator("#evidence code")).to_have_text("kubectl get pods -n team-a -l app=api")
            # Markup inside the answer is shown as text, never run.
            await expect(page.locator("#answer")).to_contain_text("<script>alert('x')</script>")
            assert await page.locator("#answer script").count() == 0

            # 👎 and "fixed by" under the answer reach the agent as alice's feedback on that job; its reply shows.
            block = page.locator("#current-feedback .feedback")
            await block.locator("button[data-verdict='down']").click()
            await expect(block.locator(".feedback-status")).to_contain_text("noted")
            await block.locator(".fixed-by").fill("raised the memory limit to 1Gi")
            await block.locator(".fixed-by").press("Enter")
            await expect(block.locator(".fixed-by")).to_have_value("")
            job_id = s.agent.jobs[-1].id
            assert await block.get_attribute("data-job-id") == job_id
            assert [(f.job_id, f.user, f.verdict, f.fixed_by) for f in s.agent.feedback] == [
                (job_id, "alice", "down", ""), (job_id, "alice", "", "raised the memory limit to 1Gi")]

            # A reload keeps the session (sessionStorage) and shows the stored conversation.
            await page.reload()
            await expect(page.locator("#whoami")).to_contain_text("signed in as alice")
            await expect(page.locator("#conversation")).to_contain_text("why is api in team-a crashing?")
            await expect(page.locator("#conversation")).to_contain_text("E01")
            await expect(page.locator(f"#conversation .feedback[data-job-id='{job_id}'] button")).to_have_count(3)

            # Sign out: nothing of alice's stays on screen.
            await page.click("#signout")
            await expect(page.locator("#whoami")).to_have_text("")
            await expect(page.locator("#conversation li")).to_have_count(0)
            await expect(page.locator("#answer")).to_be_empty()

            # Bob signs in on the same browser and sees none of alice's conversation.
            await page.fill("#token", "t-bob")
            async with page.expect_response(lambda r: r.url.endswith("/v1/conversation")) as loaded:
                await page.click("#signin")
            assert (await loaded.value).status == 200
            await expect(page.locator("#whoami")).to_contain_text("signed in as bob")
            await expect(page.locator("#conversation li")).to_have_count(0)
            body = await page.locator("body").inner_text()
            assert "team-a" not in body and "alice" not in body

            # His own question and answer are about his own namespace only.
            await page.fill("#question", "what is failing?")
            await page.click("#ask")
            await expect(page.locator("#evidence code")).to_have_text("kubectl get pods -n team-b -l app=api")
            body = await page.locator("body").inner_text()
            assert "team-a" not in body and "why is api" not in body
            assert dialogs == []
        finally:
            await browser.close()


async def test_channels_show_alert_posts_to_members_only(start_stack, chromium):
    from playwright.async_api import async_playwright, expect

    from sleuth_common.messages import ChatPost

    channels = [{"name": "team-a-alerts", "members": ["group:team-a"]}]
    async with start_stack(channels=channels) as s, async_playwright() as pw:
        post = ChatPost(
            id="alert-1", target="web:team-a-alerts", text="### Alerts on cluster **demo**: 1 new"
        )
        await s.nc.jetstream().publish(s.subjects.chat_outbound, post.to_bytes())
        browser = await pw.chromium.launch(executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(s.url + "/")
            await page.fill("#token", "t-alice")
            await page.click("#signin")
            await page.click("#channels button[data-channel='team-a-alerts']")
            await expect(page.locator("#channel-messages h3")).to_contain_text("Alerts on cluster demo")
            await expect(page.locator("#question")).to_be_hidden()
            await page.click("#channels button[data-channel='']")
            await expect(page.locator("#question")).to_be_visible()

            # Signing out clears the channel; bob is no member and sees no channel at all.
            await page.click("#channels button[data-channel='team-a-alerts']")
            await page.click("#signout")
            await expect(page.locator("#channel-messages li")).to_have_count(0)
            await page.fill("#token", "t-bob")
            await page.click("#signin")
            await expect(page.locator("#whoami")).to_contain_text("signed in as bob")
            await expect(page.locator("#channels")).to_be_hidden()
            await expect(page.locator("#channel-view")).to_be_hidden()
        finally:
            await browser.close()
