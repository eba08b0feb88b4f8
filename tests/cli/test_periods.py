"""A period on the command line is read with its unit (30m, 12h, 90d, 2w), and a bare
number in the option's own unit: days for `sessions prune --older-than`, as it always was."""

from __future__ import annotations

from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.testing import FakeClock

IDLE_SINCE = 1_600_000_000.0  # 2020: more than a year, and less than ten, before any run of these tests


def test_prune_reads_a_bare_number_as_days_and_a_period_by_its_unit(tmp_path):
    with sessiondb.open_store(home=tmp_path, clock=FakeClock(IDLE_SINCE)) as store:
        idle = store.create_session("cli", title="idle since 2020")

    def pruned(older_than):
        result = CliRunner().invoke(main, ["--home", str(tmp_path), "sessions", "prune", "--older-than", older_than,
                                           "--dry-run"])
        assert result.exit_code == 0, result.output
        return [line.strip() for line in result.output.splitlines()[1:-1]]

    assert pruned("3650") == pruned("520w") == []  # ten years
    assert pruned("52w") == pruned("365") == [idle.id]
    refused = CliRunner().invoke(main, ["--home", str(tmp_path), "sessions", "prune", "--older-than", "a year"])
    assert refused.exit_code == 2 and "or a number of days" in refused.output
