"""The HTTP API, against a real `sessiondb serve` process."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import sessiondb

from .conftest import SERVE, start, stop

ERROR_KEYS = {"code", "message", "detail"}


def is_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    assert body["message"]
    if code is not None:
        assert body["code"] == code, body
    return body


def new_session(api, title: str, **extra) -> dict:
    response = api.post("/api/sessions", json={"source": "cli", "title": title, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def test_health_and_profiles_list_every_profile_under_the_home(api):
    health = api.get("/api/health").json()
    assert health["status"] == "ok"
    names = [p["name"] for p in api.get("/api/profiles").json()["items"]]
    assert names == ["main", "demo"]


def test_listing_a_profile_pages_with_its_cursor(api):
    first = api.get("/api/sessions", params={"profile": "demo", "limit": 3}).json()
    assert len(first["items"]) == 3 and first["cursor"]
    rest = api.get("/api/sessions", params={"profile": "demo", "limit": 3, "cursor": first["cursor"]}).json()
    titles = {s["title"] for s in first["items"] + rest["items"]}
    assert titles == {"Trip to Kyoto", "Fix the flaky upload test", "Release checklist", "東京の天気"}
    assert rest["cursor"] is None


def test_posting_messages_is_idempotent_by_uid_and_returns_the_stored_rows(api):
    s = new_session(api, "posting")
    batch = {"messages": [{"uid": "t1", "role": "user", "content": "why does the upload test fail?"},
                          {"uid": "t2", "role": "assistant", "content": "It races the finaliser."}]}
    first = api.post(f"/api/sessions/{s['id']}/append", json=batch)
    assert first.status_code == 200, first.text
    again = api.post(f"/api/sessions/{s['id']}/append", json=batch)
    assert [m["id"] for m in again.json()["items"]] == [m["id"] for m in first.json()["items"]]
    listed = api.get(f"/api/sessions/{s['id']}/transcript").json()["items"]
    assert [m["uid"] for m in listed] == ["t1", "t2"]
    conflict = api.post(f"/api/sessions/{s['id']}/append",
                        json={"messages": [{"uid": "t1", "role": "user", "content": "something else"}]})
    is_error(conflict, 409, "message_conflict")


def test_the_latest_page_of_a_transcript_pages_backwards_with_before(api):
    s = new_session(api, "paging")
    api.post(f"/api/sessions/{s['id']}/append",
             json={"messages": [{"uid": f"m{i}", "role": "user", "content": f"message {i}"} for i in range(7)]})
    page = api.get(f"/api/sessions/{s['id']}/transcript", params={"order": "latest", "limit": 3}).json()
    assert [m["uid"] for m in page["items"]] == ["m4", "m5", "m6"]
    older = api.get(f"/api/sessions/{s['id']}/transcript",
                    params={"order": "latest", "limit": 3, "before": page["next_before"]}).json()
    assert [m["uid"] for m in older["items"]] == ["m1", "m2", "m3"]


def test_search_finds_highlighted_snippets_and_q_filters_the_listing(api):
    hits = api.get("/api/search", params={"q": "kyoto", "profile": "demo"}).json()["items"]
    assert hits and "<mark>" in hits[0]["snippet"]
    cjk = api.get("/api/search", params={"q": "東京", "profile": "demo"}).json()["items"]
    assert cjk
    sessions = api.get("/api/sessions", params={"q": "finaliser", "profile": "demo"}).json()["items"]
    assert [s["title"] for s in sessions] == ["Fix the flaky upload test"]
    assert api.get("/api/search", params={"q": '"unbalanced AND ( -', "profile": "demo"}).status_code == 200


def test_recall_answers_a_question_and_says_when_nothing_matches(api):
    found = api.get("/api/recall", params={"q": "What was flaky about the upload test?", "profile": "demo"}).json()
    assert found["items"] and found["note"] == f"{len(found['items'])} message(s), best first."
    nothing = api.get("/api/recall", params={"q": "Where is the zeppelin hangar?", "profile": "demo"}).json()
    assert nothing == {"items": [], "note": "Nothing stored matches this question."}
    assert api.get("/api/recall", params={"q": '"unbalanced AND ( -\u0000', "profile": "demo"}).status_code == 200


def test_a_substring_search_of_a_hundred_words_is_bad_input_naming_the_limit(api):
    answer = api.get("/api/search", params={"q": " ".join(f"w{i}" for i in range(100)), "substring": "true",
                                            "profile": "demo"})
    is_error(answer, 422, "invalid_input")
    assert "at most 32 terms" in answer.text and "storage" not in answer.text


def test_a_listing_cuts_a_large_metadata_with_or_without_a_query_and_the_session_has_it_whole(api):
    s = new_session(api, "bulky", metadata={"project": "/srv/bulky", "notes": "n" * 20_000})
    api.post(f"/api/sessions/{s['id']}/append", json={"messages": [{"role": "user", "content": "zeppelin"}]})
    listed = next(x for x in api.get("/api/sessions").json()["items"] if x["id"] == s["id"])
    (found,) = api.get("/api/sessions", params={"q": "zeppelin"}).json()["items"]
    for metadata in (listed["metadata"], found["metadata"]):
        assert metadata["project"] == "/srv/bulky" and metadata["sessiondb_cut"]["keys"] == ["notes"]
    assert api.get(f"/api/sessions/{s['id']}").json()["metadata"]["notes"] == "n" * 20_000


def test_patch_renames_and_sets_flags_and_refuses_non_booleans(api):
    s = new_session(api, "to patch")
    patched = api.patch(f"/api/sessions/{s['id']}", json={"title": "patched", "pinned": True, "hidden": True})
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert (body["title"], body["pinned"], body["hidden"], body["archived"]) == ("patched", True, True, False)
    listed = [x["id"] for x in api.get("/api/sessions").json()["items"]]
    assert s["id"] not in listed  # hidden
    assert s["id"] in [x["id"] for x in api.get("/api/sessions", params={"include_hidden": "true"}).json()["items"]]
    is_error(api.patch(f"/api/sessions/{s['id']}", json={"pinned": "yes"}), 422, "invalid_input")
    is_error(api.patch(f"/api/sessions/{s['id']}", json={"pinned": 1}), 422, "invalid_input")
    is_error(api.patch(f"/api/sessions/{s['id']}", json={}), 422, "invalid_input")
    is_error(api.patch(f"/api/sessions/{s['id']}", json={"colour": "red"}), 422)
    cleared = api.patch(f"/api/sessions/{s['id']}", json={"title": None}).json()
    assert cleared["title"] is None


def test_delete_removes_the_session_and_then_it_is_not_found(api):
    s = new_session(api, "to delete")
    assert api.delete(f"/api/sessions/{s['id']}").json() == {"deleted": s["id"], "sessions": [s["id"]]}
    is_error(api.get(f"/api/sessions/{s['id']}"), 404, "not_found")
    is_error(api.delete(f"/api/sessions/{s['id']}"), 404, "not_found")


def test_delete_with_conversation_takes_its_whole_compression_chain(api, server):
    s = new_session(api, "rotated, then deleted")
    api.post(f"/api/sessions/{s['id']}/append", json={"messages": [{"role": "user", "content": "before"}]})
    with sessiondb.open_store(home=server.home) as store:
        tip = store.commit_compaction(store.begin_compaction(s["id"]), {"role": "system", "content": "gist"},
                                      mode="rotate").id
    deleted = api.delete(f"/api/sessions/{s['id']}", params={"conversation": "true"}).json()
    assert deleted == {"deleted": s["id"], "sessions": [s["id"], tip]}  # the named one, then the others
    is_error(api.get(f"/api/sessions/{tip}"), 404, "not_found")


def test_export_streams_jsonl_and_markdown(api):
    s = new_session(api, "exported")
    api.post(f"/api/sessions/{s['id']}/append",
             json={"messages": [{"uid": f"e{i}", "role": "user", "content": f"line {i}"} for i in range(300)]})
    response = api.get(f"/api/sessions/{s['id']}/export")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in response.text.splitlines()]
    assert [r["type"] for r in records][:2] == ["header", "session"]
    assert records[-1] == {"type": "end", "session_id": s["id"], "messages": 300, "usage": 0, "turns": 0}
    md = api.get(f"/api/sessions/{s['id']}/export", params={"format": "md"})
    assert md.headers["content-type"].startswith("text/markdown") and "## exported" in md.text
    is_error(api.get("/api/sessions/nope/export"), 404, "not_found")
    is_error(api.get(f"/api/sessions/{s['id']}/export", params={"format": "pdf"}), 422, "invalid_input")


def test_doctor_reports_and_fix_runs_when_nobody_else_holds_the_store(api):
    report = api.get("/api/doctor", params={"profile": "demo"}).json()
    assert report["damage"] == "none" and report["healthy"] is True
    fixed = api.post("/api/doctor/repair", params={"profile": "demo"})
    assert fixed.status_code == 200, fixed.text
    assert fixed.json()["healthy"] is True and fixed.json()["repair"]["backup"] is None  # nothing to operate on
    # the service reopens the profile after the repair
    assert api.get("/api/sessions", params={"profile": "demo"}).json()["items"]


def test_doctor_fix_is_refused_with_409_while_another_process_holds_the_store(api, server):
    holder = subprocess.Popen(
        [os.environ.get("PYTHON", SERVE[0]), "-c",
         "import sys, time, sessiondb; s = sessiondb.open_store(home=sys.argv[1], profile='demo');"
         "s.list_sessions(); print('held', flush=True); time.sleep(60)", str(server.home)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "SESSIONDB_UNDER_TEST": "1"})
    try:
        assert holder.stdout.readline().strip() == "held"
        body = is_error(api.post("/api/doctor/repair", params={"profile": "demo"}), 409, "store_held")
        assert any(str(holder.pid) in h for h in body["detail"]["holders"])
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("method, path, status, code", [
    ("get", "/api/sessions?profile=../../etc", 422, "invalid_input"),
    ("get", "/api/sessions?profile=Nope", 422, "invalid_input"),
    ("get", "/api/sessions?profile=absent", 404, "not_found"),
    ("get", "/api/sessions?limit=0", 422, "invalid_input"),
    ("get", "/api/sessions?pinned=maybe", 422, "invalid_input"),
    ("get", "/api/sessions/does-not-exist", 404, "not_found"),
    ("get", "/api/sessions/does-not-exist/transcript", 404, "not_found"),
    ("get", "/api/search", 422, "invalid_input"),
    ("get", "/api/no-such-route", 404, "not_found"),
    ("delete", "/api/profiles", 405, "method_not_allowed"),
])
def test_errors_are_json_with_code_message_and_detail(api, method, path, status, code):
    is_error(getattr(api, method)(path), status, code)


def test_a_session_created_hidden_over_http_is_listed_only_when_hidden_ones_are_asked_for(api):
    made = new_session(api, "kept out", hidden=True)
    assert made["hidden"] is True
    listed = [s["id"] for s in api.get("/api/sessions").json()["items"]]
    assert made["id"] not in listed
    assert made["id"] in [s["id"] for s in api.get("/api/sessions?include_hidden=true").json()["items"]]
    is_error(api.post("/api/sessions", json={"source": "cli", "hidden": "yes"}), 422, "invalid_input")


def test_search_and_recall_over_http_read_a_whole_conversation_with_conversation(api, server):
    root = new_session(api, "rotated")
    api.post(f"/api/sessions/{root['id']}/append", json={"messages": [{"uid": "a", "role": "user",
                                                                       "content": "the harbour lantern"}]})
    with sessiondb.open_store(home=server.home) as store:
        tip = store.commit_compaction(store.begin_compaction(root["id"]), {"role": "system", "content": "gist"},
                                      mode="rotate")
        store.append(tip.id, {"uid": "b", "role": "user", "content": "the lantern again"})
    for route in ("/api/search", "/api/recall"):
        alone = api.get(route, params={"q": "lantern", "session_id": root["id"]}).json()["items"]
        whole = api.get(route, params={"q": "lantern", "session_id": root["id"], "conversation": "true"}).json()
        assert [h["uid"] for h in alone] == ["a"]
        assert sorted(h["uid"] for h in whole["items"]) == ["a", "b"]
        is_error(api.get(route, params={"q": "lantern", "conversation": "true"}), 422, "invalid_input")


def test_bad_bodies_are_422_and_title_clashes_409(api):
    is_error(api.post("/api/sessions", content=b"{not json", headers={"content-type": "application/json"}), 422)
    is_error(api.post("/api/sessions", json={"title": "no source"}), 422, "invalid_input")
    new_session(api, "taken")
    is_error(api.post("/api/sessions", json={"source": "cli", "title": "taken"}), 409, "title_conflict")
    s = new_session(api, "bad messages")
    is_error(api.post(f"/api/sessions/{s['id']}/append", json={"messages": [{"role": "wizard"}]}), 422)
    is_error(api.post(f"/api/sessions/{s['id']}/append", json={"messages": "hello"}), 422)


def test_the_openapi_schema_lists_the_routes(api):
    paths = api.get("/openapi.json").json()["paths"]
    for path in ("/api/profiles", "/api/sessions", "/api/sessions/{session_id}",
                 "/api/sessions/{session_id}/transcript", "/api/sessions/{session_id}/append",
                 "/api/search", "/api/sessions/{session_id}/export",
                 "/api/doctor", "/api/doctor/repair", "/api/health"):
        assert path in paths


def test_the_dashboard_page_is_served_at_the_root(api):
    page = api.get("/")
    assert page.status_code == 200 and "sessiondb" in page.text
    assert api.get("/static/app.js").status_code == 200


# --- the token ----------------------------------------------------------------------


def test_a_token_protected_service_answers_401_to_a_wrong_or_missing_token(tmp_path):
    server = start(tmp_path / "home", token="s3cret-token")
    try:
        with server.client(token="wrong") as wrong:
            is_error(wrong.get("/api/sessions"), 401, "unauthorized")
        with server.client(token="") as none:
            is_error(none.get("/api/sessions"), 401, "unauthorized")
            is_error(none.get("/openapi.json"), 401, "unauthorized")
            assert none.get("/").status_code == 200  # the page itself holds no data
        with server.client() as right:
            assert right.get("/api/sessions").status_code == 200
            assert right.post("/api/sessions", json={"source": "cli"}).status_code == 201
    finally:
        stop(server)


def test_the_token_can_come_from_the_environment(tmp_path):
    server = start(tmp_path / "home", env={"SESSIONDB_TOKEN": "from-env"})
    try:
        with server.client(token="nope") as wrong:
            is_error(wrong.get("/api/health"), 401)
        with server.client() as right:
            assert right.get("/api/health").status_code == 200
    finally:
        stop(server)


def test_binding_a_non_loopback_address_without_a_token_is_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SESSIONDB_TOKEN"}
    result = subprocess.run(SERVE + ["--home", str(tmp_path / "home"), "serve", "--host", "0.0.0.0", "--port", "0"],
                            capture_output=True, text=True, timeout=30, env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "without a token" in lines[0], result.stderr


def test_a_slow_export_reader_does_not_block_other_requests(server):
    with server.client() as api:
        s = new_session(api, "big export")
        for b in range(5):
            api.post(f"/api/sessions/{s['id']}/append", json={"messages": [
                {"uid": f"{b}-{i}", "role": "user", "content": "x" * 2000} for i in range(1000)]})
        with api.stream("GET", f"/api/sessions/{s['id']}/export") as stream:
            chunks = stream.iter_bytes()
            assert next(chunks)  # the export has started and is left waiting on its reader
            with server.client() as other:  # answered while the export waits, unread, on its reader
                for _ in range(20):
                    assert other.get("/api/sessions", params={"limit": 5}).status_code == 200
            total = sum(len(c) for c in chunks)
        assert total > 10_000_000  # never capped: every message came through
