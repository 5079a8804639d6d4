"""Opening the ledger with SQLAlchemy (path or URL, migrate on open): every command's way in
but the ingest's writes, which go through ``ledger.writing`` and need SQLAlchemy only for what
this module does (an upgrade, another database).

* Location: ``--db`` option, else ``$LEDGER_DB``, else ``default_path()``; a plain path or an
  SQLAlchemy URL (``ledger.sqlite_file``).
* Opening applies Alembic migrations: an empty file gets the head schema, an older ledger is
  backed up (SQLite: a timestamped copy next to it) and upgraded, a newer one is refused.
* SQLite runs in WAL mode with foreign keys on and a busy timeout; writers begin with BEGIN
  IMMEDIATE.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError
from sqlalchemy.orm import sessionmaker

from .errors import LedgerError
from .sqlite_file import (
    HEAD_REVISION,
    SQLITE_TEMPLATE,
    apply_settings,
    build_new,
    check_sqlite_target,
    foreign_database,
    is_empty,
    migrations_dir,
    resolve_url,
)
from .writing import _reason


def _alembic_config(connection=None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def known_revisions() -> list[str]:
    from alembic.script import ScriptDirectory

    return [s.revision for s in ScriptDirectory.from_config(_alembic_config()).walk_revisions()]


def _sqlite_begin(conn) -> None:
    """Writers take the write lock when they begin (BEGIN IMMEDIATE), so two writers never
    both read, then both try to upgrade their lock and one fails with "database is locked"
    without waiting; readers begin deferred and never block anyone (WAL)."""
    if conn.get_execution_options().get("ledger_write"):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


@dataclass
class Ledger:
    url: str
    engine: Engine
    Session: sessionmaker  # for reading
    WriteSession: sessionmaker | None = None  # for writing: takes the write lock at BEGIN
    backup: Path | None = None  # the copy written before an upgrade

    @property
    def write_engine(self) -> Engine:
        return self.engine.execution_options(ledger_write=True)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_file(url: str) -> Path | None:
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    return Path(u.database)


def open_ledger(db: str | None = None, migrate: bool = True, create: bool = True) -> Ledger:
    """Open (and by default create and migrate) the ledger at ``db``."""
    url = resolve_url(db)
    try:
        make_url(url)
    except ArgumentError:
        raise LedgerError(f"{url}: not a database path or SQLAlchemy URL") from None
    path = _sqlite_file(url)
    if path is not None:
        check_sqlite_target(path, create)
    try:
        engine = create_engine(url, future=True)
    except (ArgumentError, ImportError) as exc:
        raise LedgerError(f"{url}: cannot open: {exc}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", apply_settings)
        event.listen(engine, "begin", _sqlite_begin)
    ledger = Ledger(url, engine, sessionmaker(engine, expire_on_commit=False))
    ledger.WriteSession = sessionmaker(ledger.write_engine, expire_on_commit=False)
    try:
        if path is not None:
            with engine.connect():
                pass  # connect now: a bad file fails here, with the reason
        if migrate:
            ledger.backup = _migrate(ledger, path)
    except OperationalError as exc:
        engine.dispose()
        raise LedgerError(f"{path or url}: cannot open the ledger: {_reason(exc)}") from None
    except DatabaseError as exc:
        engine.dispose()
        raise LedgerError(f"{path or url}: is not a ledger database ({_reason(exc)})") from None
    return ledger


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return _revision(conn)


def _revision(conn) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _migrate(ledger: Ledger, path: Path | None) -> Path | None:
    rev = current_revision(ledger.engine)
    if rev == HEAD_REVISION:
        return None
    if rev is not None and rev not in known_revisions():
        raise LedgerError(
            f"{path or ledger.url}: the ledger's schema ({rev}) is newer than this version of ledger "
            f"knows ({HEAD_REVISION}); upgrade ledger — the file was not modified"
        )
    backup = None
    with ledger.write_engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        raw = conn.connection.driver_connection if sqlite else None
        if sqlite:
            # SQLite alters a table by copying it and dropping the old one; with foreign keys on,
            # that drop would cascade into every child row.  Off for the migration (outside any
            # transaction, where the pragma has effect), checked after.
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with conn.begin():  # SQLite: BEGIN IMMEDIATE — one migrator at a time
                if conn.dialect.name == "postgresql":
                    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(731077)")
                rev = _revision(conn)  # again, under the lock: another process may have done it
                if rev == HEAD_REVISION:
                    return None
                if rev is not None and path is not None and path.exists():
                    backup = backup_sqlite(path, rev)
                if rev is None and sqlite:
                    if not is_empty(raw):
                        raise foreign_database(path or ledger.url)  # another program's file
                    build_new(raw)  # a new file: the schema at head, in one go
                else:
                    from alembic import command

                    command.upgrade(_alembic_config(conn), "head")
            if sqlite:
                broken = raw.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise LedgerError(f"{path or ledger.url}: the upgrade left {len(broken)} dangling rows; "
                                      f"restore the backup {backup}")
        finally:
            if sqlite:
                raw.execute("PRAGMA foreign_keys=ON")
    return backup


def write_sqlite_template() -> Path:
    """Build a ledger with the migrations and write its schema as ``SQLITE_TEMPLATE``."""
    import tempfile

    from alembic import command
    from sqlalchemy import create_engine as _create

    with tempfile.TemporaryDirectory() as tmp:
        engine = _create(f"sqlite:///{tmp}/l.db")
        with engine.begin() as conn:
            command.upgrade(_alembic_config(conn), "head")
        engine.dispose()
        con = sqlite3.connect(f"{tmp}/l.db")
        rows = con.execute("SELECT type, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                           "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, "
                           # indexes by name: the migrations create a table's indexes in set order,
                           # which changes from one run to the next
                           "CASE type WHEN 'index' THEN name END, rowid").fetchall()
        version = con.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        con.close()
    out = migrations_dir() / SQLITE_TEMPLATE
    body = "".join(f"{sql};\n\n" for _, sql in rows)
    out.write_text(f"-- A new SQLite ledger at {version}, as the migrations build it.\n"
                   f"-- Generated by `python -m ledger.store`; do not edit.\n\n{body}"
                   f"INSERT INTO alembic_version (version_num) VALUES ('{version}');\n")
    return out


def backup_sqlite(path: Path, rev: str) -> Path:
    """A consistent copy of a SQLite ledger (the online backup API, so WAL content is kept)."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{rev}.{stamp}.bak")
    src = sqlite3.connect(str(path))
    try:
        dst = sqlite3.connect(str(target))
        with dst:
            src.backup(dst)
        dst.close()
    finally:
        src.close()
    return target


def upgrade(db: str | None = None) -> tuple[str | None, str, Path | None]:
    """``ledger db upgrade``: returns (revision before, revision after, backup)."""
    ledger = open_ledger(db, migrate=False)
    try:
        before = current_revision(ledger.engine)
        backup = _migrate(ledger, _sqlite_file(ledger.url))
        return before, HEAD_REVISION, backup
    finally:
        ledger.dispose()


if __name__ == "__main__":
    print(write_sqlite_template())
