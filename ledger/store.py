"""Opening the ledger (path or URL, migrate on open) and writing boots into it.

* Location: ``--db`` option, else ``$LEDGER_DB``, else ``default_path()``; a plain path or an
  SQLAlchemy URL.
* Opening applies Alembic migrations: an empty file is created and migrated, an older ledger is
  backed up (SQLite: a timestamped copy next to it) and upgraded, a newer one is refused.
* SQLite runs in WAL mode with foreign keys on and a busy timeout.
* Each boot is written in its own transaction; a file whose sha256 is already in the ledger is
  not stored again.
"""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import json
import operator
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, inspect, select, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

import parsers
from parsers.vocabulary import RUNTIME_KIND_SERIES, RUNTIME_KINDS, RUNTIME_SERIES

from . import models as m
from .errors import LedgerError

HEAD_REVISION = "0003_boot_identity"  # the newest migration; tests check it matches migrations/
ENV_VAR = "LEDGER_DB"
BUSY_TIMEOUT_MS = 30_000


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


def migrations_dir() -> Path:
    """Where Alembic's scripts are: ``ledger/migrations`` in a wheel, ``migrations/`` in the repo."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise LedgerError("ledger's migrations are missing from this installation")


def _alembic_config(connection=None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def known_revisions() -> list[str]:
    from alembic.script import ScriptDirectory

    return [s.revision for s in ScriptDirectory.from_config(_alembic_config()).walk_revisions()]


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # transactions are begun by SQLAlchemy's "begin" event below, not by the driver
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    try:
        cur.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
    except sqlite3.OperationalError:
        pass  # a read-only file: reading still works
    cur.close()


def _sqlite_begin(conn) -> None:
    """Writers take the write lock when they begin (BEGIN IMMEDIATE), so two writers never
    both read, then both try to upgrade their lock and one fails with "database is locked"
    without waiting; readers begin deferred and never block anyone (WAL)."""
    if conn.get_execution_options().get("ledger_write"):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


@dataclass
class Ledger:
    url: str
    engine: Engine
    Session: sessionmaker[Session]  # for reading
    WriteSession: sessionmaker[Session] | None = None  # for writing: takes the write lock at BEGIN
    backup: Path | None = None  # the copy written before an upgrade

    @property
    def write_engine(self) -> Engine:
        return self.engine.execution_options(ledger_write=True)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_file(url: str) -> Path | None:
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    return Path(u.database)


def _check_sqlite_target(path: Path, create: bool) -> None:
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


def open_ledger(db: str | None = None, migrate: bool = True, create: bool = True) -> Ledger:
    """Open (and by default create and migrate) the ledger at ``db``."""
    url = resolve_url(db)
    try:
        make_url(url)
    except ArgumentError:
        raise LedgerError(f"{url}: not a database path or SQLAlchemy URL") from None
    path = _sqlite_file(url)
    if path is not None:
        _check_sqlite_target(path, create)
    try:
        engine = create_engine(url, future=True)
    except (ArgumentError, ImportError) as exc:
        raise LedgerError(f"{url}: cannot open: {exc}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
    ledger = Ledger(url, engine, sessionmaker(engine, expire_on_commit=False))
    ledger.WriteSession = sessionmaker(ledger.write_engine, expire_on_commit=False)
    try:
        if path is not None:
            with engine.connect():
                pass  # connect now: a bad file fails here, with the reason
        if migrate:
            ledger.backup = _migrate(ledger, path)
    except OperationalError as exc:
        engine.dispose()
        raise LedgerError(f"{path or url}: cannot open the ledger: {_reason(exc)}") from None
    except DatabaseError as exc:
        engine.dispose()
        raise LedgerError(f"{path or url}: is not a ledger database ({_reason(exc)})") from None
    return ledger


def describe_db_error(exc: Exception) -> str:
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


def _reason(exc: Exception) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig or exc).splitlines()[0]


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return _revision(conn)


def _revision(conn) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _migrate(ledger: Ledger, path: Path | None) -> Path | None:
    rev = current_revision(ledger.engine)
    if rev == HEAD_REVISION:
        return None
    if rev is not None and rev not in known_revisions():
        raise LedgerError(
            f"{path or ledger.url}: the ledger's schema ({rev}) is newer than this version of ledger "
            f"knows ({HEAD_REVISION}); upgrade ledger — the file was not modified"
        )
    backup = None
    with ledger.write_engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        raw = conn.connection.driver_connection if sqlite else None
        if sqlite:
            # SQLite alters a table by copying it and dropping the old one; with foreign keys on,
            # that drop would cascade into every child row.  Off for the migration (outside any
            # transaction, where the pragma has effect), checked after.
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with conn.begin():  # SQLite: BEGIN IMMEDIATE — one migrator at a time
                if conn.dialect.name == "postgresql":
                    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(731077)")
                rev = _revision(conn)  # again, under the lock: another process may have done it
                if rev == HEAD_REVISION:
                    return None
                if rev is not None and path is not None and path.exists():
                    backup = backup_sqlite(path, rev)
                if rev is None and sqlite and not raw.execute("SELECT 1 FROM sqlite_master").fetchone():
                    for statement in sqlite_template():  # a new file: the schema at head, in one go
                        conn.exec_driver_sql(statement)
                else:
                    from alembic import command

                    command.upgrade(_alembic_config(conn), "head")
            if sqlite:
                broken = raw.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise LedgerError(f"{path or ledger.url}: the upgrade left {len(broken)} dangling rows; "
                                      f"restore the backup {backup}")
        finally:
            if sqlite:
                raw.execute("PRAGMA foreign_keys=ON")
    return backup


SQLITE_TEMPLATE = "head_sqlite.sql"


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


def write_sqlite_template() -> Path:
    """Build a ledger with the migrations and write its schema as ``SQLITE_TEMPLATE``."""
    import tempfile

    from alembic import command
    from sqlalchemy import create_engine as _create

    with tempfile.TemporaryDirectory() as tmp:
        engine = _create(f"sqlite:///{tmp}/l.db")
        with engine.begin() as conn:
            command.upgrade(_alembic_config(conn), "head")
        engine.dispose()
        con = sqlite3.connect(f"{tmp}/l.db")
        rows = con.execute("SELECT type, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                           "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, "
                           "rowid").fetchall()
        version = con.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        con.close()
    out = migrations_dir() / SQLITE_TEMPLATE
    body = "".join(f"{sql};\n\n" for _, sql in rows)
    out.write_text(f"-- A new SQLite ledger at {version}, as the migrations build it.\n"
                   f"-- Generated by `python -m ledger.store`; do not edit.\n\n{body}"
                   f"INSERT INTO alembic_version (version_num) VALUES ('{version}');\n")
    return out


def backup_sqlite(path: Path, rev: str) -> Path:
    """A consistent copy of a SQLite ledger (the online backup API, so WAL content is kept)."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{rev}.{stamp}.bak")
    src = sqlite3.connect(str(path))
    try:
        dst = sqlite3.connect(str(target))
        with dst:
            src.backup(dst)
        dst.close()
    finally:
        src.close()
    return target


def upgrade(db: str | None = None) -> tuple[str | None, str, Path | None]:
    """``ledger db upgrade``: returns (revision before, revision after, backup)."""
    ledger = open_ledger(db, migrate=False)
    try:
        before = current_revision(ledger.engine)
        backup = _migrate(ledger, _sqlite_file(ledger.url))
        return before, HEAD_REVISION, backup
    finally:
        ledger.dispose()


# -- writing ----------------------------------------------------------------------------------------


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


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


def get_or_create_deploy(session: Session, info: DeployInfo) -> m.Deploy:
    ident = info.identity()
    deploy = session.execute(select(m.Deploy).where(m.Deploy.identity == ident)).scalar_one_or_none()
    if deploy is None:
        deploy = m.Deploy(identity=ident, commit_sha=info.commit, image_digest=info.image,
                          label=info.label, dirty=info.dirty, created_at=_now())
        session.add(deploy)
        session.flush()
    elif info.label and deploy.label != info.label:
        deploy.label = info.label  # a label names the deploy; it is not a measured figure
    return deploy


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


def _json_or_none(value: Any) -> str | None:
    return None if value is None else _json(value)


class Staging:
    """Where the runtime samples of an ingest wait for their boot's transaction: a private
    temporary SQLite database (SQLite's own temporary file, gone when its connection closes,
    even if the process is killed), so memory stays flat and the rows are bound while the log
    is still being read.  For a SQLite ledger it is attached to the connection that will write
    the boots, and a boot's samples go in with one INSERT … SELECT; for another database they
    are read back in batches."""

    def __init__(self, ledger: Ledger | None):
        self.ledger = ledger
        self.conn: Any = None  # the ledger connection it is attached to (SQLite ledgers)
        self.raw: sqlite3.Connection | None = None
        self.schema = ""
        self._tables = 0

    def new_table(self, columns: list[str]) -> str:
        if self.raw is None:
            if self.ledger is not None and self.ledger.is_sqlite:
                self.conn = self.ledger.write_engine.connect()
                self.raw = self.conn.connection.driver_connection
                self.raw.execute("ATTACH DATABASE '' AS staging")  # '': a private temporary database
                self.schema = "staging."
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
        if self.conn is not None:
            self.raw.execute("DETACH DATABASE staging")
            self.conn.close()
        elif self.raw is not None:
            self.raw.close()
        self.conn = self.raw = None


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


def store_boot(ledger: Ledger, boot: parsers.Boot, source_path: str, sha256: str | None,
               info: DeployInfo, spool: SampleSpool | None = None) -> int | None:
    """Write one boot in one transaction; returns its id, or None if it was already there
    (the same content, from this file or another)."""
    deploy_info = info
    if not info.image and len(boot.image_digests) == 1:
        # the log printed its own image digest: key the deploy by it
        deploy_info = DeployInfo(info.commit, boot.image_digests[0], info.label, info.dirty)
    year = (boot.started_at or boot.ready_at or boot.ended_at or "")[:4] or None
    return _retrying(lambda: _store_boot_once(ledger, boot, source_path, sha256, deploy_info, spool, year))


def _retrying(write):
    """A write is tried again, a few times, when it met a lock it could not wait out (SQLite's busy
    timeout) or lost a race to another writer creating the same deploy or boot (PostgreSQL:
    the retry then finds the other writer's row)."""
    import time

    from sqlalchemy.exc import IntegrityError

    for attempt in range(5):
        try:
            return write()
        except IntegrityError:
            if attempt == 4:
                raise
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))


def _store_boot_once(ledger: Ledger, boot: parsers.Boot, source_path: str, sha256: str | None,
                     deploy_info: DeployInfo, spool: SampleSpool | None, year: str | None) -> int | None:
    attached = spool is not None and bool(spool.tables) and spool.staging.conn is not None
    if attached:
        spool.flush()  # all of it into the staging table, which this connection sees
    with (Session(spool.staging.conn, expire_on_commit=False) if attached else ledger.WriteSession()) as s, \
            s.begin():
        if s.execute(select(m.Boot.id).where(m.Boot.content_sha256 == boot.content_sha256)).scalar() is not None:
            return None
        if sha256 and s.execute(select(m.Boot.id).where(m.Boot.source_sha256 == sha256,
                                                          m.Boot.boot_index == boot.index)).scalar() is not None:
            return None  # the same file ingested before (also by a ledger older than content digests)
        deploy = get_or_create_deploy(s, deploy_info)
        row = m.Boot(
            deploy_id=deploy.id, content_sha256=boot.content_sha256, source_path=source_path,
            source_sha256=sha256 or None, boot_index=boot.index,
            first_line=boot.first_line, last_line=boot.last_line, engine_name=boot.engine_name,
            engine_version=boot.engine_version, engine_commit=boot.engine_commit,
            image_digest_in_log=boot.image_digests[0] if boot.image_digests else None,
            outcome=boot.outcome, started_at=boot.started_at, year_inferred=boot.year_inferred,
            ready_line=boot.ready_line, ready_at=boot.ready_at, ended_at=boot.ended_at,
            access_lines=boot.access_lines, request_lines=boot.request_lines, ingested_at=_now(),
        )
        s.add(row)
        s.flush()
        bid = row.id
        s.add_all(
            m.Shape(boot_id=bid, key=v.key, value=_json(v.value), value_text=plain_text(v.value), source=v.source,
                    line=v.line, pack=v.pack)
            for v in boot.shape.values()
        )
        s.add_all(
            m.Fact(boot_id=bid, name=f.name, value=f.value, unit=f.unit, precision=f.precision,
                   rank=f.rank, process=f.process, line=f.line, text=f.text, pack=f.pack)
            for f in boot.facts
        )
        s.add_all(
            m.Failure(boot_id=bid, kind=f.kind, phase=f.phase or "unknown", line=f.line, text=f.text,
                      rank=f.rank, process=f.process, figures=_json(f.figures), pack=f.pack,
                      logged_at=f.logged_at)
            for f in boot.failures
        )
        s.flush()
        samples = SampleSpool()
        samples.add(boot.runtime)  # samples the parser kept (no sink)
        if spool is not None:
            _insert_samples(s, bid, spool, year, attached)
        _insert_samples(s, bid, samples, year, False)
        return bid


_SAMPLE_COLUMNS = ["boot_id", "kind", "line", "logged_at", "engine", *_ALL_SERIES]
_INSERT_SAMPLE = f"INSERT INTO runtime_sample ({', '.join(_SAMPLE_COLUMNS)}) "


def _mark(conn) -> str:
    """The driver's placeholder: SQLite's ``?`` or psycopg's ``%s``."""
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


def insert_sample_rows(session: Session, rows: list[tuple]) -> None:
    """Runtime rows (in ``_SAMPLE_COLUMNS`` order) through the driver's executemany with plain
    tuples: a weeks-long boot has hundreds of thousands of them, and per-row ORM work would
    dominate the ingest."""
    if not rows:
        return
    conn = session.connection()
    mark = _mark(conn)
    conn.exec_driver_sql(_INSERT_SAMPLE + f"VALUES ({', '.join([mark] * len(_SAMPLE_COLUMNS))})", rows)


def _insert_samples(session: Session, boot_id: int, spool: SampleSpool, year: str | None, attached: bool) -> None:
    """A spool's rows as they are: the boot id and the year (vLLM's stamps lack it) go into the
    statement as literals, so no row is built again on its way in; staged rows on the same
    connection go in with one INSERT … SELECT."""
    conn = session.connection()
    mark = _mark(conn)
    if attached:
        # 'YYYY-' || 'MM-DD HH:MM:SS' is NULL where the stamp is NULL, as it must be
        stamp = f"'{int(year):04d}-' || stamp" if year else "CAST(NULL AS VARCHAR(32))"
        conn.exec_driver_sql(_INSERT_SAMPLE + f"SELECT {int(boot_id)}, kind, line, {stamp}, engine, {', '.join(_ALL_SERIES)} "
                                    f"FROM ({spool.copy_statement()}) AS staged")
        return
    stamp = f"'{int(year):04d}-' || {mark}" if year else f"CAST(NULL AS VARCHAR(32)) || {mark}"
    sql = _INSERT_SAMPLE + f"VALUES ({int(boot_id)}, {mark}, {mark}, {stamp}, {', '.join([mark] * (len(_ALL_SERIES) + 1))})"
    for batch in spool.batches():
        conn.exec_driver_sql(sql, batch)


def set_source_sha256(ledger: Ledger, boot_ids: list[int], sha256: str) -> None:
    """Record the whole input's sha256 on boots stored before it was known (a stream)."""
    if not boot_ids:
        return
    with ledger.WriteSession() as s, s.begin():
        for b in s.execute(select(m.Boot).where(m.Boot.id.in_(boot_ids))).scalars():
            if b.source_sha256 is None:
                b.source_sha256 = sha256




if __name__ == "__main__":
    print(write_sqlite_template())
