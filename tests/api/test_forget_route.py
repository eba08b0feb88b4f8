"""`POST /api/forget` (S-55) on a real `sessiondb serve` process: erases one person's
conversations and nobody else's and answers with the receipt `sessiondb forget --json`
prints, naming a backup taken before as a copy that remains; no selector, or a misspelled
one, is bad input (422)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sessiondb

ALICE = "Alice confides the quince orchard plan to the assistant"
BOB = "Bob asks how to true a buckled bicycle wheel"


@pytest.fixture
def profile(server, request):
    """A profile of this test's own on the module's server, holding a conversation of
    Alice's and one of Bob's."""
    name = request.node.name.removeprefix("test_")[:40].replace("_", "-").rstrip("-")
    with sessiondb.open_store(home=server.home, profile=name) as store:
        for user, text in (("alice", ALICE), ("bob", BOB)):
            store.append(store.create_session("cli", user_id=user).id, {"role": "user", "content": text})
    return name


def found(api, profile, words):
    hits = api.get("/api/search", params={"profile": profile, "q": words})
    assert hits.status_code == 200, hits.text
    return hits.json()["items"]


def test_the_forget_route_erases_one_user_and_answers_with_the_receipt(api, profile):
    asked = api.post("/api/forget", params={"profile": profile}, json={"user_id": "alice"})

    assert asked.status_code == 200, asked.text
    receipt = asked.json()
    assert receipt["asked"] == {"user_id": "alice"} and len(receipt["sessions"]) == 1
    assert receipt["messages"] == 1 and receipt["clean"] is True
    assert receipt["summary"].endswith("no copy remains") and receipt["scanned_bytes"] > 0
    assert found(api, profile, "quince orchard") == []
    assert [hit["snippet"] for hit in found(api, profile, "buckled bicycle")] == [
        "Bob asks how to true a <mark>buckled</mark> <mark>bicycle</mark> wheel"]


def test_a_backup_taken_before_is_named_in_the_receipt_as_a_copy_that_remains(api, profile):
    made = api.post("/api/backup", params={"profile": profile}, json={"name": "before.db"})
    assert made.status_code == 201, made.text

    receipt = api.post("/api/forget", params={"profile": profile}, json={"user_id": "alice"}).json()

    assert receipt["clean"] is False and receipt["remaining"] == []
    backup = made.json()["backup"]
    assert {path for path, _ in receipt["copies"]} == {backup}
    assert all(command.startswith(f"rm {backup}") for _, command in receipt["copies"])
    assert Path(backup).is_file()  # named, never removed by the service
    assert found(api, profile, "quince orchard") == [] and len(found(api, profile, "buckled bicycle")) == 1


def test_a_dry_run_and_a_user_nobody_has_change_nothing(api, profile):
    dry = api.post("/api/forget", params={"profile": profile}, json={"user_id": "alice", "dry_run": True})
    nobody = api.post("/api/forget", params={"profile": profile}, json={"user_id": "carol"})

    assert dry.status_code == nobody.status_code == 200
    assert dry.json()["summary"].startswith("would remove 1 session(s), 1 message(s)")
    assert nobody.json()["summary"] == "nothing matched: no session was removed"
    assert len(found(api, profile, "quince orchard")) == len(found(api, profile, "buckled bicycle")) == 1


def test_forget_without_a_selector_or_with_a_misspelled_one_is_bad_input(api, profile):
    # A misspelled `before` beside a real selector, ignored, would erase more than was asked.
    for body in ({}, {"dry_run": True}, {"user": "alice"}, {"user_id": "alice", "befor": 0}):
        refused = api.post("/api/forget", params={"profile": profile}, json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["code"] == "invalid_input"
    assert "say whose conversations to forget" in api.post("/api/forget", params={"profile": profile},
                                                           json={}).json()["message"]
    assert len(found(api, profile, "quince orchard")) == 1
