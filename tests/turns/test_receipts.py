"""S-52: honest edit receipts. A failed edit is keyed by the file's resolved identity and
its (mtime_ns, size); a success under any spelling clears it; a file changed since the
failure (here by a real shell redirect) is dropped at the turn's end; the header never
claims files were not modified."""

from __future__ import annotations

import os
import subprocess

import pytest

from sessiondb import open_store
from sessiondb.turns import AgentTurn, report


@pytest.fixture
def turn(store, session, tree):
    (tree / "src").mkdir()
    (tree / "src" / "app.py").write_text("print('hello')\n")
    (tree / "notes.txt").write_text("notes\n")
    os.symlink(tree / "src", tree / "link")
    return AgentTurn.begin(store, session.id, {"role": "user", "content": "edit the app"}, cwd=tree)


@pytest.mark.parametrize("failed_as, succeeded_as", [
    ("src/app.py", "{tree}/src/app.py"),
    ("{tree}/src/app.py", "src/../src/app.py"),
    ("src/app.py", "link/app.py"),
    ("./link/../src/app.py", "src//app.py"),
])
def test_a_later_success_under_another_spelling_clears_the_failure(turn, tree, failed_as, succeeded_as):
    turn.edits.failed(failed_as.format(tree=tree), "old text not found")
    turn.edits.succeeded(succeeded_as.format(tree=tree))
    assert turn.finish().receipts == []
    assert "FAILED" not in turn.explanation


def test_a_failure_whose_file_a_shell_redirect_changed_is_dropped_at_the_turn_end(turn, tree, isolated_home):
    turn.edits.failed("src/app.py", "old text not found")
    turn.edits.failed("notes.txt", "permission denied")
    # A shell command rewrote the file after the edit failed (a different size, so the
    # (mtime_ns, size) snapshot differs even on a coarse clock).
    subprocess.run(["sh", "-c", "echo rewritten by the shell > src/app.py"], cwd=tree, check=True)
    ended = turn.finish()
    notes = os.stat(tree / "notes.txt")
    assert ended.receipts == [{"path": str(tree.resolve() / "notes.txt"), "error": "permission denied",
                               "mtime_ns": notes.st_mtime_ns, "size": notes.st_size}]
    with open_store(home=isolated_home) as again:
        assert again.get_turn(turn.id).receipts == ended.receipts
    assert "1 file edit(s) FAILED this turn" in turn.explanation
    assert "notes.txt: permission denied" in turn.explanation


def test_the_report_counts_failures_and_never_claims_files_were_not_modified(turn, tree):
    turn.edits.failed("src/app.py", "old text not found")
    turn.edits.failed("missing.py", "no such file")
    text = report(turn.edits.standing())
    assert text.splitlines()[0] == "2 file edit(s) FAILED this turn:"
    lowered = text.lower()
    assert "not modified" not in lowered and "unchanged" not in lowered and "no files" not in lowered


def test_a_failure_with_no_file_stands_until_the_file_appears(turn, tree):
    turn.edits.failed("new.py", "parent directory missing")
    assert [f.path for f in turn.edits.standing()] == [str(tree.resolve() / "new.py")]
    (tree / "new.py").write_text("x\n")
    assert turn.edits.standing() == []
