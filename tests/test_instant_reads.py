"""The read commands on a SQLite ledger run on the sqlite3 module alone (issue 28): SQLAlchemy,
Alembic, pandas and matplotlib are never imported; the schema check needs no Alembic either.
Nor do they import what only a write needs (``ledger.db.writes`` and the model arithmetic it
loads), nor ``importlib.metadata`` (tabulate 0.10 imports it for its version: about three
times the interpreter's start-up, on every table).  Not timed (``bench/startup.py`` times them)."""

from __future__ import annotations

import os
import sqlite3

import pytest
from conftest import REAL, template_copy
from dbutil import imports_after_each, imports_of, loaded_modules

HEAVY = {"sqlalchemy", "alembic", "pandas", "numpy", "matplotlib"}
# modules by their full name, not needed to read
NOT_FOR_READS = {"importlib.metadata", "ledger.db.writes", "ledger.formula", "ledger.ingest"}

READS = [
    ["history"], ["history", "--limit", "3", "--format", "json"], ["history", "--deploy", "fixtures"],
    ["show", "1"], ["export", "1", "2"], ["export", "--format", "csv"], ["diff", "1", "2"], ["check"],
    ["check", "fixtures"], ["runtime", "1"], ["note", "1", "--against", "2"], ["check", "--against", "fixtures"], ["sweep", "max_model_len", "--group", "9"],
    ["deploy", "list"], ["model", "list"], ["db", "current"], ["db", "path"], ["sql", "SELECT count(*) FROM boot"],
    ["predict", "--like", "8", "--tokens", "1000"],
]


@pytest.fixture(scope="module")
def fixture_ledger(tmp_path_factory):
    """A SQLite ledger of every real fixture (boot 8 has a cost per token, boot 9 a group), built
    once per run (``conftest.template_copy``)."""
    def build(path: str) -> None:
        from click.testing import CliRunner

        from ledger.cli import main

        logs = [str(p) for p in sorted(REAL.glob("*.log"))]
        r = CliRunner().invoke(main, ["ingest", "--db", path, "--year", "2026", "--label", "fixtures", *logs])
        assert r.exit_code == 0, r.output

    return template_copy("reads", build, tmp_path_factory)


@pytest.fixture(scope="module")
def reads_loaded(fixture_ledger):
    """Every command of ``READS`` on the fixture ledger, run in turn in one fresh interpreter
    (``dbutil.imports_after_each``, one process for the 19 instead of one each): the exit code of
    each, the modules (full names) loaded after each, and its stderr. Loaded modules only add up:
    when none that a read needs not is loaded after a command, that command loaded none itself."""
    return imports_after_each(*([*command, "--db", fixture_ledger] for command in READS), submodules=True)


@pytest.mark.parametrize("command", READS, ids=lambda c: " ".join(c))
def test_a_read_command_on_sqlite_imports_no_sqlalchemy_nor_what_writes_need(reads_loaded, command):
    codes, loaded, err = reads_loaded
    i = READS.index(command)
    assert codes[i] in (0, 1), err  # it ran (check exits 1 for a finding)
    assert {m.split(".")[0] for m in loaded[i]} & HEAVY | loaded[i] & NOT_FOR_READS == set()


def test_a_read_of_an_older_ledger_says_upgrade_without_importing_alembic(tmp_path):
    import shutil

    old = tmp_path / "old.db"
    shutil.copy(REAL.parent / "ledgers" / "schema-0001-real-boots.db", old)
    codes, modules, err = imports_of(["history", "--db", str(old)])
    assert "run 'ledger db upgrade' first" in err
    assert codes == [2] and modules & HEAVY == set()


def test_the_migration_scripts_revisions_read_without_alembic_are_alembics():
    from ledger.db.migrate import known_revisions
    from ledger.db.sqlite import script_revisions

    assert script_revisions() == set(known_revisions())


def test_a_ledger_of_a_newer_revision_is_refused_as_newer(tmp_path, cli):
    path = tmp_path / "l.db"
    assert cli("ingest", "--db", str(path), str(sorted(REAL.glob("*.log"))[0])).exit_code == 0
    con = sqlite3.connect(path)
    con.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    con.commit()
    con.close()
    from click.testing import CliRunner

    from ledger.cli import main

    r = CliRunner().invoke(main, ["history", "--db", str(path)])
    assert r.exit_code == 2
    assert "newer than this version of ledger knows" in r.stderr


def test_the_read_queries_give_the_same_objects_on_sqlite3_and_on_sqlalchemy(fixture_ledger):
    """The SQL text is one for both connections: a ledger opened to write reads through
    SQLAlchemy, one opened to read through sqlite3; their history, export and show agree."""
    from ledger.db.connect import connect
    from ledger.queries import export, history, show

    plain, orm = connect(fixture_ledger, mode="read"), connect(fixture_ledger, mode="write")
    try:
        assert plain.read_path is not None and orm.read_path is None
        with orm.reading() as r:
            assert r.sqlalchemy
        assert history(plain) == history(orm)
        assert export(plain) == export(orm)
        assert show(plain, "9") == show(orm, "9")
    finally:
        plain.dispose()
        orm.dispose()


# what --help and a Tab need not load: the ledger's reading, the tables, the metadata
NOT_FOR_HELP = {"ledger.queries", "tabulate", "importlib.metadata", "sqlalchemy"}


@pytest.mark.parametrize("args", [["--help"], ["history", "--help"], ["show", "--help"]], ids=" ".join)
def test_help_opens_no_ledger(args):
    codes, modules, out = loaded_modules(args)
    assert codes == [0] and "Usage:" in out
    assert modules & (NOT_FOR_HELP | {"sqlite3"}) == set()


def test_completing_a_boot_reads_the_ledger_without_its_queries(fixture_ledger):
    env = {**os.environ, "LEDGER_DB": fixture_ledger, "_LEDGER_COMPLETE": "bash_complete",
           "COMP_WORDS": "ledger show ", "COMP_CWORD": "2"}
    codes, modules, out = loaded_modules([], env=env)
    assert codes == [0]
    assert "plain,1" in out.splitlines()  # boot 1 offered
    assert modules & NOT_FOR_HELP == set()
