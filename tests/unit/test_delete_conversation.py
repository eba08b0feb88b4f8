"""A conversation's delete takes the sessions a rotation added while it waited for its locks.

On PostgreSQL the delete reads the compression tree, then locks its members; a rotation of
the tip that commits in between adds a session the first read did not see. Here that
rotation is made at the moment of the first lock, in the delete's own unit of work, which
is what the delete sees of it once the lock is granted.
"""

from __future__ import annotations

import sessiondb
from sessiondb.inputs import child_session
from sessiondb.model import COMPRESSION
from sessiondb.store import lineage, sessions


class RotatingAtTheFirstLock:
    """A unit of work's rows: the first lock asked for finds the tip rotated into `child`."""

    def __init__(self, rows, tip: str, child: str) -> None:
        self._rows, self._tip, self._child, self.rotated = rows, tip, child, False

    def __getattr__(self, name):
        return getattr(self._rows, name)

    def select(self, table, *where, **options):
        if options.get("lock") and not self.rotated:
            self.rotated = True
            tip = sessions.get(self._rows, self._tip)
            self._rows.update("sessions", {"id": self._tip}, set={"ended_at": 2.0, "end_reason": COMPRESSION})
            sessions.create(self._rows, child_session(tip, COMPRESSION, id=self._child, started_at=2.0))
        return self._rows.select(table, *where, **options)


def test_a_rotation_committed_while_the_delete_waited_is_deleted_with_the_conversation():
    store = sessiondb.open_store("memory://delete-conversation")
    root = store.create_session("cli").id
    store.append(root, {"role": "user", "content": "first"})
    tip = store.commit_compaction(store.begin_compaction(root), {"role": "system", "content": "gist"},
                                  mode="rotate").id
    racing: list[RotatingAtTheFirstLock] = []

    def delete(rows):
        racing.append(RotatingAtTheFirstLock(rows, tip, "newest"))
        lineage.delete_conversation(racing[-1], root)

    store.backend.write(delete)
    assert racing[0].rotated
    assert store.get_sessions([root, tip, "newest"]) == {}  # the newest session went with the rest
