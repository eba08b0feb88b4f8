"""docs/names.md's table is checked against the four faces. Each library name resolves in
the package, each CLI command is in the parser, each HTTP route is served, each MCP tool is
listed, and each old spelling still works. It also works the other way: a command, route
or tool that the table leaves out fails the test, so the table stays the full list."""

from __future__ import annotations

import asyncio
import importlib
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.api import create_app
from sessiondb.cli import main

TABLE = Path(__file__).resolve().parent.parent / "docs" / "names.md"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def read_table() -> list[dict[str, list[str]]]:
    """The table's rows as {column: [the backticked spellings in that cell]}."""
    lines = [line for line in TABLE.read_text().splitlines() if line.startswith("|")]
    header = [cell.strip().split(" ")[0] for cell in lines[0].strip("|").split("|")]
    assert header == ["concept", "library", "CLI", "HTTP", "MCP", "old"], header
    return [{column: re.findall(r"`([^`]+)`", cell) for column, cell in zip(header, line.strip("|").split("|"))}
            for line in lines[2:]]


ROWS = read_table()


def spellings(column: str) -> list[str]:
    return [name for row in ROWS for name in row[column]]


def old(face: str) -> list[str]:
    """The old spellings of one face: a CLI command starts with `sessiondb `, a route with
    its HTTP method, and anything else is an MCP tool."""
    def face_of(name: str) -> str:
        return "CLI" if name.startswith("sessiondb ") else "HTTP" if name.split(" ")[0] in METHODS else "MCP"
    return [name for name in spellings("old") if face_of(name) == face]


# --- the CLI --------------------------------------------------------------------------------------

def cli_command(spelling: str) -> tuple[click.Command, list[str]]:
    """The command that `sessiondb WORDS --options` names, and the options that follow."""
    words = spelling.split(" ")
    assert words[0] == "sessiondb", spelling
    command, options = main, [w for w in words[1:] if w.startswith("-")]
    for word in (w for w in words[1:] if not w.startswith("-")):
        assert isinstance(command, click.Group) and word in command.commands, f"no CLI command `{spelling}`"
        command = command.commands[word]
    return command, options


def visible_commands(group: click.Group = main, path: str = "sessiondb") -> set[str]:
    found = set()
    for name, command in group.commands.items():
        if command.hidden:
            continue
        if isinstance(command, click.Group):
            found |= visible_commands(command, f"{path} {name}")
        else:
            found.add(f"{path} {name}")
    return found


@pytest.mark.parametrize("spelling", spellings("CLI"))
def test_each_cli_name_in_the_table_is_a_command_of_the_parser(spelling):
    command, options = cli_command(spelling)
    assert not command.hidden, f"`{spelling}` is hidden: an old spelling belongs in the last column"
    given = {option for param in command.params for option in getattr(param, "opts", [])}
    assert set(options) <= given, f"`{spelling}`: {command.name} has no option {set(options) - given}"


def test_every_cli_command_is_in_the_table():
    listed = {cli_command(spelling)[0] for spelling in spellings("CLI")}
    missing = {path for path in visible_commands() if cli_command(path)[0] not in listed}
    assert not missing, f"commands missing from docs/names.md: {sorted(missing)}"


@pytest.mark.parametrize("spelling", old("CLI"))
def test_each_old_cli_name_is_hidden_and_runs_its_new_command(spelling, monkeypatch):
    alias, options = cli_command(spelling)
    if options:  # an option's old name: hidden on the same command (its test runs it: tests/doctor)
        hidden = {opt: param.hidden for param in alias.params for opt in getattr(param, "opts", [])}
        assert all(hidden.get(option) for option in options), f"`{spelling}`: {options} not hidden on {alias.name}"
        return
    assert alias.hidden
    targets = [cli_command(name)[0] for row in ROWS if spelling in row["old"] for name in row["CLI"]]
    assert len(targets) == 1, f"`{spelling}` should be the old name of one command, not {len(targets)}"
    called = []
    monkeypatch.setattr(targets[0], "callback", lambda **kwargs: called.append(kwargs))
    arguments = ["x" for param in alias.params if isinstance(param, click.Argument) and param.required]
    result = CliRunner().invoke(main, [*spelling.split(" ")[1:], *arguments])
    assert result.exit_code == 0, result.output
    assert len(called) == 1, f"`{spelling}` did not run `{targets[0].name}`"
    assert "is now `" in result.stderr and result.stdout == ""


# --- HTTP -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def routes(tmp_path_factory):
    """Every (method, path) the API serves under /api, with its OpenAPI operation (every
    /api route is in the schema; only the dashboard's own files are left out of it)."""
    schema = create_app(tmp_path_factory.mktemp("home")).openapi()
    return {(method.upper(), path): operation for path, item in schema["paths"].items()
            for method, operation in item.items() if path.startswith("/api/")}


def route_key(spelling: str) -> tuple[str, str]:
    method, path = spelling.split(" ")
    return method, path


@pytest.mark.parametrize("spelling", spellings("HTTP"))
def test_each_http_name_in_the_table_is_a_served_route(spelling, routes):
    route = routes.get(route_key(spelling))
    assert route is not None, f"the API serves no `{spelling}`"
    assert not route.get("deprecated"), f"`{spelling}` is deprecated: an old spelling belongs in the last column"


def test_every_api_route_is_in_the_table(routes):
    listed = {route_key(spelling) for spelling in [*spellings("HTTP"), *old("HTTP")]}
    assert not set(routes) - listed, f"routes missing from docs/names.md: {sorted(set(routes) - listed)}"


@pytest.mark.parametrize("spelling", old("HTTP"))
def test_each_old_route_is_still_served_by_the_new_route_s_handler_and_marked_deprecated(spelling, routes):
    alias = routes.get(route_key(spelling))
    assert alias is not None, f"the old route `{spelling}` is no longer served"
    new = [routes[route_key(name)] for row in ROWS if spelling in row["old"] for name in row["HTTP"]]
    assert [(route["summary"], route["description"]) for route in new] == [(alias["summary"], alias["description"])], \
        f"`{spelling}` is not served by its new route's handler"
    assert alias.get("deprecated")


def test_the_old_message_routes_still_append_and_read(isolated_home):
    from fastapi.testclient import TestClient

    with TestClient(create_app(isolated_home), base_url="http://127.0.0.1:8765") as api:
        s = api.post("/api/sessions", json={"source": "cli", "title": "Notes"}).json()
        old_path, new_path = f"/api/sessions/{s['id']}/messages", f"/api/sessions/{s['id']}"
        milk = {"messages": [{"uid": "n1", "role": "user", "content": "Buy milk"}]}
        stored = api.post(old_path, json=milk)
        assert stored.status_code == 200, stored.text
        again = api.post(f"{new_path}/append", json=milk)
        assert again.json() == stored.json()  # the same message, stored once by either route
        assert api.get(old_path).json() == api.get(f"{new_path}/transcript").json()
        assert [m["uid"] for m in api.get(old_path).json()["items"]] == ["n1"]


# --- MCP ------------------------------------------------------------------------------------------

@pytest.fixture
def mcp_server(isolated_home):
    pytest.importorskip("mcp")
    from sessiondb.mcp.server import build

    with sessiondb.open_store() as store:
        notes = store.create_session("cli", title="Notes")
        store.append(notes.id, {"uid": "n1", "role": "user", "content": "Buy milk"})
        yield build(store, allow_append=True, allow_forget=True), notes.id


def tools_of(server) -> dict[str, object]:
    return {tool.name: tool for tool in asyncio.run(server.list_tools())}


@pytest.mark.parametrize("spelling", spellings("MCP"))
def test_each_mcp_name_in_the_table_is_a_listed_tool(spelling, mcp_server):
    tool = tools_of(mcp_server[0]).get(spelling)
    assert tool is not None, f"the MCP server lists no tool `{spelling}`"
    assert not tool.description.startswith("Deprecated")


def test_every_mcp_tool_is_in_the_table(mcp_server):
    unlisted = set(tools_of(mcp_server[0])) - {*spellings("MCP"), *old("MCP")}
    assert not unlisted, f"tools missing from docs/names.md: {sorted(unlisted)}"


#: A call of each tool that is the same call under its old name, so both answers can be compared.
CALLS = {"search": {"query": "milk"}, "transcript": {"session_id": None},
         "append": {"session_id": None, "role": "user", "content": "Buy bread", "uid": "n2"}}


@pytest.mark.parametrize("spelling", old("MCP"))
def test_each_old_tool_is_listed_as_deprecated_and_answers_as_its_new_name(spelling, mcp_server):
    server, session_id = mcp_server
    [new] = [name for row in ROWS if spelling in row["old"] for name in row["MCP"]]
    tools = tools_of(server)
    assert spelling in tools and tools[spelling].description.startswith("Deprecated")
    arguments = {name: session_id if value is None else value for name, value in CALLS[new].items()}
    by_new = asyncio.run(server.call_tool(new, arguments))
    by_old = asyncio.run(server.call_tool(spelling, arguments))
    assert not by_new.is_error and by_old.structured_content == by_new.structured_content


# --- the library ----------------------------------------------------------------------------------

def resolve(spelling: str) -> object:
    """`Store.transcript`, `turns.Checkpoints.list`...: an attribute path from the package,
    importing submodules on the way."""
    found: object = sessiondb
    for part in spelling.split("."):
        if not hasattr(found, part) and hasattr(found, "__path__"):
            importlib.import_module(f"{found.__name__}.{part}")
        assert hasattr(found, part), f"the library has no `{spelling}`"
        found = getattr(found, part)
    return found


@pytest.mark.parametrize("spelling", spellings("library"))
def test_each_library_name_in_the_table_exists(spelling):
    assert callable(resolve(spelling))


def test_an_mcp_tool_is_named_as_its_library_call():
    for row in ROWS:
        calls = {name.split(".")[-1] for name in row["library"]}
        for tool in row["MCP"]:
            assert tool in calls, f"MCP `{tool}` should be named as the library names it: {sorted(calls)}"
