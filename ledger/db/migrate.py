"""The schema revision of a ledger and bringing it to the head (Alembic).

An empty SQLite file gets the head schema in one go (``sqlite.build_new``); an older ledger is
backed up (SQLite: a copy next to it, timestamped once the upgrade is committed; an upgrade
killed before that leaves the copy for the next one to write again) and upgraded by the migrations, one migrator
at a time (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock); a newer one is refused and
left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

from ..errors import LedgerError
from . import sqlite
from .columns import HEAD_REVISION
from .errors import foreign_database


def alembic_config(connection: Connection | None = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(sqlite.migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def known_revisions() -> list[str]:
    """Every revision of the migrations, the newest first."""
    from alembic.script import ScriptDirectory

    return [s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()]


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return _revision(conn)


def _revision(conn: Connection) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


@dataclass
class Upgrade:
    """What ``migrate`` did: the revision it found (under the lock) and the backup it wrote."""

    before: str | None
    backup: Path | None


def migrate(engine: Engine, where: object, path: Path | None) -> Upgrade | None:
    """Bring the ledger to ``HEAD_REVISION``; None if it was there already (or another process
    took it there while this one waited for the lock: of concurrent upgrades, one says it
    upgraded).  ``where`` names the ledger in errors; ``path`` is its SQLite file."""
    rev = current_revision(engine)
    if rev == HEAD_REVISION:
        return None
    if rev is not None and rev not in known_revisions():
        raise LedgerError(
            f"{where}: the ledger's schema ({rev}) is newer than this version of ledger "
            f"knows ({HEAD_REVISION}); upgrade ledger — the file was not modified"
        )
    backup = None
    with engine.execution_options(ledger_write=True).connect() as conn:
        is_sqlite = conn.dialect.name == "sqlite"
        raw: Any = conn.connection.driver_connection if is_sqlite else None  # sqlite3's connection
        if is_sqlite:
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
                before = rev
                if rev is not None and path is not None and path.exists():
                    backup = sqlite.backup(path, rev)
                if rev is None and is_sqlite:
                    if not sqlite.is_empty(raw):
                        raise foreign_database(where)  # another program's file
                    sqlite.build_new(raw)  # a new file: the schema at head, in one go
                else:
                    from alembic import command

                    command.upgrade(alembic_config(conn), "head")
            if backup is not None:  # committed: the backup keeps its time (one per upgrade)
                backup = sqlite.keep_backup(backup)
            if is_sqlite:
                broken = raw.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise LedgerError(f"{where}: the upgrade left {len(broken)} dangling rows; "
                                      f"restore the backup {backup}")
        finally:
            if is_sqlite:
                raw.execute("PRAGMA foreign_keys=ON")
    return Upgrade(before, backup)
