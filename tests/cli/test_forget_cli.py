"""`sessiondb forget` (S-55): erases one person's conversations and nobody else's, prints the
receipt, and exits 1 while a copy remains (a backup taken before), so a script notices;
nothing matched is not an error, no selector is refused, and it asks before it erases."""

from __future__ import annotations

import functools
import json

import apsw
import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main

ALICE = "Alice confides the quince orchard plan to the assistant"
BOB = "Bob asks how to true a buckled bicycle wheel"


@pytest.fixture
def home(tmp_path):
    """A home whose `work` profile holds a conversation of Alice's and one of Bob's."""
    home = tmp_path / "home"
    with sessiondb.open_store(home=home, profile="work") as store:
        for user, text in (("alice", ALICE), ("bob", BOB)):
            session = store.create_session("cli", user_id=user, title=f"{user}'s talk")
            store.append(session.id, [{"role": "user", "content": text},
                                      {"role": "assistant", "content": f"{text}: noted"}])
    return home


def run(home, *args, input=None):
    return CliRunner().invoke(main, ["--home", str(home), "-p", "work", "forget", *args], input=input)


def found(home, words):
    """The sessions whose messages a search for `words` finds."""
    with sessiondb.open_store(home=home, profile="work") as store:
        return sorted({hit.session_id for hit in store.search(words)})


def test_forgetting_a_user_erases_their_conversation_and_leaves_the_others(home):
    result = run(home, "--user", "alice", "--yes")

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("removed 1 session(s), 2 message(s)")
    assert result.output.splitlines()[0].endswith("no copy remains")
    assert found(home, "quince orchard") == []
    assert len(found(home, "buckled bicycle")) == 1


def test_a_backup_that_still_holds_a_copy_is_listed_with_its_command_and_exits_1(home, tmp_path):
    backup = tmp_path / "before.db"
    with sessiondb.open_store(home=home, profile="work") as store:
        store.backup(backup)

    result = run(home, "--user", "alice", "--yes")

    assert result.exit_code == 1, result.output
    assert "1 file(s) still hold a copy" in result.output
    assert f"  {backup} holds a copy: rm {backup}" in result.output
    assert found(home, "quince orchard") == [] and len(found(home, "buckled bicycle")) == 1


def capture(home, name, manifest):
    """A retired-WAL capture beside the `work` store, holding Alice's words."""
    folder = home / "profiles" / "work" / name
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "state.db-wal").write_text(ALICE)
    return folder


def test_every_file_still_holding_her_words_is_listed_with_what_to_do_for_this_store(home):
    kept = capture(home, "retired-wal-1-1", {})  # not yet brought back into the store
    restored = capture(home, "retired-wal-2-2", {"restored": {"at": 1}})  # brought back: the store holds it
    spooled = home / "profiles" / "work" / "spool" / "00000000000000000001-1-unread.json"
    spooled.parent.mkdir()
    spooled.write_text(ALICE)  # a spooled batch too damaged to read

    result = run(home, "--user", "alice", "--yes")

    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].endswith("2 file(s) still hold a copy (listed, with what to do)")
    assert f"  {spooled} still holds 1 of the erased texts' fragments; remove it: its session was erased" in lines
    assert f"  {kept} holds a copy: `sessiondb --home {home} -p work restore-captured`, then " \
           f"`sessiondb --home {home} -p work forget` again with the same selectors, then rm -r {kept}" in lines
    assert f"  removed {restored}: it held erased text, and every row of it was in the store too" in lines
    assert not restored.exists() and kept.exists() and spooled.exists()


def test_a_file_a_reader_kept_from_being_scrubbed_is_named_with_this_stores_command(home, monkeypatch):
    # The reader holds the erasure's checkpoint for as long as the store's patience: a short one.
    monkeypatch.setattr("sessiondb.cli.context.open_store", functools.partial(sessiondb.open_store, patience=0.2))
    reader = apsw.Connection(str(home / "profiles" / "work" / "state.db"), flags=apsw.SQLITE_OPEN_READONLY)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM messages").fetchall()  # a snapshot from before the erasure

    result = run(home, "--user", "alice", "--yes")

    reader.close()
    assert result.exit_code == 1, result.output
    assert any(line.startswith("  ") and f"`sessiondb --home {home} -p work " in line
               for line in result.output.splitlines()[1:]), result.output


def test_json_prints_the_receipt(home):
    result = run(home, "--user", "alice", "--yes", "--json")

    assert result.exit_code == 0, result.output
    receipt = json.loads(result.output)
    assert receipt["asked"] == {"user_id": "alice"} and len(receipt["sessions"]) == 1
    assert receipt["messages"] == 2 and receipt["clean"] is True and receipt["copies"] == []
    assert receipt["summary"].endswith("no copy remains") and receipt["scanned_bytes"] > 0


def test_without_a_selector_forget_is_refused_as_bad_input(home):
    plain = run(home)
    as_json = run(home, "--json")

    assert plain.exit_code == as_json.exit_code == 1
    assert "say whose conversations to forget" in plain.stderr
    assert json.loads(as_json.stdout.splitlines()[-1])["code"] == "invalid_input"
    assert len(found(home, "quince orchard")) == len(found(home, "buckled bicycle")) == 1


def test_a_user_nobody_has_matches_nothing_and_succeeds(home):
    result = run(home, "--user", "carol")

    assert result.exit_code == 0, result.output
    assert result.output.strip() == "nothing matched: no session was removed"  # and nothing was asked
    assert len(found(home, "quince orchard")) == len(found(home, "buckled bicycle")) == 1


def test_a_dry_run_says_what_would_go_and_changes_nothing(home):
    result = run(home, "--user", "alice", "--dry-run")

    assert result.exit_code == 0, result.output
    assert result.output.startswith("would remove 1 session(s), 2 message(s)")
    assert len(found(home, "quince orchard")) == 1


def test_it_asks_first_and_a_no_erases_nothing(home):
    declined = run(home, "--user", "alice", input="n\n")

    assert declined.exit_code == 1
    assert "Erase 1 session(s) and 2 message(s)?" in declined.stderr
    assert len(found(home, "quince orchard")) == 1
    assert run(home, "--user", "alice", input="y\n").exit_code == 0
    assert found(home, "quince orchard") == []


def test_a_session_is_named_by_its_title_and_a_time_bounds_what_goes(home):
    with sessiondb.open_store(home=home, profile="work") as store:
        alice = store.find_session("alice's talk").id

    early = run(home, "--session", "alice's talk", "--before", "1d", "--yes")

    assert early.exit_code == 0 and "nothing matched" in early.output
    assert len(found(home, "quince orchard")) == 1  # her conversation was active within the day
    receipt = json.loads(run(home, "--session", "alice's talk", "--yes", "--json").output)
    assert receipt["asked"] == {"session_id": alice} and receipt["sessions"] == [alice]
    assert found(home, "quince orchard") == [] and len(found(home, "buckled bicycle")) == 1
