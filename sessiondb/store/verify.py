"""Store.verify() on every backend: each invariant the write paths keep, checked over the rows.

The backend runs these checks in one snapshot together with what only its engine can
check (its file or pages, the derived search index, its settings: `Backend.check`) and
reports each broken invariant in words; nothing is repaired here (that is the doctor's
work). What is checked, and why:

- identity: a uid is stored once along a compression lineage, not only once per session
  (a session's own uniqueness is a unique constraint; across rotations only the write
  paths keep it);
- counters: each session's message_count and tool_call_count equal its active rows;
- order: among a session's active rows, seq never falls as the id rises (but where a
  compaction kept messages verbatim after its summary, see _order);
- rotations: a session a rotation closed (ended with reason compression, continued by a
  compression child) holds no active row: one there is outside the live conversation
  (S-46);
- leases: every fencing token was handed out, the watermark is a message id the session
  has reached, and a lease expires after it was taken (one lease per session is the key);
- orphans: no message or usage row of a session that does not exist.

The messages are read a page at a time, so what verify holds grows with the sessions,
not with the messages.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import COMPRESSION, MAX_HOPS, MessageState, VerifyReport
from .rows import Row, Rows, above, one_of, other_than

PAGE = 2000  # message rows held at a time
CHUNK = 500  # uids one condition names at most
_ACTIVE = MessageState.ACTIVE.value


def check(rows: Rows, tokens: int, report: VerifyReport) -> None:
    """Add every broken invariant of the rows to `report` (`tokens`: how many fencing
    tokens the store has handed out)."""
    sessions = {s["id"]: s for s in rows.select(
        "sessions", columns=("id", "parent_session_id", "parent_relation", "end_reason", "message_count",
                             "tool_call_count"))}
    _identity(rows, sessions, report)
    active = _active(rows)
    _counters(sessions, active, report)
    _order(rows, sessions, active, report)
    _rotated(sessions, active, report)
    _leases(rows, tokens, report)
    _orphans(rows, sessions, report)


def _compression_parent(session: Row) -> str | None:
    return session["parent_session_id"] if session["parent_relation"] == COMPRESSION else None


def _identity(rows: Rows, sessions: dict[str, Row], report: VerifyReport) -> None:
    for sid, session in sessions.items():
        ancestors: list[str] = []
        parent = _compression_parent(session)
        while parent is not None and parent in sessions and len(ancestors) < MAX_HOPS:
            ancestors.append(parent)
            parent = _compression_parent(sessions[parent])
        if not ancestors:
            continue
        after = 0
        while page := rows.select("messages", {"session_id": sid, "id": above(after)}, columns=("id", "uid"),
                                  order=("id",), limit=CHUNK):
            after = page[-1]["id"]
            uids = [m["uid"] for m in page]
            for earlier in ancestors:
                for found in rows.select("messages", {"session_id": earlier, "uid": one_of(uids)}, columns=("uid",)):
                    report.problems.append(f"identity: a uid is stored once across a compression lineage, but uid "
                                           f"{found['uid']!r} of session {sid} is also stored in its lineage, "
                                           f"in {earlier}")
    report.checked["messages"] = rows.count("messages")[None]["count"]


class _Active:
    """What the active rows of each session add up to, read in id order."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        # (session, id, seq, the previous row's id and seq) of each fall of seq
        self.falls: list[tuple[str, int, int, int, int]] = []


def _active(rows: Rows) -> _Active:
    found = _Active()
    last: dict[str, tuple[int, int]] = {}  # session -> (id, seq) of its latest active row so far
    after = 0
    while page := rows.select("messages", {"state": _ACTIVE, "id": above(after)},
                              columns=("id", "session_id", "seq", "tool_calls"), order=("id",), limit=PAGE):
        after = page[-1]["id"]
        for m in page:
            sid = m["session_id"]
            found.count[sid] = found.count.get(sid, 0) + 1
            if m["tool_calls"] is not None:
                found.calls[sid] = found.calls.get(sid, 0) + len(json.loads(m["tool_calls"]))
            if sid in last and m["seq"] < last[sid][1]:
                found.falls.append((sid, m["id"], m["seq"], *last[sid]))
            last[sid] = (m["id"], m["seq"])
    return found


def _counters(sessions: dict[str, Row], active: _Active, report: VerifyReport) -> None:
    for sid, s in sessions.items():
        count, calls = active.count.get(sid, 0), active.calls.get(sid, 0)
        if (s["message_count"], s["tool_call_count"]) != (count, calls):
            report.problems.append(f"counters: session {sid} counts {s['message_count']} messages and "
                                   f"{s['tool_call_count']} tool calls; its active rows hold {count} and {calls}")
    report.checked["sessions"] = len(sessions)


def _order(rows: Rows, sessions: dict[str, Row], active: _Active, report: VerifyReport) -> None:
    # Appends number each row one past the last, so seq is unique until a compaction: its
    # summary takes the seq of the newest row it replaces (and so do the rows it keeps
    # verbatim; in older stores they follow with the lower seq they had). A fall right after a
    # row whose seq another row of the session shares (or of the parent it was rotated
    # from) is such a head; any other fall is disorder.
    for sid, mid, seq, before_id, before in active.falls:
        parent = _compression_parent(sessions[sid]) if sid in sessions else None
        where: dict[str, Any] = {"session_id": sid if parent is None else one_of((sid, parent)), "seq": before,
                                 "id": other_than(before_id)}
        if not rows.select("messages", where, columns=("id",), limit=1):
            report.problems.append(f"order: seq never goes down in commit order, but in session {sid}, message "
                                   f"{mid} has seq {seq} after a message with seq {before}")


def _rotated(sessions: dict[str, Row], active: _Active, report: VerifyReport) -> None:
    # A session ended with reason compression and no compression child is its own tip
    # (an import from a tool whose compaction keeps the parent's transcript): its rows are read.
    children: dict[str, str] = {}
    for sid, s in sessions.items():
        parent = _compression_parent(s)
        if parent is not None and (parent not in children or sid < children[parent]):
            children[parent] = sid
    for sid, child in children.items():
        n = active.count.get(sid, 0)
        if sid in sessions and sessions[sid]["end_reason"] == COMPRESSION and n:
            report.problems.append(f"rotations: session {sid} was closed by compression into {child} and still holds "
                                   f"{n} active message(s), outside the live conversation: resume never reads them")


def _leases(rows: Rows, tokens: int, report: VerifyReport) -> None:
    leases = rows.select("compaction_leases", columns=("session_id", "token", "watermark", "acquired_at", "expires_at"))
    for lease in leases:
        sid = lease["session_id"]
        newest = rows.select("messages", {"session_id": sid}, columns=("id",), order=("-id",), limit=1)
        newest_id = newest[0]["id"] if newest else 0
        if lease["token"] > tokens:
            report.problems.append(f"leases: the lease on session {sid} has token {lease['token']}, "
                                   f"above the {tokens} tokens handed out")
        if lease["watermark"] > newest_id:
            report.problems.append(f"leases: the lease on session {sid} has watermark {lease['watermark']}, "
                                   f"above the session's newest message {newest_id}")
        if lease["expires_at"] < lease["acquired_at"]:
            report.problems.append(f"leases: the lease on session {sid} expires before it was taken")
    report.checked["leases"] = len(leases)


def _orphans(rows: Rows, sessions: dict[str, Row], report: VerifyReport) -> None:
    for table in ("messages", "usage"):
        for sid, counted in rows.count(table, by="session_id").items():
            if sid not in sessions:
                report.problems.append(f"orphans: {counted['count']} {table} row(s) of session {sid}, "
                                       "which does not exist")
    report.checked["usage"] = rows.count("usage")[None]["count"]
