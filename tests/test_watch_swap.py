"""A file swapped in for a watched log (issue 38, finding 13): the watch follows the file it
opened; a file that takes the log's name is followed only when everyone who could read the file
first opened, or everyone who can read the ledger, can read it too.  A swap to a file they could
not read (a symlink to a root-only file, put where a world-readable log was, for a root-run
watch writing a world-readable ledger) is one line on stderr, and the watch goes on reading the
file it had open."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from pathlib import Path

import pytest
from dbutil import rows, sqlite_only
from watchlog import T0, Watch, append, boot, crash, failed_boot, wait_until

from ledger.watch.follow import FileFollower

MIN = dt.timedelta(minutes=1)


@pytest.fixture
def shared(tmp_path):
    """A folder every user may enter (0755), as /var/log is: pytest's own is the user's alone."""
    folder = Path(tempfile.mkdtemp(prefix="ledger-swap-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    for p in sorted(folder.rglob("*"), reverse=True):
        p.unlink() if not p.is_dir() or p.is_symlink() else p.rmdir()
    folder.rmdir()


def _outcomes(db: str) -> list[str]:
    try:
        return [o for (o,) in rows(db, "SELECT outcome FROM boot ORDER BY id")]
    except Exception:  # noqa: BLE001 (not created yet)
        return []


@sqlite_only
def test_a_symlink_to_a_file_the_ledgers_readers_cannot_read_is_not_followed(shared):
    log, secret, db = shared / "vllm.log", shared / "secret.log", str(shared / "ledger.db")
    log.write_text(boot(T0))
    log.chmod(0o644)
    secret.write_text(failed_boot(T0 + 10 * MIN, 7, 77))  # a file only its owner may read
    secret.chmod(0o600)
    w = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _outcomes(db) == ["ready"], what="the first boot")
    assert os.stat(db).st_mode & 0o004  # the ledger is world-readable
    log.rename(shared / "vllm.log.1")
    log.symlink_to(secret)  # the swap
    # the file first opened goes on: its next boot is read (as after a rename, before the new file)
    append(shared / "vllm.log.1", crash(T0 + MIN) + boot(T0 + 2 * MIN, 2, 44))
    wait_until(lambda: _outcomes(db) == ["crashed", "ready"], what="the file first opened, still read")
    import time

    time.sleep(0.5)  # polls enough to have followed the symlink, had it been followed
    assert w.stop() == 0
    assert _outcomes(db) == ["crashed", "ready"]  # nothing of the secret file (a failed boot)
    said = [line for line in w.stderr.splitlines() if "secret.log" in line]
    assert len(said) == 1, w.stderr
    assert "not followed" in said[0] and "vllm.log" in said[0]


def test_a_swap_to_a_file_as_readable_as_the_first_is_followed(shared, tmp_path):
    """The same swap to a file everyone may read is a rotation like any other."""
    log, other, db = shared / "vllm.log", shared / "other.log", str(tmp_path / "ledger.db")
    log.write_text(boot(T0))
    log.chmod(0o644)
    other.write_text(failed_boot(T0 + 10 * MIN, 7, 77))
    other.chmod(0o644)
    w = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _outcomes(db) == ["ready"], what="the first boot")
    log.unlink()
    log.symlink_to(other)
    w.wait_line(lambda x: '"boot_failed"' in x)
    assert w.stop() == 0
    assert "rotated" in w.stderr and "not followed" not in w.stderr


def test_a_swap_is_judged_on_the_file_opened_not_on_the_name():
    """The follower decides on what it opened (fstat of its own descriptor): a readers' check
    that says no keeps the first file, a second look at the same refused file says nothing."""
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        folder = Path(d)
        folder.chmod(0o755)
        log, secret = folder / "a.log", folder / "s.log"
        log.write_text("one\n")
        log.chmod(0o644)
        secret.write_text("root only\n")
        secret.chmod(0o600)
        notes: list[str] = []
        f = FileFollower(str(log), notes.append, poll=0.01)
        assert f.read(0.1) == b"one\n"
        log.rename(folder / "a.log.1")
        log.symlink_to(secret)
        assert f.read(0.1) == b""
        with open(folder / "a.log.1", "a") as old:
            old.write("two\n")
        assert f.read(0.1) == b"two\n"
        assert f.read(0.1) == b""
        assert len([n for n in notes if "not followed" in n]) == 1, notes
        f.close()
