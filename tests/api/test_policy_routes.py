"""The retention routes on a real `sessiondb serve` process: rules put, got and deleted;
`POST /api/policy/apply` a dry run until its body says otherwise, then removing an idle
conversation and keeping a pinned one and a held one; a refused report says why and
removes nothing; a bad body (keep_last 0, a field it does not know, no rule) is 422."""

from __future__ import annotations

import itertools

import pytest

import sessiondb
from sessiondb.testing import FakeClock

DAY = 86400
IDLE_SINCE = 1_600_000_000.0  # 2020: idle past any period these tests set, whenever they run
_made = itertools.count()  # the module's server is shared: each test's profile has a number of its own


@pytest.fixture
def profile(server, request):
    """A profile of this test's own on the module's server: three `cli` conversations idle
    since 2020 (ann's, a pinned one of pia's, hal's) and a `telegram` one of today (cat's)."""
    name = f"{request.node.name.removeprefix('test_')[:40].replace('_', '-').rstrip('-')}-{next(_made)}"
    with sessiondb.open_store(home=server.home, profile=name, clock=FakeClock(IDLE_SINCE)) as store:
        for user in ("ann", "pia", "hal"):
            store.append(store.create_session("cli", user_id=user, title=user).id, {"role": "user", "content": user})
        store.set_flags(store.find_session("pia").id, pinned=True)
    with sessiondb.open_store(home=server.home, profile=name) as store:
        cat = store.create_session("telegram", user_id="cat", title="cat")
        store.append(cat.id, {"role": "user", "content": "cat"})
    return name


def ids(api, profile):
    """Each user's session id, for the sessions the profile still holds."""
    listed = api.get("/api/sessions", params={"profile": profile})
    assert listed.status_code == 200, listed.text
    return {s["user_id"]: s["id"] for s in listed.json()["items"]}


def test_rules_put_are_got_and_deleted_again(api, profile):
    at = {"profile": profile}
    put = api.put("/api/policy", params=at, json={"inactive_after": 90 * DAY, "keep_last": 5})
    assert put.status_code == 200, put.text
    assert put.json()["inactive_after"] == 90 * DAY and put.json()["source"] is None
    telegram = api.put("/api/policy", params=at, json={"source": "telegram", "compacted_after": 14 * DAY})
    assert telegram.status_code == 200, telegram.text

    got = api.get("/api/policy", params=at).json()

    assert [(r["source"], r["inactive_after"], r["keep_last"], r["compacted_after"]) for r in got["rules"]] == [
        (None, 90 * DAY, 5, None), ("telegram", None, None, 14 * DAY)]
    assert got["holds"] == []
    cleared = api.delete("/api/policy", params={**at, "source": "telegram"})
    assert cleared.status_code == 200 and cleared.json() == {"source": "telegram", "cleared": True}
    assert api.delete("/api/policy", params={**at, "source": "telegram"}).json()["cleared"] is False
    assert [r["source"] for r in api.get("/api/policy", params=at).json()["rules"]] == [None]


def test_apply_is_a_dry_run_until_asked_then_removes_the_idle_one_and_keeps_the_pinned_and_held(api, profile):
    at = {"profile": profile}
    before = ids(api, profile)
    held = api.post("/api/policy/holds", params=at, json={"user_id": "hal", "reason": "case 12"})
    assert held.status_code == 201 and held.json()["reason"] == "case 12", held.text
    api.put("/api/policy", params=at, json={"inactive_after": 90 * DAY})

    dry = api.post("/api/policy/apply", params=at)

    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True and dry.json()["removed"] == [[before["ann"], "inactive_after"]]
    assert ids(api, profile) == before
    done = api.post("/api/policy/apply", params=at, json={"dry_run": False}).json()
    assert done["dry_run"] is False and done["removed"] == [[before["ann"], "inactive_after"]]
    assert sorted(done["kept"]) == sorted([[before["pia"], "pinned"], [before["hal"], "held"]])
    assert done["summary"].startswith("removed 1 conversation(s)")
    assert set(ids(api, profile)) == {"pia", "hal", "cat"}
    released = api.delete("/api/policy/holds", params={**at, "user_id": "hal"})
    assert released.json() == {"user_id": "hal", "session_id": None, "released": True}
    assert api.get("/api/policy", params=at).json()["holds"] == []


def test_a_refused_report_says_why_and_removes_nothing(api, server, profile):
    with sessiondb.open_store(home=server.home, profile=profile) as store:
        store.set_flags(store.find_session("pia").id, pinned=False)
        store.set_policy(source="cli", inactive_after=90 * DAY, force=True)

    report = api.post("/api/policy/apply", params={"profile": profile}, json={"dry_run": False}).json()

    assert report["refused"].startswith("the rules for source cli would remove every one of its 3 conversation(s)")
    assert report["removed"] == [] and len(ids(api, profile)) == 4


@pytest.mark.parametrize("route, body", [
    ("PUT /api/policy", {"keep_last": 0}),
    ("PUT /api/policy", {"keep_last": "5"}),
    ("PUT /api/policy", {"keep_last": 5, "inactive_afer": 90 * DAY}),  # ignored, it would keep 5 and no more
    ("PUT /api/policy", {}),
    ("PUT /api/policy", {"source": "cli", "force": True}),
    ("POST /api/policy/holds", {"user_id": "ann"}),
    ("POST /api/policy/holds", {"user_id": "ann", "session_id": "x", "reason": "r"}),
    ("POST /api/policy/holds", {"user_id": "ann", "reason": "r", "until": 0}),
    ("POST /api/policy/apply", {"dry_run": False, "forse": True}),
], ids=lambda v: v if isinstance(v, str) else ",".join(v) or "empty")
def test_a_bad_body_is_bad_input_and_changes_nothing(api, profile, route, body):
    method, path = route.split(" ")

    refused = api.request(method, path, params={"profile": profile}, json=body)

    assert refused.status_code == 422, refused.text
    assert refused.json()["code"] == "invalid_input"
    assert api.get("/api/policy", params={"profile": profile}).json() == {"rules": [], "holds": []}
    assert len(ids(api, profile)) == 4


def test_a_held_user_is_not_forgotten_until_the_hold_is_released(api, profile):
    at = {"profile": profile}
    api.post("/api/policy/holds", params=at, json={"user_id": "ann", "reason": "litigation hold 7"})

    refused = api.post("/api/forget", params=at, json={"user_id": "ann"})

    assert refused.status_code == 409 and "under a legal hold (litigation hold 7)" in refused.json()["message"]
    assert "ann" in ids(api, profile)
    assert api.delete("/api/policy/holds", params={**at, "user_id": "ann"}).json()["released"] is True
    assert api.post("/api/forget", params=at, json={"user_id": "ann"}).status_code == 200
    assert "ann" not in ids(api, profile)
