"""`sessiondb migrate`: a fleet moves between a file and a server, whole, resumably, idempotently."""

from __future__ import annotations

import json

from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main


def fill(store):
    chat = store.create_session("telegram", title="Kyoto")
    store.append(chat.id, [{"uid": f"m{i}", "role": "user" if i % 2 else "assistant", "content": f"turn {i}"}
                           for i in range(30)])
    lease = store.begin_compaction(chat.id)
    store.commit_compaction(lease, [{"uid": "sum", "role": "system", "content": "summary"}], mode="rotate")
    store.record_usage(chat.id, model="m", input_tokens=10, cost_usd=0.5)
    other = store.create_session("cli")
    store.append(other.id, {"uid": "x", "role": "user", "content": "café, ünïcode"})
    return [s.id for s in store.list_sessions(include_archived=True, include_hidden=True).items]


def snapshot(store):
    """Every session's records, but the ids each store assigns to messages."""
    out, current = {}, None
    for record in store.export():
        if record["type"] == "session":
            current = record["session"]["id"]
        if record["type"] == "message":
            record = {**record, "message": {k: v for k, v in record["message"].items() if k != "id"}}
        if record["type"] != "header":
            out.setdefault(current, []).append(record)
    return out


def run(*args):
    result = CliRunner().invoke(main, ["migrate", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_store_moves_to_the_server_and_back_unchanged(tmp_path, pg_server, pg_schema):
    url = f"{pg_server.url()}&schema={pg_schema}"
    with sessiondb.open_store(tmp_path / "before.db") as before:
        fill(before)
        expected = snapshot(before)
    first = run("--from", str(tmp_path / "before.db"), "--to", url)
    assert first["sessions_created"] == 3 and first["messages_skipped"] == 0
    back = run("--from", url, "--to", str(tmp_path / "after.db"))
    assert back["sessions_created"] == 3 and back["messages_imported"] == first["messages_imported"]
    with sessiondb.open_store(tmp_path / "after.db") as after:
        assert snapshot(after) == expected
    with sessiondb.open_store(url) as server:
        assert server.verify().ok


def test_an_interrupted_migration_is_completed_by_running_it_again(tmp_path, pg_server, pg_schema):
    url = f"{pg_server.url()}&schema={pg_schema}"
    with sessiondb.open_store(tmp_path / "src.db") as source:
        ids = fill(source)
        with sessiondb.open_store(url) as target:  # a migration cut short leaves whole sessions behind it
            done = target.import_records(source.export([ids[0]]))
    again = run("--from", str(tmp_path / "src.db"), "--to", url)
    assert again["sessions_merged"] == 1 and again["messages_skipped"] == done.messages_imported > 0
    once_more = run("--from", str(tmp_path / "src.db"), "--to", url)
    assert once_more["messages_imported"] == 0 and once_more["sessions_created"] == 0
    with sessiondb.open_store(tmp_path / "src.db") as source, sessiondb.open_store(url) as target:
        assert snapshot(target) == snapshot(source)


def test_migrating_a_store_into_itself_is_refused(tmp_path):
    sessiondb.open_store(tmp_path / "a.db").close()
    result = CliRunner().invoke(main, ["migrate", "--from", str(tmp_path / "a.db"), "--to", str(tmp_path / "a.db")])
    assert result.exit_code == 1 and "same store" in result.output
