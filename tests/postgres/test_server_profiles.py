"""The profiles a PostgreSQL server holds, through the library and the CLI: listed by the
names their schemas record, created and deleted on purpose, never by a typo, and a
deletion refused while another process has the profile's store open."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb import profiles
from sessiondb.cli import main
from sessiondb.errors import InvalidInput, NotFound, StoreHeld
from sessiondb.store.postgres import migrations
from sessiondb.store.postgres.connect import schema_for
from sessiondb.store.postgres.migrations import MIGRATIONS


def schemas(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'sessiondb%'")}


def cli(*args, env=None, input=None):
    return CliRunner().invoke(main, list(args), env=env, input=input)


def test_a_servers_profiles_are_listed_by_name_created_and_deleted(pg_database):
    assert profiles.list_profiles(url=pg_database) == ["main"]
    profiles.create("work-bot", url=pg_database)  # a name its schema cannot spell: recorded (0010)
    profiles.create("alpha", url=pg_database)
    assert profiles.list_profiles(url=pg_database) == ["main", "alpha", "work-bot"]
    with sessiondb.open_store(pg_database, profile="work-bot") as store:
        store.create_session("cli", title="kept apart")
    with pytest.raises(InvalidInput, match="already exists"):
        profiles.create("alpha", url=pg_database)
    assert profiles.delete("alpha", url=pg_database) == "sessiondb_alpha"
    assert profiles.list_profiles(url=pg_database) == ["main", "work-bot"]
    assert "sessiondb_alpha" not in schemas(pg_database)
    with pytest.raises(NotFound, match="no profile 'alpha'"):
        profiles.delete("alpha", url=pg_database)
    with pytest.raises(InvalidInput, match="'main' is the default store"):
        profiles.delete("main", url=pg_database)
    with sessiondb.open_store(pg_database, profile="work-bot") as store:
        assert [s.title for s in store.list_sessions().items] == ["kept apart"]


def test_a_schema_is_a_profile_only_when_named_as_one(pg_database):
    sessiondb.open_store(pg_database, schema="reports").close()
    assert profiles.list_profiles(url=pg_database) == ["main"]
    sessiondb.open_store(pg_database, schema="sessiondb_audit").close()  # where `-p audit` opens
    assert profiles.list_profiles(url=pg_database) == ["main", "audit"]


def test_a_profile_from_before_0010_is_listed_by_its_schema_and_then_by_its_record(pg_database, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:9])
    for name in ("plain", "with-dash"):
        sessiondb.open_store(pg_database, profile=name).close()
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS)
    # Nothing recorded yet: a schema is listed by the name it spells, when only that name opens
    # it. `with-dash`'s schema is hashed (`with_dash_<hash>`), a name refused as a profile
    # since it would open another's store: it is listed once its profile opens it and records it.
    spelled = schema_for("with-dash").removeprefix("sessiondb_")
    assert profiles.list_profiles(url=pg_database) == ["main", "plain"]
    with pytest.raises(InvalidInput, match="choose another name"):
        sessiondb.open_store(pg_database, profile=spelled)
    sessiondb.open_store(pg_database, profile="with-dash").close()  # the upgrade to 0010 records it
    assert profiles.list_profiles(url=pg_database) == ["main", "plain", "with-dash"]


HOLDER = """
import sys, sessiondb
with sessiondb.open_store(sys.argv[1], profile="work") as store:
    store.stats()
    print("ready", flush=True)
    sys.stdin.read()
"""


def test_deleting_a_profile_is_refused_while_another_process_has_its_store_open(pg_database):
    profiles.create("work", url=pg_database)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, pg_database], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with psycopg.connect(pg_database) as conn:
            (server_pid,) = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = "
                                         "'sessiondb:sessiondb_work'").fetchone()
        with pytest.raises(StoreHeld, match=f"in use by server process {server_pid}"):
            profiles.delete("work", url=pg_database)
        assert "sessiondb_work" in schemas(pg_database)
    finally:
        holder.communicate("", timeout=30)
    assert profiles.delete("work", url=pg_database) == "sessiondb_work"


# --- the CLI ------------------------------------------------------------------------------


def test_the_cli_manages_a_servers_profiles_with_store_and_uses_them_with_p(pg_database):
    assert cli("--store", pg_database, "profiles", "create", "work").exit_code == 0
    listed = json.loads(cli("--store", pg_database, "profiles", "list", "--json").output)
    assert [p["name"] for p in listed] == ["main", "work"] and "password" not in listed[0]["server"]
    with sessiondb.open_store(pg_database, profile="work") as store:
        s = store.create_session("cli", title="Trip")
        store.append(s.id, {"role": "user", "content": "kyoto in april"})
    found = cli("--store", pg_database, "-p", "work", "sessions", "search", "kyoto", "--json")
    assert found.exit_code == 0 and json.loads(found.output)[0]["session_id"] == s.id
    assert cli("--store", pg_database, "sessions", "list").output.strip() == "no sessions"  # main: another schema
    declined = cli("--store", pg_database, "profiles", "delete", "work", input="n\n")
    assert declined.exit_code == 1 and "sessiondb_work" in schemas(pg_database)
    assert cli("--store", pg_database, "profiles", "delete", "work", "--yes").exit_code == 0
    assert "sessiondb_work" not in schemas(pg_database)


@pytest.mark.parametrize("args", [["sessions", "list"], ["sessions", "search", "kyoto"], ["sessions", "export"]],
                         ids=" ".join)
def test_a_mistyped_profile_on_a_server_is_one_line_and_creates_no_schema(pg_database, args):
    profiles.create("work", url=pg_database)
    before = schemas(pg_database)
    result = cli("--store", pg_database, "-p", "wrok", *args)
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.strip().splitlines()
    assert "no profile 'wrok' on postgresql://" in line and "(profiles: work)" in line
    assert "profiles create wrok`" in line and "--store 'postgresql://" in line
    assert schemas(pg_database) == before


def test_sessiondb_url_is_the_store_unless_a_home_is_given(pg_database, tmp_path):
    with sessiondb.open_store(pg_database) as store:
        store.create_session("cli", title="on the server")
    env = {"SESSIONDB_URL": pg_database}
    assert "on the server" in cli("sessions", "list", env=env).output
    with_home = cli("--home", str(tmp_path / "home"), "sessions", "list", env=env)
    assert with_home.exit_code == 0 and with_home.output.strip() == "no sessions"
    both = cli("--home", str(tmp_path / "home"), "--store", pg_database, "sessions", "list")
    assert both.exit_code == 2 and "give --home or --store, not both" in both.output
    # a profile missing on the server is named with plain `sessiondb`: the URL comes from the environment
    missing = cli("-p", "wrok", "sessions", "list", env=env)
    assert missing.exit_code == 1 and "`sessiondb profiles create wrok`" in missing.stderr


def test_a_store_file_given_by_store_has_no_profiles(tmp_path):
    path = str(tmp_path / "one.db")
    sessiondb.open_store(path).close()  # a store file is made by its program (--store creates none)
    assert cli("--store", path, "sessions", "list").output.strip() == "no sessions"
    refused = cli("--store", path, "profiles", "list")
    assert refused.exit_code == 1 and "one store file" in refused.stderr


def test_two_profile_names_never_share_a_schema(pg_database):
    hashed = schema_for("team-alpha")  # a name its schema cannot spell: it ends in a hash
    look_alike = hashed[len("sessiondb_"):]
    assert look_alike.startswith("team_alpha_")
    profiles.create("team-alpha", url=pg_database)
    with sessiondb.open_store(pg_database, profile="team-alpha") as store:
        store.create_session("cli", title="alpha's own")
    for name in (look_alike, "extensions"):
        with pytest.raises(InvalidInput, match="choose another name"):
            profiles.create(name, url=pg_database)
        with pytest.raises(InvalidInput, match="choose another name"):
            sessiondb.open_store(pg_database, profile=name)
        done = cli("--store", pg_database, "-p", name, "sessions", "list")
        assert done.exit_code != 0 and "choose another name" in done.output, done.output
    with pytest.raises(InvalidInput, match="extensions every profile shares"):
        sessiondb.open_store(pg_database, schema="sessiondb_extensions")
    assert profiles.list_profiles(url=pg_database) == ["main", "team-alpha"]
    with sessiondb.open_store(pg_database, profile="team-alpha") as store:
        assert [s.title for s in store.list_sessions().items] == ["alpha's own"]
