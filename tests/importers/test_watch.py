"""`--watch`: following a history as its tool writes it, from a checkpoint, until stopped.

Passes are driven one at a time (`passes=1`, a fresh call each time, as a restart would
be) or stopped by an event; nothing here waits on the clock to decide a result.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import apsw
import pytest

import histories
import sessiondb
from sessiondb.importers import checkpoint, location, watch

SESSIONDB = Path(sys.executable).with_name("sessiondb")
#: Runs the command after it with Ctrl-C as a terminal's foreground job has it. A test run in the
#: background (`make test &`) hands its children SIGINT ignored, and Python then leaves it
#: ignored: the command would go on watching, as a background job should.
AT_A_TERMINAL = (sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                 "os.execv(sys.argv[1], sys.argv[1:])")


def line(uuid: str, text: str, session: str = histories.SESSION) -> str:
    return json.dumps(histories.claude_line("user", uuid, None, {"role": "user", "content": text},
                                            sessionId=session)) + "\n"


def one_pass(store, source: str = "claude-code", path=None):
    return watch(store, source, path, passes=1)


def test_a_restart_resumes_from_the_checkpoint_and_reads_only_what_is_new(home):
    written = histories.claude_code(home)
    transcript = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    with sessiondb.open_store() as store:
        first = one_pass(store)
        with transcript.open("a") as f:
            f.write(line("u-0101", "Does the fix hold on CI?"))
        second = one_pass(store)
        idle = one_pass(store)
    assert (first.messages, len(first.malformed)) == (written.messages, 1)
    assert (second.messages, second.skipped, second.malformed) == (1, 0, [])  # nothing read twice
    assert (idle.sessions, idle.messages, idle.skipped) == (0, 0, 0)  # files that did not grow are not opened


def test_new_files_truncated_files_and_rotated_files_are_followed(home):
    written = histories.claude_code(home)
    project = next(written.path.iterdir())
    transcript = project / f"{histories.SESSION}.jsonl"
    other = "7d1e0c44-aaaa-4bbb-8ccc-0123456789ab"
    with sessiondb.open_store() as store:
        one_pass(store)
        (project / f"{other}.jsonl").write_text(line("n-0001", "A new session appears", other))
        new_file = one_pass(store)
        transcript.write_text(line("t-0001", "Rewritten from the start"))  # truncated below its old length
        truncated = one_pass(store)
        transcript.rename(project / f"{histories.SESSION}.jsonl.1")  # rotated away ...
        transcript.write_text(line("r-0001", "After the rotation") * 1 + line("r-0002", "and another"))  # ... and anew
        rotated = one_pass(store)
        texts = [m.text for m in store.transcript(f"claude-code-{histories.SESSION}")]
    assert (new_file.sessions_created, new_file.messages) == (1, 1)
    assert (truncated.messages, truncated.malformed) == (1, [])
    assert rotated.messages == 2
    assert texts[-3:] == ["Rewritten from the start", "After the rotation", "and another"]
    assert texts[0] == "Why does the upload test fail on CI?"  # what was imported before stays


def test_a_line_still_being_written_is_read_once_it_is_whole(home):
    written = histories.claude_code(home)
    transcript = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    whole = line("h-0001", "half now, half later")
    with sessiondb.open_store() as store:
        one_pass(store)
        with transcript.open("a") as f:
            f.write(whole[:40])
        half = one_pass(store)
        with transcript.open("a") as f:
            f.write(whole[40:])
        rest = one_pass(store)
    assert (half.messages, half.malformed) == (0, [])
    assert (rest.messages, rest.malformed) == (1, [])


def test_the_checkpoint_is_private_and_written_whole(home):
    histories.claude_code(home)
    with sessiondb.open_store() as store:
        one_pass(store)
        saved = checkpoint.path_for(store, "claude-code", location("claude-code"))
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    body = json.loads(saved.read_text())
    assert body["source"] == "claude-code" and len(body["cursor"]["files"]) == 2
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]  # no partial file left behind


def test_a_damaged_checkpoint_means_reading_again_and_storing_nothing_twice(home):
    histories.claude_code(home)
    with sessiondb.open_store() as store:
        one_pass(store)
        checkpoint.path_for(store, "claude-code", location("claude-code")).write_text("{not json")
        again = one_pass(store)
    assert (again.messages, again.skipped) == (0, 9)


def test_watch_follows_a_database_as_rows_are_added(home):
    written = histories.hermes(home)
    with sessiondb.open_store() as store:
        first = one_pass(store, "hermes")
        conn = apsw.Connection(str(written.path / "state.db"))
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
                     ("20261123_090000_aa11bb", "And the day after?", 1795424500.0))
        conn.close()
        second = one_pass(store, "hermes")
        idle = one_pass(store, "hermes")
    assert first.messages == 8
    assert (second.sessions, second.messages) == (1, 1)  # only the session that gained a row is read
    assert (idle.sessions, idle.messages) == (0, 0)


def test_watch_stops_when_its_stop_event_is_set(home):
    histories.claude_code(home)
    stop = threading.Event()
    passes = []

    def after(report):
        passes.append(report)
        stop.set()

    with sessiondb.open_store() as store:
        watch(store, "claude-code", interval=3600, stop=stop, on_pass=after)
    assert len(passes) == 1  # returned at the event, not after the hour-long interval


def test_ctrl_c_stops_the_watching_command_cleanly_and_keeps_its_place(home, isolated_home):
    written = histories.claude_code(home)
    transcript = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    # PYTHONFAULTHANDLER: a command still running long after its Ctrl-C is made to print where
    # each of its threads stands (SIGABRT), and the failure shows it.
    env = dict(os.environ, HOME=str(home), SESSIONDB_HOME=str(isolated_home), PYTHONFAULTHANDLER="1")
    # No clock: each step waits for the command's own report line of the pass that did it.
    proc = subprocess.Popen([*AT_A_TERMINAL, str(SESSIONDB), "import", "--from", "claude-code", "--watch",
                             "--interval", "0.05"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr.readline().startswith("watching claude-code history at")
        assert proc.stderr.readline().startswith("+9 message(s)")  # the first pass
        with transcript.open("a") as f:
            f.write(line("c-0001", "written while watched"))
        assert proc.stderr.readline().startswith("+1 message(s)")  # a later pass saw it
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            pytest.fail("the command did not stop within a minute of its Ctrl-C; where its threads stood:\n"
                        + proc.communicate()[1][-8000:])
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "imported" in out and "10 message(s)" in out
    with sessiondb.open_store() as store:
        saved = checkpoint.path_for(store, "claude-code", location("claude-code"))
        texts = [m.text for m in store.transcript(f"claude-code-{histories.SESSION}")]
    assert texts.count("written while watched") == 1
    assert json.loads(saved.read_text())["cursor"]["files"]


def test_the_checkpoint_moves_only_past_what_was_stored(home):
    histories.claude_code(home)

    class Refusing:
        """The store, but every append is refused as if another process held the lock."""

        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def append(self, *args, **kwargs):
            raise sessiondb.StoreBusy("another process holds the store")

    with sessiondb.open_store() as store:
        try:
            watch(Refusing(store), "claude-code", passes=1)
        except sessiondb.StoreBusy:
            pass
        after = one_pass(store)
    assert after.messages == 9  # nothing was skipped for having been "read" before the refusal


def test_the_report_of_a_watch_counts_each_session_once_across_passes(home):
    written = histories.claude_code(home)
    transcript = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    calls = []

    def grow(report):  # the tool writes between two passes
        calls.append(report)
        with transcript.open("a") as f:
            f.write(line(f"g-{len(calls):04d}", f"written after pass {len(calls)}"))

    with sessiondb.open_store() as store:
        total = watch(store, "claude-code", passes=3, interval=0, on_pass=grow)
    assert [r.messages for r in calls] == [written.messages, 1, 1]
    assert (total.sessions, total.messages, total.sessions_created) == (2, written.messages + 2, 2)
