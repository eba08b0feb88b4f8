"""S-55 on a file store: after forget, no file sessiondb wrote holds the erased text (the
store, its WAL, the search index and its WAL, the spool), read byte by byte; the copies it
does not rewrite (a backup) are named in the receipt with the command that removes them;
and a copy it could not reach (a WAL another process kept from being reset) is named too,
never reported as gone."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

import sessiondb
from sessiondb.inputs import prepare_messages
from sessiondb.store import spool
from sessiondb.testing.contract.test_meaning import Concepts

MARK = "Zqxerasure"  # every text of Alice's carries it
TAIL = MARK[3:].lower().encode()  # what is left of it in any form: an index term is folded and may share a prefix


def said(text, **extra):
    return {"role": "user", "content": text, **extra}


def holding(folder: Path, needle: bytes) -> list[str]:
    """Every file below `folder` whose bytes hold `needle` in any case."""
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes().lower())


def fill(store) -> tuple[str, str]:
    alice = store.create_session("telegram", user_id="alice", title=f"{MARK} plans")
    bob = store.create_session("telegram", user_id="bob")
    for i in range(40):
        store.append(alice.id, said(f"{MARK} alice's note {i}: " + "the garden, the bank, the doctor " * (i % 5)))
        store.append(bob.id, said(f"bob's note {i}, nothing of hers"))
    store.append(alice.id, [
        said(f"{MARK} a long letter: " + f"paragraph with {MARK} in it. " * 2000),  # overflow pages
        {"role": "assistant", "content": f"{MARK} answered", "reasoning": f"{MARK} she thought so",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "lookup", "arguments": f'{{"q": "{MARK}"}}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"{MARK} found"},
    ])
    assert len(store.search(MARK.lower(), limit=100)) > 40 and store.recall("garden")  # the index and its vectors hold her
    return alice.id, bob.id


def test_after_forget_no_file_sessiondb_wrote_holds_the_erased_text(tmp_path):
    home = tmp_path / "home"
    store = sessiondb.open_store(location=home / "state.db", embedder=Concepts())
    alice, bob = fill(store)
    backup = tmp_path / "before.db"
    store.backup(backup)
    spool.write(store._open().spool_anchor, alice, prepare_messages(said(f"{MARK} refused once")), "a test")
    assert holding(home, TAIL)  # the needle finds what is there

    receipt = store.forget(user_id="alice")

    assert receipt.sessions == [alice] and receipt.messages == 43 and receipt.spooled_batches == 1
    assert holding(home, TAIL) == []
    assert receipt.remaining == [] and receipt.fragments > 40
    assert {"state.db", "state.db-wal", "state.db-search"} <= {Path(p).name for p in receipt.scanned}
    assert [path for path, _ in receipt.copies] == [str(backup)] and holding(tmp_path, TAIL) == [str(backup)]
    assert "rm " in receipt.copies[0][1] and not receipt.clean
    assert len(store.search("bob", limit=100)) == 40 and store.search(MARK.lower()) == []
    store.close()
    assert holding(home, TAIL) == []  # and nothing comes back as the store closes


def test_a_log_another_process_kept_from_being_reset_is_named_in_the_receipt(tmp_path):
    home = tmp_path / "home"
    store = sessiondb.open_store(location=home / "state.db", patience=0.2)
    alice, _ = fill(store)
    reader = apsw.Connection(str(home / "state.db"), flags=apsw.SQLITE_OPEN_READONLY)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM messages").fetchall()  # a snapshot from before the erasure

    receipt = store.forget(user_id="alice")

    wal = str(home / "state.db-wal")
    named = [line for line in receipt.remaining if line.startswith(wal + " ")]
    assert named and "sessiondb sessions optimize" in named[0], receipt.remaining
    assert "still hold a copy" in receipt.summary() and not receipt.clean
    reader.execute("COMMIT")
    reader.close()
    store.optimize()
    store.close()
    assert holding(home, TAIL) == []


@pytest.mark.parametrize("selector", ["session_id", "source"])
def test_every_selector_erases_as_thoroughly(tmp_path, selector):
    home = tmp_path / "home"
    store = sessiondb.open_store(location=home / "state.db")
    alice, bob = fill(store)
    store.delete_session(bob)  # so that source="telegram" names Alice's alone
    asked = {"session_id": alice} if selector == "session_id" else {"source": "telegram"}
    assert store.forget(**asked).sessions == [alice]
    store.close()
    assert holding(home, TAIL) == []
