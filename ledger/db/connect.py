"""Opening a ledger: the one way in for every command.

* ``connect(db, mode="read" | "write")``: a ``Ledger`` for the queries (``reading()``: SQL text on
  sqlite3 alone for a SQLite file opened to read, so no read command imports SQLAlchemy; else on
  a SQLAlchemy connection); a command says whether it only reads.  In write mode ``Ledger.writer()`` gives the ``Writer`` its
  writes go through (``ledger deploy set``).  Write mode creates a missing SQLite file and
  migrates an older ledger; read mode changes no byte: a SQLite file opened read-only (a
  PostgreSQL session READ ONLY), nothing created (a missing ledger is an error for a command,
  an empty one for the library), nothing migrated (an older one: "run ledger db upgrade").
  ``open_read_only`` is ``ledger serve``'s read mode.
* ``open_writer(db)``: the ingest's (and ``ledger copy``'s) ``Writer``.  A SQLite ledger at the
  head revision, or a new one (built from the head schema), is opened with the sqlite3 module
  alone, so an ingest never loads SQLAlchemy — a third of a second of every ``ledger ingest``,
  more than a boot log takes to read.  An older SQLite ledger (migrated first, with a backup), a
  newer one (refused) and a PostgreSQL ledger go through ``connect``.
* ``upgrade(db)``: ``ledger db upgrade``.

A new SQLite file is made WAL by its first writer (an existing file keeps its journal mode);
foreign keys on and a busy timeout (``sqlite.apply_settings``); writers begin with BEGIN
IMMEDIATE.  A URL is printed only through ``shown_url`` (no password).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import LedgerError
from . import sqlite
from .columns import HEAD_REVISION
from .errors import foreign_database, open_error
from .location import plain_sqlite_path, resolve_url, shown_url, sqlite_file
from .reader import Reader
from .writer import Writer

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import sessionmaker

Mode = Literal["read", "write"]


@dataclass
class Ledger:
    """An open ledger: ``reading()`` for the queries (SQL text, ``ledger.db.reader``);
    ``Session`` and ``engine`` (SQLAlchemy, made when first asked for) for what still reads
    through the ORM; ``writer()`` in write mode.  A SQLite ledger opened to read is read with
    the sqlite3 module alone (``read_path``), so a read command never imports SQLAlchemy."""

    url: str  # as given, with its password: print ``shown``
    make_engine: Callable[[], Engine]
    mode: Mode
    backup: Path | None = None  # the copy written before an upgrade
    read_path: Path | None = None  # a SQLite file read through sqlite3 (read mode)
    memory: sqlite3.Connection | None = None  # an empty ledger: the in-memory database it reads
    _engine: Engine | None = field(default=None, repr=False)
    _sessions: sessionmaker | None = field(default=None, repr=False)
    _reads: dict[int, sqlite3.Connection] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def shown(self) -> str:
        """The URL as it may be printed (no password)."""
        return shown_url(self.url)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self.make_engine()
        return self._engine

    @property
    def Session(self) -> sessionmaker:  # noqa: N802 (the ORM's name for it)
        if self._sessions is None:
            from sqlalchemy.orm import sessionmaker

            self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        return self._sessions

    @property
    def is_sqlite(self) -> bool:
        if self.read_path is not None or self.memory is not None:
            return True
        return self.engine.dialect.name == "sqlite"

    @contextmanager
    def reading(self) -> Iterator[Reader]:
        """A ``Reader`` for the block: on a SQLite file opened to read, a read-only sqlite3
        connection (one per thread, kept until ``dispose``); else a connection of the engine."""
        if self.memory is not None:
            yield Reader(self.memory)
        elif self.read_path is not None:
            yield Reader(self._read_connection())
        else:
            with self.engine.connect() as conn:
                yield Reader(conn, sqlalchemy=True)

    def _read_connection(self) -> sqlite3.Connection:
        key = threading.get_ident()
        with self._lock:
            conn = self._reads.get(key)
        if conn is None:
            assert self.read_path is not None
            conn = sqlite.connect_read(self.read_path)
            with self._lock:
                self._reads[key] = conn
        return conn

    def writer(self) -> Writer:
        """A ``Writer`` on one of the engine's connections (returned to it by ``close``)."""
        if self.mode != "write":
            raise LedgerError(f"{self.shown}: opened read-only")  # a bug in a command: it said it only reads
        raw = self.engine.raw_connection()
        return Writer(raw.driver_connection, self.is_sqlite, raw.close)

    def dispose(self) -> None:
        with self._lock:
            reads, self._reads = list(self._reads.values()), {}
        for conn in reads:
            conn.close()
        if self._engine is not None:
            self._engine.dispose()


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
    """The ledger at ``db`` (``--db``, ``$LEDGER_DB``, the default file), opened to ``mode``.

    ``write``: created if missing (``create``) and brought to the head revision (``migrate``).
    ``read``: nothing is created, migrated or changed — a SQLite file is opened read-only
    (``sqlite.connect_read``), its journal mode left alone; a PostgreSQL session is READ ONLY.
    A missing ledger (no file, an empty file or database) reads as an empty one (``create``,
    the library's default) or is an error, "no ledger here yet" (``create=False``: every read
    command); an older one is refused with "run ledger db upgrade" (``migrate``: else it is
    opened as it is, for ``db current``)."""
    url = resolve_url(db)
    path = plain_sqlite_path(url)
    if mode == "read" and path is not None:  # a plain path: read through sqlite3, SQLAlchemy never imported
        return _connect_sqlite_read(url, path, create, migrate)
    import logging

    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from .migrate import migrate as run_migrations

    # SQLAlchemy logs a connection lost under it (with a traceback) before raising; the error
    # itself is what the user is told, in one line (``cli.LedgerGroup``)
    logging.getLogger("sqlalchemy").addHandler(logging.NullHandler())
    url = resolve_url(db)
    shown = shown_url(url)
    try:
        port = make_url(url).port
    except ArgumentError:
        raise LedgerError(f"{shown}: not a database path or SQLAlchemy URL") from None
    except ValueError:  # make_url reads the port with int(): "host:x", "[::1" without its "]"
        raise LedgerError(f"{shown}: not a database path or SQLAlchemy URL (its host and port "
                          f"cannot be read: a port is a number, an IPv6 host is written [::1])") from None
    if port is not None and not 0 < port < 65536:
        raise LedgerError(f"{shown}: not a database path or SQLAlchemy URL (port {port} is not from 1 to 65535)")
    path = sqlite_file(url)
    if mode == "read" and path is not None:
        return _connect_sqlite_read(url, path, create, migrate)
    if path is not None:
        sqlite.check_target(path, create)
        sqlite.check_writable(path)
    try:
        engine = create_engine(url, future=True)
    except ImportError as exc:
        raise missing_driver(exc) from None
    except ArgumentError as exc:
        raise LedgerError(f"{shown}: cannot open: {exc}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", sqlite.apply_settings)
        event.listen(engine, "begin", _sqlite_begin)
    elif engine.dialect.name == "postgresql":
        event.listen(engine, "connect", _postgresql_settings)
        if mode == "read":
            event.listen(engine, "connect", _read_only_session)
    ledger = Ledger(url, lambda: engine, mode, _engine=engine)
    try:
        if path is not None:
            with engine.connect():
                pass  # connect now: a bad file fails here, with the reason
        if mode == "read":
            rev = _server_revision(engine)
            if rev is None and _has_no_tables(engine):
                engine.dispose()
                if create:
                    return _empty_ledger(url)  # a database nothing was written to yet reads as empty
                raise LedgerError(f"{shown}: no ledger here yet (run 'ledger ingest' first)")
            if migrate:
                _check_readable(shown, rev)
        elif migrate:
            done = run_migrations(engine, path or shown, path)
            ledger.backup = done.backup if done else None
    except Exception as exc:
        error = open_error(path or shown, exc)
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


def _server_revision(engine: Engine) -> str | None:
    from .migrate import current_revision

    return current_revision(engine)


def _has_no_tables(engine: Engine) -> bool:
    from sqlalchemy import inspect

    return not inspect(engine).get_table_names()


def _read_only_session(dbapi_conn: Any, _record: Any) -> None:
    """A PostgreSQL connection of a read mode ledger: its session is READ ONLY, so no
    statement on it (nor one that ends a transaction) can write."""
    cur = dbapi_conn.cursor()
    cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cur.close()
    dbapi_conn.commit()


def _check_readable(where: str, rev: str | None) -> None:
    """A read command reads a ledger at the head revision only: the queries and views are the
    head's.  It never upgrades (that writes): it says what would."""
    if rev == HEAD_REVISION:
        return
    if rev is None:
        raise foreign_database(where)
    if rev not in sqlite.script_revisions():
        raise LedgerError(f"{where}: the ledger's schema ({rev}) is newer than this version of ledger "
                          f"knows ({HEAD_REVISION}); upgrade ledger — the file was not modified")
    raise LedgerError(f"{where}: the ledger's schema ({rev}) is older than this version of ledger reads "
                      f"({HEAD_REVISION}); run 'ledger db upgrade' first (it keeps a backup) — the file was not modified")


def _connect_sqlite_read(url: str, path: Path, create: bool, migrate: bool) -> Ledger:
    """A SQLite ledger opened to read (``connect``'s read mode): read through sqlite3 alone;
    SQLAlchemy's engine is made only if something asks for it (``ledger.frames``, serve's charts)."""
    if not sqlite.exists(path) and not path.is_symlink():
        if create:
            return _empty_ledger(url)
        raise LedgerError(f"{path}: no ledger here yet (run 'ledger ingest' first)")
    sqlite.check_target(path, create=False)
    conn = sqlite.connect_read(path)
    kept = False
    try:
        rev = sqlite.revision(conn)
        if rev is None and sqlite.is_empty(conn):
            if create:
                return _empty_ledger(url)
            raise LedgerError(f"{path}: no ledger here yet (run 'ledger ingest' first)")
        if migrate:
            _check_readable(str(path), rev)
        ledger = Ledger(url, lambda: _sqlite_read_engine(path), "read", read_path=path)
        ledger._reads[threading.get_ident()] = conn  # the first reader's connection
        kept = True
        return ledger
    except sqlite3.DatabaseError as exc:
        raise open_error(path, exc) from None  # type: ignore[misc]
    finally:
        if not kept:
            conn.close()


def _sqlite_read_engine(path: Path) -> Engine:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    return create_engine("sqlite://", creator=lambda: sqlite.connect_read(path), poolclass=NullPool, future=True)


def _empty_ledger(url: str) -> Ledger:
    """A ledger nothing was written to yet, read without creating it: an empty in-memory
    database with the head schema (``ledger history`` says "no boots yet")."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    sqlite.build_new(conn)
    conn.execute("PRAGMA query_only = ON")

    def engine() -> Engine:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import StaticPool

        return create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool, future=True)

    return Ledger(url, engine, "read", memory=conn)


def open_writer(db: str | None = None) -> Writer:
    """The ledger at ``db`` ready to be written; created if it does not exist."""
    path = plain_sqlite_path(resolve_url(db))
    if path is not None:
        sqlite.check_target(path, create=True)
        sqlite.check_writable(path)
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
    """``ledger db upgrade``: returns (revision before, revision after, backup); before is
    after when there was nothing to do (or another process did it meanwhile)."""
    from .migrate import migrate

    ledger = connect(db, mode="write", migrate=False)
    try:
        done = migrate(ledger.engine, sqlite_file(ledger.url) or ledger.shown, sqlite_file(ledger.url))
        if done is None:
            return HEAD_REVISION, HEAD_REVISION, None
        return done.before, HEAD_REVISION, done.backup
    finally:
        ledger.dispose()


def open_read_only(db: str | None) -> Ledger:
    """``ledger serve``'s ledger: ``connect``'s read mode (SQLite ``mode=ro`` with
    ``query_only``; PostgreSQL sessions READ ONLY), at the head revision or refused, never
    migrated, never created; an in-memory database is refused (it would be empty)."""
    url = resolve_url(db)
    if url.partition("://")[0].split("+")[0] == "sqlite" and sqlite_file(url) is None:
        raise LedgerError("ledger serve needs a ledger file or a server, not an in-memory database")
    return connect(url, mode="read", create=False)


def current(db: str | None = None) -> dict[str, Any]:
    """``ledger db current``: where the ledger is (its printable URL, its file) and its schema
    revision against the head."""
    ledger = connect(db, mode="read", migrate=False, create=False)
    try:
        if ledger.read_path is not None:
            with ledger.reading() as r:
                rev = sqlite.revision(r.conn)
        else:
            from .migrate import current_revision

            rev = current_revision(ledger.engine)
    finally:
        ledger.dispose()
    path = sqlite_file(ledger.url)
    return {"url": ledger.shown, "path": None if path is None else str(path), "revision": rev,
            "head": HEAD_REVISION, "at_head": rev == HEAD_REVISION}
