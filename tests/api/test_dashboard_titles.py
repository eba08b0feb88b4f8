"""A session without a title is called by the first words its user said, on every face
(issue 39, item 3): the listing, a search hit and the session carry `first_words`, and
the dashboard shows them where a title would be, as the CLI's `list` does."""

from __future__ import annotations

import pytest

import sessiondb

from .conftest import start, stop
from .test_dashboard import CHROMIUM, Page, browser, search  # noqa: F401 (browser is a fixture)

WORDS = "why does the upload test flake on CI"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("titles") / "home"
    with sessiondb.open_store(home=home) as store:
        untitled = store.create_session("cli")
        store.append(untitled.id, [{"uid": "s", "role": "system", "content": "You are terse."},
                                   {"uid": "u", "role": "user", "content": f"  {WORDS}\n\n(it passes locally)" + " x" * 40}])
        titled = store.create_session("cli", title="Named one")
        store.append(titled.id, {"uid": "u", "role": "user", "content": "the upload again"})
    server = start(home)
    server.untitled = untitled.id
    yield server
    stop(server)


def test_the_listing_a_hit_and_the_session_carry_the_first_words_of_an_untitled_session(served):
    with served.client() as api:
        listed = {s["id"]: s for s in api.get("/api/sessions").json()["items"]}
        hits = api.get("/api/search", params={"q": "upload"}).json()["items"]
        one = api.get(f"/api/sessions/{served.untitled}").json()
    words = listed[served.untitled]["first_words"]
    assert words.startswith(WORDS + " (it passes locally)") and len(words) == 60 and words.endswith("…")
    assert [s["first_words"] for s in listed.values() if s["title"]] == [None]  # a title is not read past
    assert {h["session_id"]: h["session_first_words"] for h in hits} == {
        served.untitled: words, next(i for i in listed if i != served.untitled): None}
    assert one["first_words"] == words


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")
def test_the_dashboard_calls_an_untitled_session_by_its_first_words(browser, served):  # noqa: F811
    tab = Page(browser, served, 1280)
    page = tab.goto()
    entry = page.locator(f"[data-testid=session][data-id='{served.untitled}'] .title")
    assert entry.inner_text().startswith(WORDS)
    search(page, "upload")
    titles = page.locator("[data-testid=hit] .title").all_inner_texts()
    assert sorted(t[:len(WORDS)] for t in titles) == sorted(["Named one"[:len(WORDS)], WORDS])
    page.click(f"[data-testid=hit][data-session='{served.untitled}']")
    page.wait_for_selector(f"[data-testid=session-title]:has-text('{WORDS}')")
    tab.close()
