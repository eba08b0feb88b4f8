"""The faces over turns and checkpoints: `sessiondb turns list`, `sessiondb checkpoints
list|diff|restore`, the API routes and the `/rollback` reply. A session whose tools run in
a container, or on a remote machine over ssh, is refused on every one of them with the
same reason, while a local session restores; a restore that would clobber a person's edit
is refused everywhere too."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from sessiondb import open_store
from sessiondb.api.app import create_app
from sessiondb.cli import main
from sessiondb.turns import AgentTurn, Checkpoints, rollback_command

#: What each backend's refusal says, on every surface.
REASONS = {
    "docker": "docker container, so host paths are not the agent's paths",
    "ssh": "on a remote machine over ssh, so the paths they touch are that machine's files, not this one's",
}


def cli(home, *args):
    return CliRunner().invoke(main, ["--home", str(home), *args])


@pytest.fixture(params=sorted(REASONS))
def away(request) -> str:
    """A backend whose tools do not act on this machine's paths."""
    return request.param


@pytest.fixture
def sessions(isolated_home, tmp_path, away):
    """Two sessions whose agent changed a file in one turn each; then one is moved away from the host."""
    made = {}
    with open_store(home=isolated_home) as store:
        for name in ("local", "boxed"):
            tree = tmp_path / name
            tree.mkdir()
            (tree / "app.py").write_text("original\n")
            sid = store.create_session("cli", title=name).id
            turn = AgentTurn.begin(store, sid, {"role": "user", "content": "edit"}, cwd=tree,
                                   checkpoints=Checkpoints(store))
            turn.before_mutation()
            (tree / "app.py").write_text("agent\n")
            turn.wrote("app.py")
            turn.request_interrupt("user")
            turn.finish()
            made[name] = (sid, tree)
        store.update_metadata(made["boxed"][0], {"terminal_backend": away})
    return made


@pytest.fixture
def api(isolated_home):
    # The service answers only requests addressed to where it is bound, and changes sent as JSON.
    with TestClient(create_app(isolated_home), base_url="http://127.0.0.1:8765",
                    headers={"Content-Type": "application/json"}) as client:
        yield client


def test_turns_list_says_why_each_turn_ended_on_the_cli_and_the_api(sessions, isolated_home, api):
    sid, _tree = sessions["local"]
    shown = cli(isolated_home, "turns", "list", "local")
    assert shown.exit_code == 0, shown.output
    assert "interrupted_by_user" in shown.output and "You stopped this turn." in shown.output
    [row] = json.loads(cli(isolated_home, "turns", "list", sid, "--json").output)
    assert (row["outcome"], row["reason"], row["explanation"]) == (
        "interrupted", "interrupted_by_user", "You stopped this turn.")
    [item] = api.get(f"/api/sessions/{sid}/turns").json()["items"]
    assert item["reason"] == "interrupted_by_user" and item["explanation"] == "You stopped this turn."


def test_a_container_or_ssh_session_is_refused_on_every_surface_while_a_local_one_restores(sessions, isolated_home,
                                                                                          api, away):
    reason = REASONS[away]
    boxed, boxed_tree = sessions["boxed"]
    for args in (["diff", "boxed", "1"], ["restore", "boxed", "1"], ["restore", "boxed", "1", "--force"]):
        result = cli(isolated_home, "checkpoints", *args)
        assert result.exit_code == 1 and reason in result.output, result.output
    assert reason in cli(isolated_home, "checkpoints", "list", "boxed").output
    for method, path in (("get", "diff"), ("post", "restore")):
        response = getattr(api, method)(f"/api/sessions/{boxed}/checkpoints/1/{path}")
        assert response.status_code == 409 and reason in response.json()["message"]
    assert reason in api.get(f"/api/sessions/{boxed}/checkpoints").json()["environment"]["refusal"]
    with open_store(home=isolated_home) as store:
        assert reason in rollback_command(Checkpoints(store), boxed, "1")
    assert (boxed_tree / "app.py").read_text() == "agent\n"

    local, local_tree = sessions["local"]
    diff = cli(isolated_home, "checkpoints", "diff", "local", "1")
    assert diff.exit_code == 0 and "-original" in diff.output and "+agent" in diff.output
    assert api.get(f"/api/sessions/{local}/checkpoints/1/diff").json()["changes"][0]["change"] == "modified"
    restored = cli(isolated_home, "checkpoints", "restore", "local", "1")
    assert restored.exit_code == 0 and "restored\tapp.py" in restored.output
    assert (local_tree / "app.py").read_text() == "original\n"
    # The restore checkpointed the tree first: the API puts the agent's version back.
    body = api.post(f"/api/sessions/{local}/checkpoints/2/restore").json()
    assert body["restored"] and (local_tree / "app.py").read_text() == "agent\n"


def test_a_restore_that_would_clobber_a_persons_edit_is_refused_on_the_cli_and_the_api(sessions, isolated_home,
                                                                                       api):
    local, tree = sessions["local"]
    (tree / "app.py").write_text("the person's edit\n")
    refused = cli(isolated_home, "checkpoints", "restore", "local", "1")
    assert refused.exit_code == 1 and "app.py (changed since the agent's last write)" in refused.output
    response = api.post(f"/api/sessions/{local}/checkpoints/1/restore")
    assert response.status_code == 409
    assert response.json()["detail"]["files"][0]["status"] == "refused"
    assert (tree / "app.py").read_text() == "the person's edit\n"
    forced = api.post(f"/api/sessions/{local}/checkpoints/1/restore", params={"force": "true"})
    assert forced.status_code == 200 and (tree / "app.py").read_text() == "original\n"
