"""``ledger watch`` (issue 26) with real processes and real files: a writer appends real-format
vLLM lines while the watch runs; boots are in the ledger while it runs (WAL: this process reads
them), once it stops they are what ``ingest`` of the final file stores."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time

import pytest
from conftest import REAL, ROOT
from dbutil import rows, sqlite_only
from watchlog import (
    T0,
    TOLD_FROM_START,
    Watch,
    Writer,
    append,
    boot,
    crash,
    failed_boot,
    served,
    wait_until,
)

CRASHING = REAL / "058_v1-nightly-3090-runtime-oom-enginecore-asyncllm-output-handler.log"


def _rows(db: str, sql: str) -> list[tuple]:
    """rows(), or none while the watch has not created the ledger yet."""
    try:
        return rows(db, sql)
    except Exception:  # noqa: BLE001
        return []


def _boots(db: str) -> list[tuple]:
    return _rows(db, "SELECT first_line, outcome FROM boot ORDER BY first_line")


def _ingested(tmp_path, log) -> str:
    plain = str(tmp_path / "plain.db")
    done = subprocess.run([sys.executable, "-m", "ledger", "ingest", "--db", plain, str(log)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return plain


def _same_as_ingest(db: str, plain: str) -> None:
    """The watched ledger holds what a plain ingest of the final file holds: the same boots
    (content, outcome, lines) and each one's samples, once."""
    q = ("SELECT b.content_sha256, b.outcome, b.first_line, b.last_line, r.engine_stats, r.spec_decode, "
         "(SELECT count(*) FROM runtime_sample_row s WHERE s.boot_id = b.id) FROM boot b "
         "LEFT JOIN boot_runtime r ON r.boot_id = b.id ORDER BY b.first_line")
    assert rows(db, q) == rows(plain, q)
    assert rows(db, "SELECT count(*) FROM runtime_sample_row") == rows(plain, "SELECT count(*) FROM runtime_sample_row")


def test_a_real_log_appended_while_watched_is_stored_as_ingest_stores_it(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("")
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    writer = Writer(log, CRASHING.read_text(), rate=40)
    writer.start()
    writer.done.wait(30)
    w.wait_line(lambda x: '"crashed"' in x)
    assert w.stop() == 0
    _same_as_ingest(db, _ingested(tmp_path, log))


def test_a_ready_boot_is_stored_while_the_server_still_serves(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0))
    # samples committed every 0.2 s (not 5 s): the batch comes while the server serves, sooner
    w = Watch(db, str(log), "--format", "jsonl", "--commit-every", "200ms")
    # the start-up ended: stored now, before any next boot or the end of the watch
    assert wait_until(lambda: _boots(db) == [(1, "ready")], what="the ready boot in the ledger")
    append(log, served(T0, 3))
    # the batch: the last stats line waits for the next line (V0 prints its prefix-hit rate there)
    wait_until(lambda: rows(db, "SELECT count(*) FROM runtime_sample")[0][0] == 2, what="the samples' batch")
    assert w.proc.poll() is None
    assert w.stop() == 0


def test_a_failure_appended_after_ready_is_a_crash_said_with_how_long_after(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 6))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    wait_until(lambda: _boots(db) == [(1, "ready")])
    append(log, crash(T0 + dt.timedelta(seconds=61)))
    line = w.wait_line(lambda x: '"crashed"' in x)
    assert '"seconds_after_ready": 61' in line
    assert w.stop() == 0
    assert _boots(db) == [(1, "crashed")]


def test_a_file_that_does_not_exist_yet_is_waited_for(db, tmp_path):
    log = tmp_path / "later.log"
    w = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: (tmp_path / "ledger.db").exists() or "://" in db, what="the watch started")
    log.write_text(boot(T0))
    wait_until(lambda: _boots(db) == [(1, "ready")], what="the boot of the file created later")
    assert w.stop() == 0


def test_rotation_by_rename_is_followed_into_the_new_file(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 2))
    w = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _boots(db) == [(1, "ready")])
    log.rename(tmp_path / "vllm.log.1")  # logrotate's rename, then the server's new file
    log.write_text(served(T0 + dt.timedelta(seconds=20), 2) + failed_boot(T0 + dt.timedelta(minutes=5), 2, 44))
    w.wait_line(lambda x: '"boot_failed"' in x)
    assert w.stop() == 0
    assert [o for _, o in _boots(db)] == ["ready", "failed"]
    # the served boot kept its samples from both files, each once
    assert rows(db, "SELECT count(*) FROM runtime_sample") == [(4,)]
    assert "rotated" in w.stderr


def test_truncation_is_read_again_from_the_start(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 2))
    w = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _boots(db) == [(1, "ready")])
    log.write_text(failed_boot(T0 + dt.timedelta(minutes=5), 2, 44))  # truncated and rewritten
    w.wait_line(lambda x: '"boot_failed"' in x)
    assert w.stop() == 0
    assert [o for _, o in _boots(db)] == ["ready", "failed"]
    assert "truncated" in w.stderr


def test_a_file_truncated_and_refilled_within_one_poll_is_read_again_from_its_start(db, tmp_path):
    """A server restarted with ``>``: the file truncated and written again, longer than before,
    between two looks of the watch (50 ms apart).  Told by the file's bytes, not by its size:
    the new file is read from its line 1, its boot stored once with its own samples, as an
    ingest of it stores it, and a restarted watch stores nothing again.  Before: the watch read
    on from the old offset (a phantom partial boot, samples in the wrong boot, the boot stored
    again after a restart)."""
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 3))
    w = Watch(db, str(log), "--format", "jsonl", "--commit-every", "0.2s")
    # the last stats line waits for the line after it (docs/watch.md): two of three are written
    wait_until(lambda: _rows(db, "SELECT count(*) FROM runtime_sample_row") == [(2,)], what="the first boot")
    later = T0 + dt.timedelta(minutes=10)
    refill = (boot(later, 2, 44) + served(later, 20, api_pid=2)).encode()
    with open(log, "r+b") as f:  # truncated and written again in one go: microseconds
        f.truncate(0)
        f.write(refill)
    wait_until(lambda: _rows(db, "SELECT count(*) FROM runtime_sample_row") == [(22,)], what="the new file's boot")
    assert w.stop() == 0
    assert "truncated; reading it again from its start" in w.stderr
    q = ("SELECT b.first_line, b.started_at, b.outcome, (SELECT count(*) FROM runtime_sample_row s "
         "WHERE s.boot_id = b.id) FROM boot b ORDER BY b.id")
    expected = [(1, "2026-10-01 09:00:00", "ready", 3), (1, "2026-10-01 09:10:00", "ready", 20)]
    assert _rows(db, q) == expected
    # the new file's boot is what an ingest of the file stores
    plain = _ingested(tmp_path, log)
    ident = "SELECT content_sha256, first_line, last_line, outcome FROM boot"
    assert _rows(db, ident + " WHERE started_at = '2026-10-01 09:10:00'") == _rows(plain, ident)
    # a restart reads the file again: nothing is stored twice
    again = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _rows(db, "SELECT count(*) FROM watch") == [(2,)], what="the second watch started")
    time.sleep(1.5)
    assert again.stop() == 0
    assert _rows(db, q) == expected


def test_stdin_is_watched_to_its_end_and_exits_zero(db):
    w = Watch(db, "-", "--format", "jsonl", stdin=subprocess.PIPE)
    assert w.proc.stdin is not None
    w.proc.stdin.write(boot(T0) + served(T0, 2))
    w.proc.stdin.flush()
    wait_until(lambda: _boots(db) == [(1, "ready")])
    w.proc.stdin.write(crash(T0 + dt.timedelta(seconds=30)))
    w.proc.stdin.close()
    assert w.proc.wait(30) == 0
    assert _boots(db) == [(1, "crashed")]
    assert rows(db, "SELECT count(*) FROM runtime_sample") == [(2,)]


def test_ctrl_c_stores_what_was_read_and_exits_zero(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0).splitlines(keepends=True)[0])  # a start-up just begun: not stored yet
    w = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _rows(db, "SELECT count(*) FROM watch") == [(1,)], what="the watch started")
    assert w.stop() == 0
    assert _boots(db) == [(1, "incomplete")]
    assert rows(db, "SELECT count(*) FROM watch WHERE stopped_at IS NOT NULL") == [(1,)]


@pytest.fixture
def refused(cli, monkeypatch):
    """``ledger ARGS`` in this process, for a test of what a watch's refusal says: were it to
    watch instead of refusing, the test fails rather than waits for the log."""
    from ledger.watch.session import Watch as Session

    def watching(self):
        raise AssertionError("ledger watch started watching")

    monkeypatch.setattr(Session, "run", watching)
    return cli


@sqlite_only
def test_a_bad_option_is_one_line_and_exit_2(db, tmp_path, refused):
    done = refused("--db", db, "watch", str(tmp_path / "x.log"), "--for", "soon")
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == ["Error: --for soon: expected a duration such as 30s, 5m or 2h"]


def test_a_commit_that_is_not_a_hex_sha_is_refused_before_anything_is_watched(db, tmp_path, refused):
    """As ingest refuses it: a branch name stored as a deploy's commit could not be fixed."""
    done = refused("--db", db, "watch", str(tmp_path / "x.log"), "--commit", "main")
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == ["Error: --commit main: expected a hex sha of 7 to 64 digits"]


# -- a lost database -----------------------------------------------------------------------------


class _Chunks:
    """A follower that hands out chunks of a log, pausing ``pause`` seconds before each, and
    after the first only once ``stored()`` (the watch wrote the boot in the pause: a fixed
    pause long enough for it on a busy machine was 1.5 s a chunk); it calls ``before(i)``
    before chunk ``i``."""

    caught_up = True
    new_run = False  # the Follower interface: a chunk is never a file read again from its start

    def __init__(self, chunks: list[str], before, stored, pause: float = 0.3):
        self.chunks, self.before, self.stored, self.pause, self.i = chunks, before, stored, pause, 0
        self.next_at = 0.0

    def read(self, timeout: float) -> bytes | None:
        import time

        if self.i == len(self.chunks):
            return None
        if time.monotonic() < self.next_at or (self.i and not self.stored()):
            time.sleep(min(timeout, max(0.01, self.next_at - time.monotonic())))
            return b""
        self.before(self.i)
        chunk = self.chunks[self.i]
        self.i += 1
        self.next_at = time.monotonic() + self.pause
        return chunk.encode()

    def close(self) -> None:
        pass


@sqlite_only
def test_a_lost_connection_is_opened_again_and_nothing_is_lost(db, tmp_path):
    from ledger.db.connect import open_writer
    from ledger.watch.session import Settings
    from ledger.watch.session import Watch as Session

    chunks = [boot(T0), served(T0, 3), crash(T0 + dt.timedelta(minutes=1))]
    notes: list[str] = []

    def before(i: int) -> None:
        if i == 1:  # the connection goes away under the watch (a server restarted, a lost mount)
            session.writer.conn.close()

    session = Session(lambda: open_writer(db), _Chunks(chunks, before, lambda: session.written),
                      Settings("vllm.log", db_backoff=0.05), on_note=notes.append)
    session.run()
    assert any("trying again" in n for n in notes)
    log = tmp_path / "vllm.log"
    log.write_text("".join(chunks))
    q = "SELECT content_sha256, outcome, (SELECT count(*) FROM runtime_sample_row s WHERE s.boot_id = b.id) FROM boot b"
    assert rows(db, q) == rows(_ingested(tmp_path, log), q)


@sqlite_only
def test_a_ledger_that_stays_lost_is_one_error_after_the_retries(db, tmp_path):
    import pytest

    from ledger.db.connect import open_writer
    from ledger.errors import LedgerError
    from ledger.watch.session import Settings
    from ledger.watch.session import Watch as Session

    gone = {"now": False}

    def opener():
        if gone["now"]:
            return open_writer(str(tmp_path / "no-such-folder" / "ledger.db"))
        return open_writer(db)

    def before(i: int) -> None:
        if i == 1:
            gone["now"] = True
            session.writer.conn.close()

    chunks = [boot(T0), served(T0, 3)]
    session = Session(opener, _Chunks(chunks, before, lambda: session.written),
                      Settings("vllm.log", db_tries=3, db_backoff=0.05))
    with pytest.raises(LedgerError) as err:
        session.run()
    assert str(err.value).startswith("lost the ledger: ")
    assert "(tried 3 times); what was read since the last batch is not stored" in str(err.value)
    assert _boots(db) == [(1, "ready")]  # what was stored before stays


@sqlite_only
def test_watch_needs_exactly_one_source(db, tmp_path, refused):
    for args in ([], [str(tmp_path / "x.log"), "--unit", "vllm"]):
        done = refused("watch", "--db", db, *args)
        assert done.exit_code == 2
        assert done.stderr.strip().splitlines() == [
            "Error: give one of SOURCE (a log file, or - for stdin), --container NAME and --unit NAME"]
    assert not (tmp_path / "ledger.db").exists()  # nothing was created


RESTART_LOOP = ROOT / "fixtures" / "live" / "vllm-0.32.0" / "restart-loop.log"


def test_a_real_restart_loop_watched_is_one_boot_per_start_and_one_alert_per_crash(db, tmp_path):
    """vLLM 0.32.0's own log of three starts appended to one file (the lab's restart loop: the
    engine core killed under load twice, then a requested stop), written while watched: three
    boots, as ingest stores them; a crash alert for each death (the second, seconds
    later, is told too: a boot that came up and crashed inside an outage is alerted until the
    outage is a restart loop, docs/watch.md); nothing for the stop."""
    log = tmp_path / "vllm.log"
    log.write_text("")
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    writer = Writer(log, RESTART_LOOP.read_text(), rate=400)
    writer.start()
    writer.done.wait(60)
    wait_until(lambda: len(_boots(db)) == 3 and _boots(db)[-1][1] == "ready", timeout=30, what="the third start")
    assert w.stop() == 0
    assert [b[1] for b in _boots(db)] == ["crashed", "crashed", "ready"]
    alerts = w.alerts()
    assert [(a["kind"], a["boot"]) for a in alerts] == [("crashed", "1"), ("crashed", "2")]
    assert "engine_dead@runtime" in alerts[0]["message"]
    _same_as_ingest(db, _ingested(tmp_path, log))
