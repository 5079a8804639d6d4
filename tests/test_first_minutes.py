"""The first ten minutes (issue 23): what a new user meets on a terminal — colour that survives
Debian's pager, one-line usage errors, honest words where a log has nothing to say, and the
Datasette metadata shipped with the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import SYNTH

RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"


def _through_a_terminal(args: list[str], env: dict[str, str], keys: str = "q") -> str:
    """What a person sees when ``args`` runs on a real terminal (util-linux ``script`` gives it
    a pty); ``keys`` are typed to it (``q`` quits less)."""
    command = " ".join(["exec", sys.executable, "-m", "ledger", *args])
    run = subprocess.run(["script", "-qec", command, "/dev/null"], input=keys, text=True,
                         capture_output=True, env=env, timeout=60)
    return run.stdout


@pytest.mark.skipif(not (shutil.which("script") and shutil.which("less")), reason="needs script and less")
def test_show_in_debians_less_shows_colour_not_escape_codes(tmp_path):
    ledger = tmp_path / "l.db"
    subprocess.run([sys.executable, "-m", "ledger", "ingest", "--db", str(ledger), "--year", "2026",
                    str(RESTART)], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PAGER", "LESS", "NO_COLOR", "MANPAGER")}
    env.update(TERM="xterm", COLUMNS="100", LINES="10")
    screen = _through_a_terminal(["--db", str(ledger), "show", "1"], env)
    assert "failed" in screen
    assert "ESC[" not in screen  # less without -R prints the escapes as text
    assert "\x1b[31m" in screen or "\x1b[1;31m" in screen or "\x1b[31;1m" in screen


def test_the_pager_keeps_a_less_setting_of_the_users_own(monkeypatch):
    import click

    from ledger.render import terminal

    seen: list[str | None] = []
    monkeypatch.setenv("LESS", "-S")
    monkeypatch.setattr(terminal, "_isatty", lambda stream: True)
    monkeypatch.setattr(terminal, "height", lambda stream=None: 5)
    monkeypatch.setattr(click, "echo_via_pager", lambda text, color=None: seen.append(os.environ.get("LESS")))
    terminal.echo_long("\n".join(str(i) for i in range(20)))
    assert seen == ["-S"]


@pytest.mark.parametrize("args, help_of", [
    (["history", "--limit", "-1"], "ledger history"),
    (["history", "--outcome", "readyy"], "ledger history"),
    (["export", "--format", "markdown"], "ledger export"),
    (["histroy"], "ledger"),
    (["deploy", "set"], "ledger deploy set"),
])
def test_a_usage_error_is_one_error_line_and_the_help_hint(args, help_of, tmp_path):
    run = subprocess.run([sys.executable, "-m", "ledger", "--db", str(tmp_path / "l.db"), *args],
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("Error: "), run.stderr
    assert lines[1] == f"Try '{help_of} --help' for help."
