"""The API mirrors the CLI for maintenance (S-19, S-43): optimize, vacuum, prune and backup
routes; the rewrites refused with 409 and the holders while another process holds the store,
in the CLI's words, forced with a warning, a dry run never refused; a prune runs beside the
holder. Against a real `sessiondb serve` process, with a real holder process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main

HOLD = "import sys, sessiondb\ns = sessiondb.open_store(home=sys.argv[1])\nprint('holding', flush=True)\nsys.stdin.read()\n"


@pytest.fixture
def holder(server):
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(server.home)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "holding"
    yield process
    process.stdin.close()
    process.wait(timeout=30)


@pytest.mark.parametrize("route", ["optimize", "vacuum"])
def test_maintenance_is_refused_with_the_holders_while_another_process_holds_the_store(api, server, holder, route):
    refused = api.post(f"/api/{route}")

    assert refused.status_code == 409, refused.text
    error = refused.json()
    assert error["code"] == "store_held"
    assert any(f"PID {holder.pid}" in h for h in error["detail"]["holders"])
    cli = CliRunner().invoke(main, ["--home", str(server.home), "sessions", route])
    assert cli.exit_code == 1
    assert f"{route} refused:" in error["message"] and f"{route} refused:" in cli.output

    dry = api.post(f"/api/{route}", params={"dry_run": True})
    assert dry.status_code == 200 and dry.json()["dry_run"] is True
    forced = api.post(f"/api/{route}", params={"force": True})
    assert forced.status_code == 200, forced.text
    assert any(str(holder.pid) in w for w in forced.json()["warnings"])


def test_a_prune_runs_beside_another_process_holding_the_store(api, server, holder):
    with sessiondb.open_store(home=server.home) as store:
        first = store.create_session("cli").id
    pruned = api.post("/api/prune", json={"older_than_days": 0})
    assert pruned.status_code == 200, pruned.text
    assert first in pruned.json()["sessions"] and pruned.json()["warnings"] == []
    with sessiondb.open_store(home=server.home) as store:
        second = store.create_session("cli").id
    cli = CliRunner().invoke(main, ["--home", str(server.home), "sessions", "prune", "--older-than", "0", "--yes"])
    assert cli.exit_code == 0, cli.output
    assert second in cli.output and first not in cli.output


def test_maintenance_runs_when_nobody_else_holds_the_store(api):
    for route in ("optimize", "vacuum"):
        done = api.post(f"/api/{route}")
        assert done.status_code == 200, done.text
        assert done.json()["action"] == route and done.json()["dry_run"] is False
    pruned = api.post("/api/prune", json={"never_active": True, "dry_run": True})
    assert pruned.status_code == 200 and pruned.json()["action"] == "prune"
    assert api.post("/api/prune", json={}).status_code == 422  # say what to prune


def test_a_backup_route_writes_a_consistent_copy_into_the_profiles_backups_folder(api, server):
    made = api.post("/api/backup", params={"profile": "demo"}, json={"name": "before-upgrade.db"})

    assert made.status_code == 201, made.text
    copy = Path(made.json()["backup"])
    assert copy == server.home / "profiles" / "demo" / "backups" / "before-upgrade.db"
    with sessiondb.open_store(home=server.home, profile="demo") as live:
        expected = live.stats().sessions
    with sessiondb.open_store(copy) as store:
        assert expected > 0 and store.stats().sessions == expected
    assert api.post("/api/backup", params={"profile": "demo"}, json={"name": "before-upgrade.db"}).status_code == 422
    for bad in ("../escape.db", "/tmp/x.db", ".hidden", "state.db.forensic-1", "é" * 150, "a\x00b"):
        assert api.post("/api/backup", json={"name": bad}).status_code == 422, bad
    assert api.post("/api/backup").status_code == 201
