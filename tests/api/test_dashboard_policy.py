"""The dashboard shows what a profile keeps: the Retention button opens the rules and legal
holds set through the library (GET /api/policy), and a profile without rules says that
everything is kept. Driven in Debian's chromium at 1280 and 390 px, with an axe scan."""

from __future__ import annotations

import pytest

import sessiondb
from sessiondb import profiles

from .conftest import start, stop
from .test_dashboard import CHROMIUM, Page, browser, serious, width  # noqa: F401 (browser, width: fixtures)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")
DAY = 86400


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A `work` profile with rules for every other source and for telegram, and a hold on
    ann; an `empty` profile with none."""
    home = tmp_path_factory.mktemp("policy") / "home"
    with sessiondb.open_store(home=home, profile="work") as store:
        store.append(store.create_session("cli", user_id="ann", title="ann's talk").id,
                     {"role": "user", "content": "about the quince orchard"})
        store.set_policy(inactive_after=90 * DAY, keep_last=20)
        store.set_policy(source="telegram", compacted_after=14 * DAY)
        store.hold(user_id="ann", reason="litigation hold 7")
    profiles.create("empty", home)
    server = start(home)
    yield server
    stop(server)


def test_the_retention_panel_shows_the_rules_and_the_hold_set_through_the_library(browser, served, width):  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    tab = Page(browser, served, width)
    page = tab.goto("profile=work")
    page.click("[data-testid=policy-open]")
    rows = page.locator("[data-testid=policy-rules] tbody tr")
    rows.first.wait_for()

    cells = [rows.nth(i).locator("th, td").all_inner_texts()[:5] for i in range(rows.count())]
    assert cells == [["every other source", "90 days", "20 conversations", "—", "—"],
                     ["telegram", "—", "—", "2 weeks", "—"]]
    [hold] = page.locator("[data-testid=policy-holds] li").all_inner_texts()
    assert hold.startswith("User ann: litigation hold 7 (placed ")
    assert "view=policy" in page.evaluate("location.hash")
    assert not serious(Axe().run(page))
    page.keyboard.press("Escape")
    page.select_option("[data-testid=profile]", "empty")
    page.wait_for_function("location.hash.includes('profile=empty')")
    page.click("[data-testid=policy-open]")
    assert page.locator("[data-testid=policy-no-rules]").inner_text() == "No rules: everything is kept."
    assert page.locator("[data-testid=policy-no-holds]").inner_text() == "No legal holds."
    tab.close()
