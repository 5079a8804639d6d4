"""How long `ledger plot` takes to write each chart, against matplotlib's own import and the
interpreter floor measured in the same run.

A ledger of the bundled fork boots (fixtures/reconcile, fixtures/radiance, each under its
label) and one served hour (bench/make_runtime_log.py --hours 1: stats rounds of four engines,
spec-decode reports, a runtime OOM) is built once.  Then each chart is written --repeat times
to a PNG, each run paired with a floor run just before it: `python -c pass` (the interpreter)
and `python -c "import matplotlib.figure, matplotlib.backends.backend_agg"` (what drawing any
chart costs before the ledger is read).  Medians are printed, and each command's ratio to the
interpreter floor (median of the pairs' ratios).  Nothing here is asserted; the figures go
into docs/performance.md.

Usage: python bench/plot.py [--repeat 5]
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
LEDGER = [sys.executable, "-m", "ledger"]  # what the console script runs, without its shim
FLOORS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import matplotlib (agg)": [sys.executable, "-c", "import matplotlib.figure, matplotlib.backends.backend_agg"],
}


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def build(folder: str, env: dict[str, str]) -> None:
    for log in sorted((ROOT / "fixtures" / "reconcile").glob("*.log")):
        subprocess.run([*LEDGER, "ingest", str(log), "--label", log.stem], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    for log in sorted((ROOT / "fixtures" / "radiance").glob("*.log")):
        subprocess.run([*LEDGER, "ingest", str(log), "--label", "radiance-" + log.stem], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    served = os.path.join(folder, "served.log")
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), served, "--hours", "1"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*LEDGER, "ingest", served, "--label", "served-hour"], env=env, check=True,
                   stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, LEDGER_DB=os.path.join(d, "ledger.db"), MPLBACKEND="agg")
        build(d, env)
        out = os.path.join(d, "chart.png")
        commands = {
            "plot history": ["plot", "history", "-o", out],
            "plot deploy": ["plot", "deploy", "fp8-3x262144-ready", "-o", out],
            "plot runtime (1 h)": ["plot", "runtime", "served-hour", "-o", out],
        }
        for cmd in FLOORS.values():
            wall(cmd, env)  # warm the file cache
        print(f"{'command':<26} {'median':>8}  {'ratio to python -c pass':>24}")
        for name, floor in FLOORS.items():
            print(f"{name:<26} {statistics.median(wall(floor, env) for _ in range(args.repeat)):7.3f}s")
        for name, argv in commands.items():
            pairs = []
            for _ in range(args.repeat):
                floor = wall(FLOORS["python -c pass"], env)
                pairs.append((wall([*LEDGER, *argv], env), floor))
            ratio = statistics.median(c / f for c, f in pairs)
            print(f"ledger {name:<19} {statistics.median(c for c, _ in pairs):7.3f}s  {ratio:23.1f}x")


if __name__ == "__main__":
    main()
