"""Which ledger a command opens: the subcommand's --db, else the group's (``ledger --db X
CMD``), else $LEDGER_DB, else the default file — for every command that opens a ledger, with
the flag in either position and the environment set or unset (issue 20, item 1).

The ledger the user names is the test's ``db`` (SQLite or PostgreSQL); the decoys are SQLite
files that do not exist: $LEDGER_DB's, the default under $XDG_DATA_HOME and, where both flags
are given, the group's.  A command that opened a decoy would say "no ledger here yet" (exit 2)
or, for ingest and db upgrade, create it."""

from __future__ import annotations

import pytest
from conftest import REAL
from dbutil import IS_PG, rows

F008 = next(REAL.glob("008_*.log"))  # one boot with runtime samples
F017 = next(REAL.glob("017_*.log"))

# each command that opens a ledger: its arguments, the exit codes that mean it ran on the
# ledger named (check exits 1 for a finding), and how the named ledger shows a write
COMMANDS: dict[str, tuple[list[str], set[int], str | None]] = {
    "ingest": (["ingest", str(F017)], {0}, "SELECT count(*) FROM boot"),
    "history": (["history"], {0}, None),
    "show": (["show", "1"], {0}, None),
    "export": (["export", "1"], {0}, None),
    "sql": (["sql", "SELECT count(*) FROM boot"], {0}, None),
    "diff": (["diff", "1", "1"], {0}, None),
    "predict": (["predict", "--like", "1", "--tokens", "100000"], {0}, None),
    "check": (["check"], {0, 1}, None),
    "deploy set": (["deploy", "set", "dual", "card_ceiling_bytes=24GiB"], {0},
                   "SELECT count(*) FROM deploy_setting"),
    # the setup sets host_cap_bytes: unsetting a key that is not set is an error of its own
    "deploy unset": (["deploy", "unset", "dual", "host_cap_bytes"], {0}, "SELECT count(*) FROM deploy_setting"),
    "deploy label": (["deploy", "label", "dual", "renamed"], {0}, "SELECT label FROM deploy"),
    "deploy list": (["deploy", "list"], {0}, None),
    "rm": (["rm", "1", "--yes"], {0}, "SELECT count(*) FROM boot"),
    "runtime": (["runtime", "1"], {0}, None),
    "plot runtime": (["plot", "runtime", "1", "-o", "{tmp}/r.png"], {0}, None),
    "plot history": (["plot", "history", "-o", "{tmp}/h.png"], {0}, None),
    "plot deploy": (["plot", "deploy", "dual", "-o", "{tmp}/d.png"], {0}, None),
    "serve": (["serve", "--port", "1"], {0}, None),
    "db upgrade": (["db", "upgrade"], {0}, None),
    "db current": (["db", "current"], {0}, None),
    # a server has no path to print: that refusal is still about the ledger named
    "db path": (["db", "path"], {2} if IS_PG else {0}, None),
}


def _split(command: str, args: list[str]) -> tuple[list[str], list[str]]:
    """The command's words and its arguments, so --db can go between them."""
    words = command.split()
    return args[:len(words)], args[len(words):]


def _dual(db: str) -> None:
    from click.testing import CliRunner

    from ledger.cli import main

    for args in (["ingest", str(F008), "--label", "dual"], ["deploy", "set", "dual", "host_cap_bytes=1GiB"]):
        assert CliRunner().invoke(main, ["--db", db, *args], catch_exceptions=False).exit_code == 0


@pytest.fixture
def setup(filled, tmp_path, monkeypatch):
    filled("dual", _dual)
    decoys = tmp_path / "decoys"
    decoys.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(decoys / "xdg"))
    # serve opens the ledger, then would listen: the listening is not what is tested
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    # plot reads the ledger, then draws: the drawing is not what is tested either (test_plot.py
    # draws), and matplotlib's is most of these tests' time
    from ledger.serve import charts

    monkeypatch.setattr(charts, "runtime_figure", lambda *args, **kwargs: None)
    monkeypatch.setattr(charts, "boots_figure", lambda *args, **kwargs: None)
    monkeypatch.setattr(charts, "save", lambda fig, out: out)
    return decoys


def _check(cli, db, decoys, command, argv, env_decoy):
    args, codes, probe = COMMANDS[command]
    before = rows(db, probe) if probe else None
    r = cli(*argv)
    assert r.exit_code in codes, r.output
    for decoy in ("env.db", "group.db", "xdg/ledger/ledger.db"):
        assert decoy not in r.output
        assert not (decoys / decoy).exists(), f"{command} created {decoy}"
    if probe:
        assert rows(db, probe) != before, f"{command} did not change the ledger named"


@pytest.mark.parametrize("env", ["env set", "env unset"])
@pytest.mark.parametrize("position", ["group", "command", "both"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_flag_names_the_ledger(setup, cli, db, tmp_path, monkeypatch, command, position, env):
    decoys = setup
    if env == "env set":
        monkeypatch.setenv("LEDGER_DB", str(decoys / "env.db"))
    else:
        monkeypatch.delenv("LEDGER_DB")
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command][0]]
    words, rest = _split(command, args)
    if position == "group":
        argv = ["--db", db, *words, *rest]
    elif position == "command":
        argv = [*words, "--db", db, *rest]
    else:  # the subcommand's flag wins over the group's
        argv = ["--db", str(decoys / "group.db"), *words, "--db", db, *rest]
    _check(cli, db, decoys, command, argv, env)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_without_a_flag_the_environment_names_the_ledger(setup, cli, db, tmp_path, command):
    # the db fixture sets LEDGER_DB; the default file (a decoy) must not be opened instead
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command][0]]
    _check(cli, db, setup, command, args, "env set")
