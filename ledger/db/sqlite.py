"""A SQLite ledger file, through the sqlite3 module alone (no SQLAlchemy).

What both ways of opening a SQLite ledger share (``connect``: SQLAlchemy for the queries and
migrations, or the sqlite3 module alone for the ingest): the checks on a path before it is
opened, the connection settings (WAL, foreign keys, a busy timeout), the schema a new file is
built with (``ledger/migrations/head_sqlite.sql``), how to read a file's revision, and the backup
taken before an upgrade.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import sqlite3
import struct
import sys
import threading
from pathlib import Path
from urllib.parse import quote

from ..errors import LedgerError

BUSY_TIMEOUT_MS = 30_000
SQLITE_TEMPLATE = "head_sqlite.sql"


def migrations_dir() -> Path:
    """Where Alembic's scripts are: the ``ledger.migrations`` package, beside ``ledger.db``."""
    candidate = Path(__file__).resolve().parent.parent / "migrations"
    if (candidate / "env.py").is_file():
        return candidate
    raise LedgerError("ledger's migrations are missing from this installation")


def script_revisions() -> set[str]:
    """Every revision id of the migration scripts (their ``revision = "…"`` line), read without
    importing Alembic: a read command told "older" or "newer" pays no Alembic import (a test
    holds it to Alembic's own list)."""
    import re

    found = set()
    for script in (migrations_dir() / "versions").glob("*.py"):
        m = re.search(r'^revision\s*(?::\s*str\s*)?=\s*["\']([^"\']+)["\']', script.read_text(), re.M)
        if m:
            found.add(m.group(1))
    return found


@functools.cache
def sqlite_template() -> tuple[str, ...]:
    """The statements that build a new SQLite ledger at the head revision: what the migrations
    build (a test holds them to it), without importing Alembic and running each migration —
    a tenth of a second of every first ingest.  ``python -m ledger.db.schema`` writes the file.
    Read once per process (a process that builds many ledgers, as the test suite does, read and
    split the file for each)."""
    statements: list[str] = []
    pending = ""
    for line in (migrations_dir() / SQLITE_TEMPLATE).read_text().splitlines(keepends=True):
        if not pending and (not line.strip() or line.startswith("--")):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    return tuple(statements)


def head_columns() -> dict[str, list[str]]:
    """Every table and view of a new ledger at the head revision, with its columns in order
    (built in memory from the template: no ledger is opened)."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in sqlite_template():
            conn.execute(statement)
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")]
        return {name: [row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')] for name in names}
    finally:
        conn.close()


def exists(path: Path) -> bool:
    """Whether the ledger file is there; a folder on the way the user may not enter is a
    one-line error that names it (pathlib raises PermissionError)."""
    try:
        os.stat(path)
        return True
    except FileNotFoundError:
        return False
    except PermissionError:
        folder = next((p for p in path.parents if p.exists() and not os.access(p, os.X_OK)), path.parent)
        raise LedgerError(f"{path}: permission denied (the folder {folder} cannot be entered)") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot open the ledger: {exc.strerror}") from None


def check_target(path: Path, create: bool) -> None:
    """A one-line error for a path that is not (and cannot become) a ledger file."""
    exists(path)  # a folder that cannot be entered: said here
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


def check_writable(path: Path) -> None:
    """A one-line error, before anything is read, for a ledger this user cannot write: a
    read-only file, or a folder SQLite cannot make its journal in (a rollback journal, or the
    -wal and -shm files when they are not there already)."""
    folder = path.parent
    if exists(path) and not os.access(path, os.W_OK):
        raise LedgerError(f"{path}: cannot write the ledger: the file is read-only")
    sidecars = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    for side in sidecars:
        if side.exists() and not os.access(side, os.W_OK):
            raise LedgerError(_foreign_sidecar(path, side, sidecars))
    if os.access(folder, os.W_OK):
        return
    if all(p.exists() and os.access(p, os.W_OK) for p in sidecars):
        return  # a WAL ledger whose files are there to be written
    raise LedgerError(f"{path}: cannot write the ledger: its folder {folder} is not writable "
                      f"(SQLite writes its journal next to the file)")


def _foreign_sidecar(path: Path, side: Path, sidecars: list[Path]) -> str:
    """What to do about a -wal or -shm file this user cannot write: another user's read made it
    (SQLite gives it the ledger file's mode, 0644, under the reader's name), and in a shared
    sticky folder only that user or root can remove it."""
    import pwd

    uid = side.stat().st_uid
    if uid == os.geteuid():
        return f"{path}: cannot write the ledger: its {side.name} is read-only"
    try:
        owner = f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        owner = f"user id {uid}"
    wal = sidecars[0]
    empty = not wal.exists() or wal.stat().st_size == 0
    todo = (f"once nobody reads the ledger, {owner} or root can remove {wal.name} and {sidecars[1].name} "
            f"(nothing is lost: the -wal is empty)" if empty else
            f"once nobody reads the ledger, {owner} or root can write its -wal back with "
            f"sqlite3 {path} 'PRAGMA wal_checkpoint(TRUNCATE)'")
    return (f"{path}: cannot write the ledger: {side.name} belongs to {owner}, left by a read of theirs "
            f"that is still running or was cut short; {todo}")


def connect_file(path: Path) -> sqlite3.Connection:
    """A connection to the file with the ledger's settings (``apply_settings``)."""
    try:
        conn = sqlite3.connect(str(path), isolation_level=None)
    except sqlite3.OperationalError as exc:
        raise LedgerError(_cannot_open(path, exc)) from None
    try:
        apply_settings(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _cannot_open(path: Path, exc: Exception) -> str:
    """Why SQLite could not open (or create) the file, naming the folder when it is the folder
    that is not writable: SQLite creates its journal next to the file."""
    folder = path.parent
    if not os.access(folder, os.W_OK):
        return f"{path}: cannot write the ledger: its folder {folder} is not writable ({exc})"
    return f"{path}: cannot open the ledger: {exc}"


def connect_read(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing ledger file: opened with ``mode=ro`` and
    ``query_only``, the journal mode left as it is, so no byte of the file changes whatever
    runs on it.  A WAL file in a folder the reader cannot write (SQLite cannot make the -shm
    file) is opened ``immutable``: nobody can be writing it either, then."""
    uri = f"file:{quote(str(path))}?mode=ro"
    key = path.absolute()
    with _reads_lock:
        _open_reads[key] = _open_reads.get(key, 0) + 1
    try:
        try:
            conn = _ReadConnection(uri, uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.OperationalError as exc:
            if os.access(path.parent, os.W_OK):
                raise LedgerError(f"{path}: cannot open the ledger: {exc}") from None
            # a WAL file whose -shm SQLite cannot create ("unable to open", "attempt to write a
            # readonly database"): nobody can be writing it either.  Opened immutable, SQLite
            # reads the file alone: transactions committed into a -wal (by a writer that was cut
            # short) would be silently missing, so a -wal that holds any frame is refused
            _refuse_unreadable_wal(path, exc)
            conn = _ReadConnection(uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False)
    except BaseException:
        _read_closed(key)
        raise
    conn.ledger_path = key
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only = ON")
    return conn


_WAL_HEADER_BYTES = 32  # a -wal no longer than its header holds no transaction


def _refuse_unreadable_wal(path: Path, exc: Exception) -> None:
    wal = path.with_name(path.name + "-wal")
    try:
        size = wal.stat().st_size
    except OSError:
        return  # no -wal: the file is the whole ledger
    if size <= _WAL_HEADER_BYTES:
        return
    raise LedgerError(f"{path}: cannot read the ledger: {wal.name} holds transactions not yet written back "
                      f"into the file, and SQLite cannot make the {path.name}-shm it needs to read them in the "
                      f"read-only folder {path.parent} ({exc}); open the ledger once where its folder is "
                      f"writable, or copy {path.name} and {wal.name} together to a writable folder")


class _ReadConnection(sqlite3.Connection):
    """A read connection that, once this process's last one to the file is closed, takes away
    the empty -wal and the -shm that reading made for another user's ledger (``_tidy``)."""

    ledger_path: Path | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            key, self.ledger_path = self.ledger_path, None
            if key is not None:
                _read_closed(key)


# read connections open in this process, by file: the -wal and -shm are tidied only when none
# is (a probe's descriptor closed while SQLite holds the file would drop SQLite's POSIX locks)
_open_reads: dict[Path, int] = {}
_reads_lock = threading.Lock()
# os_unix.c: every connection that has a WAL index (-shm) open holds a read lock on its byte
# UNIX_SHM_DMS (120 + 8); every connection that has a WAL database open holds a SHARED lock,
# a read lock on SHARED_FIRST (PENDING_BYTE 0x40000000 + 2) .. + SHARED_SIZE (510), of the file
_SHM_DMS = 128
_SHARED_FIRST, _SHARED_SIZE = 0x40000000 + 2, 510


def _read_closed(key: Path) -> None:
    with _reads_lock:
        left = _open_reads.get(key, 1) - 1
        if left > 0:
            _open_reads[key] = left
            return
        _open_reads.pop(key, None)
        _tidy(key)


def _tidy(path: Path) -> None:
    """Take away the -wal and -shm that this user's read made for a ledger another user owns.

    SQLite makes them for a reader who can write the folder (a shared 1777 folder like /tmp)
    with the ledger file's mode, 0644, under the reader's name, and a read-only connection
    leaves them when it closes: the owner could then neither write them nor, in a sticky
    folder, remove them, and every write of theirs failed.  They go only if this user owns
    them, the -wal is empty (a reader writes no frame), no connection anywhere has the -shm
    open (its dead-man-switch byte can be locked) and none has the file open (no SHARED lock
    on it) — SQLite's own test before it removes them at the close of the last connection."""
    if sys.platform != "linux":
        return  # the struct flock below is Linux's layout (macOS orders its fields otherwise)
    me = os.geteuid()
    wal, shm = path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
    try:
        if os.stat(path).st_uid == me:
            return  # the owner's own files: theirs to use
        st_wal, st_shm = os.stat(wal), os.stat(shm)
    except OSError:
        return
    if st_wal.st_uid != me or st_shm.st_uid != me or st_wal.st_size != 0:
        return
    import fcntl  # here: a read of one's own ledger (every read but in a shared folder) needs none

    try:
        shm_fd = os.open(shm, os.O_RDWR)
    except OSError:
        return
    try:
        db_fd = os.open(path, os.O_RDONLY)
    except OSError:
        os.close(shm_fd)
        return
    try:
        fcntl.lockf(shm_fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _SHM_DMS)
        probe = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, _SHARED_FIRST, _SHARED_SIZE, 0)
        held = struct.unpack("hhqqi", fcntl.fcntl(db_fd, fcntl.F_GETLK, probe))[0]
        if held == fcntl.F_UNLCK and os.fstat(shm_fd).st_ino == os.stat(shm).st_ino and os.stat(wal).st_size == 0:
            os.unlink(wal)
            os.unlink(shm)
    except OSError:
        pass  # in use (or gone): left as it is
    finally:
        os.close(db_fd)
        os.close(shm_fd)


def apply_settings(conn: sqlite3.Connection, _record: object = None) -> None:
    """A SQLite ledger writer's settings (SQLAlchemy calls it on connect, hence ``_record``).
    Transactions are begun explicitly (writers with BEGIN IMMEDIATE), not by the driver."""
    conn.isolation_level = None
    cur = conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    try:
        # readers never block the writer: a new file is made WAL by its first writer.  A ledger
        # someone keeps in another journal mode (DELETE, for a file on NFS) is left in it, and a
        # file that is another program's database is left as it is, to be refused unchanged
        if is_empty(conn):
            cur.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError:
        pass  # a read-only file: reading still works
    cur.close()


def revision(conn: sqlite3.Connection) -> str | None:
    """The file's Alembic revision; None for a file without one (a new, empty file)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'").fetchone():
        return None
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None


def is_empty(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master").fetchone() is None


def build_new(conn: sqlite3.Connection) -> None:
    """The schema at the head revision into an empty file, in the caller's transaction."""
    for statement in sqlite_template():
        conn.execute(statement)


def backup(path: Path, rev: str) -> Path:
    """A consistent copy of a SQLite ledger (the online backup API, so WAL content is kept),
    under a name of its revision that an upgrade cut short (SIGKILL) leaves for the next one
    to write again: one backup however often the upgrade is killed.  ``keep_backup`` gives it
    its time once the upgrade is committed."""
    target = path.with_name(f"{path.name}.{rev}.{UPGRADING}.bak")
    for left in (target, target.with_name(target.name + "-journal")):  # a copy cut short, and its journal
        left.unlink(missing_ok=True)
    src = sqlite3.connect(str(path))
    try:
        dst = sqlite3.connect(str(target))
        with dst:
            src.backup(dst)
        dst.close()
    finally:
        src.close()
    return target


UPGRADING = "upgrading"  # in the name of a backup whose upgrade is not committed yet


def keep_backup(target: Path) -> Path:
    """The backup of a committed upgrade, named with the time: ``ledger.db.<rev>.<stamp>.bak``."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    kept = target.with_name(target.name.replace(f".{UPGRADING}.bak", f".{stamp}.bak"))
    os.replace(target, kept)
    return kept


def completions(path: Path) -> tuple[list[tuple[int, str]], list[str]]:
    """Boot ids (with a one-word hint: the outcome) and deploy labels of a SQLite ledger, for
    shell completion; read on a read-only connection (completion changes nothing)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ids = [(r[0], r[1] or "") for r in conn.execute("SELECT id, outcome FROM boot ORDER BY id DESC LIMIT 200")]
        labels = [r[0] for r in conn.execute("SELECT DISTINCT label FROM deploy WHERE label IS NOT NULL ORDER BY label")]
        return ids, labels
    finally:
        conn.close()
