"""`sessiondb --store URL serve`: the API and the dashboard over the profiles a PostgreSQL
server holds, a real service process on a real server, the dashboard in a real browser."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

import sessiondb
from sessiondb import profiles
from sessiondb.store.postgres.migrations import MIGRATIONS

from .conftest import start, stop

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


@pytest.fixture
def served(pg_database, tmp_path):
    profiles.create("work", url=pg_database)
    with sessiondb.open_store(pg_database, profile="work") as store:
        s = store.create_session("cli", title="Kyoto trip")
        store.append(s.id, [{"uid": "1", "role": "user", "content": "a ryokan near the river"},
                            {"uid": "2", "role": "assistant", "content": "two nights in Gion"}])
    server = start(tmp_path / "home", store=pg_database)
    yield server, s.id, pg_database
    stop(server)


def schemas(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'sessiondb%'")}


def test_the_api_serves_the_servers_profiles_and_creates_none(served):
    server, sid, url = served
    with server.client() as api:
        health = api.get("/api/health").json()
        assert health["profiles"] == ["main", "work"] and health["home"].startswith("postgresql://")
        listed = api.get("/api/sessions", params={"profile": "work"}).json()["items"]
        assert [s["id"] for s in listed] == [sid]
        hits = api.get("/api/search", params={"q": "ryokan", "profile": "work"}).json()["items"]
        assert [h["session_id"] for h in hits] == [sid]
        before = schemas(url)
        missing = api.get("/api/sessions", params={"profile": "wrok"})
        assert missing.status_code == 404 and "no profile 'wrok' on postgresql://" in missing.json()["message"]
        assert schemas(url) == before
        doctor = api.get("/api/doctor", params={"profile": "work"}).json()
        assert doctor["healthy"] and doctor["checked"]["messages"] == 2 and doctor["location"].endswith("#sessiondb_work")
        added = api.post(f"/api/sessions/{sid}/append", params={"profile": "work"},
                         json={"messages": [{"uid": "3", "role": "user", "content": "and a tea house"}]})
        assert added.status_code in (200, 201), added.text
    with sessiondb.open_store(url, profile="work") as store:
        assert [m.uid for m in store.transcript(sid)] == ["1", "2", "3"]


def test_the_doctor_fixes_a_servers_store_while_the_service_has_it_open(served):
    server, sid, url = served
    with server.client() as api:
        assert api.get("/api/sessions", params={"profile": "work"}).status_code == 200  # the service's handle
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE sessiondb_work.sessions SET message_count = 99")
        found = api.get("/api/doctor", params={"profile": "work"}).json()
        assert found["damage"] == "counters" and "doctor --repair" in found["steps"][0]
        fixed = api.post("/api/doctor/repair", params={"profile": "work"})
        assert fixed.status_code == 200 and fixed.json()["healthy"], fixed.text
        assert fixed.json()["repair"]["actions"] == [f"recounted session {sid}"]
        assert api.get(f"/api/sessions/{sid}", params={"profile": "work"}).json()["message_count"] == 2


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium")
def test_the_dashboard_shows_a_servers_sessions_and_its_doctors_report(served):
    from playwright.sync_api import expect, sync_playwright

    server, sid, _ = served
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.link)
        page.wait_for_selector("body[data-ready='1']")
        expect(page.locator("[data-testid=profile]")).to_have_value("work")  # the first with sessions
        expect(page.locator("[data-testid=session]")).to_have_count(1)
        expect(page.locator("[data-testid=session]").first).to_contain_text("Kyoto trip")
        badge = page.locator("[data-testid=health]")
        expect(badge).to_have_text("Healthy")
        badge.click()
        expect(page.locator("#doctor-body")).to_contain_text("PostgreSQL 15")
        expect(page.locator("#doctor-body")).to_contain_text(f"{len(MIGRATIONS)} applied, 0 pending")
        assert errors == []
        browser.close()
