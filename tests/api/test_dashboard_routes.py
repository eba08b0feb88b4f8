"""The dashboard remembers where you are (issue 39, item 1): every view has an address
after '#' that reload keeps, Back and Forward walk, and another tab opens as shared;
Enter on a session moves focus into its transcript. Driven in Debian's chromium."""

from __future__ import annotations

import pytest

from .conftest import seed, start, stop
from .test_dashboard import CHROMIUM, Page, browser, search  # noqa: F401 (browser is a fixture)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("routes") / "home"
    seed(home)
    server = start(home)
    yield server
    stop(server)


@pytest.fixture(params=[1280, 390], ids=lambda w: f"{w}px")
def tab(browser, served, request):  # noqa: F811
    page = Page(browser, served, request.param)
    yield page
    page.close()


def hash_of(page) -> dict[str, str]:
    return dict(page.evaluate("[...new URLSearchParams(location.hash.slice(1))]"))


def title(page) -> str:
    return page.locator("[data-testid=session-title]").inner_text()


def test_enter_opens_a_session_into_the_transcript_and_reload_back_and_forward_keep_it(tab):
    page = tab.goto()
    page.locator("[data-testid=session]:has-text('Release checklist')").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=session-title]:has-text('Release checklist')")
    assert page.evaluate("document.activeElement.closest('#transcript') !== null")  # not 100 Tabs away
    opened = hash_of(page)
    assert opened["profile"] == "demo" and opened["session"]
    page.reload()
    page.wait_for_selector("[data-testid=session-title]:has-text('Release checklist')")
    page.go_back()
    page.wait_for_selector("[data-testid=empty-view]", state="attached")
    assert "session" not in hash_of(page)
    page.go_forward()
    page.wait_for_selector("[data-testid=session-title]:has-text('Release checklist')")
    assert hash_of(page) == opened


def test_a_search_and_the_hit_it_opened_are_an_address_another_tab_opens(browser, served, tab):  # noqa: F811
    page = tab.goto()
    search(page, "kyoto")
    assert hash_of(page)["q"] == "kyoto"
    hit = page.locator("[data-testid=hit]", has_text="Fushimi").first
    wanted = hit.get_attribute("data-message")
    hit.click()
    page.wait_for_selector(f"[data-testid=message].target[data-id='{wanted}']")
    shared = page.url
    assert hash_of(page)["message"] == wanted
    other = Page(browser, served, tab.width)
    try:
        second = other.goto(shared.split("#", 1)[1])  # with the token, which a shared address never holds
        second.wait_for_selector(f"[data-testid=message].target[data-id='{wanted}']")
        assert second.locator("#search").input_value() == "kyoto"
        assert second.locator("[data-testid=hit]").count() >= 2
    finally:
        other.close()
    page.go_back()  # the hit closes, the search stays
    page.wait_for_selector("[data-testid=empty-view]", state="attached")
    assert hash_of(page).get("q") == "kyoto" and "session" not in hash_of(page)
    page.go_back()  # before the search
    page.wait_for_selector("[data-testid=lists] [data-testid=session]")
    assert "q" not in hash_of(page) and page.locator("#search").input_value() == ""


def test_usage_doctor_and_profile_are_addresses_too(tab):
    page = tab.goto()
    page.click("[data-testid=usage-open]")
    page.locator("[data-testid=usage-dialog] svg.chart").wait_for()
    assert hash_of(page)["view"] == "usage"
    page.reload()
    page.locator("[data-testid=usage-dialog] svg.chart").wait_for()
    page.keyboard.press("Escape")
    page.wait_for_function("!location.hash.includes('view=')")
    assert not page.locator("[data-testid=usage-dialog]").is_visible()
    page.click("[data-testid=health]")
    page.locator("#doctor-body .lead").wait_for()
    assert hash_of(page)["view"] == "doctor"
    page.go_back()
    page.wait_for_selector("[data-testid=doctor]", state="hidden")
    page.select_option("[data-testid=profile]", "main")
    page.wait_for_function("location.hash.includes('profile=main')")
    page.go_back()
    page.wait_for_function("location.hash.includes('profile=demo')")
    assert page.locator("#profile").input_value() == "demo"
    page.locator("[data-testid=session]:has-text('Trip to Kyoto')").wait_for()
