"""Bad input: fuzzed arguments to the public calls, and damaged JSONL imports.

Every call either succeeds or raises a SessionDBError subclass (never TypeError, an APSW
error, a crash), and a refused call writes nothing: the store looks exactly as before.
A damaged import (truncated lines, wrong types, huge fields, invalid UTF-8) is accepted
or refused with a typed error, and never leaves a session half imported.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessiondb
from sessiondb import SessionDBError

LONG = pytest.mark.long
HUGE = "x" * 3_000_000

junk = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70), st.floats(),
    st.text(max_size=30), st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=30), st.just(""), st.just("\x00"), st.just(HUGE),
    st.binary(max_size=20), st.lists(st.integers(), max_size=3), st.just(float("nan")), st.just(object()),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
# Valid values are drawn often enough that calls succeed and write, so a refusal that
# writes anyway (a half-written batch) would be seen.
names = st.sampled_from(["s-0", "s-1", "missing", "cli"])
label = st.one_of(names, names, junk)
valid_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"]), "content": st.text(max_size=40)},
    optional={"uid": st.text(min_size=1, max_size=12)},
)
message = st.one_of(
    valid_message, valid_message, junk,
    st.fixed_dictionaries(
        {"role": st.one_of(junk, st.sampled_from(["user", "assistant", "tool", "system"])), "content": junk},
        optional={"uid": label, "tool_calls": junk, "parts": junk, "timestamp": junk, "tool_call_id": junk,
                  "tool_name": junk, "metadata": junk, "reasoning": junk, st.text(max_size=8): junk},
    ),
)
messages = st.one_of(message, st.lists(message, min_size=1, max_size=4))

NO_KW = st.just({})


def call(*positional, kw=NO_KW):
    return st.tuples(st.tuples(*positional), kw)


CALLS = {
    "append": call(label, messages),
    "create_session": call(label, kw=st.fixed_dictionaries({}, optional={
        "session_id": label, "title": junk, "profile": junk, "metadata": junk, "model": junk,
        "parent_session_id": label, "parent_relation": junk, "session_key": junk})),
    "search": call(junk, kw=st.fixed_dictionaries({}, optional={
        "limit": junk, "role": junk, "since": junk, "until": junk, "substring": junk, "session_id": label,
        "source": junk, "include_tools": junk, "profile": junk})),
    "set_title": call(label, junk),
    "list_sessions": call(kw=st.fixed_dictionaries({}, optional={
        "source": junk, "limit": junk, "cursor": junk, "since": junk, "until": junk, "pinned": junk,
        "include_archived": junk})),
    "transcript": call(label, kw=st.fixed_dictionaries({}, optional={
        "limit": junk, "before": junk, "after": junk, "order": junk, "include_compacted": junk})),
    "get_session": call(label),
    "set_flags": call(label, kw=st.fixed_dictionaries({}, optional={"pinned": junk, "archived": junk, "hidden": junk})),
    "update_metadata": call(label, junk),
    "end_session": call(label, junk),
    "record_usage": call(label, kw=st.fixed_dictionaries({"model": junk}, optional={
        "input_tokens": junk, "output_tokens": junk, "cost_usd": junk, "provider": junk})),
    "find_session": call(junk),
    "begin_compaction": call(label, kw=st.fixed_dictionaries({}, optional={"holder": junk, "ttl": junk})),
    "rewind": call(label, junk),
    "branch": call(label, junk),
    "export_session": call(label, kw=st.fixed_dictionaries({}, optional={"max_messages": junk})),
}
WRITES = {"append", "create_session", "set_title", "set_flags", "update_metadata", "end_session", "record_usage",
          "begin_compaction", "rewind", "branch"}


def fingerprint(path: Path) -> tuple:
    """Everything a refused call must leave untouched, read outside the store's handles."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return tuple(
            tuple(conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall())
            for table in ("sessions", "messages", "usage", "compaction_leases")
        )
    finally:
        conn.close()


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    with sessiondb.open_store(path) as store:
        for n in range(2):
            sid = store.create_session("cli", session_id=f"s-{n}").id
            store.append(sid, [{"uid": f"u{i}", "role": "user", "content": f"hello {i}"} for i in range(3)])
        yield store, path


class Tally:
    calls = 0
    refused = 0
    written = 0
    crashes: list[str] = []


def call_once(store, path, name, args) -> None:
    positional, keywords = args
    before = fingerprint(path) if name in WRITES else None
    Tally.calls += 1
    try:
        getattr(store, name)(*positional, **keywords)
        Tally.written += name in WRITES
    except SessionDBError:
        Tally.refused += 1
        if before is not None:
            assert fingerprint(path) == before, f"{name}{args!r:.200} was refused but wrote"
    except Exception as exc:  # noqa: BLE001
        Tally.crashes.append(f"{name}: {type(exc).__name__}: {exc!s:.200}")
        raise AssertionError(f"{name}({args!r:.300}) raised {type(exc).__name__}: {exc!s:.300}") from exc


def fuzz_calls(fuzz_store, examples: int, figures) -> None:
    store, path = fuzz_store
    Tally.calls = Tally.refused = Tally.written = 0
    Tally.crashes = []

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(st.data())
    def run(data):
        name = data.draw(st.sampled_from(sorted(CALLS) + ["append"] * 4))  # appends weigh more
        call_once(store, path, name, data.draw(CALLS[name]))

    try:
        run()
    finally:
        figures.record(tried=Tally.calls, failed=len(Tally.crashes), unit="calls",
                       detail=f"{len(CALLS)} public calls with fuzzed arguments; {Tally.refused} refused with a "
                              f"typed error, the rest succeeded ({Tally.written} of them writes); failed counts untyped errors or refused writes "
                              "that changed the store")
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_fuzzed_arguments_to_public_calls_get_a_typed_error_and_write_nothing(fuzz_store, figures):
    fuzz_calls(fuzz_store, 1000, figures)


@LONG
def test_long_fuzzed_arguments_to_public_calls_get_a_typed_error_and_write_nothing(fuzz_store, figures):
    fuzz_calls(fuzz_store, 6000, figures)


# --- JSONL import ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def export_lines(tmp_path_factory):
    path = tmp_path_factory.mktemp("source") / "source.db"
    with sessiondb.open_store(path) as store:
        for n in range(3):
            sid = store.create_session("cli", session_id=f"src-{n}", title=f"title {n}").id
            store.append(sid, [{"uid": f"m{i}", "role": "user", "content": f"content {n}.{i}"} for i in range(4)])
            store.record_usage(sid, model="m", input_tokens=10)
        lines = [json.dumps(record) for record in store.export()]
    counts = Counter(json.loads(line)["message"]["session_id"] for line in lines if '"type": "message"' in line)
    return lines, counts


@st.composite
def damaged(draw, lines):
    out: list = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(out) - 1))
        how = draw(st.sampled_from(["truncate-file", "truncate-line", "wrong-type", "huge", "bad-utf8", "drop",
                                    "duplicate", "junk"]))
        line = out[i] if isinstance(out[i], str) else out[i].decode("utf-8", "replace")
        if how == "truncate-file":
            out = out[:i + 1]
        elif how == "truncate-line":
            out[i] = line[: draw(st.integers(0, max(0, len(line) - 1)))]
        elif how in ("wrong-type", "huge"):
            try:
                record = json.loads(line)
            except ValueError:  # already damaged by an earlier step
                record = {}
            if not isinstance(record, dict):
                record = {}
            target = record
            inner = [k for k, v in record.items() if isinstance(v, dict)]
            if inner and draw(st.booleans()):
                target = record[draw(st.sampled_from(inner))]
            if target:
                key = draw(st.sampled_from(sorted(target)))
                target[key] = HUGE if how == "huge" else draw(st.one_of(
                    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
                    st.text(max_size=10), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
            out[i] = json.dumps(record)
        elif how == "bad-utf8":
            raw = line.encode()
            at = draw(st.integers(0, len(raw)))
            out[i] = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"])) + raw[at:]
        elif how == "drop":
            del out[i]
            if not out:
                out = [""]
        elif how == "duplicate":
            out.insert(i, out[i])
        else:
            out[i] = draw(st.one_of(st.text(max_size=20), st.binary(max_size=20).map(bytes)))
    return out


def fuzz_import(tmp_path_factory, export_lines, examples: int, figures) -> None:
    lines, counts = export_lines
    root = tmp_path_factory.mktemp("imports")
    tally = Counter()
    crashes: list[str] = []

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(st.data())
    def run(data):
        records = data.draw(damaged(lines))
        tally["tried"] += 1
        path = root / f"target-{tally['tried']}.db"
        with sessiondb.open_store(path) as store:
            try:
                store.import_records(records)
                tally["accepted"] += 1
            except SessionDBError:
                tally["refused"] += 1
            except Exception as exc:  # noqa: BLE001
                crashes.append(f"{type(exc).__name__}: {exc!s:.200}")
                raise AssertionError(f"import raised {type(exc).__name__}: {exc!s:.300}") from exc
            for session in store.list_sessions(include_archived=True, include_hidden=True, limit=1000).items:
                if session.id in counts:
                    stored = len(store.transcript(session.id, include_compacted=True))
                    assert stored == counts[session.id], f"session {session.id} half imported: {stored} messages"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    try:
        run()
    finally:
        figures.record(tried=tally["tried"], failed=len(crashes), unit="damaged imports",
                       detail=f"an export of 3 sessions damaged 1-3 times each (truncated file or line, wrong "
                              f"types, 3 MB fields, invalid UTF-8, dropped/duplicated/junk lines): "
                              f"{tally['refused']} refused with a typed error, {tally['accepted']} accepted; "
                              "no session ever half imported")


def test_a_damaged_jsonl_import_is_refused_with_a_typed_error_and_never_half_imports(tmp_path_factory, export_lines, figures):
    fuzz_import(tmp_path_factory, export_lines, 150, figures)


@LONG
def test_long_a_damaged_jsonl_import_is_refused_with_a_typed_error_and_never_half_imports(tmp_path_factory, export_lines, figures):
    fuzz_import(tmp_path_factory, export_lines, 3000, figures)


# --- what the fuzzing found, kept as plain regressions -----------------------------------


@pytest.mark.parametrize("call", [
    lambda s: s.append("s-0", {"role": "user", "content": "ok", "uid": "\udfff"}),
    lambda s: s.append("s-0", {"role": "tool", "content": "ok", "tool_call_id": "\udfff"}),
    lambda s: s.create_session("cli", session_id="\ud800"),
    lambda s: s.create_session("cli", title="title \ud800"),
    lambda s: s.set_title("s-0", "\ud800"),
    lambda s: s.get_session("\ud800"),
    lambda s: s.transcript("\ud800"),
    lambda s: s.search("\ud800", substring=True),
    lambda s: s.search("kyoto \ud800"),
    lambda s: s.import_records([
        '{"type": "header", "format": "sessiondb-export", "version": 1}',
        '{"type": "session", "session": {"id": "\\ud800", "source": "cli", "started_at": 1.0}}',
        '{"type": "end", "session_id": "\\ud800", "messages": 0, "usage": 0}',
    ]),
])
def test_an_id_or_label_with_a_lone_surrogate_is_refused_as_invalid_input_and_writes_nothing(tmp_path, call):
    path = tmp_path / "s.db"
    with sessiondb.open_store(path) as store:
        store.create_session("cli", session_id="s-0")
        store.append("s-0", {"uid": "kept", "role": "user", "content": "kept"})
        before = fingerprint(path)
        with pytest.raises(sessiondb.InvalidInput):
            call(store)
        assert fingerprint(path) == before


@pytest.mark.parametrize("call", [
    lambda s: s.append("s-0", {"role": [], "content": "x"}),
    lambda s: s.append("s-0", {"role": "user", "content": "x", "state": ["active"]}),
    lambda s: s.search("x", role={}),
])
def test_an_unhashable_role_or_state_is_refused_as_invalid_input(tmp_path, call):
    with sessiondb.open_store(tmp_path / "s.db") as store:
        store.create_session("cli", session_id="s-0")
        with pytest.raises(sessiondb.InvalidInput):
            call(store)
