"""``ledger sql``: one query on a connection that cannot change the ledger, its rows streamed.

* One statement.  SQLite's driver compiles one and refuses a text with more.  PostgreSQL gets
  the text through the extended protocol (psycopg: a server-side cursor's ``DECLARE``, else
  ``stream()``), whose Parse message takes one statement, so the server itself refuses
  ``COMMIT; DELETE …`` however the text hides its semicolons (``#``, ``'\\'``, dollar quotes).
  ``sqlparse`` only gives the same refusal early, for the texts it splits as the server would.
* The connection cannot write, whatever the statement says.  SQLite: the file opened with
  ``mode=ro``, ``query_only`` on and an authorizer that allows reading only.  PostgreSQL (psycopg
  only): a connection of its own (never pooled, never handed to anyone after), whose *session*
  is read only (``SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY``) and whose transaction
  begins ``READ ONLY``; it is rolled back.
* A time limit (``timeout`` seconds; 0 for none): PostgreSQL's ``statement_timeout``; SQLite's
  progress handler, which also stops the query on Ctrl-C (SQLite otherwise runs to the end of
  a statement before Python sees the signal).
* Rows are fetched in batches as they are written out (PostgreSQL: a server-side cursor, or
  row by row for ``EXPLAIN``/``SHOW``), so memory stays flat for millions of rows.
* SQLite: a text value longer than ``MAX_VALUE`` bytes is cut as it is fetched, marked where it
  was cut, and counted (``Result.cut``): one 100 MB value cost 0.7-2.1 GB to print.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import LedgerError
from .connect import Ledger
from .errors import reason
from .location import sqlite_file

DEFAULT_TIMEOUT = 120  # seconds: ``ledger sql --timeout``
_SYNTAX_ERROR = "42601"  # PostgreSQL's SQLSTATE for DECLARE … FOR a statement that is not a query
_BATCH = 1000  # rows fetched at a time
_PROGRESS_STEPS = 10_000
MAX_VALUE = 1024 * 1024  # bytes of one text value printed by ledger sql (SQLite)  # SQLite VM steps between two looks at the clock and at Ctrl-C

_READ_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
                 "foreign_key_list", "function_list", "collation_list", "pragma_list"}


def _read_only_authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None,
                          _trigger: str | None) -> int:
    """SQLite authorizer: reading and functions only.  ATTACH, pragmas that set anything,
    VACUUM and every write are denied at compile time, whatever the statement's text."""
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def statements(query: str) -> list[str]:
    """The statements in ``query``, as PostgreSQL and SQLite would run them one after the other
    (quotes, dollar quotes and comments understood); empty ones (``;;``, a comment) dropped."""
    import sqlparse
    from sqlparse import tokens as T

    out = []
    for stmt in sqlparse.parse(query):
        if any(not (tok.is_whitespace or tok.ttype in T.Comment or (tok.ttype is T.Punctuation and tok.value == ";"))
               for tok in stmt.flatten()):
            out.append(str(stmt))
    return out


def one_statement(query: str) -> str:
    found = statements(query)
    if len(found) > 1:
        raise LedgerError(f"sql: one statement at a time ({len(found)} given; ledger sql is read-only)")
    if not found:
        raise LedgerError("sql: no statement given")
    return query


MIN_TIMEOUT = 0.001  # seconds: PostgreSQL's statement_timeout counts milliseconds
MAX_TIMEOUT = (2**31 - 1) / 1000  # seconds: statement_timeout is an int of milliseconds (24.8 days)


def check_timeout(timeout: float) -> None:
    """``--timeout``: 0 for no limit, else a finite number of seconds from 1 ms to 24.8 days.
    Anything else once meant no limit in disguise (nan: a deadline never passed; 1e-300: 0 ms,
    PostgreSQL's "none") or a traceback (inf, 1e400: no int)."""
    if timeout == 0:
        return
    if not (math.isfinite(timeout) and MIN_TIMEOUT <= timeout <= MAX_TIMEOUT):
        raise LedgerError(f"sql: --timeout {timeout:g}: give seconds from {MIN_TIMEOUT:g} to {int(MAX_TIMEOUT):,} "
                          f"(0 for no limit)")


class Result:
    """A running query: ``columns`` and the ``rows`` iterator; ``close()`` ends it."""

    def __init__(self, columns: list[str], rows: Iterator[tuple[Any, ...]], cut: Any = None):
        self.columns, self.rows = columns, rows
        self._cut = cut  # what counts the values cut to MAX_VALUE (SQLite)

    @property
    def cut(self) -> int:
        """Values longer than MAX_VALUE so far, each cut to it."""
        return self._cut.cut if self._cut is not None else 0

    def note(self) -> str | None:
        """What was left out, once the rows are out."""
        cut = self.cut
        if not cut:
            return None
        return (f"sql: {cut:,} value{'s' if cut != 1 else ''} longer than {MAX_VALUE // 2**20} MiB "
                f"{'were' if cut != 1 else 'was'} cut (marked '… [cut: N bytes]'); select a part with substr()")


class _CappedText:
    """sqlite3's text factory: a value decoded as UTF-8, cut to ``MAX_VALUE`` bytes (at a
    character's start) and marked when longer, and counted."""

    def __init__(self) -> None:
        self.cut = 0

    def __call__(self, raw: bytes) -> str:
        if len(raw) <= MAX_VALUE:
            return raw.decode("utf-8", "replace")
        self.cut += 1
        end = MAX_VALUE
        while end > 0 and raw[end] & 0xC0 == 0x80:  # not inside a character
            end -= 1
        return raw[:end].decode("utf-8", "replace") + f"… [cut: {len(raw):,} bytes]"


@contextmanager
def run_sql(ledger: Ledger, query: str, timeout: float = DEFAULT_TIMEOUT) -> Iterator[Result]:
    """The query's columns and its rows, streamed while the block runs."""
    check_timeout(timeout)
    one_statement(query)
    path = sqlite_file(ledger.url)
    if ledger.is_sqlite:
        with _run_on_sqlite(ledger, path, query, timeout) as result:
            yield result
    else:
        with _run_on_server(ledger, query, timeout) as result:
            yield result


def _sqlite_connection(ledger: Ledger, path: Any) -> sqlite3.Connection:
    """A read-only connection: the file's own (``mode=ro``), or the ledger's (an empty ledger
    that reads as empty without being created)."""
    from . import sqlite

    if path is not None and path.exists():
        return sqlite.connect_read(path)
    if ledger.memory is not None:  # the in-memory empty ledger
        return ledger.memory
    conn = ledger.engine.raw_connection().driver_connection  # an in-memory database (sqlite://)
    assert conn is not None
    return conn


@contextmanager
def _run_on_sqlite(ledger: Ledger, path: Any, query: str, timeout: float) -> Iterator[Result]:
    conn = _sqlite_connection(ledger, path)
    deadline = time.monotonic() + timeout if timeout else None
    timed_out = False

    def tick() -> int:
        # a KeyboardInterrupt raised in here stops the query too (sqlite3 reads any error as
        # "stop"): Python delivers Ctrl-C when this runs
        nonlocal timed_out
        if deadline is not None and time.monotonic() > deadline:
            timed_out = True
            return 1
        return 0

    def fail(exc: sqlite3.Error) -> LedgerError:
        msg = str(exc)
        if "interrupted" in msg:
            if timed_out:
                return LedgerError(f"sql: stopped after {timeout:g} s (--timeout; 0 for no limit)")
            raise KeyboardInterrupt  # Ctrl-C: click says "Aborted!"
        if "one statement" in msg:
            return LedgerError("sql: one statement at a time (ledger sql is read-only)")
        if any(w in msg for w in ("not authorized", "authorization denied", "readonly", "read-only")):
            msg += " (ledger sql is read-only)"
        return LedgerError(f"sql: {msg}")

    capped, text_factory = _CappedText(), conn.text_factory
    try:
        conn.set_authorizer(_read_only_authorizer)
        conn.set_progress_handler(tick, _PROGRESS_STEPS)
        conn.text_factory = capped
        try:
            cur = conn.execute(query)
        except sqlite3.Error as exc:
            raise fail(exc) from None
        columns = [d[0] for d in cur.description] if cur.description else []

        def rows() -> Iterator[tuple[Any, ...]]:
            try:
                while batch := cur.fetchmany(_BATCH):
                    yield from batch
            except sqlite3.Error as exc:
                raise fail(exc) from None

        yield Result(columns, rows(), capped)
    finally:
        conn.text_factory = text_factory
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
        if path is not None and path.exists():
            conn.close()


@contextmanager
def _run_on_server(ledger: Ledger, query: str, timeout: float) -> Iterator[Result]:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    dialect = ledger.engine.dialect
    if (dialect.name, dialect.driver) != ("postgresql", "psycopg"):
        # only psycopg's extended protocol is known here to refuse a second statement
        raise LedgerError(f"sql: {dialect.name}+{dialect.driver}: ledger sql reads PostgreSQL through "
                          f"psycopg only (postgresql+psycopg://…) or a SQLite file")

    def fail(exc: Exception) -> LedgerError:
        msg = reason(exc)
        if "cannot insert multiple commands" in msg:
            msg = "one statement at a time (ledger sql is read-only)"
        elif "read-only transaction" in msg:
            msg += " (ledger sql is read-only)"
        elif "statement timeout" in msg:
            msg = f"stopped after {timeout:g} s (--timeout; 0 for no limit)"
        return LedgerError(f"sql: {msg}")

    # a connection of its own: its session settings die with it
    engine = create_engine(ledger.url, poolclass=NullPool)
    raw = None
    try:
        try:
            raw = engine.raw_connection()
            conn = raw.driver_connection
            assert conn is not None
            conn.rollback()  # whatever SQLAlchemy's first look at the server left open
            conn.autocommit = True
            with conn.cursor() as cur:
                # a session that is read only, so that even a statement that ended the
                # transaction could not write in the next one
                cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                cur.execute(f"SET statement_timeout = {round(timeout * 1000)}")
            conn.autocommit = False
            conn.read_only = True  # psycopg begins each transaction READ ONLY
            cur, rows = _server_rows(conn, query)
        except LedgerError:
            raise
        except Exception as exc:  # the database's own message is the answer
            if not _is_db_error(exc):
                raise
            raise fail(exc) from None
        columns = [d.name for d in cur.description] if cur.description else []

        def guarded() -> Iterator[tuple[Any, ...]]:
            try:
                yield from rows
            except Exception as exc:
                if not _is_db_error(exc):
                    raise
                raise fail(exc) from None

        try:
            yield Result(columns, guarded())
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                close()  # a query still streaming is cancelled
    finally:
        if raw is not None:
            raw.invalidate()  # never back into any pool; the server rolls the transaction back
        engine.dispose()


def _server_rows(conn: Any, query: str) -> tuple[Any, Iterator[tuple[Any, ...]]]:
    """The cursor (for its description) and the rows of ``query`` on psycopg connection
    ``conn``.  Every way in sends the text with the extended protocol (Parse/Bind/Execute),
    whose Parse takes one statement: the server itself refuses ``COMMIT; DELETE …`` ("cannot
    insert multiple commands into a prepared statement"), however the text hides its semicolons
    from sqlparse.  A query goes through a server-side cursor (``DECLARE … CURSOR FOR``, rows
    fetched ``_BATCH`` at a time, its columns known even when it has no rows); a statement a
    cursor cannot take (``EXPLAIN``, ``SHOW``) is streamed row by row instead."""
    cur = conn.cursor(name="ledger_sql")
    cur.itersize = _BATCH
    try:
        cur.execute(query)
        return cur, iter(cur)
    except Exception as exc:
        if not _is_db_error(exc) or getattr(exc, "sqlstate", None) != _SYNTAX_ERROR:
            raise
    conn.rollback()  # the failed DECLARE ended its transaction; the next begins READ ONLY too
    cur = conn.cursor()
    stream = cur.stream(query)
    try:
        first = next(stream, None)
    except Exception as exc:
        if _is_db_error(exc) and "didn't produce a result" in str(exc):  # COMMIT, SET: no rows
            return cur, iter(())
        raise

    def rows() -> Iterator[tuple[Any, ...]]:
        if first is not None:
            yield first
            yield from stream

    return cur, _Closing(rows(), stream)


class _Closing:
    """An iterator whose ``close`` also closes ``inner`` (psycopg's stream cancels its query)."""

    def __init__(self, rows: Iterator[tuple[Any, ...]], inner: Any):
        self._rows, self._inner = rows, inner

    def __iter__(self) -> _Closing:
        return self

    def __next__(self) -> tuple[Any, ...]:
        return next(self._rows)

    def close(self) -> None:
        self._inner.close()


def _is_db_error(exc: BaseException) -> bool:
    from .errors import is_database_error

    return is_database_error(exc)
