"""The web chat of a running stack (`make run`), in a real Chromium, as a person would use it.

Unlike the gateway's own browser test (a scripted agent), every answer here comes from the real
agent reading the simulated cluster through kube-mcp and the scope filter.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.embedded.stack import Stack, StackPorts, StackSpec
from tests.snapshot_names import tenant_names

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.timeout(180)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, demo_snapshot: Path) -> Iterator[Stack]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{CHROMIUM} is missing")
    with Stack(StackSpec(snapshot=demo_snapshot, state_dir=tmp_path_factory.mktemp("stack"),
                         ports=StackPorts.free())) as s:
        yield s


def test_alice_asks_and_bob_sees_none_of_it(stack: Stack, demo_snapshot: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    team_b = tenant_names(demo_snapshot, "team-b")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(stack.gateway_url + "/")
            page.fill("#token", stack.token("alice"))
            page.click("#signin")
            expect(page.locator("#whoami")).to_contain_text("signed in as alice")

            page.fill("#question", "why is checkout-api crashing?")
            page.click("#ask")
            expect(page.locator("#evidence")).to_contain_text("E01", timeout=30_000)
            expect(page.locator("#answer")).to_contain_text("oom_killed")
            expect(page.locator("#answer")).to_contain_text("256Mi")
            expect(page.locator("#evidence")).to_contain_text("kubectl ")
            progress = page.locator("#progress").inner_text()
            assert "scope" in progress and "writing" in progress, progress
            whole = page.content()
            assert not [n for n in team_b if n in whole], "team-b names on alice's page"

            page.click("#signout")
            page.fill("#token", stack.token("bob"))
            page.click("#signin")
            expect(page.locator("#whoami")).to_contain_text("signed in as bob")
            page.reload()
            expect(page.locator("#whoami")).to_contain_text("signed in as bob")
            page.wait_for_load_state("networkidle")
            text = page.locator("body").inner_text()
            assert "checkout-api" not in text and "256Mi" not in text, "bob sees alice's conversation"
        finally:
            browser.close()
