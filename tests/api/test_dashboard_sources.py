"""The dashboard filters and shows sessions by the tool they came from (imported histories)."""

from __future__ import annotations

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
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(served.url + "/")
        page.wait_for_selector("body[data-ready='1']")
        assert page.locator("[data-testid=recent] li").count() == 3
        options = page.locator("[data-testid=source] option").all_inner_texts()
        assert {"all", "claude-code", "codex", "llm", "hermes", "openai-agents", "langchain", "cli"} <= set(options)

        page.select_option("[data-testid=source]", "codex")
        page.wait_for_function("document.querySelectorAll('[data-testid=recent] li').length === 1")
        assert "codex" in page.locator("[data-testid=recent] li .meta").inner_text()

        page.fill("[data-testid=search]", "upload")
        page.press("[data-testid=search]", "Enter")
        page.wait_for_selector("[data-testid=hit]")
        assert page.locator("[data-testid=hit]").count() == 1
        assert page.locator("[data-testid=hit] .meta").inner_text().startswith("codex ·")

        page.select_option("[data-testid=source]", "")
        page.wait_for_function("document.querySelectorAll('[data-testid=hit]').length === 3")
        metas = page.locator("[data-testid=hit] .meta").all_inner_texts()
        assert {m.split(" · ")[0] for m in metas} == {"claude-code", "codex", "cli"}
        assert errors == []
        browser.close()
