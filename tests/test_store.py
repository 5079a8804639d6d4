"""The ledger database: location, migrate on open, refusal of unknown schemas, models that
match the migrations, one transaction per boot."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from conftest import REAL
from dbutil import imports_of

from ledger.db.columns import HEAD_REVISION
from ledger.db.connect import connect
from ledger.db.location import resolve_url
from ledger.db.migrate import known_revisions
from ledger.errors import LedgerError


def open_ledger(db, **options):
    return connect(db, mode="write", **options)

F008 = next(REAL.glob("008_*.log"))


def test_head_revision_constant_matches_the_migrations():
    assert known_revisions()[0] == HEAD_REVISION


def test_models_match_the_migrated_schema(db):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from ledger.db.models import Base

    ledger = open_ledger(db)
    with ledger.engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    ledger.dispose()
    assert diffs == []


def test_a_new_file_is_created_migrated_and_in_wal_mode(tmp_path):
    path = tmp_path / "sub" / "l.db"
    open_ledger(str(path)).dispose()
    con = sqlite3.connect(path)
    assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD_REVISION,)]
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    con.close()


def _schema(path) -> list[tuple]:
    con = sqlite3.connect(path)
    rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    rows.append(con.execute("SELECT version_num FROM alembic_version").fetchone())
    con.close()
    return rows


def test_a_new_ledger_from_the_template_is_what_the_migrations_build(tmp_path):
    """New SQLite ledgers are built from ledger/migrations/head_sqlite.sql, not by running each
    migration; after a new migration, `python -m ledger.db.schema` writes the file again."""
    from alembic import command
    from sqlalchemy import create_engine

    from ledger.db.migrate import alembic_config

    engine = create_engine(f"sqlite:///{tmp_path / 'migrated.db'}")
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")
    engine.dispose()
    open_ledger(str(tmp_path / "new.db")).dispose()
    assert _schema(tmp_path / "new.db") == _schema(tmp_path / "migrated.db"), "run: python -m ledger.db.schema"


def test_a_new_ledger_does_not_import_alembic(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from ledger.db.connect import connect; connect(sys.argv[1], mode='write').dispose(); "
            "print('alembic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "l.db")], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_an_ingest_does_not_import_sqlalchemy(tmp_path):
    """The ingest writes through the sqlite3 module alone (ledger.db.connect.open_writer): into a new ledger
    and into one at the head revision, SQLAlchemy (a third of a second) is never imported."""
    db = str(tmp_path / "l.db")
    for log in (F008, next(REAL.glob("017_*.log"))):  # a new ledger, then the same one again
        codes, loaded, err = imports_of(["ingest", "--db", db, "--year", "2026", str(log)])
        assert codes == [0], err
        assert loaded & {"sqlalchemy", "alembic", "pandas"} == set()
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM boot").fetchone() == (2,)
    con.close()


@pytest.fixture
def newer_ledger(tmp_path):
    """A ledger whose schema revision this version of ledger does not know."""
    path = tmp_path / "l.db"
    open_ledger(str(path)).dispose()
    con = sqlite3.connect(path)
    con.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    con.commit()
    con.close()
    return path


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_ingest_into_a_newer_ledger_is_refused_untouched(newer_ledger, cli):
    before = _digest(newer_ledger)
    r = cli("ingest", "--db", str(newer_ledger), str(F008))
    assert r.exit_code == 2 and "newer than this version of ledger knows" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert _digest(newer_ledger) == before


def test_plain_sqlite_paths_are_opened_without_sqlalchemy():
    from pathlib import Path

    from ledger.db.location import plain_sqlite_path

    assert plain_sqlite_path("sqlite:////srv/ledger.db") == Path("/srv/ledger.db")
    assert plain_sqlite_path("sqlite:///relative.db") == Path("relative.db")
    for url in ("sqlite:///l.db?mode=ro", "sqlite:///:memory:", "sqlite://", "sqlite+pysqlite:////x.db",
                "postgresql+psycopg://u@h/db"):
        assert plain_sqlite_path(url) is None, url


def test_foreign_keys_and_busy_timeout_are_on(tmp_path):
    ledger = open_ledger(str(tmp_path / "l.db"))
    with ledger.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    ledger.dispose()


def test_the_ingest_writer_has_the_same_settings(tmp_path):
    from ledger.db.connect import open_writer

    writer = open_writer(str(tmp_path / "l.db"))
    pragmas = [writer.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("foreign_keys", "busy_timeout", "journal_mode")]
    writer.close()
    assert pragmas == [1, 30000, "wal"]


def test_a_ledger_from_a_newer_schema_is_refused_and_left_alone(newer_ledger):
    before = _digest(newer_ledger)
    with pytest.raises(LedgerError, match="newer than this version of ledger knows"):
        open_ledger(str(newer_ledger))
    assert _digest(newer_ledger) == before


def test_a_directory_is_not_a_ledger(tmp_path):
    with pytest.raises(LedgerError, match="is a directory"):
        open_ledger(str(tmp_path))


def test_a_text_file_is_not_a_ledger(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    with pytest.raises(LedgerError, match="not an SQLite file"):
        open_ledger(str(p))


def test_paths_and_urls(monkeypatch, tmp_path):
    monkeypatch.delenv("LEDGER_DB", raising=False)
    assert resolve_url(str(tmp_path / "x.db")) == f"sqlite:///{tmp_path}/x.db"
    assert resolve_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    monkeypatch.setenv("LEDGER_DB", "/srv/ledger.db")
    assert resolve_url(None) == "sqlite:////srv/ledger.db"


def test_db_current_and_upgrade_commands(db, cli):
    cli("ingest", str(F008))
    assert cli("db", "current").output.strip().endswith(f"{HEAD_REVISION} (head)")
    assert cli("db", "upgrade").output.strip() == f"already at {HEAD_REVISION}"


def test_db_current_without_a_ledger_says_so(tmp_path, cli):
    r = cli("db", "current", "--db", str(tmp_path / "none.db"))
    assert r.exit_code == 2 and "no ledger here yet" in r.output


def test_a_boot_that_fails_to_store_leaves_nothing(tmp_path):
    """One transaction per boot: an error half-way through (the boot row and two facts are
    written when the third fact breaks a constraint) writes no part of the boot."""
    from ledger import parsers
    from ledger.db import writes as writing
    from ledger.db.connect import open_writer

    writer = open_writer(str(tmp_path / "l.db"))
    boot = parsers.parse_file(str(F008), year=2026)[0]
    boot.facts[2].unit = None  # fact.unit is NOT NULL
    with pytest.raises(sqlite3.IntegrityError, match="fact.unit"):
        writing.store_boot(writer, boot, str(F008), "f" * 64, writing.DeployInfo())
    writer.close()
    con = sqlite3.connect(tmp_path / "l.db")
    assert con.execute("SELECT count(*) FROM boot").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM fact").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM deploy").fetchone() == (0,)
    con.close()


def test_a_fact_value_that_is_not_a_number_is_refused(tmp_path):
    from ledger import parsers
    from ledger.db import writes as writing
    from ledger.db.connect import open_writer

    writer = open_writer(str(tmp_path / "l.db"))
    boot = parsers.parse_file(str(F008), year=2026)[0]
    boot.facts[2].value = "not a number"
    with pytest.raises(ValueError):
        writing.store_boot(writer, boot, str(F008), "f" * 64, writing.DeployInfo())
    writer.close()
    con = sqlite3.connect(tmp_path / "l.db")
    assert con.execute("SELECT count(*) FROM boot").fetchone() == (0,)
    con.close()


def test_bad_ledger_locations_are_one_line_at_the_cli(cli, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a ledger")
    for target, message in ((tmp_path, "is a directory, not a ledger database"),
                            (notes, "is not a ledger database (not an SQLite file)")):
        r = cli("history", "--db", str(target))
        assert r.exit_code == 2
        assert r.output.strip() == f"Error: {target}: {message}"


def test_an_unreachable_postgresql_server_is_one_line(cli):
    r = cli("history", "--db", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert r.output.startswith("Error: ") and "Traceback" not in r.output


def test_the_writer_fills_every_column_the_models_declare():
    """The writes name their columns from ledger.db.columns (they load no SQLAlchemy); they must
    stay those of the tables."""
    from ledger import parsers
    from ledger.db import models as m
    from ledger.db import writes as writing
    from ledger.db.staging import SAMPLE_PLACE, STORED_SERIES

    def columns(model) -> list[str]:
        return sorted(c.name for c in model.__table__.columns if c.name != "id")

    for model, written in ((m.Shape, ["boot_id", *writing.CHILD_COLUMNS["shape"]]),
                           (m.Fact, ["boot_id", *writing.CHILD_COLUMNS["fact"]]),
                           (m.Failure, ["boot_id", *writing.CHILD_COLUMNS["failure"]]),
                           (m.RuntimeSampleRow, [*SAMPLE_PLACE, *STORED_SERIES])):
        assert sorted(written) == columns(model), model.__tablename__
    boot = parsers.parse_file(str(F008), year=2026)[0]
    row, *_ = writing._boot_rows(boot, str(F008), None)
    assert sorted([*row, "deploy_id"]) == columns(m.Boot)


def test_another_programs_sqlite_file_is_refused_untouched(tmp_path, cli):
    """A --db that names some other program's SQLite database (a typo, a wrong variable) gets
    no ledger tables written into it."""
    path = tmp_path / "notes.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE note (body TEXT)")
    con.execute("INSERT INTO note VALUES ('keep me')")
    con.commit()
    con.close()
    before = _digest(path)
    for command in (["ingest", str(F008)], ["history"]):
        r = cli(*command, "--db", str(path))
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert "is not a ledger database (it holds other tables and no ledger schema)" in r.output
    assert _digest(path) == before
    con = sqlite3.connect(path)
    assert con.execute("SELECT name FROM sqlite_master").fetchall() == [("note",)]
    con.close()


def test_a_ledger_opened_to_read_hands_out_no_writer(db):
    ledger = connect(db, mode="read")
    try:
        with pytest.raises(LedgerError, match="opened read-only"):
            ledger.writer()
    finally:
        ledger.dispose()


def test_a_ledger_opened_to_write_hands_out_a_writer(db):
    ledger = connect(db, mode="write")
    writer = ledger.writer()
    try:
        with writer.transaction() as cur:
            cur.execute("SELECT count(*) FROM boot")
            assert cur.fetchone()[0] == 0
    finally:
        writer.close()
        ledger.dispose()
