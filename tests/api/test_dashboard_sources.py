"""The dashboard filters and shows sessions by the tool they came from (imported histories)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sessiondb

from .conftest import start, stop

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="Debian's chromium is not installed at /usr/bin/chromium")


@pytest.fixture
def served(tmp_path):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home) as store:
        for source, title, text in [("claude-code", "Flaky upload test", "the upload test races the finaliser"),
                                    ("codex", "Invoice rounding", "the invoice upload rounds half even"),
                                    ("cli", "Notes", "upload the slides")]:
            s = store.create_session(source, title=title, metadata={"tool": source})
            store.append(s.id, {"uid": "1", "role": "user", "content": text})
    server = start(home)
    yield server
    stop(server)


def test_the_source_filter_narrows_the_list_and_the_search_and_hits_name_their_tool(served):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(served.link)
        page.wait_for_selector("body[data-ready='1']")
        sessions = page.locator("[data-testid=session]")
        expect(sessions).to_have_count(3)
        offered = page.locator("[data-testid=f-sources] option").evaluate_all("(os) => os.map((o) => o.value)")
        assert {"claude-code", "codex", "llm", "hermes", "openai-agents", "langchain"} <= set(offered)

        page.fill("[data-testid=search]", "upload")
        hits = page.locator("[data-testid=hit]")
        expect(hits).to_have_count(3)
        page.click("[data-testid=filters-toggle]")
        page.fill("[data-testid=f-source]", "codex")
        page.dispatch_event("[data-testid=f-source]", "change")
        expect(hits).to_have_count(1)
        expect(hits.first.locator(".meta")).to_have_text(re.compile(r"^codex · "))
        expect(sessions).to_have_count(1)  # the session list narrows to the same tool
        expect(sessions.first.locator(".meta")).to_contain_text("codex")

        page.fill("[data-testid=f-source]", "")
        page.dispatch_event("[data-testid=f-source]", "change")
        expect(hits).to_have_count(3)
        metas = hits.locator(".meta").all_inner_texts()
        assert {m.split(" · ")[0] for m in metas} == {"claude-code", "codex", "cli"}
        assert errors == []
        browser.close()
