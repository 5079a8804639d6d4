"""`ledger serve` page times on two large ledgers, over HTTP from a running server.

1. The runtime page: a 10-hour DP=4 runtime log (bench/make_runtime_log.py --hours 10: 3,600
   stats rounds of four engines and 3,600 spec-decode reports, a runtime OOM at the end) is
   ingested and its boot page — facts, verdicts and the runtime chart — is fetched.  Target:
   under 2 s.
2. The deploys page over 5,000 boots: --deploys logs of --boots-per-deploy boots each (vLLM
   0.20 start-ups with varying figures and times), each ingested under its own label.  Target:
   under 1 s.

Each page is fetched once to warm the server (the first request imports matplotlib), then
--repeat times; the median, min and max are printed, with the JSON twin of the page beside it
(the same reads without the HTML and the chart) as the reference.  Writes its screenshots-worth
of HTML to --keep if given.

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


def ledger(*args: str, db: str) -> None:
    subprocess.run([sys.executable, "-m", "ledger", "--db", db, *args], check=True, stdout=subprocess.DEVNULL)


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


def measure(base: str, path: str, repeat: int, keep: Path | None, name: str) -> tuple[list[float], int]:
    first, body = fetch(base + path)
    times = [fetch(base + path)[0] for _ in range(repeat)]
    if keep:
        (keep / f"{name}.html").write_bytes(body)
    return [first, *times], len(body)


def report(label: str, times: list[float], size: int, target: float | None = None) -> None:
    rest = times[1:]
    med = statistics.median(rest)
    verdict = "" if target is None else f"  target < {target:g} s: {'met' if med < target else 'MISSED'}"
    print(f"{label:<40} median {med:6.3f} s  min {min(rest):6.3f}  max {max(rest):6.3f}  "
          f"first {times[0]:6.3f}  {size / 1024:,.0f} KiB{verdict}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--deploys", type=int, default=100)
    ap.add_argument("--boots-per-deploy", type=int, default=50)
    ap.add_argument("--keep", help="keep the ledgers and the pages' HTML here")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ledger-serve-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    keep = work if args.keep else None
    try:
        # 1. a 10-hour, 4-engine runtime log
        log, db = work / "ten-hours.log", str(work / "runtime.db")
        subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(log), "--hours", "10"],
                       check=True)
        for p in (db, db + "-wal", db + "-shm"):
            if os.path.exists(p):
                os.remove(p)
        ledger("ingest", str(log), "--label", "dp4-ten-hours", db=db)
        print(f"runtime log: {log.stat().st_size / 1e6:,.0f} MB, 10 h, 4 engines")
        proc, base = serve(db)
        try:
            report("runtime page /boot/1", *measure(base, "/boot/1", args.repeat, keep, "runtime-page"), 2.0)
            report("  (reference: /api/boot/1, no chart)", *measure(base, "/api/boot/1", args.repeat, None, ""))
            report("  engines split /boot/1?engines=split",
                   *measure(base, "/boot/1?engines=split", args.repeat, keep, "runtime-split"))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)

        # 2. 5,000 boots
        db = str(work / "boots.db")
        for p in (db, db + "-wal", db + "-shm"):
            if os.path.exists(p):
                os.remove(p)
        t = time.perf_counter()
        for d in range(args.deploys):
            path = work / f"deploy-{d:03d}.log"
            boots_log(path, d, args.boots_per_deploy)
            ledger("ingest", str(path), "--label", f"deploy-{d:03d}", "--year", "2026", db=db)
            path.unlink()
        print(f"boots ledger: {args.deploys * args.boots_per_deploy:,} boots in {args.deploys} deploys "
              f"(ingested in {time.perf_counter() - t:.0f} s)")
        proc, base = serve(db)
        try:
            report("deploys page /", *measure(base, "/", args.repeat, keep, "deploys-page"), 1.0)
            report("  (reference: /api/deploys)", *measure(base, "/api/deploys", args.repeat, None, ""))
            report(f"deploy page /deploy/1 ({args.boots_per_deploy} boots)",
                   *measure(base, "/deploy/1", args.repeat, keep, "deploy-page"))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
