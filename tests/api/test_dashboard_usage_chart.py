"""The usage chart reads at any range (issue 39, item 4): over 40 days its labels do not
overlap, and the totals are written beside it as text. Driven in Debian's chromium, with
an axe scan at 1440 and 390 px in both themes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import sessiondb

from .conftest import start, stop
from .test_dashboard import CHROMIUM, Page, browser, serious  # noqa: F401 (browser is a fixture)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")
DAYS = 40


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One session a day for 40 days, each with one model call of 1,000 tokens more than the day before."""
    home = tmp_path_factory.mktemp("usage") / "home"
    first = datetime(2026, 9, 1, 12, tzinfo=timezone.utc)
    with sessiondb.open_store(home=home) as store:
        for i in range(DAYS):
            s = store.create_session("cli", title=f"day {i}", started_at=first + timedelta(days=i))
            store.record_usage(s.id, model="gpt-5", input_tokens=1000 * (i + 1), output_tokens=0, cost_usd=0.01)
    server = start(home)
    yield server
    stop(server)


def overlapping(boxes: list[dict]) -> list[tuple[int, int]]:
    return [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes[i + 1:], i + 1)
            if a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1440, 390])
def test_forty_days_of_usage_have_labels_that_do_not_overlap_and_totals_in_words(browser, served, width, scheme):  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    tab = Page(browser, served, width, color_scheme=scheme)
    page = tab.goto()
    page.click("[data-testid=usage-open]")
    chart = page.locator("[data-testid=usage-dialog] svg.chart")
    chart.wait_for()
    assert chart.locator("rect.bar").count() == DAYS
    labels = chart.locator("text.axis")
    boxes = labels.evaluate_all("(ts) => ts.map((t) => { const r = t.getBoundingClientRect();"
                                " return {x: r.x, y: r.y, width: r.width, height: r.height}; })")
    assert 4 <= len(boxes) <= 10 and not overlapping(boxes), boxes
    assert labels.first.inner_html() == "09-01"
    totals = page.locator("[data-testid=day-totals]").inner_text()
    assert "40 (2026-09-01 to 2026-10-10)" in totals and f"{sum(1000 * (i + 1) for i in range(DAYS)):,}" in totals
    assert "2026-10-10: 40,000 tokens" in totals and "$0.4000" in totals
    page.click("[data-testid=usage-dialog] details summary")
    assert page.locator("[data-testid=day-table] tbody tr").count() == DAYS
    assert not serious(Axe().run(page))
    tab.close()
