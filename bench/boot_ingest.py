"""How long `ledger ingest` takes on typical boot logs.

Measures, on this machine:
  * the whole command (`ledger ingest LOG` into a fresh ledger: process start, imports, migrate,
    parse, store), for the synthetic two-boot journald log and for all 42 real excerpts at once;
  * the parse alone (in process) per real fixture;
  * as a reference in the same run, `grep -c` over the same files.

Usage: python bench/boot_ingest.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = sorted((ROOT / "fixtures" / "real").glob("*.log"))
SYNTH = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"


def wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ledger = shutil.which("ledger") or sys.exit("install ledger first (pip install .)")
    from ledger import parsers

    results = {}
    for label, files in (("one boot log (synthetic, 43 lines, 2 boots)", [SYNTH]),
                         ("42 real excerpts (812 lines, 43 boots)", REAL)):
        fresh, existing, grep = [], [], []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as d:
                env = dict(os.environ, LEDGER_DB=os.path.join(d, "l.db"))
                fresh.append(wall([ledger, "ingest", *map(str, files)], env))
            with tempfile.TemporaryDirectory() as d:
                env = dict(os.environ, LEDGER_DB=os.path.join(d, "l.db"))
                subprocess.run([ledger, "db", "upgrade"], env=env, stdout=subprocess.DEVNULL, check=True)
                existing.append(wall([ledger, "ingest", *map(str, files)], env))
            grep.append(wall(["grep", "-c", "KV cache", *map(str, files)]))
        results[label] = (statistics.median(fresh), statistics.median(existing), statistics.median(grep))
    parse_times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        for f in REAL:
            parsers.parse_file(str(f), year=2026)
        parse_times.append((time.perf_counter() - t) / len(REAL))
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, median of {args.repeat} runs")
    for label, (fresh, existing, gr) in results.items():
        print(f"ledger ingest, {label}: {existing * 1000:.0f} ms into an existing ledger, "
              f"{fresh * 1000:.0f} ms creating a new one (grep -c on the same files: {gr * 1000:.1f} ms)")
    print(f"parse alone, per real excerpt: {statistics.median(parse_times) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
