"""Old ledgers: a ledger written by the first schema revision (with real boots in it) is backed
up and upgraded on open, keeps every row, and works with the views of the current schema."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from conftest import ROOT

from ledger.db.columns import HEAD_REVISION
from ledger.db.connect import connect


def open_ledger(db):
    return connect(db, mode="write")

OLD = ROOT / "fixtures" / "ledgers" / "schema-0001-real-boots.db"
TABLES = ("deploy", "boot", "shape", "fact", "failure", "runtime_sample")


def columns(path) -> dict[str, list[str]]:
    con = sqlite3.connect(path)
    try:
        return {t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    finally:
        con.close()


def dump(path, cols: dict[str, list[str]]) -> dict[str, list[tuple]]:
    """Every row of every table, in the columns of the old schema."""
    con = sqlite3.connect(path)
    try:
        return {t: con.execute(f"SELECT {', '.join(cols[t])} FROM {t} ORDER BY id").fetchall() for t in TABLES}
    finally:
        con.close()


@pytest.fixture
def old_copy(tmp_path):
    target = tmp_path / "ledger.db"
    shutil.copy(OLD, target)
    return target


def test_the_fixture_is_a_first_revision_ledger():
    con = sqlite3.connect(OLD)
    assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [("0001_initial",)]
    assert con.execute("SELECT count(*) FROM boot").fetchone() == (6,)
    con.close()


def test_upgrade_keeps_every_row_and_writes_a_backup_first(old_copy):
    old_columns = columns(old_copy)
    before = dump(old_copy, old_columns)
    assert sum(len(rows) for rows in before.values()) > 100
    ledger = open_ledger(str(old_copy))
    ledger.dispose()
    assert ledger.backup is not None and ledger.backup.parent == old_copy.parent
    assert ledger.backup.name.startswith("ledger.db.0001_initial.")
    assert dump(ledger.backup, old_columns) == before  # the backup is the old ledger as it was
    assert dump(old_copy, old_columns) == before  # and every row survived the upgrade
    con = sqlite3.connect(old_copy)
    assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD_REVISION,)]
    # shape values gained their plain-text form
    assert con.execute("SELECT value_text FROM shape WHERE key = 'kv_cache_dtype' AND boot_id = 2").fetchall() == [("fp8",)]
    assert con.execute("SELECT count(*) FROM shape WHERE value_text IS NULL AND value != 'null'").fetchone() == (0,)
    con.close()


def test_the_views_work_on_the_upgraded_ledger(old_copy):
    open_ledger(str(old_copy)).dispose()
    con = sqlite3.connect(old_copy)
    rows = con.execute("SELECT boot_id, kv_budget_source, kv_cache_tokens FROM kv_cost_per_token ORDER BY boot_id").fetchall()
    con.close()
    assert rows[0] == (1, "available_kv_cache_bytes", 67728.0)
    assert [r[0] for r in rows] == [1, 5, 6]


def test_the_cli_says_it_upgraded_and_where_the_backup_is(old_copy, cli):
    # a command that writes upgrades (read commands never do: test_read_commands_never_write)
    r = cli("ingest", "--db", str(old_copy), str(ROOT / "fixtures" / "real" /
                                               "008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log"))
    assert r.exit_code == 0
    assert "ledger: upgraded the schema; backup of the old ledger at" in r.output
    r = cli("history", "--db", str(old_copy), "--format", "csv")
    assert len([line for line in r.output.splitlines() if line[:1].isdigit()]) == 6


def test_a_read_command_on_an_old_ledger_says_to_upgrade_and_writes_nothing(old_copy, cli):
    before = old_copy.read_bytes()
    for args in (["history"], ["sql", "select 1"], ["export"]):
        r = cli(*args, "--db", str(old_copy))
        assert r.exit_code == 2 and "run 'ledger db upgrade'" in r.output and "Traceback" not in r.output
    assert old_copy.read_bytes() == before
    assert sorted(p.name for p in old_copy.parent.iterdir()) == ["ledger.db"]  # no .bak


def test_db_upgrade_command_on_an_old_ledger(old_copy, cli):
    r = cli("db", "upgrade", "--db", str(old_copy))
    assert r.output.splitlines()[0] == f"upgraded 0001_initial -> {HEAD_REVISION}"
    assert r.output.splitlines()[1].startswith("backup: ")


def test_reingesting_a_file_after_the_upgrade_stores_nothing(old_copy, cli):
    r = cli("ingest", "--db", str(old_copy), str(ROOT / "fixtures" / "real" /
                                               "008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log"))
    assert "already in the ledger" in r.output
    con = sqlite3.connect(old_copy)
    assert con.execute("SELECT count(*) FROM boot").fetchone() == (6,)
    con.close()


def test_an_ingest_upgrades_an_old_ledger_says_so_and_stores(old_copy, cli):
    log = next(p for p in sorted((ROOT / "fixtures" / "real").glob("*.log")) if not p.name.startswith("008_"))
    r = cli("ingest", "--db", str(old_copy), "--year", "2026", str(log))
    assert r.exit_code == 0
    assert "ledger: upgraded the schema; backup of the old ledger at" in r.output
    assert list(old_copy.parent.glob("ledger.db.0001_initial.*.bak"))
    con = sqlite3.connect(old_copy)
    assert con.execute("SELECT version_num FROM alembic_version").fetchone() == (HEAD_REVISION,)
    assert con.execute("SELECT count(*) FROM boot").fetchone() == (7,)  # six before, and this one
    con.close()


def _killed_upgrade(path, where: str) -> None:
    """``ledger db upgrade`` SIGKILLed at ``where``: in the migration (the backup written, the
    new schema not committed), or in the backup's copy."""
    import subprocess
    import sys

    code = ("import os, signal, sys\n"
            "def die(*args, **kwargs):\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "if sys.argv[2] == 'migration':\n"
            "    import alembic.command\n"
            "    alembic.command.upgrade = die\n"
            "else:\n"
            "    import sqlite3\n"
            "    real = sqlite3.connect\n"
            "    class Dying(sqlite3.Connection):\n"
            "        def backup(self, target, **kwargs):\n"
            "            super().backup(target, pages=1, progress=lambda *a: die())\n"
            "    sqlite3.connect = lambda *a, **k: real(*a, factory=Dying, **k)\n"
            "from ledger.cli import main\n"
            "main(['--db', sys.argv[1], 'db', 'upgrade'])\n")
    done = subprocess.run([sys.executable, "-c", code, str(path), where], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == -9, done.stderr


@pytest.mark.parametrize("where", ["migration", "backup"])
def test_a_killed_upgrade_leaves_one_backup(old_copy, cli, where):
    import time

    old_columns = columns(old_copy)
    before = dump(old_copy, old_columns)
    _killed_upgrade(old_copy, where)
    assert dump(old_copy, old_columns) == before  # the ledger as it was
    time.sleep(1.1)  # the backups' names carry the time to the second: the next one differs
    r = cli("db", "upgrade", "--db", str(old_copy))
    assert r.exit_code == 0 and r.output.startswith("upgraded 0001_initial"), r.output
    backups = list(old_copy.parent.glob("ledger.db.0001_initial.*.bak"))
    assert len(backups) == 1, backups
    assert dump(backups[0], old_columns) == before
    assert sorted(p.name for p in old_copy.parent.iterdir()) == sorted(["ledger.db", backups[0].name])
    assert r.output.splitlines()[1] == f"backup: {backups[0]}"
