"""A database's own errors as one line the user can act on, whichever way the ledger was opened
(the sqlite3 module, psycopg, or SQLAlchemy wrapping either)."""

from __future__ import annotations

import sqlite3
import sys

from ..errors import LedgerError


def reason(exc: BaseException) -> str:
    """The first line of the driver's own message."""
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    lines = str(orig or exc).strip().splitlines()
    return lines[0] if lines else type(orig or exc).__name__


def is_named(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is a PEP 249 ``name`` error: every driver names its classes alike (and
    SQLAlchemy wraps them under the same names): sqlite3.IntegrityError, psycopg.IntegrityError,
    sqlalchemy.exc.IntegrityError."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def open_error(where: object, exc: BaseException) -> LedgerError | None:
    """The error of a ledger that could not be opened, or None for one that is not a database
    error (a bug: let it through)."""
    if is_named(exc, "OperationalError"):
        return LedgerError(f"{where}: cannot open the ledger: {reason(exc)}")
    if is_named(exc, "DatabaseError"):
        return LedgerError(f"{where}: is not a ledger database ({reason(exc)})")
    return None


def foreign_database(where: object) -> LedgerError:
    return LedgerError(f"{where}: is not a ledger database (it holds other tables and no ledger schema); "
                       f"the file was not modified")


def is_database_error(exc: BaseException) -> bool:
    """A database's own error (the driver's or SQLAlchemy's), as opposed to a bug."""
    if isinstance(exc, sqlite3.Error):
        return True
    for module, name in (("sqlalchemy.exc", "SQLAlchemyError"), ("psycopg", "Error")):
        base = getattr(sys.modules.get(module), name, None)
        if base is not None and isinstance(exc, base):
            return True
    return False


def describe_db_error(exc: BaseException) -> str:
    """One line for a database error met while working (read-only file, full disk, a lock)."""
    text = reason(exc)
    hint = ""
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        hint = " (this user cannot write the ledger file, its folder or its -wal/-shm files)"
    elif "disk is full" in low or "no space" in low:
        from ledger.parsers.source import full_temp_folder

        full = full_temp_folder()
        where = (f"the temporary folder {full} is full (set TMPDIR to a folder with room)" if full
                 else "the disk is full")
        hint = f" ({where}; nothing of the boot being written was kept)"
    elif "locked" in low:
        from .sqlite import BUSY_TIMEOUT_MS

        hint = f" (another process held the ledger's write lock for more than {BUSY_TIMEOUT_MS // 1000} s)"
    return f"ledger database error: {text}{hint}"
