"""S-51: a cancelled correction is not lost. Corrections redirect a running turn; when one
reaches the redirect limit, the turn ends and that waiting correction is the next turn."""

from __future__ import annotations

from sessiondb import open_store
from sessiondb.guidance import explain_turn
from sessiondb.turns import AgentTurn


def test_the_correction_waiting_at_the_redirect_limit_becomes_the_next_user_turn(store, session, tree,
                                                                                 isolated_home):
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "rename the module"}, cwd=tree,
                           max_redirects=2)
    assert turn.redirect({"role": "user", "content": "no, the package", "uid": "c-1"}) is turn
    waiting = {"role": "user", "content": "actually, leave the name and fix the import", "uid": "c-2"}
    following = turn.redirect(waiting)  # this correction cancelled the last allowed attempt
    assert following is not turn

    with open_store(home=isolated_home) as again:
        first, second = again.turns(session.id)
        transcript = again.transcript(session.id)
    assert (first.outcome, first.reason, first.continued_by) == ("interrupted", "redirect_limit", second.id)
    assert second.user_uid == "c-2" and second.reason is None
    assert [m.uid for m in transcript][-2:] == ["c-1", "c-2"]
    assert transcript[-1].content == waiting["content"]
    assert "not lost" in explain_turn(first.reason) and "next turn" in explain_turn(first.reason)
    assert following.finish().reason == "completed"


def test_a_correction_replayed_after_a_crash_is_stored_once(store, session, tree):
    # The correction keeps its identity: handing it in again (a retry) stores nothing new.
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "go"}, cwd=tree, max_redirects=1)
    correction = {"role": "user", "content": "stop, use tabs", "uid": "c-9"}
    following = turn.redirect(correction)
    store.append(session.id, correction)
    assert [m.uid for m in store.transcript(session.id)].count("c-9") == 1
    assert following.record.user_uid == "c-9"
