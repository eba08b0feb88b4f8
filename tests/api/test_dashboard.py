"""The dashboard in a real browser: Debian's chromium, driven by Playwright, against `sessiondb serve`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from .conftest import seed, start, stop

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="Debian's chromium is not installed at /usr/bin/chromium "
                                       "(.ci/run installs it with apt-get install chromium)")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def served(tmp_path):
    home = tmp_path / "home"
    seed(home)
    import sessiondb

    with sessiondb.open_store(home=home, profile="demo") as store:  # a compacted session
        s = store.create_session("cli", title="Compacted chat")
        store.append(s.id, [{"uid": f"c{i}", "role": "user", "content": f"early turn {i}"} for i in range(4)])
        lease = store.begin_compaction(s.id)
        store.commit_compaction(lease, [{"role": "assistant", "content": "Summary of four early turns."}])
    server = start(home)
    # a session whose text tries to inject markup, found by search
    with server.client() as api:
        s = api.post("/api/sessions", params={"profile": "demo"},
                     json={"source": "cli", "title": "<img src=x onerror=alert(1)>"}).json()
        api.post(f"/api/sessions/{s['id']}/messages", params={"profile": "demo"},
                 json={"messages": [{"uid": "x", "role": "user",
                                     "content": "kyoto <script>window.pwned=1</script><b>bold</b>"}]})
    yield server
    stop(server)


def test_search_open_pin_and_the_session_moves_to_the_top(browser, served, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(served.url + "/")
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("#profile").input_value() == "demo"  # the first profile with sessions
    assert page.locator("[data-testid=pinned] li").count() == 0

    # search: snippets highlighted, everything else escaped
    page.fill("[data-testid=search]", "kyoto")
    page.press("[data-testid=search]", "Enter")
    page.wait_for_selector("[data-testid=hit]")
    assert page.locator("[data-testid=hit] mark").count() >= 2
    assert page.locator("[data-testid=hit] script, [data-testid=hit] b, [data-testid=hit] img").count() == 0
    assert page.evaluate("window.pwned === undefined")

    # open the Kyoto session from its hit
    page.locator("[data-testid=hit]", has_text="Trip to Kyoto").first.click()
    page.wait_for_selector("[data-testid=session-title]:has-text('Trip to Kyoto')")
    assert page.locator("[data-testid=message]").count() == 4

    # back to the listing: the Kyoto trip is not on top (other sessions are more recent)
    page.fill("[data-testid=search]", "")
    page.press("[data-testid=search]", "Enter")
    page.wait_for_selector("[data-testid=recent] li")
    first = page.locator("[data-testid=lists] li, #lists li").first
    assert "Trip to Kyoto" not in first.inner_text()

    # pin it: it moves to the top of the sidebar
    page.click("[data-testid=pin]")
    page.wait_for_selector("[data-testid=pinned] li:has-text('Trip to Kyoto')")
    assert "Trip to Kyoto" in page.locator("#lists li").first.inner_text()
    # The header is redrawn after the sidebar (update() awaits both): wait for it, never read it at once.
    expect(page.locator("[data-testid=pin]")).to_have_text("Unpin")

    assert not page.locator("[data-testid=older]").is_visible()  # 4 messages: nothing older
    page.screenshot(path=str(tmp_path / "dashboard-session.png"), full_page=True)

    # tool output is folded
    page.click("[data-testid=recent] li:has-text('Fix the flaky upload test')")
    page.wait_for_selector("[data-testid=session-title]:has-text('Fix the flaky upload test')")
    tool = page.locator("[data-testid=message].tool details")
    assert tool.count() == 1 and tool.get_attribute("open") is None
    assert "tool output" in tool.locator("summary").inner_text()

    # compacted history is left out, then shown folded and expandable
    page.click("[data-testid=recent] li:has-text('Compacted chat')")
    page.wait_for_selector("[data-testid=session-title]:has-text('Compacted chat')")
    assert page.locator("[data-testid=message]").count() == 1  # the summary
    page.click("[data-testid=toggle-compacted]")
    page.wait_for_selector("[data-testid=compacted]")
    fold = page.locator("[data-testid=compacted]")
    assert "4 compacted messages" in fold.locator("summary").inner_text()
    fold.locator("summary").click()
    assert fold.locator("[data-testid=message]").first.is_visible()
    page.click("[data-testid=toggle-compacted]")  # back to the live view

    # the health badge opens the doctor's report
    page.wait_for_selector("[data-testid=health].ok")
    page.click("[data-testid=health]")
    assert page.locator("[data-testid=doctor]").is_visible()
    assert "none" in page.locator("#doctor-body").inner_text()

    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert not errors, errors
    assert not dialogs, dialogs
    page.close()

    with httpx.Client(base_url=served.url) as api:
        pinned = api.get("/api/sessions", params={"profile": "demo", "pinned": "true"}).json()["items"]
        assert [s["title"] for s in pinned] == ["Trip to Kyoto"]


@pytest.fixture
def large(tmp_path):
    """10,000 sessions and one 20,000-message transcript."""
    import sessiondb

    home = tmp_path / "home"
    with sessiondb.open_store(home=home, durability="normal") as store:
        big = store.create_session("cli", title="the long one")
        for b in range(20):
            store.append(big.id, [{"uid": f"m{b}-{i}", "role": "user" if i % 2 == 0 else "assistant",
                                   "content": f"message {b * 1000 + i}"} for i in range(1000)])
        for i in range(9_999):
            store.create_session("bench", title=f"session {i:05d}")
        store.set_flags(big.id, pinned=True)
    server = start(home)
    yield server
    stop(server)


def test_ten_thousand_sessions_and_a_20000_message_transcript_are_paged(browser, large, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(large.url + "/")
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("[data-testid=recent] li").count() == 100  # one page, not 10,000
    page.click("[data-testid=more]")
    page.locator("[data-testid=recent] li").nth(199).wait_for()  # a locator, not a script: the page's CSP forbids eval

    page.click("[data-testid=pinned] li:has-text('the long one')")
    page.wait_for_selector("[data-testid=message]")
    assert page.locator("[data-testid=message]").count() == 200  # the newest 200
    assert page.locator("[data-testid=message]").last.inner_text().endswith("message 19999")
    page.click("[data-testid=older]")
    page.locator("[data-testid=message]").nth(399).wait_for()
    assert "message 19600" in page.locator("[data-testid=message]").first.inner_text()
    page.screenshot(path=str(tmp_path / "dashboard-large.png"))
    assert not errors, errors
    page.close()


def test_with_a_token_the_export_buttons_download_and_the_page_breaks_no_csp_rule(browser, tmp_path):
    home = tmp_path / "home"
    seed(home)
    server = start(home, token="dash-token")
    try:
        page = browser.new_page(accept_downloads=True)
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
        page.on("dialog", lambda d: d.accept("dash-token"))  # the page asks for the token once
        page.goto(server.url + "/")
        page.wait_for_selector("body[data-ready='1']")
        page.click("[data-testid=recent] li:has-text('Trip to Kyoto')")
        page.wait_for_selector("[data-testid=session-title]:has-text('Trip to Kyoto')")
        for fmt, expected in (("jsonl", '"type":"header"'), ("md", "Trip to Kyoto")):
            with page.expect_download() as info:
                page.click(f"[data-testid=export-{fmt}]")
            download = info.value
            assert download.suggested_filename.endswith(f".{fmt}")
            assert expected in Path(download.path()).read_text(encoding="utf-8")
        assert problems == []
    finally:
        stop(server)
