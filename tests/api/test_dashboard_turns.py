"""The dashboard shows why each turn of a session ended, in the guidance table's words, in
a real browser (Debian's chromium, Playwright) against `sessiondb serve`, with no CSP
violation (no inline script or style)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sessiondb
from sessiondb.guidance import explain_turn

from .conftest import start, stop

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
WATCHDOG = "interrupted_during_api_call(turn_liveness_watchdog)"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")


@pytest.fixture
def served(tmp_path):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home) as store:
        s = store.create_session("cli", title="Turns shown")
        store.append(s.id, {"uid": "u1", "role": "user", "content": "fix the build"})
        first = store.begin_turn(s.id, user_uid="u1")
        store.end_turn(first.id, WATCHDOG, receipts=[{"path": "/tree/a.py", "error": "no match", "mtime_ns": 1,
                                                      "size": 1}])
        store.begin_turn(s.id, user_uid="u2")
    server = start(home)
    yield server
    stop(server)


def test_each_turn_shows_why_it_ended(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
        page.goto(served.link)
        page.wait_for_selector("body[data-ready='1']")
        page.click("[data-testid=recent] li:has-text('Turns shown')")
        page.wait_for_selector("[data-testid=turns]", state="attached")
        page.click(".turns-box summary")
        turns = page.locator("[data-testid=turn]")
        assert turns.count() == 2
        first = turns.nth(0)
        assert explain_turn(WATCHDOG) in first.inner_text()
        assert "1 file edit(s) FAILED this turn" in first.inner_text()
        assert first.get_attribute("title") == WATCHDOG
        assert "running: still running" in turns.nth(1).inner_text()
        assert not problems, problems
        browser.close()
