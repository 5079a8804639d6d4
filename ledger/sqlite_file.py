"""A ledger's location and its SQLite file, without SQLAlchemy.

What both ways of opening a ledger share — ``ledger.store`` (SQLAlchemy, every command) and
``ledger.writing`` (the sqlite3 module alone, the ingest): where the ledger is (``--db``, else
``$LEDGER_DB``, else ``default_path()``), the connection settings of a SQLite ledger (WAL, foreign
keys, a busy timeout), the schema a new file is built with (``migrations/head_sqlite.sql``) and
how to read a file's revision.  Importing this costs nothing: the ingest of one boot log should
not pay for SQLAlchemy's import (a third of a second) before it writes a row.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from .errors import LedgerError

HEAD_REVISION = "0003_boot_identity"  # the newest migration; tests check it matches migrations/
ENV_VAR = "LEDGER_DB"
BUSY_TIMEOUT_MS = 30_000
SQLITE_TEMPLATE = "head_sqlite.sql"


def default_path() -> Path:
    """``$XDG_DATA_HOME/ledger/ledger.db`` (``~/.local/share/ledger/ledger.db``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "ledger" / "ledger.db"


def resolve_url(db: str | None) -> str:
    """The SQLAlchemy URL for ``--db`` / ``$LEDGER_DB`` / the default file."""
    db = db or os.environ.get(ENV_VAR) or str(default_path())
    if "://" in db:
        return db
    return "sqlite:///" + os.path.abspath(os.path.expanduser(db))


def plain_sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///path`` URL with nothing else in it (no driver, no query
    options) — what ``resolve_url`` makes of a plain path; None for any other URL."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url or url == prefix or url.endswith(":memory:"):
        return None
    return Path(url[len(prefix):])


def migrations_dir() -> Path:
    """Where Alembic's scripts are: ``ledger/migrations`` in a wheel, ``migrations/`` in the repo."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise LedgerError("ledger's migrations are missing from this installation")


def sqlite_template() -> list[str]:
    """The statements that build a new SQLite ledger at ``HEAD_REVISION``: what the migrations
    build (a test holds them to it), without importing Alembic and running each migration —
    a tenth of a second of every first ingest.  ``python -m ledger.store`` writes the file."""
    statements: list[str] = []
    pending = ""
    for line in (migrations_dir() / SQLITE_TEMPLATE).read_text().splitlines(keepends=True):
        if not pending and (not line.strip() or line.startswith("--")):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    return statements


def check_sqlite_target(path: Path, create: bool) -> None:
    """A one-line error for a path that is not (and cannot become) a ledger file."""
    if path.is_dir():
        raise LedgerError(f"{path}: is a directory, not a ledger database")
    if path.exists():
        try:
            with open(path, "rb") as f:
                head = f.read(16)
        except PermissionError:
            raise LedgerError(f"{path}: permission denied") from None
        if head and head != b"SQLite format 3\x00":
            raise LedgerError(f"{path}: is not a ledger database (not an SQLite file)")
    elif create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{path.parent}: cannot create the ledger's folder: {exc.strerror}") from None
    else:
        raise LedgerError(f"{path}: no ledger here yet (run 'ledger ingest' first)")


def apply_settings(conn: sqlite3.Connection, _record: object = None) -> None:
    """A SQLite ledger connection's settings (SQLAlchemy calls it on connect, hence ``_record``).
    Transactions are begun explicitly (writers with BEGIN IMMEDIATE), not by the driver."""
    conn.isolation_level = None
    cur = conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    try:
        # readers never block the writer; a file that is another program's database is left as
        # it is (WAL is written into the file), to be refused unchanged
        if is_empty(conn) or sqlite_revision(conn) is not None:
            cur.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError:
        pass  # a read-only file: reading still works
    cur.close()


def sqlite_revision(conn: sqlite3.Connection) -> str | None:
    """The file's Alembic revision; None for a file without one (a new, empty file)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'").fetchone():
        return None
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None


def is_empty(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master").fetchone() is None


def foreign_database(path: object) -> LedgerError:
    return LedgerError(f"{path}: is not a ledger database (it holds other tables and no ledger schema); "
                       f"the file was not modified")


def build_new(conn: sqlite3.Connection) -> None:
    """The schema at ``HEAD_REVISION`` into an empty file, in the caller's transaction."""
    for statement in sqlite_template():
        conn.execute(statement)
