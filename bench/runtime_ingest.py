"""Runtime-log ingest against grep: two mixes of served log, two input sizes, two cores and one.

For each mix and size: write a runtime log, run `ledger ingest` on it into a fresh ledger, and
in the same run time `grep -c -F -f ANCHORS` where ANCHORS are the literal anchors the grammar
uses.  The mixes (--mix, both by default):

* ``make`` — bench/make_runtime_log.py: a DP=4 boot, then per 10 s four stats lines, a
  spec-decode report and 30-70 requests with long prompts (~4 % of its lines are records the
  ingest reads), and a runtime OOM at the end;
* ``gen`` — /work/shared/tools/gen-runtime-log.py (--gen-tool) behind a real boot
  (fixtures/reconcile/fp8-4x262144-ready.log): short lines, 5 % stats and 2 % spec-decode
  records, 93 % access and request lines (issue 28's "served day of another mix").

Each ingest runs on two cores as installed, and (the one-core column) with the ingest and grep
both under `taskset -c 0`, so that the scanning child shares the core with the process that
stores; --repeat times each, in rounds of grep, ingest, grep (per lane, per engine).  Prints
the median wall times, the ratio — each ingest against the faster of the greps just before and
after it, median and range over the runs — ingest MB/s and the peak RSS of the ingest's
processes, for each lane.

--engine names scan engines to time (default: the one installed first, as `ledger` picks it);
with several, each round runs them in turn between greps (grep, hyperscan, grep, re2, grep, …)
and each gets its own line.  An engine other than the default runs as an install without the
faster ones would: the ingest starts with their modules blocked (sys.modules[name] = None).

Usage: python bench/runtime_ingest.py [--sizes 500 1000] [--repeat 3] [--mix make gen]
                                      [--engine hyperscan re2 python] [--no-one-core]
                                      [--gen-tool PATH] [--keep DIR]
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


GEN_TOOL = "/work/shared/tools/gen-runtime-log.py"
GEN_BOOT = ROOT / "fixtures" / "reconcile" / "fp8-4x262144-ready.log"  # a real boot, ready: serving follows
GEN_LINE_BYTES = 545e6 / 3e6  # the tool's docstring: 3,000,000 lines is about 545 MB


def write_log(mix: str, log: Path, size: float, gen_tool: str) -> None:
    """The ``mix``'s runtime log of about ``size`` MB at ``log`` (deterministic for a size)."""
    if mix == "make":
        subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(log), "--mb", str(size)],
                       check=True)
        return
    body = log.with_suffix(".body")
    lines = max(1, round((size * 1e6 - GEN_BOOT.stat().st_size) / GEN_LINE_BYTES))
    subprocess.run([sys.executable, gen_tool, str(lines), str(body)], check=True)
    with open(log, "wb") as out:
        out.write(GEN_BOOT.read_bytes())
        with open(body, "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)
    body.unlink()


def lane_text(name: str, runs: list[tuple[float, float]], rss: float, mb: float) -> str:
    """One lane's figures: runs are (ingest wall, the faster of the greps around it)."""
    ratios = sorted(wall / grep for wall, grep in runs)
    typical = statistics.median(wall for wall, _ in runs)
    return (f"{name}: ledger ingest {typical:.2f} s, grep {statistics.median(g for _, g in runs):.2f} s, "
            f"ratio {statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}), {mb / typical:,.0f} MB/s, "
            f"peak RSS {rss:,.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=float, nargs="+", default=[500, 1000], help="log sizes in MB")
    ap.add_argument("--mix", nargs="+", choices=["make", "gen"], default=["make", "gen"],
                    help="which generated logs (default: both)")
    ap.add_argument("--keep", help="write the logs here and keep them")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (the median and range are printed)")
    ap.add_argument("--engine", nargs="+", choices=sorted(BLOCKED), help="scan engines to time (default: the installed one)")
    ap.add_argument("--no-one-core", action="store_true", help="leave out the one-core (taskset -c 0) runs")
    ap.add_argument("--gen-tool", default=GEN_TOOL, help=f"the gen mix's generator (default: {GEN_TOOL})")
    args = ap.parse_args()
    shutil.which("ledger") or sys.exit("install ledger first (pip install .)")
    if "gen" in args.mix and not os.path.exists(args.gen_tool):
        sys.exit(f"the gen mix needs {args.gen_tool} (--gen-tool PATH)")
    lanes = {"two cores": []} if args.no_one_core else {"two cores": [], "one core": ["taskset", "-c", "0"]}
    if "one core" in lanes and not shutil.which("taskset"):
        sys.exit("the one-core runs need taskset (util-linux), or --no-one-core")
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
    for mix in args.mix:
        for size in args.sizes:
            log = work / f"runtime-{mix}-{size:g}MB.log"
            if not log.exists():
                write_log(mix, log, size, args.gen_tool)
            mb = log.stat().st_size / 1e6
            env = dict(os.environ, LEDGER_DB=str(work / f"ledger-{mix}-{size:g}.db"))
            grep = ["grep", "-c", "-F", "-f", str(anchors), str(log)]
            # (lane, engine) -> [(ingest wall, the faster grep beside it)]; peak RSS per (lane, engine)
            runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
            rss: dict[tuple[str, str], float] = {}
            # rounds of grep, ingest, grep, … per lane, each ingest into a fresh ledger: a noisy
            # machine slows both alike, and an ingest is paired with the greps just around it
            for _ in range(args.repeat):
                for lane, pin in lanes.items():
                    before = rss_of([*pin, *grep], env)[0]
                    for engine in engines:
                        for p in work.glob(f"ledger-{mix}-{size:g}.db*"):
                            p.unlink()
                        wall, peak = rss_of([*pin, *ledger_command(engine), "ingest", "--year", "2026", str(log)], env)
                        after = rss_of([*pin, *grep], env)[0]
                        runs.setdefault((lane, engine), []).append((wall, min(before, after)))
                        rss[lane, engine] = max(rss.get((lane, engine), 0.0), peak)
                        before = after
            for engine in engines:
                print(f"{mb:,.0f} MB, {mix} mix, {engine} ({args.repeat} paired runs each):")
                for lane in lanes:
                    print("  " + lane_text(lane, runs[lane, engine], rss[lane, engine], mb))
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
