"""``ledger sql``: one query on a connection that cannot change the ledger.

SQLite: the file opened with ``mode=ro``, ``query_only`` on and an authorizer that allows
reading only; PostgreSQL: a READ ONLY transaction that is rolled back.  Refusals come from the
connection, not from looking at the text.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..errors import LedgerError
from .connect import Ledger
from .errors import reason
from .location import sqlite_file

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


def run_sql(ledger: Ledger, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The query's column names and rows."""
    path = sqlite_file(ledger.url)
    if path is None:
        return _run_on_server(ledger, query)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.set_authorizer(_read_only_authorizer)
        try:
            cur = conn.execute(query)
            rows = cur.fetchall()
        except sqlite3.ProgrammingError as exc:
            msg = "one statement at a time" if "one statement" in str(exc) else str(exc)
            raise LedgerError(f"sql: {msg}") from None
        except sqlite3.Error as exc:
            msg = str(exc)
            if any(w in msg for w in ("not authorized", "authorization denied", "readonly", "read-only")):
                msg += " (ledger sql is read-only)"
            raise LedgerError(f"sql: {msg}") from None
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, rows
    finally:
        conn.close()


def _run_on_server(ledger: Ledger, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    from sqlalchemy import text

    with ledger.engine.connect() as conn:
        if ledger.engine.dialect.name == "postgresql":
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        try:
            result = conn.execute(text(query))
            cols = list(result.keys()) if result.returns_rows else []
            rows = [tuple(r) for r in result] if result.returns_rows else []
        except Exception as exc:  # the database's own message is the answer
            msg = reason(exc)
            if "read-only transaction" in msg:
                msg += " (ledger sql is read-only)"
            raise LedgerError(f"sql: {msg}") from None
        finally:
            conn.rollback()
        return cols, rows
