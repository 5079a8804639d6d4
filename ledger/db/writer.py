"""The DB-API connection every write to the ledger goes through (``Writer``): the ingest, ``ledger
copy`` and ``ledger deploy set`` alike.  It needs no SQLAlchemy: ``connect.open_writer`` gives
one on the sqlite3 module alone for a SQLite ledger at the head revision, or on the driver
connection SQLAlchemy made (an upgraded SQLite ledger, PostgreSQL).  The statements are the
same for both databases; only the placeholder differs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import is_named


class Writer:
    """A DB-API connection to a ledger that rows are written through.  ``mark`` is the
    driver's placeholder (sqlite3's ``?``, psycopg's ``%s``)."""

    def __init__(self, conn: Any, is_sqlite: bool, close: Callable[[], None], backup: Path | None = None):
        self.conn, self.is_sqlite, self._close = conn, is_sqlite, close
        self.mark = "?" if is_sqlite else "%s"
        self.backup = backup  # the copy written before an upgrade (``ledger.db.migrate``)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor in one transaction: committed if the block ends, rolled back if it raises."""
        cur = self.conn.cursor()
        try:
            if self.is_sqlite:
                cur.execute("BEGIN IMMEDIATE")  # the write lock now, not at the first write
            yield cur
            self.conn.commit()
        except BaseException:
            # SQLite ends the transaction itself on some errors (a full disk): nothing to undo then
            if not self.is_sqlite or self.conn.in_transaction:
                self.conn.rollback()
            raise
        finally:
            cur.close()

    def insert(self, cur: Any, table: str, row: dict[str, Any]) -> int:
        """Insert one row; its id."""
        sql = insert_sql(table, list(row), self.mark)
        if self.is_sqlite:
            cur.execute(sql, tuple(row.values()))
            return cur.lastrowid
        cur.execute(sql + " RETURNING id", tuple(row.values()))
        return cur.fetchone()[0]

    def insert_many(self, cur: Any, table: str, columns: list[str], rows: list[tuple]) -> None:
        if rows:
            cur.executemany(insert_sql(table, columns, self.mark), rows)

    def close(self) -> None:
        self._close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


_JSON = json.JSONEncoder(sort_keys=True, default=str)  # what json.dumps(value, sort_keys=True, default=str) builds each call


def to_json(value: Any) -> str:
    """A value as the ledger stores JSON (shape values, failure figures, per-position lists)."""
    return _JSON.encode(value)


def insert_sql(table: str, columns: list[str], mark: str) -> str:
    names = ", ".join(f'"{c}"' for c in columns)  # quoted: "key", "rank", "text", "line" are columns here
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join([mark] * len(columns))})"


# how long a write waits for another writer's lock, in all: SQLite's busy timeout
# (``sqlite.BUSY_TIMEOUT_MS``), which docs/guide.md promises
LOCK_WAIT_S = 30.0


def retrying(write: Callable[[], Any]) -> Any:
    """A write is tried again, a few times, when it lost a race to another writer creating the
    same deploy or boot (PostgreSQL: the retry then finds the other writer's row), or met a
    lock it could not take — but only while the whole wait stays within ``LOCK_WAIT_S``: the
    busy timeout has waited already (five retries of 30 s each were 2.5 minutes)."""
    started = time.monotonic()
    for attempt in range(5):
        try:
            return write()
        except Exception as exc:
            if attempt == 4:
                raise
            if is_named(exc, "IntegrityError"):
                continue
            pause = 0.2 * (attempt + 1)
            if (is_named(exc, "OperationalError") and "locked" in str(exc)
                    and time.monotonic() - started + pause < LOCK_WAIT_S):
                time.sleep(pause)
                continue
            raise
