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


def run_all(*args):
    """The report of each store the migration moved."""
    result = CliRunner().invoke(main, ["migrate", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["stores"]


def run(*args):
    """The report of the one store the migration moved."""
    [moved] = run_all(*args)
    return moved


def refused(*args):
    result = CliRunner().invoke(main, ["migrate", *args])
    assert result.exit_code == 1, result.output
    return " ".join(result.output.split())


def filled_profiles(home, names):
    """Each profile of `home` with sessions of its own (titled after it); their snapshots."""
    expected = {}
    for name in names:
        with sessiondb.open_store(home=home, profile=name) as store:
            fill(store)
            store.create_session("cli", title=f"only in {name}")
            expected[name] = snapshot(store)
    return expected


def titles(*global_options):
    result = CliRunner().invoke(main, [*global_options, "sessions", "list", "--archived", "--hidden", "--json"])
    assert result.exit_code == 0, result.output
    return {s["title"] for s in json.loads(result.output)}


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


def test_profiles_moved_to_one_server_each_land_in_their_own_profile(tmp_path, pg_database):
    home = tmp_path / "home"
    expected = filled_profiles(home, ["big", "work", "demo"])
    for name in expected:  # one at a time, as a person moving a home would
        moved = run("--from", name, "--to", pg_database, "--no-progress")
        assert moved["profile"] == name and moved["sessions_created"] == 4 and moved["messages_skipped"] == 0
    assert sessiondb.profiles.list_profiles(url=pg_database) == ["main", "big", "demo", "work"]
    for name, snap in expected.items():
        with sessiondb.open_store(pg_database, profile=name) as server:
            assert snapshot(server) == snap
    assert "only in demo" in titles("--store", pg_database, "-p", "demo")
    assert titles("--store", pg_database) == set()  # the server's main got nothing


def test_migrating_several_profiles_twice_stores_nothing_twice(tmp_path, pg_database):
    home = tmp_path / "home"
    expected = filled_profiles(home, ["big", "work", "demo"])
    args = ["--from", "big", "--from", "work", "--from", "demo", "--to", pg_database]
    first = run_all(*args)
    assert [m["profile"] for m in first] == ["big", "work", "demo"]
    assert all(m["sessions_created"] == 4 and m["messages_imported"] == m["messages_read"] > 0 for m in first)
    again = run_all(*args)
    assert all(m["sessions_created"] == 0 and m["messages_imported"] == 0 and
               m["messages_skipped"] == m["messages_read"] and m["sessions_merged"] == 4 for m in again)
    for name, snap in expected.items():
        with sessiondb.open_store(pg_database, profile=name) as server:
            assert snapshot(server) == snap


def test_a_store_moves_into_the_profile_named_and_back_into_the_home(tmp_path, pg_database):
    home = tmp_path / "home"
    expected = filled_profiles(home, ["demo"])
    moved = run("--from", "demo", "--to", pg_database, "--to-profile", "staging")
    assert moved["profile"] == "staging"
    assert sessiondb.profiles.list_profiles(url=pg_database) == ["main", "staging"]
    back = run("--from", pg_database, "--from-profile", "staging", "--to", "restored")
    assert back["sessions_created"] == 4
    with sessiondb.open_store(home=home, profile="restored") as restored:
        assert snapshot(restored) == expected["demo"]


def test_profiles_of_a_home_move_into_files_of_their_own(tmp_path):
    expected = filled_profiles(tmp_path / "home", ["work", "demo"])
    for name in expected:
        run("--from", name, "--to", str(tmp_path / f"{name}.db"))
    twice = run("--from", "demo", "--to", str(tmp_path / "demo.db"))
    assert twice["messages_imported"] == 0 and twice["sessions_created"] == 0
    for name, snap in expected.items():
        with sessiondb.open_store(tmp_path / f"{name}.db") as moved:
            assert snapshot(moved) == snap


def test_several_stores_into_one_file_are_refused_before_anything_moves(tmp_path):
    filled_profiles(tmp_path / "home", ["work", "demo"])
    message = refused("--from", "work", "--from", "demo", "--to", str(tmp_path / "one.db"))
    assert "would be merged into one store" in message and "each into a store of its own" in message
    assert not (tmp_path / "one.db").exists()


def test_several_stores_into_one_server_profile_are_refused(tmp_path, pg_database):
    filled_profiles(tmp_path / "home", ["work", "demo"])
    message = refused("--from", "work", "--from", "demo", "--to", pg_database, "--to-profile", "all")
    assert "would be merged into one profile" in message
    assert sessiondb.profiles.list_profiles(url=pg_database) == ["main"]


def test_a_mistyped_source_profile_is_refused_and_creates_nothing(tmp_path):
    home = tmp_path / "home"
    filled_profiles(home, ["demo"])
    message = refused("--from", "dmeo", "--to", str(tmp_path / "out.db"))
    assert "no profile 'dmeo'" in message and "(profiles: demo)" in message
    assert sessiondb.profiles.list_profiles(home) == ["main", "demo"] and not (tmp_path / "out.db").exists()


def test_a_profile_for_a_target_that_is_one_file_is_refused(tmp_path):
    filled_profiles(tmp_path / "home", ["demo"])
    message = refused("--from", "demo", "--to", str(tmp_path / "out.db"), "--to-profile", "demo")
    assert "--to-profile names a profile of a server" in message
