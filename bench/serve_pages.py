"""`ledger serve` page times on two large ledgers, over HTTP from a running server.

1. The runtime page: a 10-hour DP=4 runtime log (bench/make_runtime_log.py --hours 10: 3,600
   stats rounds of four engines and 3,600 spec-decode reports, a runtime OOM at the end) is
   ingested and its boot page — facts, verdicts and the runtime chart — is fetched.  Target:
   under 2 s.
2. The deploys page over 5,000 boots: --deploys logs of --boots-per-deploy boots each (vLLM
   0.20 start-ups with varying figures and times), each ingested under its own label.  Target:
   under 1 s.

Each measurement starts a fresh server (so its cache is empty) and fetches the page twice: the
first time it is built from the ledger ("built"), the second time it comes from the server's
cache ("cached"); the targets apply to "built".  A chart page is measured after another chart
page has loaded matplotlib (about 0.8 s, paid once per server), and once without.  The JSON
twin of a page (the same reads, no HTML, no chart) is the reference.  Median, min and max over
--repeat fresh servers.

Usage: python bench/serve_pages.py [--repeat 5] [--deploys 100] [--boots-per-deploy 50] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOT = """\
(APIServer pid={pid}) INFO {md} {t0} [api_utils.py:339] vLLM server version 0.20.2, serving model Qwen/Qwen3-32B-FP8
(APIServer pid={pid}) INFO {md} {t0} [api_utils.py:273] non-default args: {{'model': 'Qwen/Qwen3-32B-FP8', 'max_model_len': {mml}, 'max_num_seqs': {seqs}, 'gpu_memory_utilization': {gmu}, 'kv_cache_dtype': 'fp8'}}
(EngineCore_DP0 pid={epid}) INFO {md} {t1} [gpu_model_runner.py:4879] Model loading took 16.8 GiB memory and 69.771233 seconds
(EngineCore_DP0 pid={epid}) INFO {md} {t1} [gpu_worker.py:440] Available KV cache memory: {kvmem:.2f} GiB
(EngineCore_DP0 pid={epid}) INFO {md} {t1} [kv_cache_utils.py:1713] GPU KV cache size: {tokens:,} tokens
(EngineCore_DP0 pid={epid}) INFO {md} {t1} [kv_cache_utils.py:1718] Maximum concurrency for {mml:,} tokens per request: {conc:.2f}x
(EngineCore_DP0 pid={epid}) INFO {md} {t2} [gpu_model_runner.py:3480] Graph capturing finished in 9 secs, took 0.61 GiB
(EngineCore_DP0 pid={epid}) INFO {md} {t2} [core.py:273] init engine (profile, create kv cache, warmup model) took 98.43 s
(APIServer pid={pid}) INFO {md} {t2} [api_server.py:1822] Starting vLLM server on http://0.0.0.0:8000
"""


def ledger(*args: str, db: str, ok: tuple[int, ...] = (0,)) -> None:
    done = subprocess.run([sys.executable, "-m", "ledger", "--db", db, *args], stdout=subprocess.DEVNULL)
    if done.returncode not in ok:
        sys.exit(f"ledger {args[0]} failed")


def boots_log(path: Path, deploy: int, boots: int) -> None:
    t = dt.datetime(2026, 1, 1) + dt.timedelta(days=deploy)
    with open(path, "w") as f:
        for i in range(boots):
            t += dt.timedelta(minutes=37 + i % 11)
            stamp = [(t + dt.timedelta(seconds=s)).strftime("%H:%M:%S") for s in (0, 70, 170)]
            gib = 20 + (deploy * 7 + i * 3) % 40 + i / 100
            tokens = int(gib * 2**30 / 32768)
            f.write(BOOT.format(pid=1000 + i, epid=2000 + i, md=t.strftime("%m-%d"), t0=stamp[0], t1=stamp[1],
                                t2=stamp[2], mml=32768, seqs=8 + i % 8, gmu=0.9, kvmem=gib, tokens=tokens,
                                conc=tokens / 32768))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(db: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ledger", "--db", db, "serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.readline()
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("ledger serve did not start")


def fetch(url: str) -> tuple[float, bytes]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - t, body


def measure(db: str, path: str, repeat: int, warm: str | None) -> tuple[list[float], list[float], int]:
    """Per repeat a fresh server (empty cache, nothing imported yet): ``warm`` fetched first if
    given (to load matplotlib with another page's chart), then ``path`` twice — the first time
    built from the ledger, the second time from the server's cache."""
    built, cached, size = [], [], 0
    for _ in range(repeat):
        proc, base = serve(db)
        try:
            if warm:
                fetch(base + warm)
            t, body = fetch(base + path)
            built.append(t)
            cached.append(fetch(base + path)[0])
            size = len(body)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    return built, cached, size


def report(label: str, built: list[float], cached: list[float], size: int, target: float | None = None) -> None:
    med = statistics.median(built)
    verdict = "" if target is None else f"  target < {target:g} s: {'met' if med < target else 'MISSED'}"
    print(f"{label:<44} built {med:6.3f} s (min {min(built):.3f}, max {max(built):.3f})  "
          f"cached {statistics.median(cached):.3f} s  {size / 1024:,.0f} KiB{verdict}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--deploys", type=int, default=100)
    ap.add_argument("--boots-per-deploy", type=int, default=50)
    ap.add_argument("--keep", help="keep the ledgers here")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ledger-serve-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        # 1. a 10-hour, 4-engine runtime log
        log, db = work / "ten-hours.log", str(work / "runtime.db")
        if not os.path.exists(db):  # --keep: a ledger built by an earlier run is used again
            subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(log), "--hours", "10"],
                           check=True)
            ledger("ingest", str(log), "--label", "dp4-ten-hours", db=db)
            print(f"runtime log: {log.stat().st_size / 1e6:,.0f} MB, 10 h, 4 engines")
            log.unlink()
        r = args.repeat
        report("runtime page /boot/1, first chart of the process", *measure(db, "/boot/1", r, None))
        report("runtime page /boot/1", *measure(db, "/boot/1", r, "/deploy/1"), 2.0)
        report("  engines split /boot/1?engines=split", *measure(db, "/boot/1?engines=split", r, "/deploy/1"))
        report("  (reference: /api/boot/1, no chart)", *measure(db, "/api/boot/1", r, None))

        # 2. 5,000 boots
        db = str(work / f"boots-{args.deploys}x{args.boots_per_deploy}.db")
        if not os.path.exists(db):
            t = time.perf_counter()
            for d in range(args.deploys):
                path = work / f"deploy-{d:03d}.log"
                boots_log(path, d, args.boots_per_deploy)
                ledger("ingest", str(path), "--label", f"deploy-{d:03d}", "--year", "2026", db=db)
                path.unlink()
            print(f"boots ledger: {args.deploys * args.boots_per_deploy:,} boots in {args.deploys} deploys "
                  f"(ingested in {time.perf_counter() - t:.0f} s)")
        # "/diff" first: the ORM and the connection are warm, no reconciliation view has run
        report("deploys page /", *measure(db, "/", r, "/diff"), 1.0)
        report("  (reference: /api/deploys)", *measure(db, "/api/deploys", r, "/diff"))
        check = []
        for _ in range(r):
            t = time.perf_counter()
            ledger("check", "--format", "json", db=db, ok=(0, 1))
            check.append(time.perf_counter() - t)
        print(f"  (reference: `ledger check`, the same views for every deploy's latest boot, whole command: "
              f"median {statistics.median(check):.3f} s)")
        report(f"deploy page /deploy/1 ({args.boots_per_deploy} boots)", *measure(db, "/deploy/1", r, "/deploy/2"))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
