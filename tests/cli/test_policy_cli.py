"""`sessiondb policy`: retention rules set, shown and cleared from the command line; `apply`
a dry run until --yes, removing an idle conversation and keeping a pinned one and a held
one; a refused report exits 1 with its sentence; a held user is not forgotten until the
hold is released."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.testing import FakeClock

DAY = 86400
IDLE_SINCE = 1_600_000_000.0  # 2020: idle past any period these tests set, whenever they run


@pytest.fixture
def home(tmp_path):
    """A `work` profile: three `cli` conversations idle since 2020 (ann's, a pinned one of
    pia's, hal's) and a `telegram` one of today (cat's)."""
    home = tmp_path / "home"
    with sessiondb.open_store(home=home, profile="work", clock=FakeClock(IDLE_SINCE)) as store:
        for user in ("ann", "pia", "hal"):
            session = store.create_session("cli", user_id=user, title=f"{user}'s talk")
            store.append(session.id, {"role": "user", "content": f"{user} asks about quinces"})
        store.set_flags(store.find_session("pia's talk").id, pinned=True)
    with sessiondb.open_store(home=home, profile="work") as store:
        store.append(store.create_session("telegram", user_id="cat", title="cat's talk").id,
                     {"role": "user", "content": "cat asks about quinces"})
    return home


def run(home, *args):
    return CliRunner().invoke(main, ["--home", str(home), "-p", "work", *args])


def talks(home):
    """Whose conversations the store still holds."""
    with sessiondb.open_store(home=home, profile="work") as store:
        return sorted(s.user_id for s in store.list_sessions().items)


def talk(home, user):
    with sessiondb.open_store(home=home, profile="work") as store:
        return store.find_session(f"{user}'s talk").id


def test_rules_set_are_shown_with_their_periods_and_cleared_again(home):
    assert run(home, "policy", "set", "--inactive-after", "90d", "--keep-last", "5").exit_code == 0
    assert run(home, "policy", "set", "--source", "telegram", "--compacted-after", "2w").exit_code == 0

    shown = run(home, "policy", "show")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[:3] == ["Rules:", "  every other source: inactive after 90d, keep last 5 (set just now)",
                         "  source telegram: text of compacted originals after 2w (set just now)"]
    assert lines[3:] == ["Legal holds:", "  no holds"]
    assert run(home, "policy").output == shown.output
    assert json.loads(run(home, "policy", "--json").output) == json.loads(run(home, "policy", "show", "--json").output)
    misplaced = run(home, "policy", "--json", "clear")
    assert misplaced.exit_code == 2 and "put --json after the command: `policy clear --json`" in misplaced.output
    rules = json.loads(run(home, "policy", "show", "--json").output)["rules"]
    assert [(r["source"], r["inactive_after"], r["keep_last"], r["compacted_after"]) for r in rules] == [
        (None, 90 * DAY, 5, None), ("telegram", None, None, 14 * DAY)]

    assert run(home, "policy", "clear", "--source", "telegram").output == "cleared the rules of source telegram\n"
    assert run(home, "policy", "clear", "--source", "telegram").output == \
        "no rules of source telegram: nothing changed\n"
    assert run(home, "policy", "clear").exit_code == 0
    assert run(home, "policy").output == "Rules:\n  no rules: everything is kept\nLegal holds:\n  no holds\n"


def test_periods_are_read_with_their_units_or_as_seconds(home):
    set_ = run(home, "policy", "set", "--inactive-after", "90", "--compacted-after", "12h",
               "--never-active-after", "30m", "--json")

    assert set_.exit_code == 0, set_.output
    rule = json.loads(set_.output)["policy"]
    assert (rule["inactive_after"], rule["compacted_after"], rule["never_active_after"]) == (90, 43200, 1800)
    assert "  every other source: inactive after 90s, text of compacted originals after 12h, never active " \
           "after 30m (set just now)" in run(home, "policy").output
    refused = run(home, "policy", "set", "--inactive-after", "soon")
    assert refused.exit_code == 2 and "'soon' is not a period" in refused.output
    empty = run(home, "policy", "set", "--source", "cli")
    assert empty.exit_code == 2 and "say what to keep: --inactive-after, --keep-last" in empty.output
    assert "keep_last" not in empty.output


def test_setting_rules_says_what_they_would_remove_now_and_removes_nothing(home):
    result = run(home, "policy", "set", "--inactive-after", "90d")

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "set: every other source: inactive after 90d"
    assert lines[1].startswith("now: would remove 2 conversation(s) (2 session(s), 2 message(s))")
    assert f"`sessiondb --home {home} -p work policy apply --yes` removes them" in lines[2]
    assert talks(home) == ["ann", "cat", "hal", "pia"]


def test_apply_without_yes_removes_nothing_and_says_what_would_go(home):
    run(home, "policy", "set", "--inactive-after", "90d")

    result = run(home, "policy", "apply")

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("would remove 2 conversation(s)") and lines[0].endswith("(a dry run: nothing changed)")
    assert sorted(lines[1:3]) == sorted([f"  would go: {talk(home, 'ann')} (inactive-after)",
                                         f"  would go: {talk(home, 'hal')} (inactive-after)"])
    assert lines[3] == f"  kept: {talk(home, 'pia')} (pinned)"
    assert lines[4] == f"pass --yes to remove them: `sessiondb --home {home} -p work policy apply --yes`"
    assert talks(home) == ["ann", "cat", "hal", "pia"]


def test_apply_yes_removes_an_idle_conversation_and_keeps_a_pinned_one_and_a_held_one(home):
    ann, pia, hal = (talk(home, user) for user in ("ann", "pia", "hal"))
    held = run(home, "policy", "hold", "--user", "hal", "--reason", "case 12")
    assert held.output.splitlines()[0] == "held user hal: case 12", held.output
    run(home, "policy", "set", "--inactive-after", "90d")

    result = run(home, "policy", "apply", "--yes")

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("removed 1 conversation(s) (1 session(s), 1 message(s))")
    assert lines[1] == f"  gone: {ann} (inactive-after)"
    assert sorted(lines[2:]) == sorted([f"  kept: {pia} (pinned)", f"  kept: {hal} (held)"])
    assert talks(home) == ["cat", "hal", "pia"]
    report = json.loads(run(home, "policy", "apply", "--yes", "--json").output)
    assert report["removed"] == [] and sorted(report["kept"]) == sorted([[pia, "pinned"], [hal, "held"]])


def test_a_refused_report_exits_1_with_its_sentence_and_removes_nothing(home):
    with sessiondb.open_store(home=home, profile="work") as store:
        store.set_flags(talk(home, "pia"), pinned=False)
        store.set_policy(source="cli", inactive_after=90 * DAY, force=True)

    for args in ((), ("--yes",)):
        result = run(home, "policy", "apply", *args)
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        assert result.stderr.startswith("Error: refused, nothing removed: the rules for source cli would remove "
                                        "every one of its 3 conversation(s)")
    as_json = json.loads(run(home, "policy", "apply", "--yes", "--json").stdout)
    assert as_json["code"] == "refused" and as_json["detail"]["refused"].startswith("the rules for source cli")
    assert talks(home) == ["ann", "cat", "hal", "pia"]
    assert run(home, "policy", "apply", "--yes", "--force").exit_code == 0
    assert talks(home) == ["cat"]


def test_a_held_user_is_not_forgotten_until_the_hold_is_released(home):
    assert run(home, "policy", "hold", "--user", "ann", "--reason", "litigation hold 7").exit_code == 0

    refused = run(home, "forget", "--user", "ann", "--yes")

    assert refused.exit_code == 1
    assert "user ann is under a legal hold (litigation hold 7)" in refused.stderr
    assert f"`sessiondb --home {home} -p work policy release`" in refused.stderr
    assert talks(home) == ["ann", "cat", "hal", "pia"]
    assert run(home, "policy", "release", "--user", "ann").output == "released the hold on user ann\n"
    assert run(home, "forget", "--user", "ann", "--yes").exit_code == 0
    assert talks(home) == ["cat", "hal", "pia"]


def test_a_hold_placed_on_a_session_by_its_title_is_released_by_its_id_even_once_the_session_is_gone(home):
    hal = talk(home, "hal")
    assert run(home, "policy", "hold", "--session", "hal's talk", "--reason", "case 9").exit_code == 0
    assert f"  session {hal}: case 9 (placed " in run(home, "policy").output
    assert run(home, "sessions", "delete", hal, "--yes").exit_code == 1  # held: not deleted
    with sessiondb.open_store(home=home, profile="work") as store:
        store.hold(session_id="gone-1", reason="placed on an id no session has any more")

    released = [run(home, "policy", "release", "--session", ref) for ref in (hal, "gone-1")]

    assert released[0].output == f"released the hold on session {hal}\n", released[0].output
    assert released[1].output == "released the hold on session gone-1\n", released[1].output
    assert "no holds" in run(home, "policy").output


def test_a_hold_names_one_user_or_one_session(home):
    for args in ((), ("--user", "ann", "--session", "hal's talk")):
        result = run(home, "policy", "hold", *args, "--reason", "r")
        assert result.exit_code == 2 and "--user ID or --session ID" in result.output
