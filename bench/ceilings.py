"""Ceilings on every input (issue 20): time and peak resident memory of the inputs that grew
without bound, each in a child process of its own (peak = the child's ru_maxrss).

1. gz bomb: --bomb-mib MiB of NULs, and of lines, behind a few MB of gzip (`ledger ingest`).
2. many boots: --boots distinct boot starts in one file (`ledger ingest`), and how many were stored.
3. the long line: --line-kib KiB of word characters, then vLLM's header (`parse_line`); and a
   file of --bracket-kib KiB of "[" (and of "[/vllm/") before a log (`ledger ingest`), at that
   size and at an eighth of it: linear, the two times differ by the start-up's cost, not 64×.
4. the 1 M-sample page: a boot with --samples stats intervals (ingested first, not measured);
   its page from a fresh `ledger serve` (the server's peak), six at once, and `ledger plot
   runtime`.

Full size (the issue's figures): python bench/ceilings.py
A quick check that it runs:       python bench/ceilings.py --small
One size full, the others small:  python bench/ceilings.py --small --boots 1000000
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEDGER = [sys.executable, "-m", "ledger"]
STATS = ("(APIServer pid=1) INFO {md} {t} [loggers.py:271] Engine 000: Avg prompt throughput: {p:.1f} tokens/s, "
         "Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: 0 reqs, GPU KV cache usage: "
         "{kv:.1f}%, Prefix cache hit rate: 12.0%\n")
BOOT = ("(APIServer pid={pid}) INFO {md} {t} [api_utils.py:339] vLLM server version 0.20.2, serving model m\n"
        "(EngineCore_DP0 pid={pid}) INFO {md} {t} [kv_cache_utils.py:1713] GPU KV cache size: {kv:,} tokens\n")


def run(args: list[str]) -> tuple[float, int, int]:
    """Seconds, peak resident MiB and exit code of a child."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(args, cwd=ROOT, stdout=null, stderr=null)
        _, status, usage = os.wait4(p.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def say(what: str, seconds: float, peak_mib: int, code: int | None = None) -> None:
    print(f"{what:<58} {seconds:8.2f} s {peak_mib:7,} MiB" + (f"  (exit {code})" if code else ""), flush=True)


def gz_bomb(folder: Path, mib: int, block: bytes) -> Path:
    path = folder / f"bomb-{len(block)}.log.gz"
    piece = block * ((1 << 20) // len(block))
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(packer.compress(piece))
        f.write(packer.flush())
    return path


def stamp(at: dt.datetime) -> dict[str, str]:
    return {"md": at.strftime("%m-%d"), "t": at.strftime("%H:%M:%S")}


def many_boots(folder: Path, boots: int) -> Path:
    path = folder / "boots.log"
    at = dt.datetime(2026, 1, 1)
    with open(path, "w") as f:
        for i in range(boots):
            f.write(BOOT.format(pid=100 + i % 50_000, kv=10_000 + i, **stamp(at + dt.timedelta(seconds=i))))
    return path


def runtime_log(folder: Path, samples: int) -> Path:
    path = folder / "runtime.log"
    at = dt.datetime(2026, 1, 1)
    with open(path, "w") as f:
        f.write(BOOT.format(pid=1, kv=1_356_080, **stamp(at)))
        f.write("(APIServer pid=1) INFO {md} {t} [api_server.py:1822] Starting vLLM server on http://0.0.0.0:8000\n"
                .format(**stamp(at)))
        for i in range(samples):
            f.write(STATS.format(p=i % 97 * 10.0, g=i % 89 * 3.0, r=i % 17, kv=i % 100 * 0.9,
                                 **stamp(at + dt.timedelta(seconds=10 * (i + 1)))))
    return path


def page(db: str, boot_path: str, concurrent: int) -> tuple[float, int, int]:
    """A fresh server; ``concurrent`` requests for the page at once; the slowest one's seconds,
    the server's peak MiB."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([*LEDGER, "--db", db, "serve", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    times: list[float] = []
    failed: list[int] = []

    def fetch() -> None:
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{boot_path}", timeout=900) as r:
                r.read()
        except OSError:
            failed.append(1)
        times.append(time.perf_counter() - t)

    threads = [threading.Thread(target=fetch) for _ in range(concurrent)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proc.terminate()
    _, _, usage = os.wait4(proc.pid, 0)
    return max(times), usage.ru_maxrss // 1024, len(failed)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true",
                    help="tiny sizes for the sizes not given: check that the script runs")
    ap.add_argument("--bomb-mib", type=int)
    ap.add_argument("--boots", type=int)
    ap.add_argument("--line-kib", type=int)
    ap.add_argument("--samples", type=int)
    ap.add_argument("--bracket-kib", type=int, default=128)
    ap.add_argument("--keep", help="write the inputs and ledgers here (else a temporary folder)")
    a = ap.parse_args()
    sizes = (16, 200, 64, 2_000) if a.small else (2048, 1_000_000, 1024, 1_000_000)
    a.bomb_mib, a.boots, a.line_kib, a.samples = (given if given is not None else size for given, size in
                                                  zip((a.bomb_mib, a.boots, a.line_kib, a.samples), sizes, strict=True))
    folder = Path(a.keep or tempfile.mkdtemp(prefix="ceilings-"))
    folder.mkdir(parents=True, exist_ok=True)

    for block, name in ((b"\0", "NULs"), (b"no vLLM here, a line repeated to fill the bomb\n", "lines")):
        bomb = gz_bomb(folder, a.bomb_mib, block)
        say(f"gz bomb: {a.bomb_mib:,} MiB of {name} in {bomb.stat().st_size / 2**20:.1f} MiB",
            *run([*LEDGER, "--db", str(folder / "bomb.db"), "ingest", str(bomb)])[:2])

    log = many_boots(folder, a.boots)
    db = folder / "boots.db"
    spent, peak, status = run([*LEDGER, "--db", str(db), "ingest", str(log), "--year", "2026"])
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT count(*) FROM boot").fetchone()[0]
    say(f"{a.boots:,} boots in one file ({log.stat().st_size / 2**20:.0f} MiB): {stored:,} stored", spent, peak,
        status)

    code = ("from ledger.parsers.lines import parse_line\n"
            f"parse_line(1, 'w' * {a.line_kib * 1024 - 80} + ' (APIServer pid=1) INFO 10-01 09:00:10 [loggers.py:271] hi')")
    say(f"one line: {a.line_kib:,} KiB of word characters, then a header", *run([sys.executable, "-c", code]))

    body = next((ROOT / "fixtures" / "real").glob("008_*.log")).read_text().split("# ---\n", 1)[1]
    for run_of in ("[", "[/vllm/"):
        for kib in (a.bracket_kib // 8, a.bracket_kib):
            path = folder / f"brackets-{len(run_of)}-{kib}.log"
            path.write_text(run_of * (kib * 1024 // len(run_of)) + " " + body)
            say(f"ingest: {kib:,} KiB of {run_of!r} before a log",
                *run([*LEDGER, "--db", str(folder / "brackets.db"), "ingest", str(path)]))

    db = str(folder / "runtime.db")
    log = runtime_log(folder, a.samples)
    spent, peak, status = run([*LEDGER, "--db", db, "ingest", str(log), "--year", "2026"])
    say(f"(setup) ingest a boot of {a.samples:,} samples", spent, peak, status)
    for concurrent in (1, 6):
        seconds, peak, failed = page(db, "/boot/1", concurrent)
        say(f"serve /boot/1 of {a.samples:,} samples, {concurrent} at once (slowest; server)", seconds, peak,
            failed or None)
    say(f"plot runtime of {a.samples:,} samples",
        *run([*LEDGER, "--db", db, "plot", "runtime", "1", "-o", str(folder / "runtime.png")]))


if __name__ == "__main__":
    main()
