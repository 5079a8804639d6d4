"""``ledger watch`` stays bounded whatever it is pointed at (issue 38, item 14): a hole of NULs or
a sparse file is skipped in flat memory, an endless run of bytes without a line does not keep
Ctrl-C and SIGTERM waiting, and a named pipe with no writer is opened without waiting for one.
Real watch processes; the tests watch each one's memory and kill it past the bound, so a
regression fails instead of filling the machine."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from dbutil import rows
from test_watch import _ingested, _same_as_ingest
from watchlog import T0, TOLD_FROM_START, Watch, boot, crash, failed_boot, served, wait_until

MiB = 1024 * 1024
PEAK_MIB = 250  # a watch reads with a few blocks of 8 MiB and a line of 1 MiB at most


class _Memory(threading.Thread):
    """The peak resident memory of a process (VmHWM), looked at every 20 ms until it ends; the
    process is killed if it passes ``limit`` MiB (``over`` then says so)."""

    def __init__(self, pid: int, limit: int = PEAK_MIB):
        super().__init__(daemon=True)
        self.pid, self.limit = pid, limit
        self.peak = 0
        self.over = False
        self.start()

    def run(self) -> None:
        status = Path(f"/proc/{self.pid}/status")
        while True:
            try:
                text = status.read_text()
            except OSError:
                return
            if "VmHWM" not in text:
                return  # a zombie: it has ended
            hwm = int(next(x for x in text.splitlines() if x.startswith("VmHWM")).split()[1]) // 1024
            self.peak = max(self.peak, hwm)
            if hwm > self.limit:
                self.over = True
                os.kill(self.pid, signal.SIGKILL)
                return
            time.sleep(0.02)


def _watched(db: str) -> bool:
    try:
        return bool(rows(db, "SELECT count(*) FROM watch")[0][0])
    except Exception:  # noqa: BLE001 (the ledger is not created yet)
        return False


def _stops_on(w: Watch, sig: int, within: float) -> float:
    """Send ``sig``; how long the watch took to exit 0 (failing past ``within`` seconds)."""
    started = time.monotonic()
    w.proc.send_signal(sig)
    try:
        w.proc.wait(timeout=within)
    except subprocess.TimeoutExpired:
        w.proc.kill()
        w.proc.wait()
        raise AssertionError(f"the watch did not stop within {within} s of signal {sig}") from None
    assert w.proc.returncode == 0, w.proc.stderr.read() if w.proc.stderr else ""
    return time.monotonic() - started


def _log() -> str:
    return boot(T0) + served(T0, 6) + crash(T0.replace(minute=2))


@pytest.mark.parametrize("hole", ["written", "sparse"])
def test_a_hole_of_nuls_before_a_log_is_skipped_in_flat_memory(db, tmp_path, hole):
    """256 MiB of NULs written, or an 8 GiB hole of a sparse file (a copytruncate whose logger
    wrote on at its old offset), then the log.  Before: the NULs piled up as one unfinished line
    (the trial: 3 GB and no boot after 92 s on a 10 GB sparse file)."""
    log = tmp_path / "vllm.log"
    with open(log, "wb") as f:
        if hole == "written":
            block = b"\0" * MiB
            for _ in range(256):
                f.write(block)
        else:
            f.truncate(8 * 1024 * MiB)
            f.seek(0, os.SEEK_END)
        f.write(_log().encode())
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    memory = _Memory(w.proc.pid)
    w.wait_line(lambda x: '"crashed"' in x, timeout=60)
    assert _stops_on(w, signal.SIGINT, 10) < 10
    memory.join(5)
    assert not memory.over and memory.peak < PEAK_MIB, memory.peak
    assert rows(db, "SELECT outcome FROM boot") == [("crashed",)]
    if hole == "written":
        _same_as_ingest(db, _ingested(tmp_path, log))


@pytest.mark.parametrize("endless", ["nuls", "one line"])
@pytest.mark.parametrize("through", ["stdin", "fifo"])
def test_an_endless_run_without_a_line_stays_flat_and_stops_on_ctrl_c(db, tmp_path, endless, through):
    """``cat /dev/zero`` (NULs) or a line that never ends, on standard input or through a named
    pipe: the watch reads on in flat memory and stops within a second of Ctrl-C.  Before: the
    bytes piled up and the read never returned to look at the signal."""
    produce = "cat /dev/zero" if endless == "nuls" else "yes 'x x x x x x x' | tr -d '\\n'"
    if through == "stdin":
        feeder = subprocess.Popen(["sh", "-c", produce], stdout=subprocess.PIPE)
        assert feeder.stdout is not None
        w = Watch(db, "-", stdin=feeder.stdout.fileno())
        feeder.stdout.close()
    else:
        fifo = tmp_path / "vllm.fifo"
        os.mkfifo(fifo)
        w = Watch(db, str(fifo))
        feeder = subprocess.Popen(["sh", "-c", f"{produce} > {fifo}"], stderr=subprocess.DEVNULL)
    try:
        memory = _Memory(w.proc.pid)
        wait_until(lambda: _watched(db), timeout=30, what="the watch started")
        time.sleep(2.0)  # reading the endless bytes
        assert w.proc.poll() is None and not memory.over, memory.peak
        took = _stops_on(w, signal.SIGINT, 10)
    finally:
        feeder.kill()
        feeder.wait()
    memory.join(5)
    assert took < 2, took
    assert not memory.over and memory.peak < PEAK_MIB, memory.peak


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_named_pipe_with_no_writer_stops_on_a_signal_at_once(db, tmp_path, sig):
    """Before: ``open`` waited for a writer, and neither Ctrl-C nor SIGTERM ended it (the trial
    waited 10 minutes)."""
    fifo = tmp_path / "vllm.fifo"
    os.mkfifo(fifo)
    w = Watch(db, str(fifo))
    wait_until(lambda: _watched(db), timeout=30, what="the watch started")
    time.sleep(0.5)
    assert _stops_on(w, sig, 5) < 2


def test_a_named_pipe_is_read_as_its_writers_write(db, tmp_path):
    """Opened without a writer, then read as one writes, and on when another one comes."""
    fifo = tmp_path / "vllm.fifo"
    os.mkfifo(fifo)
    w = Watch(db, *TOLD_FROM_START, str(fifo), "--format", "jsonl")
    wait_until(lambda: _watched(db), timeout=30, what="the watch started")
    with open(fifo, "w") as f:  # the watch holds the pipe open: this does not wait
        f.write(failed_boot(T0, 1, 43))
    w.wait_line(lambda x: '"boot_failed"' in x)
    with open(fifo, "w") as f:
        f.write(boot(T0.replace(minute=5), 2, 44))
    wait_until(lambda: rows(db, "SELECT outcome FROM boot ORDER BY id") == [("failed",), ("ready",)],
               what="the second writer's boot")
    assert _stops_on(w, signal.SIGINT, 10) < 10
