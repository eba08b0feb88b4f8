"""A person's sessions as a scope on the command line: `--user` on `sessions list`,
`sessions search` and `sessions recall` never shows another person's."""

from __future__ import annotations

import json

from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main


def test_what_alice_stored_is_never_shown_for_bob(tmp_path):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home) as store:
        alice = store.create_session("cli", user_id="alice")
        store.append(alice.id, {"role": "user", "content": "my bank pin is 1234"})
        bob = store.create_session("cli", user_id="bob")
        store.append(bob.id, {"role": "user", "content": "my sister plays the violin"})

    def shown(*args):
        result = CliRunner().invoke(main, ["--home", str(home), "sessions", *args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    assert shown("search", "bank", "--user", "bob") == []
    assert shown("recall", "What is my bank pin?", "--user", "bob") == []
    assert [s["id"] for s in shown("list", "--user", "bob")] == [bob.id]
    assert [h["session_id"] for h in shown("search", "bank", "--user", "alice")] == [alice.id]
