"""The service answers its owner only (S-56): a loopback port is open to every account on
the machine, so `sessiondb serve` always needs a token. Without one given, the owner's own is
made at random in `<home>/serve-token` (0600) and handed to the dashboard through the link
it prints, never through the process list. Against a real `sessiondb serve` process, and,
where the suite runs as root, requests made as the `nobody` account."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from .conftest import SERVE, seed, start, stop
from .test_api import is_error


@pytest.fixture(scope="module")
def owned(tmp_path_factory):
    home = tmp_path_factory.mktemp("owned") / "home"
    seed(home)
    running = start(home)  # no token given: the owner's own
    yield running
    stop(running)


def test_without_a_token_given_the_service_makes_the_owners_and_refuses_everyone_else(owned):
    token_file = owned.home / "serve-token"
    assert stat.S_IMODE(os.lstat(token_file).st_mode) == 0o600
    assert token_file.read_text().strip() == owned.token and len(owned.token) >= 40
    with owned.client(token="") as anyone:
        is_error(anyone.get("/api/sessions"), 401, "unauthorized")
        is_error(anyone.get("/api/profiles"), 401, "unauthorized")
        is_error(anyone.delete("/api/sessions/x"), 401, "unauthorized")
    with owned.client() as owner:
        assert owner.get("/api/sessions", params={"profile": "demo"}).status_code == 200


def test_the_owners_token_is_never_in_the_process_list(owned):
    command_line = Path(f"/proc/{owned.process.pid}/cmdline").read_bytes()
    assert owned.token.encode() not in command_line


def test_the_token_is_kept_across_starts_so_an_open_dashboard_keeps_working(tmp_path):
    first = start(tmp_path / "home")
    stop(first)
    second = start(tmp_path / "home")
    try:
        assert second.token == first.token
    finally:
        stop(second)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None,
                    reason="acting as another account needs root and runuser")
def test_another_local_account_can_neither_use_the_service_nor_read_its_token(owned):
    nobody = pwd.getpwnam("nobody")
    # The machine's own Python (nobody cannot run the suite's venv), with nothing but the stdlib.
    probe = ("import sys, urllib.request, urllib.error\n"
             "try:\n    print(urllib.request.urlopen(sys.argv[1] + '/api/sessions?profile=demo').status)\n"
             "except urllib.error.HTTPError as e:\n    print(e.code)")
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    as_nobody = subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", probe, owned.url],
                               capture_output=True, text=True, timeout=60, cwd="/")
    assert as_nobody.stdout.strip() == "401", as_nobody.stderr
    read = subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(owned.home / "serve-token")],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert read.returncode != 0 and owned.token not in read.stdout
    assert nobody.pw_uid != os.geteuid()


def test_a_token_file_others_can_read_is_refused_before_serving(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("shared-secret\n")
    os.chmod(token_file, 0o644)
    result = subprocess.run(SERVE + ["--home", str(tmp_path / "home"), "serve", "--port", "0",
                                     "--token-file", str(token_file)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "SESSIONDB_UNDER_TEST": "1"})
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "can be read by other accounts" in lines[0] and "chmod 600" in lines[0], result.stderr


def test_a_token_file_that_is_a_link_is_refused(tmp_path):
    real = tmp_path / "real-token"
    real.write_text("secret\n")
    os.chmod(real, 0o600)
    link = tmp_path / "token"
    link.symlink_to(real)
    result = subprocess.run(SERVE + ["--home", str(tmp_path / "home"), "serve", "--port", "0",
                                     "--token-file", str(link)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "SESSIONDB_UNDER_TEST": "1"})
    assert result.returncode == 1 and "cannot read the token" in result.stderr, result.stderr


def test_a_planted_token_file_of_another_account_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("planting a file as another account needs root")
    home = tmp_path / "home"
    home.mkdir()
    planted = home / "serve-token"
    planted.write_text("attackers-token\n")
    os.chmod(planted, 0o600)
    os.chown(planted, pwd.getpwnam("nobody").pw_uid, -1)
    result = subprocess.run(SERVE + ["--home", str(home), "serve", "--port", "0"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "SESSIONDB_UNDER_TEST": "1"})
    assert result.returncode == 1 and "not a regular file of this account's" in result.stderr, result.stderr
