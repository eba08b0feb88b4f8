"""A person's sessions as a scope over HTTP: what is stored for one user is never listed,
searched or recalled for another (`user_id=` on /api/sessions, /api/search, /api/recall)."""

from __future__ import annotations

import pytest

import sessiondb

from .conftest import start, stop


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("users") / "home"
    with sessiondb.open_store(home=home, profile="demo") as store:
        alice = store.create_session("telegram", user_id="alice")
        store.append(alice.id, {"role": "user", "content": "my bank pin is 1234"})
        bob = store.create_session("telegram", user_id="bob")
        store.append(bob.id, {"role": "user", "content": "my sister plays the violin"})
    server = start(home)
    yield server, alice.id, bob.id
    stop(server)


def test_what_alice_stored_is_never_found_for_bob(served):
    server, alice, bob = served
    with server.client() as api:
        def asked(route, **params):
            return api.get(route, params={"profile": "demo", **params}).json()["items"]

        assert asked("/api/search", q="bank", user_id="bob") == []
        assert asked("/api/recall", q="What is my bank pin?", user_id="bob") == []
        assert [s["id"] for s in asked("/api/sessions", user_id="bob")] == [bob]
        assert asked("/api/sessions", q="bank", user_id="bob") == []
        assert [h["session_id"] for h in asked("/api/search", q="bank", user_id="alice")] == [alice]
        assert api.get("/api/search", params={"q": "bank", "user_id": "u" * 201}).status_code == 422
