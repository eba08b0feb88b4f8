"""Reading over HTTP: a search hit opens at its message with the messages around it, hits
are paged with their true count and spread across sessions, transcripts come as safe
HTML, and usage adds up per profile by model and by day."""

from __future__ import annotations

import json

import pytest

import sessiondb

from .conftest import seed, start, stop

BIG = 3000


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("reading") / "home"
    seed(home)
    with sessiondb.open_store(home=home, profile="demo", durability="normal") as store:
        big = store.create_session("cli", title="the long one")
        store.append(big.id, [{"uid": f"b{i}", "role": "user" if i % 2 else "assistant",
                               "content": f"common word {i}" + (" needle" if i == 2500 else "")
                               + ("" if i % 10 == 0 else " and a long tail of other words that dilute it")}
                              for i in range(BIG)])
        small = store.create_session("cli", title="the short one")
        store.append(small.id, [{"uid": "s1", "role": "user", "content": "a message with common in it, once"},
                                {"uid": "s2", "role": "assistant",
                                 "content": "# \n\nSee <script>alert(1)</script> [docs](https://example.com) "
                                            "and [bad](javascript:alert(1))\n\n| a | b |\n|---|---|\n| 1 | 2 |"}])
        store.record_usage(small.id, model="m1", input_tokens=10, output_tokens=5, cost_usd=0.5)
        store.record_usage(small.id, model="m2", input_tokens=1, output_tokens=1, cost_usd=0.25)
        store.record_usage(big.id, model="m1", input_tokens=100, output_tokens=50, cost_usd=1.0)
    server = start(home)
    yield server
    stop(server)


@pytest.fixture
def api(served):
    with served.client() as client:
        yield client


def test_a_hit_deep_in_a_long_session_opens_at_its_message_with_its_neighbours(api):
    hit, = api.get("/api/search", params={"profile": "demo", "q": "needle"}).json()["items"]
    page = api.get(f"/api/sessions/{hit['session_id']}/transcript",
                   params={"profile": "demo", "around": hit["message_id"], "limit": 9}).json()
    ids = [m["id"] for m in page["items"]]
    assert len(ids) == 9 and ids == sorted(ids) and ids[4] == hit["message_id"]
    assert "needle" in page["items"][4]["content"]
    assert page["next_before"] == ids[0] and page["next_after"] == ids[-1]
    older = api.get(f"/api/sessions/{hit['session_id']}/transcript",
                    params={"profile": "demo", "order": "latest", "before": page["next_before"], "limit": 2}).json()
    assert [m["id"] for m in older["items"]] == [ids[0] - 2, ids[0] - 1]  # the pages join up


def test_around_the_first_message_fills_the_page_with_later_ones(api):
    first = api.get("/api/search", params={"profile": "demo", "q": "once"}).json()["items"][0]
    page = api.get(f"/api/sessions/{first['session_id']}/transcript",
                   params={"profile": "demo", "around": first["message_id"], "limit": 9}).json()
    assert [m["uid"] for m in page["items"]] == ["s1", "s2"]
    assert page["next_before"] is None and page["next_after"] is None
    missing = api.get(f"/api/sessions/{first['session_id']}/transcript", params={"profile": "demo", "around": 1})
    assert missing.status_code == 404
    mixed = api.get(f"/api/sessions/{first['session_id']}/transcript",
                    params={"profile": "demo", "around": first["message_id"], "before": 5})
    assert mixed.status_code == 422


def test_search_pages_carry_the_true_count_and_spread_lets_every_session_through(api):
    first = api.get("/api/search", params={"profile": "demo", "q": "common", "limit": 10}).json()
    assert first["total"] == 1000 and first["total_exact"] is False  # the window is full
    assert len(first["items"]) == 10 and first["next_offset"] == 10
    second = api.get("/api/search", params={"profile": "demo", "q": "common", "limit": 10, "offset": 10}).json()
    assert not {h["message_id"] for h in first["items"]} & {h["message_id"] for h in second["items"]}
    once = api.get("/api/search", params={"profile": "demo", "q": "once"}).json()
    assert once["total"] == 1 and once["total_exact"] is True and once["next_offset"] is None
    window = api.get("/api/search", params={"profile": "demo", "q": "common", "limit": 1000}).json()["items"]
    buried = [h["session_title"] for h in window].index("the short one")
    assert buried > 10  # ranked among the long one's hits, it is pages down
    spread = api.get("/api/search", params={"profile": "demo", "q": "common", "limit": 5, "spread": True}).json()
    assert {h["session_title"] for h in spread["items"][:2]} == {"the long one", "the short one"}
    assert sorted(spread["sessions"].values()) == [1, 999]


def test_search_filters_by_role_session_and_time(api):
    hits = api.get("/api/search", params={"profile": "demo", "q": "common", "role": "user", "limit": 50}).json()
    assert {h["role"] for h in hits["items"]} == {"user"}
    sid = hits["items"][0]["session_id"]
    only = api.get("/api/search", params={"profile": "demo", "q": "common", "session_id": sid}).json()
    assert set(only["sessions"]) == {sid}
    assert api.get("/api/search", params={"profile": "demo", "q": "common", "until": 1}).json()["total"] == 0


def test_transcripts_come_as_sanitised_html_from_markdown(api):
    hit = api.get("/api/search", params={"profile": "demo", "q": "once"}).json()["items"][0]
    items = api.get(f"/api/sessions/{hit['session_id']}/transcript", params={"profile": "demo", "html": True}).json()["items"]
    html = items[1]["html"]
    assert "<table>" in html and "<td>1</td>" in html
    assert '<a href="https://example.com" target="_blank" rel="noopener noreferrer">docs</a>' in html
    assert "<script" not in html and "&lt;script&gt;" in html and "javascript:" not in html.split("[bad]")[0]
    assert "<h1>" not in html  # an empty heading is left out
    plain = api.get(f"/api/sessions/{hit['session_id']}/transcript", params={"profile": "demo"}).json()["items"]
    assert "html" not in plain[1]


def test_usage_adds_up_per_profile_by_model_and_by_day(api):
    report = api.get("/api/usage", params={"profile": "demo"}).json()
    demo_cost = 0.0148 + 0.0251 + 0.0031 + 0.0081 + 0.0006  # what `sessiondb demo` records
    assert report["sessions"] == 6
    assert report["totals"]["cost_usd"] == pytest.approx(1.75 + demo_cost)
    m1 = next(m for m in report["models"] if m["model"] == "m1")
    assert (m1["input_tokens"], m1["output_tokens"], m1["calls"]) == (110, 55, 2)
    assert report["models"][0]["model"] == "m1"  # the costliest first
    assert [d["day"] for d in report["days"]] == sorted(d["day"] for d in report["days"])
    assert sum(d["cost_usd"] for d in report["days"]) == pytest.approx(report["totals"]["cost_usd"])
    assert api.get("/api/usage", params={"profile": "demo", "until": 1}).json()["sessions"] == 0


def test_half_a_character_goes_in_and_comes_out_as_json_s_escape(api):
    # The lone surrogate travels as JSON's escape "\ud83d" both ways.
    created = api.post("/api/sessions", json={"source": "cli"}).json()
    stored = api.post(f"/api/sessions/{created['id']}/append", content=json.dumps({"messages": [
        {"role": "user", "content": "cut inside an emoji \ud83d", "reasoning": "\udc00 too"}]}))
    assert stored.status_code == 200, stored.text
    read = api.get(f"/api/sessions/{created['id']}/transcript")
    assert b"\\ud83d" in read.content and b"\\udc00" in read.content, read.content
    (message,) = read.json()["items"]
    assert (message["content"], message["reasoning"]) == ("cut inside an emoji \ud83d", "\udc00 too")
    html = api.get(f"/api/sessions/{created['id']}/transcript", params={"html": True}).json()["items"]
    assert "emoji \\ud83d" in html[0]["html"]
    exported = [json.loads(line) for line in api.get(f"/api/sessions/{created['id']}/export").text.splitlines()]
    assert [r["message"]["content"] for r in exported if r["type"] == "message"] == ["cut inside an emoji \ud83d"]
    assert "\\ud83d" in api.get(f"/api/sessions/{created['id']}/export", params={"format": "md"}).text
