"""The manners people know from llm, gh and sqlite-utils: -c for the latest session, -r for
the latest response and -x for its code, --json FIELDS and --jq, rows as --csv, --tsv and
--nl, JSON shaped one way everywhere, completion of profiles and session ids, tables that
cut free text rather than ids, and an import's progress counted against a total."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main, render
from sessiondb.importers import import_from

ANSWER = ("Two ways:\n```python\nprint('first')\n```\nor, in a shell:\n~~~sh\necho last\n~~~\n")


def run(home, *args):
    return CliRunner().invoke(main, ["--home", str(home), "-p", "work", *args])


@pytest.fixture
def home(tmp_path, clock):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home, profile="work") as store:
        older = store.create_session("cli", title="Older talk")
        store.append(older.id, [{"role": "user", "content": "show me code about kyoto"},
                                {"role": "assistant", "content": ANSWER}])
        clock.advance(60)
        newer = store.create_session("telegram", title="Newer talk")
        store.append(newer.id, [{"role": "user", "content": "and kyoto again?"},
                                {"role": "assistant", "content": "No code this time."},
                                {"role": "user", "content": "thanks"}])
    return home


def test_c_names_the_latest_session_where_an_id_is_read(home):
    latest = run(home, "sessions", "transcript", "-c")
    assert latest.exit_code == 0 and latest.output.startswith("Newer talk\n")
    assert run(home, "sessions", "transcript", "--latest", "--json", "title").output == \
        run(home, "sessions", "transcript", "Newer talk", "--json", "title").output
    exported = [json.loads(line) for line in run(home, "sessions", "export", "-c").output.splitlines()]
    assert [r["session"]["title"] for r in exported if r["type"] == "session"] == ["Newer talk"]
    assert run(home, "turns", "list", "-c").exit_code == 0
    both = run(home, "sessions", "transcript", "Older talk", "-c")
    neither = run(home, "sessions", "transcript")
    assert both.exit_code == neither.exit_code == 2
    assert "not both" in both.output and "-c for the latest session" in neither.output


def test_r_prints_the_latest_response_and_x_its_code(home):
    assert run(home, "sessions", "transcript", "-r").output == "No code this time.\n"
    assert run(home, "sessions", "transcript", "Older talk", "-r").output == ANSWER + "\n"
    assert run(home, "sessions", "transcript", "Older talk", "-x").output == "print('first')\n"
    assert run(home, "sessions", "transcript", "Older talk", "--xl").output == "echo last\n"
    none = run(home, "sessions", "transcript", "-x")
    assert none.exit_code == 1 and "has no fenced code block" in none.output


def test_json_fields_pick_and_a_field_that_is_not_there_lists_those_that_are(home):
    listed = json.loads(run(home, "sessions", "list", "--json", "title,message_count").output)
    assert listed == [{"title": "Newer talk", "message_count": 3}, {"title": "Older talk", "message_count": 2}]
    wrong = run(home, "sessions", "list", "--json", "help")
    assert wrong.exit_code == 2 and "its fields: id, source, profile" in wrong.output
    # A word after --json that names no field is the command's argument, not FIELDS.
    hits = json.loads(run(home, "sessions", "search", "--json", "kyoto").output)
    assert {h["session_title"] for h in hits} == {"Older talk", "Newer talk"}
    picked = json.loads(run(home, "sessions", "search", "--json=session_title,role", "kyoto").output)
    assert all(set(h) == {"session_title", "role"} for h in picked)


def test_jq_filters_the_json_and_prints_strings_as_text(home):
    assert run(home, "sessions", "list", "--jq", ".[].title").output == "Newer talk\nOlder talk\n"
    assert run(home, "sessions", "list", "--jq", "map(.message_count) | add").output == "5\n"
    bad = run(home, "sessions", "list", "--jq", ".[")
    assert bad.exit_code == 2 and "--jq" in bad.output


def test_list_and_search_print_rows_as_csv_tsv_and_nl(home):
    rows = list(csv.DictReader(io.StringIO(run(home, "sessions", "list", "--csv").output)))
    assert [(r["title"], r["pinned"], r["parent_session_id"]) for r in rows] == [("Newer talk", "false", ""),
                                                                             ("Older talk", "false", "")]
    tabbed = run(home, "sessions", "search", "kyoto", "--tsv").output.splitlines()
    assert tabbed[0].split("\t")[:4] == ["session_id", "message_id", "uid", "role"] and len(tabbed) == 3
    lines = run(home, "sessions", "search", "kyoto", "--nl").output.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["role"] == "user" for line in lines)
    both = run(home, "sessions", "list", "--json", "--csv")
    assert both.exit_code == 2 and "not both" in both.output


def test_json_is_shaped_one_way_on_every_command(home):
    for args in (["sessions", "list", "--json"], ["sessions", "stats", "--json"], ["doctor", "--json"],
                 ["profiles", "list", "--json"], ["sessions", "usage", "--json"]):
        out = run(home, *args).output
        assert out == json.dumps(json.loads(out), ensure_ascii=False, indent=2) + "\n", args


def completions(home, args, incomplete):
    complete = ShellComplete(main, {}, "sessiondb", "_SESSIONDB_COMPLETE")
    return [(c.value, c.help) for c in complete.get_completions(["--home", str(home), *args], incomplete)]


def test_completion_offers_profiles_and_session_ids_and_creates_nothing(home):
    assert completions(home, ["-p"], "w") == [("work", None)]
    with sessiondb.open_store(home=home, profile="work") as store:
        ids = [(s.id, s.title) for s in store.list_sessions().items]
    assert completions(home, ["-p", "work", "sessions", "transcript"], "") == ids
    # a prefix only the older id has (two ids made in one second share their first 16 characters)
    assert completions(home, ["-p", "work", "sessions", "search", "kyoto", "--session"], ids[1][0][:-1]) == ids[1:]
    assert completions(home, ["-p", "wrok", "sessions", "transcript"], "") == []
    assert sorted(p.name for p in (home / "profiles").iterdir()) == ["work"]


def test_tables_cut_free_text_with_an_ellipsis_and_keep_ids_whole(home, monkeypatch):
    with sessiondb.open_store(home=home, profile="work") as store:
        long = store.create_session("a-gateway-platform-with-a-name-far-longer-than-a-column",
                                    title="A title that goes on and on well past what a table column can show")
    monkeypatch.setattr(render, "_is_terminal", lambda stream: True)
    monkeypatch.setenv("COLUMNS", "80")
    shown = run(home, "sessions", "list").output.splitlines()
    row = next(line for line in shown if line.startswith("A title"))
    assert long.id in row and len(row) <= 80
    title, source = (cell.strip() for cell in row.split("│")[:2])
    assert title.endswith("…") and source.endswith("…")


def test_an_import_counts_the_files_it_reads_against_how_many_there_are(tmp_path):
    history = tmp_path / "sessions"
    for day in range(3):
        rollout = history / "2026" / "11" / f"{day + 1:02d}" / f"rollout-2026-11-0{day + 1}T10-00-00-s{day}.jsonl"
        rollout.parent.mkdir(parents=True)
        rollout.write_text(json.dumps({"timestamp": "2026-11-01T10:00:00Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"day {day}"}]}}) + "\n")
    seen = []
    with sessiondb.open_store(tmp_path / "store.db") as store:
        import_from(store, "codex", history, progress=lambda report: seen.append((report.files_read, report.files)))
    assert seen[-1] == (3, 3) and {total for _, total in seen} == {3}
