"""Writing boots into the ledger: the ingest's write path, through the database driver.

``open_writer(db)`` gives a ``Writer``.  A SQLite ledger at the head revision (or a new one,
built from the head schema) is written with the sqlite3 module alone, so an ingest never loads
SQLAlchemy — a third of a second of every ``ledger ingest``, more than a boot log takes to
read.  An older SQLite ledger (migrated first, with a backup), a newer one (refused) and a
PostgreSQL ledger are opened by ``ledger.store``, and the writer uses the driver connection
SQLAlchemy made.  The statements are the same for both databases.

* Each boot is written in its own transaction (SQLite: BEGIN IMMEDIATE, the write lock taken
  at once); a boot whose content is already in the ledger, or whose file is, is not stored again.
* Runtime samples wait in a private temporary SQLite database (``Staging``) until their boot's
  transaction copies them in.
"""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import json
import operator
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import parsers
from parsers.vocabulary import RUNTIME_KIND_SERIES, RUNTIME_KINDS, RUNTIME_SERIES

from .errors import LedgerError
from .sqlite_file import (
    HEAD_REVISION,
    apply_settings,
    build_new,
    check_sqlite_target,
    is_empty,
    plain_sqlite_path,
    resolve_url,
    sqlite_revision,
)


class Writer:
    """A DB-API connection to a ledger that boots are written through.  ``mark`` is the
    driver's placeholder (sqlite3's ``?``, psycopg's ``%s``)."""

    def __init__(self, conn: Any, is_sqlite: bool, close: Callable[[], None], backup: Path | None = None):
        self.conn, self.is_sqlite, self._close = conn, is_sqlite, close
        self.mark = "?" if is_sqlite else "%s"
        self.backup = backup  # the copy written before an upgrade (``ledger.store``)

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
        sql = _insert_sql(table, list(row), self.mark)
        if self.is_sqlite:
            cur.execute(sql, tuple(row.values()))
            return cur.lastrowid
        cur.execute(sql + " RETURNING id", tuple(row.values()))
        return cur.fetchone()[0]

    def insert_many(self, cur: Any, table: str, columns: list[str], rows: list[tuple]) -> None:
        if rows:
            cur.executemany(_insert_sql(table, columns, self.mark), rows)

    def close(self) -> None:
        self._close()


def _insert_sql(table: str, columns: list[str], mark: str) -> str:
    names = ", ".join(f'"{c}"' for c in columns)  # quoted: "key", "rank", "text", "line" are columns here
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join([mark] * len(columns))})"


def open_writer(db: str | None = None) -> Writer:
    """The ledger at ``db`` (``--db``, ``$LEDGER_DB``, the default file), ready to write boots;
    created if it does not exist."""
    path = plain_sqlite_path(resolve_url(db))
    if path is not None:
        check_sqlite_target(path, create=True)
        conn = _open_at_head(path)
        if conn is not None:
            return Writer(conn, True, conn.close)
    # an older SQLite ledger (migrated, with a backup), a newer one (refused), another database
    from .store import open_ledger

    ledger = open_ledger(db)
    raw = ledger.engine.raw_connection()

    def close() -> None:
        raw.close()
        ledger.dispose()

    return Writer(raw.driver_connection, ledger.is_sqlite, close, ledger.backup)


def _open_at_head(path: Path) -> sqlite3.Connection | None:
    """A connection to the file if it is at ``HEAD_REVISION`` — a new (empty) file gets the head
    schema first; None for a file ``ledger.store`` must open (to migrate it, or refuse it)."""
    conn, handed_on = None, False
    try:
        conn = sqlite3.connect(str(path), isolation_level=None)
        apply_settings(conn)
        rev = sqlite_revision(conn)
        if rev is None and is_empty(conn):
            conn.execute("BEGIN IMMEDIATE")  # one creator at a time
            try:
                if is_empty(conn):  # again, under the lock: another process may have built it
                    build_new(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            rev = sqlite_revision(conn)
        handed_on = rev == HEAD_REVISION
        return conn if handed_on else None
    except sqlite3.OperationalError as exc:
        raise LedgerError(f"{path}: cannot open the ledger: {_reason(exc)}") from None
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"{path}: is not a ledger database ({_reason(exc)})") from None
    finally:
        if conn is not None and not handed_on:
            conn.close()


# -- errors -------------------------------------------------------------------------------------------


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
    """One line for a database error the user can act on."""
    reason = _reason(exc)
    hint = ""
    low = reason.lower()
    if "readonly" in low or "read-only" in low:
        hint = " (the ledger file or its folder is read-only)"
    elif "disk is full" in low or "no space" in low:
        hint = " (the disk is full; nothing of the boot being written was kept)"
    elif "locked" in low:
        hint = " (another process held the ledger for longer than the busy timeout)"
    return f"ledger database error: {reason}{hint}"


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    return str(orig or exc).splitlines()[0]


def _is(exc: BaseException, name: str) -> bool:
    # PEP 249 names the classes alike in every driver (and SQLAlchemy wraps them under the same
    # names): sqlite3.IntegrityError, psycopg.IntegrityError, sqlalchemy.exc.IntegrityError
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def retrying(write: Callable[[], Any]) -> Any:
    """A write is tried again, a few times, when it met a lock it could not wait out (SQLite's busy
    timeout) or lost a race to another writer creating the same deploy or boot (PostgreSQL:
    the retry then finds the other writer's row)."""
    for attempt in range(5):
        try:
            return write()
        except Exception as exc:
            if attempt == 4:
                raise
            if _is(exc, "IntegrityError"):
                continue
            if _is(exc, "OperationalError") and "locked" in str(exc):
                time.sleep(0.2 * (attempt + 1))
                continue
            raise


# -- boots ----------------------------------------------------------------------------------------------


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass
class DeployInfo:
    commit: str | None = None
    image: str | None = None
    label: str | None = None
    dirty: bool | None = None

    def identity(self) -> str:
        if self.commit or self.image:
            return f"commit={self.commit or ''};image={self.image or ''}"
        if self.label:
            return f"label={self.label}"
        return ""


_JSON = json.JSONEncoder(sort_keys=True, default=str)  # what json.dumps(value, sort_keys=True, default=str) builds each call


def _json(value: Any) -> str:
    return _JSON.encode(value)


def plain_text(value: Any) -> str | None:
    """A shape value as plain text for SQL (``fp8``, ``2``, ``true``); JSON for lists and dicts."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return _json(value)


class Staging:
    """Where the runtime samples of an ingest wait for their boot's transaction: a private
    temporary SQLite database (SQLite's own temporary file, gone when its connection closes,
    even if the process is killed), so memory stays flat and the rows are bound while the log
    is still being read.  For a SQLite ledger it is attached to the writer's connection, and a
    boot's samples go in with one INSERT … SELECT; for another database they are read back in
    batches."""

    def __init__(self, writer: Writer | None):
        self.writer = writer
        self.raw: sqlite3.Connection | None = None
        self.schema = ""
        self.attached = False  # to the writer's own connection (a SQLite ledger)
        self._tables = 0

    def new_table(self, columns: list[str]) -> str:
        if self.raw is None:
            if self.writer is not None and self.writer.is_sqlite:
                self.raw = self.writer.conn
                self.raw.execute("ATTACH DATABASE '' AS staging")  # '': a private temporary database
                self.schema, self.attached = "staging.", True
            else:
                self.raw = sqlite3.connect("", isolation_level=None)
            # nothing here is ever rolled back or needed after a crash: no journal (dropping the
            # tables wrote every page to one again) and no syncs
            for pragma in ("journal_mode = OFF", "synchronous = OFF"):
                self.raw.execute(f"PRAGMA {self.schema}{pragma}")
        self._tables += 1
        name = f"{self.schema}samples_{self._tables}"
        self.raw.execute(f"CREATE TABLE {name} ({', '.join(columns)})")
        return name

    def close(self) -> None:
        if self.attached:
            self.raw.execute("DETACH DATABASE staging")
        elif self.raw is not None:
            self.raw.close()
        self.raw, self.attached = None, False


class SampleSpool:
    """Runtime samples of one boot on their way to the database, a table per kind (a row binds
    only its kind's columns): a few thousand in memory, the rest in tables of the ingest's
    ``Staging``, so a weeks-long boot costs no more memory than a short one."""

    LIMIT = 5000

    def __init__(self, staging: Staging | None = None) -> None:
        self.rows: dict[str, list[tuple]] = {kind: [] for kind in RUNTIME_KINDS}
        self.held = 0  # rows in memory
        self.seq = 0  # samples so far: a row's first column, the order they came in
        self.staging = staging
        self.tables: dict[str, str] = {}

    def add(self, samples: list[parsers.RuntimeSample]) -> None:
        rows, seq = self.rows, self.seq
        for sample in samples:
            seq += 1
            rows[sample.kind].append(_spool_row(seq, sample))
        self.seq = seq
        self.held += len(samples)
        if self.held >= self.LIMIT and self.staging is not None:
            self.flush()

    def flush(self) -> None:
        """Move the rows held in memory into the staging tables."""
        raw = None
        for kind, rows in self.rows.items():
            if not rows:
                continue
            if kind not in self.tables:
                self.tables[kind] = self.staging.new_table(_SPOOL_COLUMNS[kind])
            if raw is None:
                raw = self.staging.raw
                raw.execute("BEGIN")  # touches the staging database only: the ledger is not locked
            marks = ", ".join(["?"] * len(_SPOOL_COLUMNS[kind]))
            raw.executemany(f"INSERT INTO {self.tables[kind]} VALUES ({marks})", rows)
            self.rows[kind] = []
        if raw is not None:
            raw.execute("COMMIT")
        self.held = 0

    def copy_statement(self) -> str:
        """A SELECT of every staged row as (seq, kind, line, stamp, engine, *series, per-position)
        in the order the samples came in: a merge of the tables, each in seq (rowid) order, with
        no sorting."""
        parts = []
        for kind, table in self.tables.items():
            mine = set(_SPOOL_COLUMNS[kind][1:])
            parts.append(f"SELECT seq, '{kind}' AS kind, line, stamp, engine, "
                         + ", ".join(c if c in mine else f"NULL AS {c}" for c in _ALL_SERIES) + f" FROM {table}")
        return " UNION ALL ".join(parts) + " ORDER BY seq"

    def batches(self):
        """Every row as (kind, line, stamp, engine, *series, per-position), in the order the
        samples came in, a list at a time; each call reads from the start (a retried transaction)."""
        def wide(kind: str) -> Iterator[tuple[int, tuple]]:
            staged: Any = ()
            if kind in self.tables:
                staged = self.staging.raw.execute(f"SELECT * FROM {self.tables[kind]} ORDER BY seq")
            widen = _WIDEN[kind]
            for row in itertools.chain(staged, self.rows[kind]):
                yield row[0], (kind, *(None if i is None else row[i] for i in widen))

        streams = [wide(kind) for kind in RUNTIME_KINDS]
        batch: list[tuple] = []
        for _, row in heapq.merge(*streams, key=operator.itemgetter(0)):
            batch.append(row)
            if len(batch) >= self.LIMIT:
                yield batch
                batch = []
        if batch:
            yield batch

    def close(self) -> None:
        if self.staging is not None and self.staging.raw is not None:
            for table in self.tables.values():
                self.staging.raw.execute(f"DROP TABLE {table}")
        self.tables = {}
        self.rows = {kind: [] for kind in RUNTIME_KINDS}


_ALL_SERIES = list(RUNTIME_SERIES)
# a spooled row of each kind: its order among the boot's samples (the rowid), then its
# runtime_sample columns but boot_id and kind, with vLLM's stamp (no year: that is known when the
# boot ends) for logged_at
_SPOOL_COLUMNS = {kind: ["seq INTEGER PRIMARY KEY", "line", "stamp", "engine", *series]
                  for kind, series in RUNTIME_KIND_SERIES.items()}
# where each of (line, stamp, engine, *_ALL_SERIES) sits in a kind's spooled row
_WIDEN = {kind: [cols.index(c) if c in cols else None for c in ["line", "stamp", "engine", *_ALL_SERIES]]
          for kind, cols in _SPOOL_COLUMNS.items()}


def _spool_row(seq: int, r: parsers.RuntimeSample) -> tuple:
    # the figures are in the kind's series order, the order of its spooled columns; the
    # per-position list (spec decode's last series) is stored as JSON
    if r.kind == "spec_decode":
        per_position = r.figures[-1]
        return (seq, r.line, r.timestamp, r.engine, *r.figures[:-1],
                None if per_position is None else _json(per_position))
    return (seq, r.line, r.timestamp, r.engine, *r.figures)




def store_boot(writer: Writer, boot: parsers.Boot, source_path: str, sha256: str | None,
               info: DeployInfo, spool: SampleSpool | None = None) -> int | None:
    """Write one boot in one transaction; returns its id, or None if it was already there
    (the same content, from this file or another)."""
    deploy_info = info
    if not info.image and len(boot.image_digests) == 1:
        # the log printed its own image digest: key the deploy by it
        deploy_info = DeployInfo(info.commit, boot.image_digests[0], info.label, info.dirty)
    year = (boot.started_at or boot.ready_at or boot.ended_at or "")[:4] or None
    return retrying(lambda: _store_boot_once(writer, boot, source_path, sha256, deploy_info, spool, year))


def deploy_id(writer: Writer, cur: Any, identity: str, new: dict[str, Any], label: str | None = None) -> int:
    """The id of the deploy with this identity, created with the columns ``new`` if there is
    none; ``label`` renames it (a label names the deploy; it is not a measured figure)."""
    cur.execute(f"SELECT id, label FROM deploy WHERE identity = {writer.mark}", (identity,))
    row = cur.fetchone()
    if row is None:
        return writer.insert(cur, "deploy", {"identity": identity, **new})
    if label and row[1] != label:
        cur.execute(f"UPDATE deploy SET label = {writer.mark} WHERE id = {writer.mark}", (label, row[0]))
    return row[0]


def is_stored(writer: Writer, cur: Any, content_sha256: str) -> bool:
    """Whether a boot with this content is in the ledger (from this file or another)."""
    cur.execute(f"SELECT id FROM boot WHERE content_sha256 = {writer.mark}", (content_sha256,))
    return cur.fetchone() is not None


def insert_boot(writer: Writer, cur: Any, deploy: int, boot: dict[str, Any], shape: list[tuple], facts: list[tuple],
                failures: list[tuple]) -> int:
    """A boot row and its shape, fact and failure rows (each in its table's column order but the
    boot id); the new boot's id."""
    bid = writer.insert(cur, "boot", {"deploy_id": deploy, **boot})
    writer.insert_many(cur, "shape", _SHAPE_COLUMNS, [(bid, *row) for row in shape])
    writer.insert_many(cur, "fact", _FACT_COLUMNS, [(bid, *row) for row in facts])
    writer.insert_many(cur, "failure", _FAILURE_COLUMNS, [(bid, *row) for row in failures])
    return bid


_SHAPE_COLUMNS = ["boot_id", "key", "value", "value_text", "source", "line", "pack"]
_FACT_COLUMNS = ["boot_id", "name", "value", "unit", "precision", "rank", "process", "line", "text", "pack"]
_FAILURE_COLUMNS = ["boot_id", "kind", "phase", "line", "text", "rank", "process", "figures", "pack", "logged_at"]


def _boot_rows(boot: parsers.Boot, source_path: str, sha256: str | None) -> tuple[dict[str, Any], list, list, list]:
    """A parsed boot as ``insert_boot`` takes it: the boot row, its shape, fact and failure rows."""
    row = dict(
        content_sha256=boot.content_sha256, source_path=source_path, source_sha256=sha256 or None,
        boot_index=boot.index, first_line=boot.first_line, last_line=boot.last_line,
        engine_name=boot.engine_name, engine_version=boot.engine_version, engine_commit=boot.engine_commit,
        image_digest_in_log=boot.image_digests[0] if boot.image_digests else None,
        outcome=boot.outcome, started_at=boot.started_at, year_inferred=boot.year_inferred,
        ready_line=boot.ready_line, ready_at=boot.ready_at, ended_at=boot.ended_at,
        access_lines=boot.access_lines, request_lines=boot.request_lines, ingested_at=_now(),
    )
    shape = [(v.key, _json(v.value), plain_text(v.value), v.source, v.line, v.pack) for v in boot.shape.values()]
    # a fact's value is a number: float() refuses anything else before it reaches the table
    facts = [(f.name, float(f.value), f.unit, f.precision, f.rank, f.process, f.line, f.text, f.pack)
             for f in boot.facts]
    failures = [(f.kind, f.phase or "unknown", f.line, f.text, f.rank, f.process, _json(f.figures), f.pack,
                 f.logged_at) for f in boot.failures]
    return row, shape, facts, failures


def _store_boot_once(writer: Writer, boot: parsers.Boot, source_path: str, sha256: str | None,
                     info: DeployInfo, spool: SampleSpool | None, year: str | None) -> int | None:
    row, shape, facts, failures = _boot_rows(boot, source_path, sha256)
    attached = spool is not None and bool(spool.tables) and spool.staging.attached
    if attached:
        spool.flush()  # all of it into the staging tables, which the writer's connection sees
    with writer.transaction() as cur:
        if is_stored(writer, cur, boot.content_sha256):
            return None
        if sha256:
            cur.execute(f"SELECT id FROM boot WHERE source_sha256 = {writer.mark} AND boot_index = {writer.mark}",
                        (sha256, boot.index))
            if cur.fetchone() is not None:
                return None  # the same file ingested before (also by a ledger older than content digests)
        deploy = deploy_id(writer, cur, info.identity(), {
            "commit_sha": info.commit, "image_digest": info.image, "label": info.label, "dirty": info.dirty,
            "created_at": _now()}, info.label)
        bid = insert_boot(writer, cur, deploy, row, shape, facts, failures)
        samples = SampleSpool()
        samples.add(boot.runtime)  # samples the parser kept (no sink)
        if spool is not None:
            _insert_samples(writer, cur, bid, spool, year, attached)
        _insert_samples(writer, cur, bid, samples, year, False)
        return bid


_SAMPLE_COLUMNS = ["boot_id", "kind", "line", "logged_at", "engine", *_ALL_SERIES]
_INSERT_SAMPLE = f"INSERT INTO runtime_sample ({', '.join(_SAMPLE_COLUMNS)}) "


def _insert_samples(writer: Writer, cur: Any, boot_id: int, spool: SampleSpool, year: str | None,
                    attached: bool) -> None:
    """A spool's rows as they are: the boot id and the year (vLLM's stamps lack it) go into the
    statement as literals, so no row is built again on its way in; staged rows on the writer's
    connection go in with one INSERT … SELECT."""
    mark = writer.mark
    if attached:
        # 'YYYY-' || 'MM-DD HH:MM:SS' is NULL where the stamp is NULL, as it must be
        stamp = f"'{int(year):04d}-' || stamp" if year else "CAST(NULL AS VARCHAR(32))"
        cur.execute(_INSERT_SAMPLE + f"SELECT {int(boot_id)}, kind, line, {stamp}, engine, {', '.join(_ALL_SERIES)} "
                                     f"FROM ({spool.copy_statement()}) AS staged")
        return
    stamp = f"'{int(year):04d}-' || {mark}" if year else f"CAST(NULL AS VARCHAR(32)) || {mark}"
    sql = _INSERT_SAMPLE + f"VALUES ({int(boot_id)}, {mark}, {mark}, {stamp}, {', '.join([mark] * (len(_ALL_SERIES) + 1))})"
    for batch in spool.batches():
        cur.executemany(sql, batch)


def set_source_sha256(writer: Writer, boot_ids: list[int], sha256: str) -> None:
    """Record the whole input's sha256 on boots stored before it was known (a stream)."""
    if not boot_ids:
        return
    q = writer.mark
    with writer.transaction() as cur:
        cur.executemany(f"UPDATE boot SET source_sha256 = {q} WHERE id = {q} AND source_sha256 IS NULL",
                        [(sha256, bid) for bid in boot_ids])
