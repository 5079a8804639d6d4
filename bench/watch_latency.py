"""How long ``ledger watch`` takes from the last line of a start-up to the boot in the ledger and
its alert on stdout (issue 26: under 2 s).

One ``ledger watch`` follows a file that this script appends to, in vLLM 0.20's format (the boot
of ``make_runtime_log.py``): each trial is a start-up that fails (out of memory after the
weights load), then one that comes up and serves for over a minute of log time (which ends the
outage: ``recovered``), with stats lines appended at ``--rate`` lines a second in between, as
a busy server prints.  For each start-up the time is taken from the moment its last line is
written and flushed to (a) the boot being in the ledger with its outcome (polled every 5 ms on a
read-only connection, as ``ledger serve`` reads) and (b), for the failed one, its
``boot_failed`` alert on the watch's stdout.

Usage: python bench/watch_latency.py [--trials 20] [--rate 20] [--db PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import queue
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from make_runtime_log import BOOT

ROOT = Path(__file__).resolve().parent.parent


def _md(t: dt.datetime) -> tuple[str, str]:
    return t.strftime("%m-%d"), t.strftime("%H:%M:%S")


def ready_boot(t: dt.datetime, api: int, core: int) -> str:
    md, hms = _md(t)
    return BOOT.format(md=md, t=hms).replace("(APIServer pid=1)", f"(APIServer pid={api})") \
        .replace("(EngineCore_DP0 pid=43)", f"(EngineCore_DP0 pid={core})")


def failed_boot(t: dt.datetime, api: int, core: int) -> str:
    md, hms = _md(t)
    head = "".join(ready_boot(t, api, core).splitlines(keepends=True)[:4])
    return head + (f"(EngineCore_DP0 pid={core}) ERROR {md} {hms} [core.py:708] EngineCore failed to start.\n"
                   f"(EngineCore_DP0 pid={core}) ERROR {md} {hms} [core.py:708] torch.OutOfMemoryError: CUDA out of "
                   "memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is "
                   "free. Including non-PyTorch memory, this process has 78.13 GiB memory in use. Of the allocated "
                   "memory 76.02 GiB is allocated by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated.\n")


def stats(t: dt.datetime, api: int) -> str:
    md, hms = _md(t)
    return (f"(APIServer pid={api}) INFO {md} {hms} [loggers.py:271] Engine 000: Avg prompt throughput: 900.0 "
            f"tokens/s, Avg generation throughput: 120.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache "
            f"usage: 40.0%, Prefix cache hit rate: 20.0%\n")


def _outcome_of_boot(db: str, n: int) -> str | None:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT outcome FROM boot ORDER BY first_line LIMIT 1 OFFSET ?", (n - 1,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--rate", type=float, default=20.0, help="stats lines a second between start-ups")
    ap.add_argument("--db", help="ledger file (default: a temporary one)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="watch-latency-")
    db = args.db or os.path.join(tmp, "ledger.db")
    log = Path(tmp) / "vllm.log"
    log.write_text("")
    proc = subprocess.Popen([sys.executable, "-m", "ledger", "watch", "--db", db, str(log), "--format", "jsonl"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    printed: queue.Queue[tuple[float, str]] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            printed.put((time.monotonic(), line))

    threading.Thread(target=read, daemon=True).start()
    while _outcome_of_boot(db, 1) is None and not os.path.exists(db):
        time.sleep(0.05)
    time.sleep(1.0)  # the watch is reading
    stored_failed, alerted, stored_ready = [], [], []
    t = dt.datetime(2026, 10, 1, 9, 0, 0)
    n = 0
    with open(log, "a", encoding="utf-8") as f:
        def write(text: str) -> float:
            f.write(text)
            f.flush()
            return time.monotonic()

        def wait_stored(boot_no: int, outcome: str, since: float) -> float:
            while _outcome_of_boot(db, boot_no) != outcome:
                time.sleep(0.005)
            return time.monotonic() - since

        for trial in range(args.trials):
            api, core = 100 + 2 * trial, 500 + 2 * trial
            n += 1
            t += dt.timedelta(minutes=5)
            at = write(failed_boot(t, api, core))
            stored_failed.append(wait_stored(n, "failed", at))
            while True:
                when, line = printed.get(timeout=30)
                if '"boot_failed"' in line or '"restart_loop"' in line:
                    alerted.append(when - at)
                    break
            n += 1
            t += dt.timedelta(minutes=1)
            at = write(ready_boot(t, api + 1, core + 1))
            stored_ready.append(wait_stored(n, "ready", at))
            for i in range(8):  # serving: a stats line at --rate a second, 10 s apart in log time
                write(stats(t + dt.timedelta(seconds=10 * (i + 1)), api + 1))
                time.sleep(1.0 / args.rate)
    proc.send_signal(signal.SIGINT)
    proc.wait(60)

    def row(name: str, xs: list[float]) -> str:
        xs = sorted(xs)
        p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
        return f"| {name} | {len(xs)} | {statistics.median(xs):.3f} s | {p90:.3f} s | {xs[-1]:.3f} s |"

    print(f"ledger watch latency, {args.trials} trials, {args.rate:g} stats lines/s between start-ups")
    print("| from the start-up's last line to | n | median | p90 | max |")
    print("|---|---:|---:|---:|---:|")
    print(row("failed boot in the ledger", stored_failed))
    print(row("its alert on stdout", alerted))
    print(row("ready boot in the ledger", stored_ready))
    worst = max(stored_failed + alerted + stored_ready)
    print(f"target: under 2 s — {'met' if worst < 2.0 else 'NOT met'} (worst {worst:.3f} s)")


if __name__ == "__main__":
    main()
