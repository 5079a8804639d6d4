"""``ledger sql``: one query on a connection that cannot change the ledger, its rows streamed.

* One statement: the text is split by one SQL parser (``sqlparse``) for both databases, and
  anything past the first statement is refused before the database sees it (``COMMIT; DELETE
  …`` would otherwise end PostgreSQL's read-only transaction and write in the next one).
* The connection cannot write, whatever the statement says.  SQLite: the file opened with
  ``mode=ro``, ``query_only`` on and an authorizer that allows reading only.  PostgreSQL: a
  connection of its own (never pooled, never handed to anyone after), whose *session* is read
  only (``SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY``), so a statement that ends the
  transaction still cannot write in the next one; its transaction is rolled back.
* A time limit (``timeout`` seconds; 0 for none): PostgreSQL's ``statement_timeout``; SQLite's
  progress handler, which also stops the query on Ctrl-C (SQLite otherwise runs to the end of
  a statement before Python sees the signal).
* Rows are fetched in batches as they are written out (PostgreSQL: a server-side cursor), so
  memory stays flat for millions of rows.
* SQLite: a text value longer than ``MAX_VALUE`` bytes is cut as it is fetched, marked where it
  was cut, and counted (``Result.cut``): one 100 MB value cost 0.7-2.1 GB to print.
"""

from __future__ import annotations

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


def _is_query(query: str) -> bool:
    import sqlparse

    return sqlparse.parse(query)[0].get_type() == "SELECT"


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
    conn = ledger.engine.raw_connection().driver_connection  # the in-memory empty ledger
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
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    # a connection of its own: its session settings die with it
    engine = create_engine(ledger.url, poolclass=NullPool, future=True)

    def fail(exc: Exception) -> LedgerError:
        msg = reason(exc)
        if "read-only transaction" in msg:
            msg += " (ledger sql is read-only)"
        elif "statement timeout" in msg:
            msg = f"stopped after {timeout:g} s (--timeout; 0 for no limit)"
        return LedgerError(f"sql: {msg}")

    try:
        with engine.connect() as conn:
            try:
                if engine.dialect.name == "postgresql":
                    conn.exec_driver_sql("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                    conn.exec_driver_sql(f"SET statement_timeout = {int(timeout * 1000)}")
                # a server-side cursor (DECLARE … CURSOR FOR) takes a query only: anything else
                # runs plainly, to be refused by the read-only session with its own message
                streamed = _is_query(query)
                options = {"stream_results": True, "yield_per": _BATCH} if streamed else {}
                result = conn.execution_options(**options).execute(text(query))
            except LedgerError:
                raise
            except Exception as exc:  # the database's own message is the answer
                if not _is_db_error(exc):
                    raise
                raise fail(exc) from None
            columns = list(result.keys()) if result.returns_rows else []

            def rows() -> Iterator[tuple[Any, ...]]:
                if not result.returns_rows:
                    return
                try:
                    for row in result:
                        yield tuple(row)
                except Exception as exc:
                    if not _is_db_error(exc):
                        raise
                    raise fail(exc) from None

            try:
                yield Result(columns, rows())
            finally:
                conn.invalidate()  # never back into any pool, rolled back by the server
    finally:
        engine.dispose()


def _is_db_error(exc: BaseException) -> bool:
    from .errors import is_database_error

    return is_database_error(exc)
