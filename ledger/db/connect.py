"""Opening a ledger: the one way in for every command.

* ``connect(db, mode="read" | "write")``: a ``Ledger`` (SQLAlchemy) for the queries; a command
  says whether it only reads.  In write mode ``Ledger.writer()`` gives the ``Writer`` its
  writes go through (``ledger deploy set``).  Today both modes create a missing SQLite file and
  migrate an older ledger; a read is where a "changes no byte" open would go.
* ``open_writer(db)``: the ingest's (and ``ledger copy``'s) ``Writer``.  A SQLite ledger at the
  head revision, or a new one (built from the head schema), is opened with the sqlite3 module
  alone, so an ingest never loads SQLAlchemy — a third of a second of every ``ledger ingest``,
  more than a boot log takes to read.  An older SQLite ledger (migrated first, with a backup), a
  newer one (refused) and a PostgreSQL ledger go through ``connect``.
* ``upgrade(db)``: ``ledger db upgrade``.

SQLite runs in WAL mode with foreign keys on and a busy timeout (``sqlite.apply_settings``);
writers begin with BEGIN IMMEDIATE.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import LedgerError
from . import sqlite
from .columns import HEAD_REVISION
from .errors import open_error
from .location import plain_sqlite_path, resolve_url, sqlite_file
from .writer import Writer

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import sessionmaker

Mode = Literal["read", "write"]


@dataclass
class Ledger:
    """An open ledger: ``Session`` for the queries; ``writer()`` in write mode."""

    url: str
    engine: Engine
    Session: sessionmaker
    mode: Mode
    backup: Path | None = None  # the copy written before an upgrade

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    def writer(self) -> Writer:
        """A ``Writer`` on one of the engine's connections (returned to it by ``close``)."""
        if self.mode != "write":
            raise LedgerError(f"{self.url}: opened read-only")  # a bug in a command: it said it only reads
        raw = self.engine.raw_connection()
        return Writer(raw.driver_connection, self.is_sqlite, raw.close)

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_begin(conn: Any) -> None:
    """Writers (the migration) take the write lock when they begin (BEGIN IMMEDIATE), so two
    writers never both read, then both try to upgrade their lock and one fails with "database
    is locked" without waiting; readers begin deferred and never block anyone (WAL)."""
    if conn.get_execution_options().get("ledger_write"):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


def _postgresql_settings(conn: Any, _record: object = None) -> None:
    """No JIT: the ledger's queries are index lookups, and compiling the views' plans cost more
    than running them (issue 17: 2.6 s of 2.8 s for budget_ceilings; history 14.4 s -> 1.6 s)."""
    cur = conn.cursor()
    cur.execute("SET jit = off")
    cur.close()
    conn.commit()  # a SET rolled back with its transaction would not last


def connect(db: str | None = None, *, mode: Mode, create: bool = True, migrate: bool = True) -> Ledger:
    """The ledger at ``db`` (``--db``, ``$LEDGER_DB``, the default file), opened to ``mode``;
    created if missing (``create``) and brought to the head revision (``migrate``)."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError
    from sqlalchemy.orm import sessionmaker

    from .migrate import migrate as run_migrations

    url = resolve_url(db)
    try:
        make_url(url)
    except ArgumentError:
        raise LedgerError(f"{url}: not a database path or SQLAlchemy URL") from None
    path = sqlite_file(url)
    if path is not None:
        sqlite.check_target(path, create)
    try:
        engine = create_engine(url, future=True)
    except ImportError as exc:
        raise missing_driver(exc) from None
    except ArgumentError as exc:
        raise LedgerError(f"{url}: cannot open: {exc}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", sqlite.apply_settings)
        event.listen(engine, "begin", _sqlite_begin)
    elif engine.dialect.name == "postgresql":
        event.listen(engine, "connect", _postgresql_settings)
    ledger = Ledger(url, engine, sessionmaker(engine, expire_on_commit=False), mode)
    try:
        if path is not None:
            with engine.connect():
                pass  # connect now: a bad file fails here, with the reason
        if migrate:
            ledger.backup = run_migrations(engine, path or url, path)
    except Exception as exc:
        error = open_error(path or url, exc)
        engine.dispose()
        if error is None:
            raise
        raise error from None
    return ledger


# a driver module -> the extra that installs it
DRIVER_EXTRAS = {"psycopg": "postgres", "psycopg2": "postgres", "psycopg_binary": "postgres"}


def missing_driver(exc: ImportError) -> LedgerError:
    """The error for a database driver that is not installed, naming what to install."""
    module = (exc.name or "").split(".")[0] or "the database driver"
    extra = DRIVER_EXTRAS.get(module)
    if extra:
        return LedgerError(f"the database driver {module} is not installed: pip install 'vllm-ledger[{extra}]'")
    return LedgerError(f"the database driver {module} is not installed (pip install {module})")


def open_writer(db: str | None = None) -> Writer:
    """The ledger at ``db`` ready to be written; created if it does not exist."""
    path = plain_sqlite_path(resolve_url(db))
    if path is not None:
        sqlite.check_target(path, create=True)
        conn = _open_at_head(path)
        if conn is not None:
            return Writer(conn, True, conn.close)
    # an older SQLite ledger (migrated, with a backup), a newer one (refused), another database
    ledger = connect(db, mode="write")
    raw = ledger.engine.raw_connection()

    def close() -> None:
        raw.close()
        ledger.dispose()

    return Writer(raw.driver_connection, ledger.is_sqlite, close, ledger.backup)


def _open_at_head(path: Path) -> Any:
    """A sqlite3 connection to the file if it is at ``HEAD_REVISION`` — a new (empty) file gets
    the head schema first; None for a file ``connect`` must open (to migrate it, or refuse it)."""
    conn, handed_on = None, False
    try:
        conn = sqlite.connect_file(path)
        rev = sqlite.revision(conn)
        if rev is None and sqlite.is_empty(conn):
            conn.execute("BEGIN IMMEDIATE")  # one creator at a time
            try:
                if sqlite.is_empty(conn):  # again, under the lock: another process may have built it
                    sqlite.build_new(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            rev = sqlite.revision(conn)
        handed_on = rev == HEAD_REVISION
        return conn if handed_on else None
    except Exception as exc:
        error = open_error(path, exc)
        if error is None:
            raise
        raise error from None
    finally:
        if conn is not None and not handed_on:
            conn.close()


def upgrade(db: str | None = None) -> tuple[str | None, str, Path | None]:
    """``ledger db upgrade``: returns (revision before, revision after, backup)."""
    from .migrate import current_revision, migrate

    ledger = connect(db, mode="write", migrate=False)
    try:
        before = current_revision(ledger.engine)
        backup = migrate(ledger.engine, sqlite_file(ledger.url) or ledger.url, sqlite_file(ledger.url))
        return before, HEAD_REVISION, backup
    finally:
        ledger.dispose()


def open_read_only(db: str | None) -> Ledger:
    """``ledger serve``'s ledger: opened so that nothing can write to it (SQLite ``mode=ro`` with
    ``query_only``; PostgreSQL sessions READ ONLY), at the head revision or refused, never migrated."""
    import sqlite3

    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.orm import sessionmaker

    from .migrate import current_revision
    url = resolve_url(db)
    try:
        u = make_url(url)
    except Exception:  # noqa: BLE001 - SQLAlchemy's ArgumentError: not a URL
        raise LedgerError(f"{url}: not a database path or SQLAlchemy URL") from None
    if u.get_backend_name() == "sqlite":
        if not u.database or u.database == ":memory:":
            raise LedgerError("ledger serve needs a ledger file or a server, not an in-memory database")
        from pathlib import Path

        path = Path(u.database)
        sqlite.check_target(path, create=False)

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {sqlite.BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA query_only = ON")
            return conn

        engine = create_engine("sqlite://", creator=connect)
    else:
        try:
            engine = create_engine(url)
        except Exception as exc:  # noqa: BLE001 - a missing driver or a bad URL: one line
            raise LedgerError(f"{url}: cannot open: {exc}") from None
        if engine.dialect.name == "postgresql":
            @event.listens_for(engine, "connect")
            def _read_only(dbapi_conn: Any, _record: Any) -> None:
                cur = dbapi_conn.cursor()
                cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                cur.close()
                dbapi_conn.commit()
    try:
        rev = current_revision(engine)
    except Exception as exc:  # noqa: BLE001 - a file or server that is not a ledger
        engine.dispose()
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise LedgerError(f"{url}: cannot read the ledger: {reason}") from None
    if rev != HEAD_REVISION:
        engine.dispose()
        raise LedgerError(f"{url}: the ledger's schema is {rev or 'missing'}, not {HEAD_REVISION}; "
                          f"ledger serve only reads (run 'ledger db upgrade' first)")
    return Ledger(url, engine, sessionmaker(engine, expire_on_commit=False), "read")
