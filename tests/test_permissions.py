"""Permission errors as a user who is not root, for real (issue 15, item 11): run as the user
``ledgertest`` when the suite runs as root (CI), never skipped."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from conftest import REAL
from nonroot import OTHER_USER, run_as_user, shared_folder, user_ids

from ledger.db.connect import connect

F008 = next(REAL.glob("008_*.log"))
F005 = next(REAL.glob("005_*.log"))


@pytest.fixture
def folder():
    with shared_folder() as path:
        yield path


def _readable(folder: Path, log: Path) -> Path:
    """A copy of a fixture that the user can read wherever the clone lives (a clone in a private
    0700 folder, as mktemp makes, is closed to every other user)."""
    copy = folder / "logs" / log.name
    if not copy.exists():
        copy.parent.mkdir(exist_ok=True)
        copy.parent.chmod(0o755)
        copy.write_bytes(log.read_bytes())
        copy.chmod(0o644)
    return copy


def _owned_by_root_or_locked(path: Path, mode: int) -> None:
    """``path`` with ``mode`` for everyone but its owner (root, or the tests' own user: then the
    owner bits are taken away too)."""
    path.chmod(mode if os.geteuid() == 0 else mode & 0o077)


def _ledger(folder: Path, name: str = "ledger.db", journal: str | None = None) -> Path:
    path = folder / name
    from ledger.cli import main

    try:
        main(["--db", str(path), "ingest", str(F008)], standalone_mode=False)
    except SystemExit:
        pass
    if journal:
        con = sqlite3.connect(path)
        con.execute(f"PRAGMA journal_mode = {journal}")
        con.close()
    path.chmod(0o644)
    return path


def test_the_suite_runs_these_as_a_user_who_is_not_root():
    ids = user_ids()
    r = run_as_user("--version")
    assert r.exit_code == 0, r.output
    assert ids is None or ids[0] != 0


def test_a_ledger_in_a_folder_the_user_cannot_enter(folder):
    """`ledger --db /root/x.db history` as a user: one line, no PermissionError traceback."""
    locked = folder / "locked"
    locked.mkdir()
    _ledger(locked)
    _owned_by_root_or_locked(locked, 0o700)
    for command in (["history"], ["ingest", str(_readable(folder, F008))], ["sql", "select 1"], ["db", "current"]):
        r = run_as_user("--db", str(locked / "ledger.db"), *command)
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert "permission denied" in r.output.lower(), r.output
    if os.geteuid() == 0:
        r = run_as_user("--db", "/root/x.db", "history")
        assert r.exit_code == 2 and "Traceback" not in r.output and "permission denied" in r.output.lower()


@pytest.mark.parametrize("journal", [None, "DELETE"])
def test_a_ledger_in_a_folder_the_user_cannot_write_can_be_read(folder, journal):
    ro = folder / "ro"
    ro.mkdir()
    path = _ledger(ro, journal=journal)
    _owned_by_root_or_locked(ro, 0o755)
    before = path.read_bytes()
    r = run_as_user("--db", str(path), "history", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1].startswith("1,")
    r = run_as_user("--db", str(path), "sql", "select count(*) as n from fact")
    assert r.exit_code == 0 and r.stdout.split()[-1] != "0", r.output
    assert path.read_bytes() == before


def test_an_ingest_into_a_writable_file_in_a_read_only_folder_names_the_folder(folder):
    ro = folder / "ro"
    ro.mkdir()
    path = _ledger(ro, journal="DELETE")
    path.chmod(0o666)
    _owned_by_root_or_locked(ro, 0o755)
    r = run_as_user("--db", str(path), "ingest", str(_readable(folder, F005)), "--year", "2026")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"folder {ro}" in r.output and "not writable" in r.output, r.output


def test_a_read_only_ledger_file_is_said_so(folder):
    path = _ledger(folder)
    path.chmod(0o444)
    r = run_as_user("--db", str(path), "ingest", str(_readable(folder, F005)), "--year", "2026")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "read-only" in r.output, r.output


def test_an_unreadable_log_is_said_so(folder):
    log = folder / "locked.log"
    log.write_bytes(F008.read_bytes())
    log.chmod(0o600 if os.geteuid() == 0 else 0)
    readable = _readable(folder, F005)
    r = run_as_user("--db", str(folder / "l.db"), "ingest", str(log), str(readable), "--year", "2026")
    assert r.exit_code == 2 and "permission denied" in r.output and "Traceback" not in r.output
    ledger = connect(str(folder / "l.db"), mode="read", create=False)
    try:
        with ledger.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM boot").scalar() >= 1  # the next file was read
    finally:
        ledger.dispose()


# -- a folder two users share (1777, like /tmp): one user's read must not block the owner --------

two_users = pytest.mark.skipif(os.geteuid() != 0, reason="two users are needed: the suite drops from root to each")


def _shared_ledger(folder: Path) -> Path:
    """A WAL ledger that the user ledgertest owns (0644) in a sticky folder everyone writes."""
    shared = folder / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    path = shared / "x.db"
    r = run_as_user("--db", str(path), "ingest", str(_readable(folder, F008)))
    assert r.exit_code == 0, r.output
    assert path.stat().st_mode & 0o777 == 0o644
    return path


@two_users
@pytest.mark.parametrize("command", [["history"], ["sql", "select count(*) from fact"], ["db", "current"]])
def test_a_read_by_another_user_leaves_nothing_that_blocks_the_owner(folder, command):
    path = _shared_ledger(folder)
    r = run_as_user("--db", str(path), *command, user=OTHER_USER)
    assert r.exit_code == 0, r.output
    other = user_ids(OTHER_USER)
    assert other is not None
    left = [p.name for p in path.parent.iterdir() if p.stat().st_uid == other[0]]
    assert left == [], f"{command} left {left} owned by {OTHER_USER}"
    r = run_as_user("--db", str(path), "ingest", str(_readable(folder, F005)), "--year", "2026")
    assert r.exit_code == 0, r.output


@two_users
def test_the_owners_write_names_the_files_another_users_read_left(folder):
    """What a read that was killed (or is still running) leaves: -wal and -shm of the other
    user, which the owner can neither write nor remove in a sticky folder."""
    path = _shared_ledger(folder)
    other = user_ids(OTHER_USER)
    assert other is not None
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        side.write_bytes(b"" if suffix == "-wal" else b"\0" * 32768)
        os.chown(side, *other)
        side.chmod(0o644)
    r = run_as_user("--db", str(path), "ingest", str(_readable(folder, F005)), "--year", "2026")
    assert r.exit_code == 2 and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert "x.db-shm" in r.output and OTHER_USER in r.output, r.output
    assert "folder is read-only" not in r.output and "file is read-only" not in r.output
    assert "remove" in r.output  # what to do: they are empty, nothing is lost
    for suffix in ("-wal", "-shm"):  # doing what it says
        path.with_name(path.name + suffix).unlink()
    r = run_as_user("--db", str(path), "ingest", str(_readable(folder, F005)), "--year", "2026")
    assert r.exit_code == 0, r.output


# -- a ledger whose -wal holds committed transactions, read where no -shm can be made ----------


def _wal_left_by_a_killed_writer(path: Path, label: str) -> None:
    """Commit a change into the ledger's -wal and die before it is written back (SIGKILL-like:
    no close, no checkpoint)."""
    import subprocess
    import sys

    code = ("import os, sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('PRAGMA wal_autocheckpoint = 0')\n"
            "c.execute('UPDATE deploy SET label = ?', (sys.argv[2],))\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(path), label], check=True)
    assert path.with_name(path.name + "-wal").stat().st_size > 0


def test_committed_data_in_a_leftover_wal_is_never_dropped_silently(folder):
    ro = folder / "ro"
    ro.mkdir()
    path = _ledger(ro)
    _wal_left_by_a_killed_writer(path, "from-the-wal")
    path.with_name(path.name + "-shm").unlink()  # copied without it, or a snapshot: no -shm to read the -wal by
    _owned_by_root_or_locked(ro, 0o755)  # nobody can make one
    r = run_as_user("--db", str(path), "sql", "select label from deploy", "--format", "csv")
    if r.exit_code == 0:
        assert "from-the-wal" in r.stdout, r.output  # read with the -wal
    else:
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
        assert "ledger.db-wal" in r.output and "read-only" in r.output, r.output  # says why
    assert path.with_name(path.name + "-wal").stat().st_size > 0  # and left it as it was
