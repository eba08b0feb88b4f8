"""`sessiondb gateway simulate` and `status`: the demo checks itself, the status reads the index."""

from __future__ import annotations

import json
from dataclasses import asdict

from click.testing import CliRunner

from sessiondb import keys
from sessiondb.cli import main
from sessiondb.gateway import Gateway
from sessiondb.gateway import simulate as sim


def test_simulate_stores_every_message_once_in_its_owners_store(tmp_path):
    into = tmp_path / "fleet"
    result = CliRunner().invoke(main, ["gateway", "simulate", "--messages", "400", "--chats", "12",
                                       "--into", str(into), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    checked = report["verified"]
    assert (checked["misplaced"], checked["duplicates"], checked["lost"]) == (0, 0, 0)
    assert set(checked["stored"]) == {"main", "fleet-1", "fleet-2"}
    assert report["wrote"]["deferred"] > 0  # the late profile's first messages waited
    assert checked["total"] == report["wrote"]["acknowledged"] + report["wrote"]["deferred"]


def test_simulate_killed_mid_traffic_recovers_every_acknowledged_message(tmp_path):
    into = tmp_path / "fleet"
    result = CliRunner().invoke(main, ["gateway", "simulate", "--messages", "200000", "--kill-after", "1.5",
                                       "--into", str(into), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["wrote"]["killed"]
    assert report["verified"]["lost"] == 0 and report["verified"]["misplaced"] == 0


def test_status_shows_routes_and_waiting_messages_per_profile(home):
    with Gateway(home, retry_interval=3600) as gw:
        gw.turn_started(keys.build("main", "telegram", "dm", "1"))
        gw.append(keys.build("later", "telegram", "dm", "1"), {"role": "user", "content": "waits"})
    result = CliRunner().invoke(main, ["--home", str(home), "gateway", "status", "--json"])
    assert result.exit_code == 0, result.output
    profiles = json.loads(result.output)["profiles"]
    assert profiles["main"]["running"] == 1
    assert profiles["later"]["spooled"] == 1
    text = CliRunner().invoke(main, ["--home", str(home), "gateway", "status", "--routes"]).output
    assert "agent:main:telegram:dm:1" in text


def test_messages_waiting_in_the_spool_for_a_profile_without_a_home_count_as_kept_not_lost(tmp_path):
    plan = sim.Plan(home=str(tmp_path / "fleet"), messages=120, chats=9, late_at=2.0)  # the late home never appears
    figures = asdict(sim.run(plan))
    checked, state = sim.account(plan.home, plan, figures)
    assert state["profiles"]["fleet-2"]["spooled"] == checked["waiting"] > 0
    assert checked["total"] + checked["waiting"] == figures["acknowledged"] + figures["deferred"]
    assert checked["lost"] == 0
