"""The sessions commands on a temporary home: sessions made through the library are listed,
shown, searched, exported and imported into a fresh home unchanged; failures exit 1 with one
line, usage mistakes exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main

SESSIONDB = Path(sys.executable).with_name("sessiondb")


@pytest.fixture
def home(tmp_path):
    """A home with three sessions written through the library."""
    home = tmp_path / "home-a"
    with sessiondb.open_store(home=home) as store:
        kyoto = store.create_session("telegram", title="Trip to Kyoto")
        store.append(kyoto.id, [
            {"uid": "k1", "role": "user", "content": "Plan three days in Kyoto, mostly temples and food."},
            {"uid": "k2", "role": "assistant", "content": "Day 1: Fushimi Inari at dawn, then Nishiki Market."},
            {"uid": "k3", "role": "user", "content": "An early draft we compacted.", "state": "compacted"},
        ])
        store.record_usage(kyoto.id, model="m", input_tokens=12, output_tokens=3, cost_usd=0.01)
        tokyo = store.create_session("desktop", title="東京の天気")
        store.append(tokyo.id, [{"uid": "t1", "role": "user", "content": "明日の東京の天気は？"},
                                {"uid": "t2", "role": "assistant", "content": "明日の東京は晴れです。"}])
        untitled = store.create_session("cli")
        store.append(untitled.id, {"uid": "u1", "role": "user", "content": "why does the upload test flake"})
    return home


def run(home, *args, input=None, env=None):
    return CliRunner().invoke(main, ["--home", str(home), *args], input=input, env=env)


def ids(home):
    with sessiondb.open_store(home=home) as store:
        return {s.title or "untitled": s.id for s in store.list_sessions(include_archived=True, include_hidden=True).items}


def contents(home):
    """Everything an export carries, without what only describes the export itself."""
    with sessiondb.open_store(home=home) as store:
        records = list(store.export())
    out = []
    for r in records[1:]:
        if r["type"] == "message":
            r = {"type": "message", "message": {k: v for k, v in r["message"].items() if k != "id"}}
        out.append(r)
    return out


def test_list_shows_titles_first_words_sources_counts_and_ids(home):
    result = run(home, "sessions", "list")
    assert result.exit_code == 0, result.output
    for text in ("Trip to Kyoto", "東京の天気", "why does the upload test", "telegram", "desktop", "just now",
                 *ids(home).values()):
        assert text in result.output
    listed = json.loads(run(home, "sessions", "list", "--json").output)
    assert {s["title"] for s in listed} == {"Trip to Kyoto", "東京の天気", None}
    assert json.loads(run(home, "sessions", "list", "--source", "desktop", "--json").output)[0]["title"] == "東京の天気"


def test_show_accepts_a_title_or_an_id_prefix(home):
    sid = ids(home)["Trip to Kyoto"]
    by_title = run(home, "sessions", "transcript", "Trip to Kyoto")
    by_prefix = run(home, "sessions", "transcript", sid[:-3])
    assert by_title.exit_code == by_prefix.exit_code == 0
    assert by_title.output == by_prefix.output
    assert "Fushimi Inari" in by_title.output and "early draft" not in by_title.output
    assert "early draft" in run(home, "sessions", "transcript", sid, "--include-compacted").output
    shown = json.loads(run(home, "sessions", "transcript", sid, "--json").output)
    assert shown["session"]["id"] == sid and [m["uid"] for m in shown["messages"]] == ["k1", "k2"]


def test_search_finds_words_phrases_cjk_and_survives_garbage(home):
    def found(*args):
        result = run(home, "sessions", "search", *args, "--json")
        assert result.exit_code == 0, result.output
        return [hit["uid"] for hit in json.loads(result.output)]

    assert found("kyoto temples") == ["k1"]
    assert found('"fushimi inari"') == ["k2"]
    assert found("東京の天") == ["t1"]
    assert set(found("東京")) == {"t1", "t2"}
    assert found("draft") == ["k3"]
    assert json.loads(run(home, "sessions", "search", "draft", "--json").output)[0]["compacted"] is True
    for garbage in ('"((kyoto', '" OR ) NOT (', '*', '-', '"', ")))((("):
        assert run(home, "sessions", "search", garbage).exit_code == 0
    table = run(home, "sessions", "search", "nishiki")
    assert "Trip to Kyoto" in table.output and "Nishiki" in table.output


def test_recall_answers_a_question_the_query_language_finds_nothing_for(home):
    question = "Which temples did we plan to visit?"
    typed = run(home, "sessions", "search", question, "--json")
    assert typed.exit_code == 0 and json.loads(typed.output) == []
    asked = run(home, "sessions", "recall", question, "--json")
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.output)[0]["uid"] == "k1"
    nothing = run(home, "sessions", "recall", "Where is the zeppelin hangar?")
    assert nothing.exit_code == 0 and "no messages found" in nothing.output


def test_search_and_recall_read_a_whole_conversation_with_conversation_and_refuse_it_without_a_session(home):
    with sessiondb.open_store(home=home) as store:
        kyoto = ids(home)["Trip to Kyoto"]
        tip = store.commit_compaction(store.begin_compaction(kyoto), {"role": "system", "content": "gist"},
                                      mode="rotate")
        store.append(tip.id, {"uid": "k4", "role": "user", "content": "Add a day of Kyoto gardens."})
    for command in ("search", "recall"):
        alone = run(home, "sessions", command, "Kyoto", "--session", "Trip to Kyoto", "--json")
        whole = run(home, "sessions", command, "Kyoto", "--session", "Trip to Kyoto", "--conversation", "--json")
        assert alone.exit_code == 0 and whole.exit_code == 0, (alone.output, whole.output)
        assert "k4" not in {hit["uid"] for hit in json.loads(alone.output)}
        assert {"k1", "k4"} <= {hit["uid"] for hit in json.loads(whole.output)}
        refused = run(home, "sessions", command, "Kyoto", "--conversation")
        assert refused.exit_code == 2 and "name the session with --session" in refused.output


def test_export_then_import_into_a_fresh_home_reproduces_the_sessions(home, tmp_path):
    exported = tmp_path / "all.jsonl"
    result = run(home, "sessions", "export", "-o", str(exported))
    assert result.exit_code == 0, result.output
    assert "exported 3 session(s), 6 message(s)" in result.output
    fresh = tmp_path / "home-b"
    result = run(fresh, "sessions", "import", str(exported), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["sessions_created"], report["messages_imported"], report["usage_rows_imported"]) == (3, 6, 1)
    assert contents(fresh) == contents(home)
    again = json.loads(run(fresh, "sessions", "import", str(exported), "--json").output)
    assert (again["messages_imported"], again["messages_skipped"]) == (0, 6)


def test_export_of_chosen_sessions_as_markdown(home, tmp_path):
    result = run(home, "sessions", "export", "Trip to Kyoto", "--format", "md")
    assert result.exit_code == 0
    assert "## Trip to Kyoto" in result.output and "Fushimi Inari" in result.output
    assert "東京" not in result.output


def test_a_malformed_import_exits_1_naming_the_line_and_writes_nothing(home, tmp_path):
    exported = tmp_path / "all.jsonl"
    run(home, "sessions", "export", "-o", str(exported))
    lines = exported.read_text(encoding="utf-8").splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    # The third session is cut short: the first two are fine, yet nothing may be written.
    last_session = max(i for i, line in enumerate(lines) if '"type":"session"' in line)
    broken.write_text("".join(lines[:last_session + 1]) + lines[last_session + 1][:30] + "\n", encoding="utf-8")
    fresh = tmp_path / "home-b"
    result = run(fresh, "sessions", "import", str(broken))
    assert result.exit_code == 1
    assert f"line {last_session + 2}:" in result.stderr and "nothing was imported" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    with sessiondb.open_store(home=fresh) as store:
        assert store.stats().sessions == 0


def test_flags_rename_and_stats(home):
    sid = ids(home)["Trip to Kyoto"]
    assert run(home, "sessions", "pin", sid).output.strip() == f"pinned {sid}"
    assert [s["id"] for s in json.loads(run(home, "sessions", "list", "--pinned", "--json").output)] == [sid]
    assert run(home, "sessions", "archive", "Trip to Kyoto").exit_code == 0
    assert sid not in run(home, "sessions", "list").output
    assert sid in run(home, "sessions", "list", "--archived").output
    run(home, "sessions", "unarchive", sid)
    run(home, "sessions", "hide", sid)
    assert sid not in run(home, "sessions", "list").output and sid in run(home, "sessions", "list", "--hidden").output
    run(home, "sessions", "unhide", sid)
    run(home, "sessions", "unpin", sid)
    renamed = json.loads(run(home, "sessions", "set-title", sid, "Kyoto, again", "--json").output)
    assert renamed["title"] == "Kyoto, again" and not renamed["pinned"] and not renamed["hidden"]
    stats = json.loads(run(home, "sessions", "stats", "--json").output)
    assert (stats["sessions"], stats["messages"], stats["compacted_messages"]) == (3, 5, 1)
    assert "sessions" in run(home, "sessions", "stats").output


def test_delete_asks_first(home):
    sid = ids(home)["Trip to Kyoto"]
    declined = run(home, "sessions", "delete", sid, input="n\n")
    assert declined.exit_code == 1 and sid in ids(home).values()
    assert run(home, "sessions", "delete", sid, "--yes").exit_code == 0
    assert sid not in ids(home).values()


def test_delete_with_conversation_takes_the_sessions_a_rotation_continued_it_in(home):
    sid = ids(home)["Trip to Kyoto"]
    with sessiondb.open_store(home=home) as store:
        tip = store.commit_compaction(store.begin_compaction(sid), {"role": "system", "content": "gist"},
                                      mode="rotate").id
    declined = run(home, "sessions", "delete", sid, "--conversation", input="n\n")
    assert "and every session of its conversation" in declined.stderr and declined.exit_code == 1
    deleted = run(home, "sessions", "delete", sid, "--conversation", "--yes")
    assert deleted.exit_code == 0 and deleted.stdout.strip() == f"deleted {sid}, {tip}"  # every session it deleted
    assert not {sid, tip} & set(ids(home).values()) and len(ids(home)) == 2


def test_failures_exit_1_with_one_line_and_usage_mistakes_exit_2(home):
    missing = run(home, "sessions", "transcript", "nope")
    assert missing.exit_code == 1 and len(missing.stderr.strip().splitlines()) == 1
    assert f"`sessiondb --home {home} sessions list`" in missing.stderr  # the hint names this store
    ambiguous = run(home, "sessions", "transcript", "2")
    assert ambiguous.exit_code == 1 and "give more of the id" in ambiguous.stderr
    for args in (["sessions", "transcript"], ["sessions", "list", "--limit", "0"], ["sessions", "list", "--since", "soon"],
                 ["sessions", "nope"], ["sessions", "search", "x", "--role", "robot"]):
        assert run(home, *args).exit_code == 2, args


def test_no_color_is_honoured(home):
    colored = run(home, "sessions", "transcript", "Trip to Kyoto", env={"FORCE_COLOR": "1", "NO_COLOR": None})
    plain = run(home, "sessions", "transcript", "Trip to Kyoto", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[36m" in colored.output or "\x1b[1;36m" in colored.output
    assert not any(code in plain.output for code in ("[36m", "[32m", "[1;36m", "[1;32m", "38;"))


def test_the_installed_command_round_trips_in_real_processes(home, tmp_path):
    env = {**os.environ, "NO_COLOR": "1"}
    out = tmp_path / "real.jsonl"
    subprocess.run([str(SESSIONDB), "--home", str(home), "sessions", "export", "-o", str(out)],
                   check=True, env=env, capture_output=True, timeout=60)
    fresh = tmp_path / "home-real"
    done = subprocess.run([str(SESSIONDB), "--home", str(fresh), "sessions", "import", str(out)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = subprocess.run([str(SESSIONDB), "--home", str(fresh), "sessions", "search", "東京", "--json"],
                           env=env, capture_output=True, text=True, timeout=60)
    assert found.returncode == 0 and {h["uid"] for h in json.loads(found.stdout)} == {"t1", "t2"}
    truncated = tmp_path / "cut.jsonl"
    truncated.write_text(out.read_text(encoding="utf-8")[:200], encoding="utf-8")
    refused = subprocess.run([str(SESSIONDB), "--home", str(tmp_path / "home-empty"), "sessions", "import",
                              str(truncated)], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and refused.stderr.startswith("Error: line ")


def test_usage_shows_a_session_or_the_whole_profile_by_model(home):
    one = run(home, "sessions", "usage", "Trip to Kyoto")
    assert one.exit_code == 0 and "m" in one.output and "$0.0100" in one.output
    profile = json.loads(run(home, "sessions", "usage", "--json").output)
    assert profile["sessions"] == 1 and profile["totals"]["input_tokens"] == 12
    assert [m["model"] for m in profile["models"]] == ["m"] and len(profile["days"]) == 1
    assert "no model calls recorded" in run(home, "sessions", "usage", "東京の天気").output


def test_half_a_character_is_printed_as_its_escape_and_exported_and_imported_exactly(home, tmp_path):
    with sessiondb.open_store(home=home) as store:
        store.append(store.create_session("cli", session_id="cut").id,
                     {"uid": "h1", "role": "user", "content": "a note cut inside an emoji \ud83d"})

    def cli(where, *args):
        done = subprocess.run([str(SESSIONDB), "--home", str(where), *args], capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode("utf-8")  # strict: every byte printed is UTF-8

    assert "emoji \\ud83d" in cli(home, "sessions", "show", "cut")
    assert json.loads(cli(home, "sessions", "show", "cut", "--json"))["messages"][0]["content"] == \
        "a note cut inside an emoji \ud83d"
    assert "emoji \\ud83d" in cli(home, "sessions", "search", "emoji")
    out = tmp_path / "cut.jsonl"
    cli(home, "sessions", "export", "cut", "-o", str(out))
    cli(tmp_path / "fresh", "sessions", "import", str(out))
    with sessiondb.open_store(home=tmp_path / "fresh") as store:
        assert [m.content for m in store.transcript("cut")] == ["a note cut inside an emoji \ud83d"]


def test_transcript_with_tip_shows_the_session_that_continues_a_rotated_one(tmp_path):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home) as store:
        root = store.create_session("cli", title="Rotated talk")
        store.append(root.id, {"uid": "r1", "role": "user", "content": "before the compaction"})
        lease = store.begin_compaction(root.id)
        tip = store.commit_compaction(lease, [{"role": "assistant", "content": "The summary."}], mode="rotate")
        store.append(tip.id, {"uid": "t1", "role": "user", "content": "after the compaction"})
    named = json.loads(run(home, "sessions", "transcript", root.id, "--include-compacted", "--json").output)
    at_tip = json.loads(run(home, "sessions", "transcript", root.id, "--tip", "--json").output)
    assert [m["content"] for m in named["messages"]] == ["before the compaction"]
    assert at_tip["session"]["id"] == tip.id
    assert [m["content"] for m in at_tip["messages"]] == ["The summary.", "after the compaction"]
    last = json.loads(run(home, "sessions", "transcript", root.id, "--tip", "--last", "1", "--json").output)
    assert [m["content"] for m in last["messages"]] == ["after the compaction"]
