"""``ledger sql``: one query on a connection that cannot change the ledger, its rows streamed.

* One statement.  SQLite's driver compiles one and refuses a text with more.  PostgreSQL gets
  the text through the extended protocol (psycopg: a server-side cursor's ``DECLARE``, else
  ``stream()``), whose Parse message takes one statement, so the server itself refuses
  ``COMMIT; DELETE …`` however the text hides its semicolons (``#``, ``'\\'``, dollar quotes).
  ``sqlparse`` only gives the same refusal early, for the texts it splits as the server would.
* A read.  The statement's first word (``sqlparse``, comments skipped) is SELECT, WITH, VALUES,
  TABLE, EXPLAIN or SHOW (PRAGMA on SQLite, whose authorizer decides which); anything else
  (COPY, DO, SET, CALL …) is refused before the database is asked (issue 38, item 12).
* The connection cannot write, whatever the statement says.  SQLite: the file opened with
  ``mode=ro``, ``query_only`` on and an authorizer that allows reading only.  PostgreSQL (psycopg
  only): a connection of its own (never pooled, never handed to anyone after), whose *session*
  is read only (``SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY``) and whose transaction
  begins ``READ ONLY``; it is rolled back.
* On PostgreSQL a READ ONLY transaction does not bind a superuser: ``COPY … TO PROGRAM`` runs
  a program (the trial's deleted the facts through psql), ``lo_export`` writes a server file,
  ``pg_read_file`` reads one.  So, three more walls, each enough for what the others miss:
  - the server decides what runs: a query is sent only inside ``DECLARE … CURSOR FOR`` (the
    server takes a SELECT, VALUES, TABLE or WITH there, and no WITH that writes), EXPLAIN and
    SHOW with the keyword written here, not taken from the text — so no comment that
    ``sqlparse`` reads otherwise than the server (PostgreSQL nests ``/* /* */ */``) can make
    it run a COPY or a DO;
  - the text may not name a function that reads or writes the server's files, runs SQL text or
    programs, signals other sessions or changes the session's role or settings (``SERVER_SIDE``:
    ``set_config``, ``query_to_xml``, ``lo_export``, ``pg_read_file``, ``dblink_exec``,
    ``pg_terminate_backend`` …; matched anywhere in the text, quotes and comments included, and
    no ``U&"…"`` identifier, which could spell one with escapes);
  - a role with rights beyond reading (a superuser, or a member of
    ``pg_execute_server_program``, ``pg_read_server_files``, ``pg_write_server_files`` or
    ``pg_signal_backend``) runs the statement as ``pg_read_all_data`` (``SET ROLE``, PostgreSQL
    14+): every table and view readable, no other right, so the server refuses ``COPY … TO
    PROGRAM``, ``lo_export`` and ``pg_read_file`` whatever the text.  Where that role cannot be
    taken, such a URL is refused for ``ledger sql`` in one line.  (``SET ROLE`` can be undone by
    the session user — hence no ``set_config`` in the text.)
* A time limit (``timeout`` seconds; 0 for none): PostgreSQL's ``statement_timeout``; SQLite's
  progress handler, which also stops the query on Ctrl-C (SQLite otherwise runs to the end of
  a statement before Python sees the signal).
* Rows are fetched in batches as they are written out (PostgreSQL: a server-side cursor, or
  row by row for ``EXPLAIN``/``SHOW``), so memory stays flat for millions of rows.
* A value longer than ``MAX_VALUE`` bytes is cut, marked where it was cut (``… [cut: N bytes]``),
  and counted (``Result.cut``): one 100 MB value cost 0.7-2.1 GB to print, a 300 MB BLOB 6.2 GB.
  SQLite's text is cut as it is fetched (the text factory), the rest as each row comes: a BLOB
  (and PostgreSQL's bytea) is printed as hex after ``\\x``, as psql prints a bytea, its first
  ``MAX_VALUE`` bytes; a PostgreSQL text its first ``MAX_VALUE`` bytes of UTF-8.  SQLite rows
  are fetched one at a time, so one row's values are what is held (the driver still gets each
  value whole: about twice its size while it is read).
"""

from __future__ import annotations

import math
import re
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
_PROGRESS_STEPS = 10_000  # SQLite VM steps between two looks at the clock and at Ctrl-C
MAX_VALUE = 1024 * 1024  # bytes of one value printed by ledger sql (a BLOB: as hex, twice as long)

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


READS = ("SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW")  # what ledger sql runs (PRAGMA too on SQLite)


def first_word(query: str) -> tuple[str, int]:
    """The statement's first word, upper case, as ``sqlparse`` reads it (whitespace, comments,
    ``;`` and opening parentheses skipped), and where in ``query`` it ends."""
    import sqlparse
    from sqlparse import tokens as T

    at = 0
    for stmt in sqlparse.parse(query):
        for tok in stmt.flatten():
            if tok.is_whitespace or tok.ttype in T.Comment or (tok.ttype is T.Punctuation and tok.value in ";("):
                at += len(tok.value)
                continue
            return tok.value.upper(), at + len(tok.value)
    return "", len(query)


def read_statement(query: str, sqlite: bool) -> tuple[str, int]:
    """``first_word`` of a statement ledger sql runs; any other is refused in one line."""
    word, end = first_word(query)
    if word not in READS and not (sqlite and word == "PRAGMA"):
        shown = word if len(word) <= 30 else word[:27] + "..."
        raise LedgerError(f"sql: {shown or 'this'}: ledger sql is read-only: it runs one SELECT, WITH, VALUES, "
                          f"TABLE, EXPLAIN or SHOW statement{' (or PRAGMA)' if sqlite else ''}")
    return word, end


# Functions a PostgreSQL statement may not name (anywhere in its text: a name in a comment or a
# string is refused too, so that no reading of the text hides one): they read or write the
# server's files, run programs or SQL text, signal other sessions, change the session's role or
# settings, or change the server's state.  A read-only transaction does not stop them for a
# superuser; ``pg_read_all_data`` (below) stops the ones checked by privilege, and this the rest
# (``set_config('role', 'none', …)`` would give the session user's rights back).
SERVER_SIDE = re.compile(r"""(?ix)
    \b(?: set_config | query_to_xml\w* | cursor_to_xml\w* | ts_stat | dblink\w* | lo_\w+ | loread | lowrite
        | pg_read_\w+ | pg_ls_\w+ | pg_stat_file | pg_file_\w+ | pg_stat_reset\w* | pg_\w*_backend
        | pg_reload_conf | pg_rotate_logfile | pg_logfile_rotate | pg_promote | pg_switch_(?:wal|xlog)
        | pg_create_restore_point | pg_backup_\w+ | pg_start_backup | pg_stop_backup | pg_\w*replication\w*
        | pg_logical_\w+ | pg_\w*_slot\w* | pg_(?:wal|xlog)_replay_\w+ | pg_import_system_collations
        | pg_log_backend_memory_contexts )\b
    | \bu&\"
""")


def server_side_name(query: str) -> str | None:
    """The first ``SERVER_SIDE`` name in ``query``, else None."""
    m = SERVER_SIDE.search(query)
    return None if m is None else m.group(0)


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
    character's start) and marked when longer, and counted; ``row`` does the same for the
    values of a row that no text factory saw (a BLOB, PostgreSQL's values)."""

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

    def blob(self, raw: bytes | bytearray | memoryview) -> str:
        """A binary value as ``\\x`` and the hex of its first ``MAX_VALUE`` bytes (marked when cut)."""
        size = len(raw)
        shown = "\\x" + bytes(raw[:MAX_VALUE]).hex()
        if size <= MAX_VALUE:
            return shown
        self.cut += 1
        return shown + f"… [cut: {size:,} bytes]"

    def text(self, value: str) -> str:
        """A text value no text factory cut (PostgreSQL's), cut to ``MAX_VALUE`` bytes of UTF-8."""
        if len(value) <= MAX_VALUE // 4:  # at most 4 bytes a character
            return value
        if value.isascii():  # (a flag of the string: no scan)
            size = len(value)
        else:  # counted a piece at a time: no second copy of a large value
            size = sum(len(value[at:at + MAX_VALUE].encode("utf-8", "replace"))
                       for at in range(0, len(value), MAX_VALUE))
        if size <= MAX_VALUE:
            return value
        self.cut += 1
        raw = value[:MAX_VALUE].encode("utf-8", "replace")
        end = min(MAX_VALUE, len(raw))
        while end < len(raw) and end > 0 and raw[end] & 0xC0 == 0x80:  # not inside a character
            end -= 1
        return raw[:end].decode("utf-8", "replace") + f"… [cut: {size:,} bytes]"

    def row(self, row: tuple[Any, ...], texts: bool) -> tuple[Any, ...]:
        """``row`` with its binary values as hex and (``texts``) its long texts cut."""
        for v in row:
            kind = type(v)
            if kind in _BINARY or (texts and kind is str and len(v) > MAX_VALUE // 4):
                break
        else:
            return row  # the common row: nothing to change, no copy
        return tuple(self.blob(v) if type(v) in _BINARY else self.text(v) if texts and type(v) is str else v
                     for v in row)


_BINARY = (bytes, bytearray, memoryview)


@contextmanager
def run_sql(ledger: Ledger, query: str, timeout: float = DEFAULT_TIMEOUT) -> Iterator[Result]:
    """The query's columns and its rows, streamed while the block runs."""
    check_timeout(timeout)
    one_statement(query)
    path = sqlite_file(ledger.url)
    if ledger.is_sqlite:
        read_statement(query, sqlite=True)
        with _run_on_sqlite(ledger, path, query, timeout) as result:
            yield result
    else:
        word, end = read_statement(query, sqlite=False)
        name = server_side_name(query)
        if name is not None:
            shown = name if len(name) <= 40 else name[:37] + "..."
            raise LedgerError(f"sql: {shown} is refused: ledger sql is read-only, and on PostgreSQL this function "
                              "reads or writes the server's files, runs programs or SQL text, signals other "
                              "sessions or changes the session's role")
        with _run_on_server(ledger, query, word, end, timeout) as result:
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
            # one row at a time (sqlite3 steps the statement a row per row either way): a batch of
            # rows of large BLOBs would be held at once
            cut = capped.row
            try:
                for row in cur:
                    # (sqlite3 gives a BLOB as bytes; its text the text factory has cut)
                    yield cut(row, False) if bytes in map(type, row) else row
            except sqlite3.Error as exc:
                raise fail(exc) from None

        yield Result(columns, rows(), capped)
    finally:
        conn.text_factory = text_factory
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
        if path is not None and path.exists():
            conn.close()


# the predefined roles whose rights go beyond reading (files, programs, other sessions)
_POWERFUL_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files", "pg_signal_backend")
READER_ROLE = "pg_read_all_data"  # PostgreSQL 14+: reads every table, view and sequence; nothing else


def _drop_rights(cur: Any) -> None:
    """Run the session as ``READER_ROLE`` when its role could do more than read (a superuser,
    or a member of ``_POWERFUL_ROLES``); refuse such a role where that cannot be done."""
    cur.execute(
        "SELECT current_user, current_setting('is_superuser') = 'on', "
        "ARRAY(SELECT rolname FROM pg_roles WHERE rolname = ANY(%s) AND pg_has_role(oid, 'MEMBER') ORDER BY rolname), "
        "EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s AND pg_has_role(oid, 'MEMBER'))",
        (list(_POWERFUL_ROLES), READER_ROLE))
    user, superuser, powers, can_read_all = cur.fetchone()
    if not superuser and not powers:
        return
    if can_read_all:
        cur.execute(f"SET ROLE {READER_ROLE}")
        return
    what = "a superuser" if superuser else f"a member of {', '.join(powers)}"
    raise LedgerError(f"sql: the URL's role {user} is {what}, which a read-only transaction does not bind "
                      f"(COPY … TO PROGRAM, server files), and it cannot read as {READER_ROLE} here "
                      f"(PostgreSQL 14+, or a member of it): give ledger sql the URL of a role that can "
                      f"only read the ledger")


@contextmanager
def _run_on_server(ledger: Ledger, query: str, word: str, end: int, timeout: float) -> Iterator[Result]:
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
                _drop_rights(cur)
            conn.autocommit = False
            conn.read_only = True  # psycopg begins each transaction READ ONLY
            cur, rows = _server_rows(conn, query, word, end)
        except LedgerError:
            raise
        except Exception as exc:  # the database's own message is the answer
            if not _is_db_error(exc):
                raise
            raise fail(exc) from None
        columns = [d.name for d in cur.description] if cur.description else []

        capped = _CappedText()

        def guarded() -> Iterator[tuple[Any, ...]]:
            cut = capped.row
            try:
                for row in rows:
                    yield cut(row, True)
            except Exception as exc:
                if not _is_db_error(exc):
                    raise
                raise fail(exc) from None

        try:
            yield Result(columns, guarded(), capped)
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                close()  # a query still streaming is cancelled
    finally:
        if raw is not None:
            raw.invalidate()  # never back into any pool; the server rolls the transaction back
        engine.dispose()


def _server_rows(conn: Any, query: str, word: str, end: int) -> tuple[Any, Iterator[tuple[Any, ...]]]:
    """The cursor (for its description) and the rows of ``query`` on psycopg connection
    ``conn`` (``word``: its first word, ending at ``end``).  Every way in sends the text with the
    extended protocol (Parse/Bind/Execute), whose Parse takes one statement: the server itself
    refuses ``COMMIT; DELETE …`` ("cannot insert multiple commands into a prepared statement"),
    however the text hides its semicolons from sqlparse.  The server also decides what runs: a
    query goes through a server-side cursor (``DECLARE … CURSOR FOR``, which takes a SELECT,
    VALUES, TABLE or WITH and nothing else; rows fetched ``_BATCH`` at a time, its columns known
    even when it has no rows); EXPLAIN and SHOW, which a cursor cannot take, are streamed row by
    row with their keyword written here and the rest of the text after it — so a text whose
    comments ``sqlparse`` reads otherwise than the server never runs as a COPY or a DO."""
    if word in ("EXPLAIN", "SHOW"):
        cur = conn.cursor()
        stream = cur.stream(f"{word} {query[end:]}")
        first = next(stream, None)

        def rows() -> Iterator[tuple[Any, ...]]:
            if first is not None:
                yield first
                yield from stream

        return cur, _Closing(rows(), stream)
    cur = conn.cursor(name="ledger_sql")
    cur.itersize = _BATCH
    try:
        cur.execute(query)
    except Exception as exc:
        if not _is_db_error(exc) or getattr(exc, "sqlstate", None) != _SYNTAX_ERROR \
                or "multiple commands" in str(exc):
            raise  # a second statement: said as such (fail)
        raise LedgerError(f"sql: {reason(exc)} (ledger sql is read-only: the server takes a query here as a "
                          f"SELECT, WITH, VALUES or TABLE only)") from None
    return cur, iter(cur)


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
