"""One hostile record cannot stop an import: it is named and skipped, the rest is imported,
`--watch` moves past it, and memory stays bounded whatever the source holds (docs/import.md)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Callable

import apsw
import pytest
from click.testing import CliRunner

import histories
import sessiondb
from sessiondb.cli import main
from sessiondb.importers import SOURCES, core, databases, files, import_from, watch, writer

#: Deeper than json.loads can decode without a RecursionError.
DEEP = "[" * 100_000 + "]" * 100_000
HERMES_SESSION = "20261123_090000_aa11bb"


def nested(record: dict, key: str) -> str:
    """The record as a JSON line whose `key` holds DEEP (written as text: json.dumps cannot write it)."""
    return json.dumps({**record, key: "@DEEP@"}).replace('"@DEEP@"', DEEP)


def insert_line(path: Path, index: int, text: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(index, text + "\n")
    path.write_text("".join(lines))


def execute(path: Path, sql: str, params: tuple = ()) -> None:
    conn = apsw.Connection(str(path))
    conn.execute(sql, params)
    conn.close()


def hostile(source: str, home: Path) -> tuple[histories.Written, Path, Callable[[], None]]:
    """The source's sample history with a deeply nested record in the middle; returns it,
    the file or database holding that record, and a function adding one later message."""
    if source == "claude-code":
        written = histories.claude_code(home)
        path = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
        insert_line(path, 3, nested(histories.claude_line("user", "u-0099", "u-0002", {"role": "user"}), "message"))

        def later() -> None:
            with path.open("a") as f:
                f.write(json.dumps(histories.claude_line("user", "u-0100", "u-0007", {
                    "role": "user", "content": "Later: did the fix hold?"})) + "\n")
    elif source == "codex":
        written = histories.codex(home)
        path = next(written.path.rglob("rollout-*.jsonl"))
        insert_line(path, 3, nested({"timestamp": "2026-11-21T10:00:02.000Z", "type": "response_item"}, "payload"))

        def later() -> None:
            with path.open("a") as f:
                f.write(json.dumps({"timestamp": "2026-11-21T10:06:00.000Z", "type": "response_item", "payload": {
                    "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Later?"}]}}) + "\n")
    elif source == "openai-agents":
        path = home / "agents.db"
        rows = [(None, "conversation_123", json.dumps(item), "2026-11-24 12:00:00")
                for item in histories.agents_items()]
        rows.insert(2, (None, "conversation_123", DEEP, "2026-11-24 12:00:09"))
        histories.database(path, histories.AGENTS, {"agent_messages": rows})
        written = histories.Written(path, sessions=1, messages=4)

        def later() -> None:
            execute(path, "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                    ("conversation_123", json.dumps({"role": "user", "content": "Later?"})))
    elif source == "langchain":
        path = home / "chat.db"
        rows = [(i + 1, "trip-hakone", json.dumps(m)) for i, m in enumerate(histories.langchain_messages())]
        rows.insert(2, (99, "trip-hakone", DEEP))
        histories.database(path, histories.LANGCHAIN, {"message_store": rows})
        written = histories.Written(path, sessions=1, messages=5)

        def later() -> None:
            execute(path, "INSERT INTO message_store (session_id, message) VALUES (?, ?)", ("trip-hakone", json.dumps(
                {"type": "human", "data": {"content": "Later?", "type": "human", "id": "later-1"}})))
    elif source == "hermes":
        written = histories.hermes(home)
        path = written.path / "state.db"
        rows = histories.hermes_rows(HERMES_SESSION, 1795424400.0)
        rows["messages"].insert(2, (None, HERMES_SESSION, "assistant", None, None, DEEP, None, 1795424402.5, 1, None,
                                    None, 1, 0))
        path.unlink()
        histories.database(path, histories.HERMES, rows)

        def later() -> None:
            execute(path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
                    (HERMES_SESSION, "Later?", 1795424500.0))
    else:
        written = histories.llm(home)
        path = written.path
        # a message between m2 and m3 of the newer thread whose one part is the hostile record
        execute(path, "INSERT INTO messages VALUES ('mx', 'm2', 'user', NULL)")
        execute(path, "UPDATE messages SET parent_hash = 'mx' WHERE hash = 'm3'")
        execute(path, "INSERT INTO parts VALUES (6, 'mx', 0, 'tool_result', NULL, NULL, ?)", (DEEP,))

        def later() -> None:
            execute(path, "INSERT INTO responses (id, model, prompt, response, conversation_id, datetime_utc) "
                          "VALUES ('01jresp3', 'gpt-4o-mini', 'Later?', NULL, '01jconv', '2026-11-22T09:00:00')")
    return written, path, later


def named(report: dict, path: Path, reason: str) -> list[dict]:
    return [m for m in report["malformed"] if m["file"] == str(path) and reason in m["reason"]]


@pytest.mark.parametrize("source", list(SOURCES))
def test_a_deeply_nested_record_is_named_and_skipped_and_the_rest_is_imported(home, source):
    written, path, _ = hostile(source, home)
    given = [str(written.path)] if source not in histories.WRITERS else []  # the tools without a default location
    args = ["import", "--from", source, "--json", *given]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (bad,) = named(report, path, f"nested deeper than {core.MAX_DEPTH} levels")
    assert bad["line"] is not None  # the line or rowid, to find it
    assert report["messages"] == written.messages
    assert len(report["malformed"]) == written.malformed + 1


def test_a_record_one_level_past_the_depth_bound_is_named_and_one_within_it_is_imported(home):
    written = histories.claude_code(home)
    path = next(written.path.rglob(f"{histories.SESSION}.jsonl"))

    def calling(uuid: str, levels: int) -> str:
        """An assistant line whose tool call's input nests `levels` deep, inside 4 levels of the line."""
        arguments: list | dict = {}
        for _ in range(levels - 1):
            arguments = [arguments]
        return json.dumps(histories.claude_line("assistant", uuid, None, {
            "id": f"msg_{uuid}", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": f"toolu_{uuid}", "name": "Deep", "input": arguments}]}))

    insert_line(path, 3, calling("u-0098", core.MAX_DEPTH - 4))
    insert_line(path, 4, calling("u-0099", core.MAX_DEPTH - 3))
    with sessiondb.open_store() as store:
        report = import_from(store, "claude-code")
        calls = [m.tool_calls[0]["function"]["name"] for m in store.transcript(f"claude-code-{histories.SESSION}")
                 if m.tool_calls and m.tool_calls[0]["function"]["name"] == "Deep"]
    assert report.messages == written.messages + 1 and calls == ["Deep"]
    assert [(m["line"], m["reason"]) for m in report.malformed if "nested" in m["reason"]] == [
        (5, f"not read: nested deeper than {core.MAX_DEPTH} levels")]


@pytest.mark.parametrize("source", list(SOURCES))
def test_a_watch_moves_past_a_deeply_nested_record_and_a_restart_imports_what_follows(home, source):
    written, path, later = hostile(source, home)
    where = None if source in histories.WRITERS else written.path
    with sessiondb.open_store() as store:
        first = watch(store, source, where, passes=1)
        later()
        restarted = watch(store, source, where, passes=1)  # a fresh call: as a restart resumes
    assert first.messages == written.messages and named(first.__dict__, path, "nested deeper")
    assert restarted.messages == 1
    if source in ("claude-code", "codex"):  # the file's cursor is past the line: it is not read again
        assert restarted.malformed == []


def test_hermes_usage_with_impossible_counts_is_named_and_skipped_and_the_rest_is_imported(home):
    written = histories.hermes(home)
    default, coder = written.path / "state.db", written.path / "profiles" / "coder" / "state.db"
    execute(default, "UPDATE sessions SET input_tokens = ?", (2**63 - 1,))  # the largest integer SQLite holds
    execute(default, "UPDATE messages SET token_count = ? WHERE role = 'tool'", (2**63 - 1,))
    execute(coder, "UPDATE sessions SET estimated_cost_usd = ?", (float("inf"),))
    with sessiondb.open_store() as store:
        report = import_from(store, "hermes")
        usage = [store.usage(s.id).calls for s in store.list_sessions(source="hermes").items]
    reasons = {(m["file"], m["line"]): m["reason"] for m in report.malformed}
    assert report.messages == written.messages - 1  # only the message with the impossible count is left out
    assert "input_tokens must be an integer" in reasons[(str(default), 1)]
    assert "cost_usd must be a non-negative number" in reasons[(str(coder), 1)]
    assert "token_count" in reasons[(str(default), 3)]
    assert usage == [0, 0] and report.usage_calls == 0


def test_a_hermes_title_the_store_refuses_is_named_and_the_session_is_imported(home):
    written = histories.hermes(home)
    execute(written.path / "state.db", "UPDATE sessions SET title = ?", ("t" * 1000,))
    with sessiondb.open_store() as store:
        report = import_from(store, "hermes")
    assert report.messages == written.messages
    (refused,) = report.malformed
    assert refused["file"] == str(written.path / "state.db") and "title was left out" in refused["reason"]


def test_a_session_the_store_refuses_is_named_and_the_other_sessions_are_imported(home):
    written = histories.hermes(home)
    refused = written.path / "state.db"
    execute(refused, "UPDATE sessions SET model = ?", ("m" * 10_000,))  # longer than any model name the store takes
    with sessiondb.open_store() as store:
        report = import_from(store, "hermes")
        imported = [s.id for s in store.list_sessions(source="hermes").items]
    assert imported == ["hermes-coder-20261123_100000_cc22dd"] and report.messages == written.messages // 2
    assert report.malformed and all(m["file"] == str(refused) and "model" in m["reason"] for m in report.malformed)


def hermes_with_blob(home: Path, size: int) -> histories.Written:
    """Hermes's sample history with a `size`-byte blob as the content of a message in the middle."""
    written = histories.hermes(home)
    path = written.path / "state.db"
    rows = histories.hermes_rows(HERMES_SESSION, 1795424400.0)
    rows["messages"].insert(2, (None, HERMES_SESSION, "tool", b"\0" * size, "call_h1", None, "web_search",
                                1795424402.5, 1, None, None, 1, 0))
    path.unlink()
    histories.database(path, histories.HERMES, rows)
    return written


def peak_of(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_hermes_blob_past_the_bound_is_named_without_being_read(home):
    peaks = []
    for n, size in enumerate((core.MAX_FIELD_BYTES + 1, 2 * core.MAX_FIELD_BYTES)):
        user = home / f"user-{n}"
        written = hermes_with_blob(user, size)
        reports = []
        with sessiondb.open_store(home=user / "store") as store:
            peaks.append(peak_of(lambda: reports.append(import_from(store, "hermes", written.path))))
        (report,) = reports
        assert report.messages == written.messages
        (skipped,) = report.malformed
        assert skipped["file"] == str(written.path / "state.db") and skipped["line"] == 3
        assert "content larger than" in skipped["reason"]
    # the blob is never loaded: what the import holds does not grow with it
    assert peaks[1] - peaks[0] < core.MAX_FIELD_BYTES // 4, peaks
    assert max(peaks) < core.MAX_FIELD_BYTES, peaks


LIMIT = 1024 * 1024  # the line bound for these tests, to keep them fast


def claude_with_long_line(home: Path, size: int) -> tuple[histories.Written, Path]:
    written = histories.claude_code(home)
    path = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    insert_line(path, 3, json.dumps(histories.claude_line("user", "u-0099", "u-0002", {
        "role": "user", "content": "x" * size})))
    return written, path


def test_a_line_past_the_bound_is_named_without_being_held_and_later_lines_keep_their_numbers(home, monkeypatch):
    monkeypatch.setattr(files, "MAX_RECORD_BYTES", LIMIT)
    peaks = []
    for n, size in enumerate((4 * LIMIT, 8 * LIMIT)):
        written, path = claude_with_long_line(home / f"user-{n}", size)
        reports = []
        with sessiondb.open_store(home=home / f"store-{n}") as store:
            peaks.append(peak_of(lambda: reports.append(import_from(store, "claude-code", written.path))))
        (report,) = reports
        assert report.messages == written.messages
        assert [(m["line"], m["reason"].split(":")[0]) for m in report.malformed] == [
            (4, f"longer than {LIMIT:,} bytes"), (7, "not JSON")]  # the broken line, one further down
    assert peaks[1] - peaks[0] < LIMIT, peaks  # read past in chunks: what is held does not grow with the line


def test_a_watch_waits_for_a_long_line_being_written_then_moves_past_it(home, monkeypatch):
    monkeypatch.setattr(files, "MAX_RECORD_BYTES", LIMIT)
    written = histories.claude_code(home)
    path = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    long_line = json.dumps(histories.claude_line("user", "u-0099", None, {"role": "user", "content": "x" * 2 * LIMIT}))
    later = json.dumps(histories.claude_line("user", "u-0100", None, {"role": "user",
                                                                      "content": "After the long line"}))
    with sessiondb.open_store() as store:
        watch(store, "claude-code", passes=1)
        with path.open("a") as f:
            f.write(long_line[: LIMIT + 10])  # still being written
        writing = watch(store, "claude-code", passes=1)
        with path.open("a") as f:
            f.write(long_line[LIMIT + 10:] + "\n" + later + "\n")
        written_out = watch(store, "claude-code", passes=1)
        idle = watch(store, "claude-code", passes=1)
        texts = [m.text for m in store.transcript(f"claude-code-{histories.SESSION}")]
    assert (writing.messages, writing.malformed) == (0, [])
    assert written_out.messages == 1 and [m["line"] for m in written_out.malformed] == [11]
    assert (idle.messages, idle.malformed) == (0, [])
    assert texts[-1] == "After the long line"


def test_what_an_import_holds_before_writing_stays_within_its_byte_budget_across_sessions(home, monkeypatch):
    monkeypatch.setattr(writer, "BATCH_BYTES", LIMIT)
    path = home / "chat.db"
    text = "w" * (LIMIT // 4)
    rows = [(i + 1, f"session-{i}", json.dumps({"type": "human", "data": {"content": text, "type": "human"}}))
            for i in range(100)]  # 25 budgets' worth, one message per session: no batch fills up
    histories.database(path, histories.LANGCHAIN, {"message_store": rows})
    reports = []
    with sessiondb.open_store() as store:
        peak = peak_of(lambda: reports.append(import_from(store, "langchain", path)))
    assert reports[0].messages == 100
    assert peak < 8 * LIMIT, peak


def test_llm_rows_past_the_bound_are_named_without_being_read_and_the_rest_is_imported(home):
    written = histories.llm(home)
    big = "b" * (core.MAX_FIELD_BYTES + 1)
    execute(written.path, "UPDATE responses SET response = ? WHERE id = '01jresp2'", (big,))  # its result and answer
    execute(written.path, "UPDATE parts SET text = ? WHERE id = 3", (big,))  # the newer thread's "And the evening?"
    with sessiondb.open_store() as store:
        report = import_from(store, "llm")
    assert report.messages == written.messages - 3
    assert sorted(m["reason"].split(":")[0] for m in report.malformed) == ["parts row 3", "responses row 2"]
    assert all("larger than" in m["reason"] for m in report.malformed)


def test_an_item_row_past_the_bound_is_named_without_being_read(home, monkeypatch):
    monkeypatch.setattr(databases, "MAX_RECORD_BYTES", LIMIT)
    written = histories.langchain(home / "chat.db")
    execute(written.path, "INSERT INTO message_store VALUES (99, 'trip-hakone', ?)", (b"{" * (LIMIT + 1),))
    with sessiondb.open_store() as store:
        report = import_from(store, "langchain", written.path)
    assert report.messages == written.messages
    (skipped,) = report.malformed
    assert skipped["line"] == 99 and f"message larger than {LIMIT:,} bytes" in skipped["reason"]
