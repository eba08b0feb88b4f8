"""What exists is shown (issue 39, item 5): a session's checkpoints in the dashboard, with
diff and restore through the same library calls as `sessiondb checkpoints`, so with its
refusals; and the words a search matched marked inside the message it opened, as text.
Driven in Debian's chromium under the strict CSP."""

from __future__ import annotations

import pytest

import sessiondb
from sessiondb.turns import AgentTurn, Checkpoints

from .conftest import seed, start, stop
from .test_dashboard import CHROMIUM, CSP, Page, browser, search, serious  # noqa: F401 (browser is a fixture)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")
DOCKER = "docker container, so host paths are not the agent's paths"


@pytest.fixture
def served(tmp_path):
    """A session whose agent changed app.py in one turn, and one whose tools run in docker
    (in `main`); the demo, with markup that tries to inject itself."""
    home = tmp_path / "home"
    seed(home)
    made = {}
    with sessiondb.open_store(home=home) as store:
        for name in ("Agent edits", "Boxed edits"):
            tree = tmp_path / name.split()[0]
            tree.mkdir()
            (tree / "app.py").write_text("original\n")
            sid = store.create_session("cli", title=name).id
            turn = AgentTurn.begin(store, sid, {"role": "user", "content": "edit app.py"}, cwd=tree,
                                   checkpoints=Checkpoints(store))
            turn.before_mutation()
            (tree / "app.py").write_text("agent\n")
            turn.wrote("app.py")
            turn.finish()
            made[name] = tree
        store.update_metadata(sid, {"terminal_backend": "docker"})
    with sessiondb.open_store(home=home, profile="demo") as store:
        s = store.create_session("cli", title="Markup")
        store.append(s.id, {"uid": "x", "role": "user", "content": "kyoto <script>window.pwned=1</script><b>bold</b>"})
    server = start(home)
    server.trees = made
    yield server
    stop(server)


@pytest.fixture
def page(browser, served):  # noqa: F811
    """A page that accepts every confirmation (the restore asks first) and records any error."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" and "409" not in m.text else None)
    tab.on("dialog", lambda d: d.accept())
    tab.route("**/*", lambda route: route.fulfill(response=(r := route.fetch()),
                                                  headers={**r.headers, "content-security-policy": CSP}))
    tab.goto(served.link)
    tab.wait_for_selector("body[data-ready='1']")
    yield tab
    tab.unroute_all(behavior="ignoreErrors")
    context.close()
    assert not errors, errors


def open_checkpoints(page, title: str):
    page.select_option("[data-testid=profile]", "main")
    page.click(f"[data-testid=session]:has-text('{title}')")
    page.click("[data-testid=checkpoints-box] summary")
    return page.locator("[data-testid=checkpoint]").first


def test_a_checkpoint_diffs_and_a_restore_over_a_person_s_edit_is_refused_until_forced(page, served):
    tree = served.trees["Agent edits"]
    checkpoint = open_checkpoints(page, "Agent edits")
    checkpoint.locator("[data-testid=checkpoint-diff-open]").click()
    diff = checkpoint.locator("[data-testid=checkpoint-diff]")
    diff.wait_for()
    assert "-original" in diff.inner_text() and "+agent" in diff.inner_text()
    (tree / "app.py").write_text("a person's edit\n")
    checkpoint.locator("[data-testid=checkpoint-restore]").click()
    out = checkpoint.locator("[data-testid=checkpoint-out]")
    out.locator(".error").wait_for()
    assert "app.py" in out.inner_text() and (tree / "app.py").read_text() == "a person's edit\n"
    checkpoint.locator("[data-testid=checkpoint-force]").click()
    page.wait_for_selector("[data-testid=checkpoint-out]:has-text('Restored checkpoint')")
    assert (tree / "app.py").read_text() == "original\n"


def test_a_session_whose_tools_run_in_a_container_says_why_diff_and_restore_are_refused(page, served):
    checkpoint = open_checkpoints(page, "Boxed edits")
    assert DOCKER in page.locator("[data-testid=checkpoint-refusal]").inner_text()
    checkpoint.locator("[data-testid=checkpoint-restore]").click()
    checkpoint.locator("[data-testid=checkpoint-out] .error").wait_for()
    assert DOCKER in checkpoint.locator("[data-testid=checkpoint-out]").inner_text()
    assert (served.trees["Boxed edits"] / "app.py").read_text() == "agent\n"


@pytest.mark.parametrize("width", [1280, 390])
def test_the_words_a_search_matched_are_marked_inside_the_message_it_opened_as_text(browser, served, width):  # noqa: F811
    tab = Page(browser, served, width)
    page = tab.goto("#profile=demo")
    search(page, "kyoto")
    page.locator("[data-testid=hit]", has_text="Fushimi").first.click()
    marks = page.locator("[data-testid=message].target .text mark")
    marks.first.wait_for()
    assert {m.lower() for m in marks.all_inner_texts()} == {"kyoto"}
    if width < 760:
        page.click("[data-testid=back]")
    page.locator("[data-testid=hit]", has_text="window.pwned").first.click()
    # The message that hit opened (not the one the first hit left marked).
    target = page.locator("[data-testid=message].target", has_text="window.pwned")
    target.locator("mark").first.wait_for()
    assert target.locator("script, b").count() == 0 and "<b>bold</b>" in target.inner_text()
    assert page.evaluate("window.pwned === undefined")
    tab.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1440, 390])
def test_checkpoints_a_diff_and_a_refusal_have_no_serious_accessibility_violations(browser, served, width, scheme):  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    tab = Page(browser, served, width, color_scheme=scheme)
    page = tab.goto("#profile=main")
    for title in ("Agent edits", "Boxed edits"):  # a diff, then a refusal
        if width < 760 and page.locator("[data-testid=back]").is_visible():
            page.click("[data-testid=back]")
        page.click(f"[data-testid=session]:has-text('{title}')")
        # The session opened is shown before its box is opened (not the last session's box).
        page.locator("[data-testid=session-title]", has_text=title).wait_for()
        page.click("[data-testid=checkpoints-box] summary")
        page.click("[data-testid=checkpoint-diff-open]")
        page.locator("[data-testid=checkpoint-out] > *").first.wait_for()
        found = serious(Axe().run(page))
        assert not found, (title, found)
    tab.errors = [e for e in tab.errors if "409 (Conflict)" not in e]  # the refusal, which the page shows
    tab.close()
