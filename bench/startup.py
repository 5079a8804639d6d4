"""How long the read commands take to start on an existing SQLite ledger, against the
interpreter floor (``python -c "import sqlite3"``) measured in the same run.

A ledger holding the 42 real excerpts (43 boots) is built once; then each command runs
``--repeat`` times, each run paired with a floor run just before it, and the median of the
pairs' ratios is printed (the machine's speed drifts; a pair sees the same drift).  The target
(issue 13) is 2x the floor for history, show, diff and check.

Usage: python bench/startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = sorted((ROOT / "fixtures" / "real").glob("*.log"))
FLOOR = [sys.executable, "-c", "import sqlite3"]
COMMANDS = {
    "history": ["history"],
    "show": ["show", "2"],
    "diff": ["diff", "1", "2"],
    "check": ["check"],
    "history --format json": ["history", "--format", "json"],
    "--version": ["--version"],
}


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    ledger = [sys.executable, "-m", "ledger"]  # what the console script runs, without its shim
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, LEDGER_DB=os.path.join(d, "ledger.db"))
        subprocess.run([*ledger, "ingest", *map(str, REAL)], env=env, stdout=subprocess.DEVNULL, check=True)
        wall(FLOOR, env)  # warm the file cache
        print(f"{'command':<24} {'median':>8} {'floor':>8} {'ratio (median of pairs)':>24}")
        for name, argv in COMMANDS.items():
            pairs = []
            for _ in range(args.repeat):
                floor = wall(FLOOR, env)
                cmd = wall([*ledger, *argv], env)
                pairs.append((cmd, floor))
            ratio = statistics.median(c / f for c, f in pairs)
            print(f"ledger {name:<17} {statistics.median(c for c, _ in pairs):7.3f}s "
                  f"{statistics.median(f for _, f in pairs):7.3f}s {ratio:23.1f}x")


if __name__ == "__main__":
    main()
