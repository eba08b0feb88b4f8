"""Retention: the rules a person declares for what a store keeps, and the sweep that applies
them beside live writers, on every backend (sessiondb.model.Policy says what each rule takes).

**Declared in the store.** The rules live in the store's `policies` table, one row per
source (`retention:<source>`) and one for every other source (`retention`), with the legal
holds beside them (`hold:user:<id>`, `hold:session:<id>`): the gateway, a cron job and the
CLI of every host apply the same ones, whichever runs it.

**Judged by conversation.** A conversation is a compression chain (its root and every
session rotated out of it); it is judged whole, by its root's source, its newest activity,
and whether any of its sessions is pinned or held. A branch is a conversation of its own.
A conversation holding a pinned session, or under a hold (one on its user, or on any of its
sessions), is never touched: it is reported as kept.

**Refused when it would remove everything.** Rules that would remove every conversation of
the sources they cover are refused with a sentence (unless forced): a typo in a period
must not empty a store.

**Applied online.** The plan is read in one snapshot; then each conversation is removed in
a write transaction of its own (through the SQLite writer, so appends interleave; on
PostgreSQL its session rows locked), after checking that it is still as planned (same
sessions, same newest activity, not pinned, not held): one written to since is left for
the next run. Compacted originals lose their text CHUNK rows per transaction. Every
transaction is whole, so a sweep killed at any point leaves no half-removed conversation,
and the next run finds what is left. The pages freed are then handed back to the file system a
few at a time (`Backend.release_space`). A dry run is the default on every face.

**Prune** is a one-off sweep a person asks for by session, not by conversation: the sessions
inactive since a time, or opened by a key and never used (S-40), removed online as the rules'
sweep removes conversations, each checked again as it goes, and held ones never.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Iterable

from ..errors import Conflict, InvalidInput
from ..model import COMPRESSION, TEXT_DROPPED, Hold, Policies, Policy, PolicyReport
from . import commands as cmd
from .backend import Backend
from .rows import Row, Rows, above, active_at, one_of

RULES = "retention"
HOLD = "hold:"
#: Compacted originals whose text one transaction drops at most; sessions one prune's transaction removes.
CHUNK = 500
#: How old a session opened by a key and never used is before prune takes it (S-40); the
#: never_active_after rule names its own period.
NEVER_ACTIVE_FLOOR = 30 * 86400.0
_SESSION_COLUMNS = ("id", "parent_session_id", "parent_relation", "source", "user_id", "pinned", "started_at",
                    "last_activity_at", "session_key", "message_count", "tool_call_count", "title", "archived",
                    "ended_at")
_TEXT_COLUMNS = ("content", "parts", "tool_calls", "reasoning")


# --- the rules and holds, as rows ---------------------------------------------------------


def rules_key(source: str | None) -> str:
    return RULES if source is None else f"{RULES}:{source}"


def hold_key(user_id: str | None, session_id: str | None) -> str:
    return f"{HOLD}user:{user_id}" if user_id is not None else f"{HOLD}session:{session_id}"


def policies(rows: Rows) -> Policies:
    rules, holds = [], []
    for row in rows.select("policies", order=("key",)):
        value = json.loads(row["value"])
        if row["key"].startswith(HOLD):
            holds.append(Hold(**value))
        elif row["key"] == RULES or row["key"].startswith(RULES + ":"):
            rules.append(Policy(**value, updated_at=row["updated_at"]))
    return Policies(rules, holds)


def put(rows: Rows, key: str, value: dict[str, Any], now: float) -> None:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if not rows.update("policies", {"key": key}, set={"value": text, "updated_at": now}):
        rows.insert("policies", [{"key": key, "value": text, "updated_at": now}])


def set_rules(rows: Rows, policy: Policy, now: float, force: bool) -> Policy:
    value = {k: v for k, v in policy.to_dict().items() if k != "updated_at"}
    put(rows, rules_key(policy.source), value, now)
    if not force and (why := _plan(rows, now).refused) is not None:
        raise InvalidInput(f"{why}; nothing was changed")  # the transaction rolls the rules back
    return replace(policy, updated_at=now)


def remove(rows: Rows, key: str) -> bool:
    return bool(rows.delete("policies", {"key": key}))


def covering(holds: list[Hold], sessions: Iterable[Row]) -> Hold | None:
    """The hold that covers any of these sessions (one on its id, or on its user), if one does."""
    for session in sessions:
        for hold in holds:
            if hold.session_id == session["id"] or (hold.user_id is not None and hold.user_id == session["user_id"]):
                return hold
    return None


def held(rows: Rows, sessions: list[Row]) -> Hold | None:
    """The store's hold that covers any of these sessions, if one does."""
    return covering(policies(rows).holds, sessions)


def refuse_held(rows: Rows, session_ids: set[str]) -> None:
    """Conflict, in a sentence, when a hold covers any of these sessions (a forget's, a delete's)."""
    found = rows.select("sessions", {"id": one_of(sorted(session_ids))}, columns=("id", "user_id"))
    hold = held(rows, found)
    if hold is not None:
        whose = f"user {hold.user_id}" if hold.user_id is not None else f"session {hold.session_id}"
        raise Conflict(f"{whose} is under a legal hold ({hold.reason}); nothing was removed: release the hold "
                       "(store.release_hold, `sessiondb policy release`) first")


# --- the plan -----------------------------------------------------------------------------


@dataclass
class _Conversation:
    root: str
    sessions: list[Row]
    rule: str = ""

    @property
    def ids(self) -> list[str]:
        return sorted(s["id"] for s in self.sessions)

    @property
    def active_at(self) -> float:
        return max(map(active_at, self.sessions))


@dataclass
class _Plan:
    removed: list[_Conversation] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)
    untouchable: set[str] = field(default_factory=set)  # sessions of pinned or held conversations
    compacted_before: dict[str, float] = field(default_factory=dict)  # session id -> its rule's cutoff
    refused: str | None = None


def _conversations(sessions: list[Row]) -> list[_Conversation]:
    by_id = {s["id"]: s for s in sessions}
    roots: dict[str, list[Row]] = {}
    for s in sessions:
        root, seen = s, {s["id"]}
        while root["parent_relation"] == COMPRESSION and root["parent_session_id"] in by_id:
            root = by_id[root["parent_session_id"]]
            if root["id"] in seen:
                break  # a cycle (only a hand-edited store has one): the chain ends here
            seen.add(root["id"])
        roots.setdefault(root["id"], []).append(s)
    return [_Conversation(root, members) for root, members in roots.items()]


def _never_active(session: Row, before: float) -> bool:
    """A session opened by a key, still open and never used (S-40), started before `before`;
    that it holds no messages and no usage is checked as it goes (`_unused`)."""
    return (session["session_key"] is not None and session["ended_at"] is None and session["message_count"] == 0
            and session["tool_call_count"] == 0 and session["last_activity_at"] is None
            and session["title"] is None and not session["pinned"] and not session["archived"]
            and session["started_at"] < before)


def _unused(rows: Rows, session_ids: list[str]) -> bool:
    """None of these sessions holds a message or a usage record."""
    this = {"session_id": one_of(session_ids)}
    return not rows.count("messages", this)[None]["count"] and not rows.count("usage", this)[None]["count"]


def _plan(rows: Rows, now: float) -> _Plan:
    found = policies(rows)
    plan = _Plan()
    if not found.rules:
        return plan
    rules = {p.source: p for p in found.rules}
    covered: dict[str | None, list[_Conversation]] = {}
    for conversation in _conversations(rows.select("sessions", columns=_SESSION_COLUMNS)):
        source = next(s for s in conversation.sessions if s["id"] == conversation.root)["source"]
        scope = source if source in rules else None
        if scope in rules:
            covered.setdefault(scope, []).append(conversation)
    for scope, conversations in covered.items():
        policy = rules[scope]
        untouched = []
        for c in conversations:
            if any(s["pinned"] for s in c.sessions):
                why = "pinned"
            elif covering(found.holds, c.sessions) is not None:
                why = "held"
            else:
                untouched.append(c)
                continue
            plan.untouchable.update(c.ids)
            if _taken(policy, c, now):
                plan.kept.append((c.root, why))
        untouched.sort(key=lambda c: (c.active_at, c.root), reverse=True)
        taken = []
        for rank, c in enumerate(untouched):
            c.rule = _taken(policy, c, now) or ("keep_last" if policy.keep_last is not None
                                                and rank >= policy.keep_last else "")
            if c.rule:
                taken.append(c)
            elif policy.compacted_after is not None:
                plan.compacted_before.update(dict.fromkeys(c.ids, now - policy.compacted_after))
        if taken and len(taken) == len(conversations):
            plan.refused = (f"the rules for {'source ' + scope if scope else 'every source'} would remove every "
                            f"one of its {len(conversations)} conversation(s); keep some (a longer period, or a "
                            "number of conversations to keep) or force the rules")
        plan.removed += taken
    return plan


def _taken(policy: Policy, c: _Conversation, now: float) -> str:
    """The rule that takes this conversation by its age alone ('' when none does)."""
    if policy.inactive_after is not None and c.active_at < now - policy.inactive_after:
        return "inactive_after"
    if policy.never_active_after is not None and len(c.sessions) == 1 and _never_active(
            c.sessions[0], now - policy.never_active_after):
        return "never_active_after"
    return ""


# --- the sweep ----------------------------------------------------------------------------


def apply(backend: Backend, *, now: float, dry_run: bool, force: bool) -> PolicyReport:
    """Apply the store's rules (see the module docstring)."""
    plan = backend.read(partial(_plan, now=now))
    report = PolicyReport(dry_run=dry_run, kept=plan.kept, refused=None if force else plan.refused)
    if report.refused:
        return report
    if dry_run:
        report.removed = [(c.root, c.rule) for c in plan.removed]
        report.sessions = sum(len(c.sessions) for c in plan.removed)
        report.messages, report.compacted_dropped = backend.read(partial(_preview, plan=plan))
        return report
    for conversation in plan.removed:
        gone = backend.write(partial(_remove, planned=conversation))
        if gone is not None:
            report.removed.append((conversation.root, conversation.rule))
            report.sessions += len(conversation.sessions)
            report.messages += gone
    after = 0
    while after is not None:
        dropped, after = backend.write(partial(_drop_compacted, plan=plan, after=after))
        report.compacted_dropped += dropped
    if report.removed or report.compacted_dropped:
        report.bytes_released = backend.release_space()
    return report


def _preview(rows: Rows, plan: _Plan) -> tuple[int, int]:
    ids = [sid for c in plan.removed for sid in c.ids]
    messages = rows.count("messages", {"session_id": one_of(ids)})[None]["count"] if ids else 0
    dropped, after = 0, 0
    while after is not None:
        page, after = _compacted_page(rows, plan, after)
        dropped += len(page)
    return messages, dropped


def _remove(rows: Rows, planned: _Conversation) -> int | None:
    """Remove the conversation if it is as planned; how many messages went (None: left)."""
    now = rows.select("sessions", {"id": one_of(planned.ids)}, columns=_SESSION_COLUMNS, lock=True)
    children = rows.select("sessions", {"parent_session_id": one_of(planned.ids), "parent_relation": COMPRESSION},
                           columns=("id",))
    if (sorted(s["id"] for s in now) != planned.ids or any(c["id"] not in planned.ids for c in children)
            or max(map(active_at, now)) != planned.active_at or any(s["pinned"] for s in now)
            or held(rows, now) is not None):
        return None  # written to, rotated, pinned, held or removed since the plan: the next run decides
    if planned.rule == "never_active_after" and not _unused(rows, planned.ids):
        return None  # used since the plan after all
    messages = rows.count("messages", {"session_id": one_of(planned.ids)})[None]["count"]
    remove_sessions(rows, planned.ids)
    return messages


def remove_sessions(rows: Rows, session_ids: list[str]) -> int:
    """Delete these sessions (their messages, usage and turns go by cascade) and the routing
    entries that name them, so a gateway never routes a key to a removed session: the last
    step of a deletion's, a sweep's, a prune's and a forget's removal alike. How many
    sessions there were."""
    rows.delete("gateway_routes", {"session_id": one_of(session_ids)})
    return rows.delete("sessions", {"id": one_of(session_ids)})


def _compacted_page(rows: Rows, plan: _Plan, after: int) -> tuple[list[int], int | None]:
    """The compacted originals past `after` whose text the rules drop, of one page of CHUNK
    compacted rows, and where the next page starts (None: this was the last)."""
    page = rows.select("messages", {"state": "compacted", "id": above(after)},
                       columns=("id", "session_id", "timestamp", *_TEXT_COLUMNS), order=("id",), limit=CHUNK)
    due = [m["id"] for m in page
           if m["timestamp"] < plan.compacted_before.get(m["session_id"], -math.inf)
           and m["session_id"] not in plan.untouchable and any(m[c] is not None for c in _TEXT_COLUMNS)]
    return due, (page[-1]["id"] if len(page) == CHUNK else None)


def _drop_compacted(rows: Rows, plan: _Plan, after: int) -> tuple[int, int | None]:
    due, after_this = _compacted_page(rows, plan, after)
    if due:
        rows.update("messages", {"id": one_of(due)},
                    set={**dict.fromkeys(_TEXT_COLUMNS), "display_kind": TEXT_DROPPED})
    return len(due), after_this


# --- prune: a one-off sweep, session by session -------------------------------------------


def prune(backend: Backend, command: cmd.Prune) -> list[str]:
    """The sessions `command` takes, sorted; removed unless it is a dry run, up to CHUNK a
    transaction, each judged again as it goes (one written to, pinned or held since the
    first look is left), then the pages freed handed back."""
    found = backend.read(partial(_pruned, command=command, among=None))
    if command.dry_run:
        return found
    gone: list[str] = []
    for start in range(0, len(found), CHUNK):  # sorted chunks of a sorted list: `gone` stays sorted
        gone += backend.write(partial(_prune_chunk, command=command, among=found[start:start + CHUNK]))
    if gone:
        backend.release_space()
    return gone


def _pruned(rows: Rows, command: cmd.Prune, among: list[str] | None) -> list[str]:
    """The sessions (of `among`, or of the whole store) the command takes, sorted."""
    sessions = rows.select("sessions", {} if among is None else {"id": one_of(among)}, columns=_SESSION_COLUMNS,
                           lock=among is not None)
    holds = policies(rows).holds
    taken = []
    for s in sessions:
        if covering(holds, [s]) is not None:
            continue
        if command.inactive_before is not None and active_at(s) < command.inactive_before and (
                command.include_pinned or not s["pinned"]) and (command.include_archived or not s["archived"]):
            taken.append(s["id"])
        elif (command.never_active_before is not None and _never_active(s, command.never_active_before)
              and _unused(rows, [s["id"]])):
            taken.append(s["id"])
    return sorted(taken)


def _prune_chunk(rows: Rows, command: cmd.Prune, among: list[str]) -> list[str]:
    taken = _pruned(rows, command, among)
    if taken:
        remove_sessions(rows, taken)
    return taken
