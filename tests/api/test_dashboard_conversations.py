"""A conversation compacted by rotation is one conversation (issue 39, item 2): the listing
with `conversations` gives its tip alone, the dashboard shows it as one entry whose
earlier sessions are reached from inside it, and the rotated originals on request."""

from __future__ import annotations

import pytest

import sessiondb

from .conftest import start, stop
from .test_dashboard import CHROMIUM, Page, browser, serious  # noqa: F401 (browser is a fixture)


def rotate(store, session_id: str, summary: str) -> str:
    lease = store.begin_compaction(session_id)
    return store.commit_compaction(lease, [{"role": "assistant", "content": summary}], mode="rotate").id


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One conversation rotated twice, and a session closed by compression that nothing continues."""
    home = tmp_path_factory.mktemp("conversations") / "home"
    with sessiondb.open_store(home=home) as store:
        root = store.create_session("cli", title="Rotated talk")
        store.append(root.id, [{"uid": f"r{i}", "role": "user", "content": f"first part {i}"} for i in range(3)])
        middle = rotate(store, root.id, "Summary one.")
        store.append(middle, [{"uid": "m", "role": "user", "content": "second part"}])
        tip = rotate(store, middle, "Summary two.")
        store.append(tip, [{"uid": "t", "role": "user", "content": "third part"}])
        dead = store.create_session("cli", title="Closed alone")
        store.append(dead.id, [{"uid": "d", "role": "user", "content": "alone"}])
        store.end_session(dead.id, "compression")
    server = start(home)
    server.ids = {"root": root.id, "middle": middle, "tip": tip, "dead": dead.id}
    yield server
    stop(server)


def test_the_listing_of_conversations_gives_each_tip_alone_and_pages_on_past_the_rotated(served):
    ids = served.ids
    with served.client() as api:
        every = [s["id"] for s in api.get("/api/sessions").json()["items"]]
        assert set(every) == set(ids.values())
        one = [s["id"] for s in api.get("/api/sessions", params={"conversations": "true"}).json()["items"]]
        assert sorted(one) == sorted([ids["tip"], ids["dead"]])
        first = api.get("/api/sessions", params={"conversations": "true", "limit": 1}).json()
        second = api.get("/api/sessions", params={"conversations": "true", "limit": 1, "cursor": first["cursor"]}).json()
        assert [s["id"] for s in first["items"] + second["items"]] == one  # no page comes back short
        hits = api.get("/api/sessions", params={"conversations": "true", "q": "first part"}).json()["items"]
        assert [s["id"] for s in hits] == [ids["tip"]]  # a hit in an original stands for its conversation


def test_a_transcript_read_at_the_tip_gives_the_live_conversation_from_any_of_its_sessions(served):
    ids = served.ids
    with served.client() as api:
        for named in ("root", "middle", "tip"):
            page = api.get(f"/api/sessions/{ids[named]}/transcript", params={"tip": "true"}).json()
            assert [m["content"] for m in page["items"]] == ["Summary two.", "third part"]
            assert {m["session_id"] for m in page["items"]} == {page["session_id"]} == {ids["tip"]}
        first = api.get(f"/api/sessions/{ids['root']}/transcript", params={"tip": "true", "limit": 1}).json()
        rest = api.get(f"/api/sessions/{first['session_id']}/transcript", params={"after": first["next_after"]}).json()
        assert [m["content"] for m in first["items"] + rest["items"]] == ["Summary two.", "third part"]
        newest = page["items"][-1]["id"]
        around = api.get(f"/api/sessions/{ids['root']}/transcript", params={"tip": "true", "around": newest}).json()
        assert [m["content"] for m in around["items"]] == ["Summary two.", "third part"]
        named = api.get(f"/api/sessions/{ids['root']}/transcript", params={"include_compacted": "true"}).json()
        assert [m["content"] for m in named["items"]] == [f"first part {i}" for i in range(3)]  # archived there


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1440, 390])
def test_a_rotated_conversation_is_one_entry_with_its_history_inside(browser, served, width, scheme):  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    tab = Page(browser, served, width, color_scheme=scheme)
    page = tab.goto()
    sessions = page.locator("[data-testid=recent] [data-testid=session]")
    assert sorted(sessions.evaluate_all("(ss) => ss.map((s) => s.dataset.id)")) == sorted(
        [served.ids["tip"], served.ids["dead"]])
    sessions.filter(has_text="Rotated talk").click()
    lineage = page.locator("[data-testid=lineage] button")
    lineage.first.wait_for()
    assert lineage.count() == 2  # the two earlier sessions, reachable from the tip
    assert not serious(Axe().run(page))
    lineage.first.click()
    page.wait_for_selector("[data-testid=message]:has-text('first part 0')", state="attached")
    assert page.locator("[data-testid=compacted]").count() == 1  # the originals, as compacted history
    if width < 760:
        page.click("[data-testid=back]")
    page.click("[data-testid=show-compacted]")
    page.wait_for_selector(f"[data-testid=recent] [data-id='{served.ids['root']}']")
    assert sessions.count() == 4
    tab.close()
