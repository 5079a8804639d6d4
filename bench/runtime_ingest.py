"""Runtime-log ingest against grep, at two input sizes.

For each size: write a realistic runtime log (bench/make_runtime_log.py), run `ledger ingest`
on it into a fresh ledger, and in the same run time `grep -c -F -f ANCHORS` where ANCHORS are
the literal anchors the grammar uses; --repeat times each, alternating (grep, ingest, grep, …).
Prints the median wall times, the ratio — each ingest against the faster of the greps just
before and after it, median and range over the runs — ingest MB/s and the peak RSS of the
ingest processes.

--engine names scan engines to time (default: the one installed first, as `ledger` picks it);
with several, each repeat runs them in turn between greps (grep, hyperscan, grep, re2, grep, …)
and each gets its own line.  An engine other than the default runs as an install without the
faster ones would: the ingest starts with their modules blocked (sys.modules[name] = None).

Usage: python bench/runtime_ingest.py [--sizes 500 1000] [--repeat 3] [--engine hyperscan re2 python]
                                      [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the modules an install must lack for each engine to be the one `ledger` picks
BLOCKED = {"hyperscan": (), "re2": ("hyperscan",), "python": ("hyperscan", "re2")}


def ledger_command(engine: str) -> list[str]:
    """`ledger` as an install whose fastest scan engine is ``engine`` runs it (the same launcher
    for every engine, so that none pays a different start-up)."""
    code = (f"import sys; sys.modules.update(dict.fromkeys({BLOCKED[engine]!r})); "
            "from ledger.cli import main; sys.argv[0] = 'ledger'; main()")
    return [sys.executable, "-c", code]


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True)
    wall = time.perf_counter() - t
    if done.returncode not in (0, 1):
        sys.exit(f"{cmd[0]} failed: {done.stderr.decode()[-500:]}")
    # ru_maxrss of children is the max over all waited children: run the ingest first per size
    return wall, max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)


def rss_of(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS in MB, measured by GNU time when present, else by getrusage."""
    gnu_time = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    if gnu_time:
        with tempfile.NamedTemporaryFile("r") as out:
            t = time.perf_counter()
            # stdout to a pipe, not /dev/null: GNU grep stops at the first match when its output is
            # /dev/null, which would make the reference meaninglessly fast
            subprocess.run([gnu_time, "-f", "%M", "-o", out.name, *cmd], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, check=False)
            wall = time.perf_counter() - t
            return wall, int(out.read().strip().splitlines()[-1]) / 1024
    wall, kib = run(cmd, env)
    return wall, kib / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=float, nargs="+", default=[500, 1000], help="log sizes in MB")
    ap.add_argument("--keep", help="write the logs here and keep them")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (best and median are printed)")
    ap.add_argument("--engine", nargs="+", choices=sorted(BLOCKED), help="scan engines to time (default: the installed one)")
    args = ap.parse_args()
    shutil.which("ledger") or sys.exit("install ledger first (pip install .)")
    sys.path.insert(0, str(ROOT))
    from ledger import parsers
    from ledger.parsers.fast.scanner import available_engines

    engines = args.engine or available_engines()[:1]
    for engine in engines:
        if engine not in available_engines():
            sys.exit(f"scan engine {engine} is not installed here")
        # say which engine each ingest really runs (ledger --version names it)
        version = subprocess.run([*ledger_command(engine), "--version"], capture_output=True, text=True).stdout
        if f"scan engine: {engine}" not in version:
            sys.exit(f"could not run the {engine} engine: {version.strip()}")

    rules = parsers.builtin_ruleset()
    work = Path(args.keep or tempfile.mkdtemp(prefix="ledger-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    anchors = work / "anchors.txt"
    anchors.write_text("\n".join(rules.all_anchors) + "\n")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, scan engines "
          f"{', '.join(engines)}, {len(rules.all_anchors)} anchors")
    for size in args.sizes:
        log = work / f"runtime-{size:g}MB.log"
        if not log.exists():
            subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(log), "--mb", str(size)],
                           check=True)
        mb = log.stat().st_size / 1e6
        env = dict(os.environ, LEDGER_DB=str(work / f"ledger-{size:g}.db"))
        grep = ["grep", "-c", "-F", "-f", str(anchors), str(log)]
        runs: list[tuple[str, float]] = []  # (engine, wall) in the order they ran
        greps: list[float] = []
        rss = dict.fromkeys(engines, 0.0)
        # alternate grep and ingest, each time into a fresh ledger: a noisy machine slows both alike
        for _ in range(args.repeat):
            for engine in engines:
                greps.append(rss_of(grep, env)[0])
                for p in work.glob(f"ledger-{size:g}.db*"):
                    p.unlink()
                wall, peak = rss_of([*ledger_command(engine), "ingest", "--year", "2026", str(log)], env)
                runs.append((engine, wall))
                rss[engine] = max(rss[engine], peak)
        greps.append(rss_of(grep, env)[0])
        for engine in engines:
            # each ingest against the faster of the greps just before and after it: the machine's
            # speed drifts over minutes, and a pair sees the same machine
            ratios = sorted(wall / min(greps[i], greps[i + 1]) for i, (e, wall) in enumerate(runs) if e == engine)
            typical = statistics.median(wall for e, wall in runs if e == engine)
            print(f"{mb:,.0f} MB, {engine}: ledger ingest {typical:.2f} s, grep -c -F -f anchors "
                  f"{statistics.median(greps):.2f} s (medians), ratio {statistics.median(ratios):.2f}x (median of "
                  f"{args.repeat} paired runs; {ratios[0]:.2f}-{ratios[-1]:.2f}), {mb / typical:,.0f} MB/s, "
                  f"peak RSS {rss[engine]:,.0f} MB")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
