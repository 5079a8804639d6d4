"""How long `ledger ingest` takes on typical boot logs.

Measures, on this machine:
  * the whole command (`ledger ingest LOG` into a fresh ledger: process start, imports, migrate,
    parse, store), for the synthetic two-boot journald log and for all 42 real excerpts at once;
  * the parse alone (in process) per real fixture;
  * as a reference in the same run, `grep -c` over the same files.

``--against OTHER`` (another installation's ``ledger``, e.g. a non-editable install of an older
commit): interleaved pairs of the one-boot-log ingest into an existing (upgraded, empty) ledger,
other then this one, each pair on a fresh copy; prints each side's median wall and CPU time and
the median of the per-pair ratios (this / other), which a loaded machine skews far less than
either median.

``--instructions`` (with valgrind installed): the instructions one ingest of the one boot log
executes, counted by callgrind, for this ledger and ``--against``'s, with ``python -c pass``
and ``import ledger.cli`` beside them — the same count however loaded the machine is.

``--phases``: where one ingest of the one boot log spends its time, in process (CPU and wall):
interpreter start-up, imports, the grammar, starting the parse, opening the ledger, the parse,
storing the boots, the KV formula's prediction, closing; the rest is click, rendering and exit.

Usage: python bench/boot_ingest.py [--repeat N] [--against PATH/bin/ledger [--pairs N]] [--phases] [--instructions]
       [--ledger PATH/bin/ledger]  (default: the `ledger` on PATH)
Unset PYTHONDONTWRITEBYTECODE first: without bytecode every run recompiles every module.
"""

from __future__ import annotations

import argparse
import json
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
REAL = sorted((ROOT / "fixtures" / "real").glob("*.log"))
SYNTH = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"


def wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU user+system) of one command, the CPU from the children's rusage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, check=False, capture_output=True, env=env)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace').strip()}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def upgraded_ledger(ledger: str, folder: str, name: str) -> str:
    """An empty ledger at ``ledger``'s head revision (what "an existing ledger" is here)."""
    path = os.path.join(folder, name)
    subprocess.run([ledger, "db", "upgrade"], env=dict(os.environ, LEDGER_DB=path), stdout=subprocess.DEVNULL,
                   check=True)
    return path


def fresh_copy(template: str, db: str) -> str:
    """``db`` made a copy of ``template`` again, with no WAL or shared-memory file of a run before."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    shutil.copy(template, db)
    return db


def pairs(ledger: str, other: str, n: int, log: Path) -> None:
    with tempfile.TemporaryDirectory() as d:
        templates = {side: upgraded_ledger(exe, d, f"{side}.db") for side, exe in (("this", ledger), ("other", other))}
        runs: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
        for _ in range(n):
            for side, exe in (("other", other), ("this", ledger)):
                db = fresh_copy(templates[side], os.path.join(d, "run.db"))
                runs[side].append(timed([exe, "ingest", str(log)], dict(os.environ, LEDGER_DB=db)))
    for side, exe in (("other", other), ("this", ledger)):
        w = statistics.median(r[0] for r in runs[side])
        c = statistics.median(r[1] for r in runs[side])
        print(f"{side:5} {exe}: median {w * 1000:.0f} ms wall, {c * 1000:.0f} ms CPU")
    wall_ratio = statistics.median(t[0] / o[0] for t, o in zip(runs["this"], runs["other"], strict=True))
    cpu_ratio = statistics.median(t[1] / o[1] for t, o in zip(runs["this"], runs["other"], strict=True))
    print(f"median of {n} per-pair ratios (this / other): {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")


# Run inside the measured installation's interpreter: times each phase of one `ledger ingest`
# by wrapping the library functions the command calls.  The imports are timed first, on their
# own (every module the same ingest loaded, in the order it loaded them), so the phases after
# count the work alone.
_PHASES = r'''
import importlib, json, sys, time
cpu, clock = time.process_time, time.perf_counter
start = (cpu(), clock())
log, db, modules = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
t = (cpu(), clock())
for name in modules:
    try:
        importlib.import_module(name)
    except Exception:
        pass
spent = {"imports": [cpu() - t[0], clock() - t[1]]}

def wrap(owner, attr, phase):
    inner = getattr(owner, attr, None)
    if inner is None:  # an older installation without this step
        return
    def timed(*a, **k):
        t = (cpu(), clock())
        try:
            return inner(*a, **k)
        finally:
            got = spent.setdefault(phase, [0.0, 0.0])
            got[0] += cpu() - t[0]
            got[1] += clock() - t[1]
    setattr(owner, attr, timed)

import ledger.parsers, ledger.parsers.packs, ledger.parsers.pipeline, ledger.ingest, ledger.db.connect
import ledger.db.writes, ledger.db.writer
wrap(ledger.parsers.packs, "discover", "grammar")
wrap(ledger.parsers, "builtin_ruleset", "grammar")
wrap(ledger.ingest, "start_parse", "start parse")
wrap(ledger.db.connect, "open_writer", "open/check")
wrap(ledger.db.writes, "check_label", "open/check")
wrap(ledger.parsers.pipeline.Parse, "run", "parse+store")
wrap(ledger.db.writes, "store_boots", "store+formula")
wrap(ledger.db.writes, "set_source_sha256", "store+formula")
wrap(ledger.db.writes, "record_kv_formula", "formula")
wrap(ledger.db.writer.Writer, "close", "close")
from ledger.cli import main
t = (cpu(), clock())
try:
    main(["ingest", "--db", db, log])
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
spent["command"] = [cpu() - t[0], clock() - t[1]]
spent["start-up"] = [start[0], None]
print(json.dumps(spent))
'''

_LOADED = r'''
import atexit, json, sys
atexit.register(lambda: print("\n" + json.dumps(list(sys.modules))))
sys.argv = ["ledger", "ingest", "--db", sys.argv[2], sys.argv[1]]
from ledger.cli import main
main()
'''


def instructions(ledgers: list[str], log: Path) -> None:
    """Each ledger's instruction counts under callgrind: start-up alone, the command's imports, one ingest."""
    valgrind = shutil.which("valgrind") or sys.exit("--instructions needs valgrind (apt-get install valgrind)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def count(cmd: list[str], db: str | None = None) -> int:
        done = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                              capture_output=True, text=True, env=dict(env, **({"LEDGER_DB": db} if db else {})))
        for line in done.stderr.splitlines():
            if "Collected :" in line:
                return int(line.split(":")[-1].strip())
        sys.exit(f"callgrind counted nothing: {done.stderr.strip()[-500:]}")

    for ledger in ledgers:
        python = str(Path(ledger).parent / "python")
        with tempfile.TemporaryDirectory() as d:
            template = upgraded_ledger(ledger, d, "template.db")
            db = os.path.join(d, "run.db")
            shutil.copy(template, db)
            subprocess.run([ledger, "ingest", str(log)], env=dict(env, LEDGER_DB=db), capture_output=True,
                           check=True)  # the bytecode written, as for every later run
            os.unlink(db)
            shutil.copy(template, db)
            bare = count([python, "-P", "-c", "pass"])
            cli = count([python, "-P", "-c", "import ledger.cli"])
            ingest = count([python, "-P", ledger, "ingest", str(log)], db)
        print(f"{ledger}: {ingest / 1e6:.0f} M instructions for the ingest (python -c pass {bare / 1e6:.0f} M, "
              f"import ledger.cli {cli / 1e6:.0f} M, the ingest beyond that {(ingest - cli) / 1e6:.0f} M)")


def phases(ledger: str, log: Path, repeat: int) -> None:
    python = str(Path(ledger).parent / "python")
    runs: list[dict[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as d:
        template = upgraded_ledger(ledger, d, "template.db")
        db = os.path.join(d, "run.db")
        # -P: the measured installation's own ledger, not a source tree in the working folder
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        shutil.copy(template, db)
        out = subprocess.run([python, "-P", "-c", _LOADED, str(log), db], capture_output=True, text=True, check=True, env=env)
        modules = [m for m in json.loads(out.stdout.strip().splitlines()[-1]) if m != "__main__"]
        for _ in range(repeat):
            fresh_copy(template, db)
            out = subprocess.run([python, "-P", "-c", _PHASES, str(log), db, json.dumps(modules)], capture_output=True,
                                 text=True, check=False, env=env)
            if out.returncode != 0:
                sys.exit(f"{python}: the phases run failed: {out.stderr.strip()}")
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {k: (statistics.median(r[k][0] for r in runs),
               statistics.median(r[k][1] for r in runs) if runs[0][k][1] is not None else None) for k in runs[0]}
    zero = (0.0, 0.0)
    parse = tuple(a - b for a, b in zip(med.get("parse+store", zero), med.get("store+formula", zero), strict=True))
    store = tuple(a - b for a, b in zip(med.get("store+formula", zero), med.get("formula", zero), strict=True))
    rows = [("interpreter start-up", med["start-up"]), ("imports", med["imports"]), ("grammar", med.get("grammar", zero)),
            ("start parse", med.get("start parse", zero)), ("open/check ledger", med.get("open/check", zero)),
            ("parse (net of store)", parse), ("store", store), ("formula", med.get("formula", zero)),
            ("close", med.get("close", zero))]
    named = sum(v[0] for _, v in rows[2:])
    named_wall = sum(v[1] for _, v in rows[2:])
    rows.append(("rest (click, render, exit)", (med["command"][0] - named, med["command"][1] - named_wall)))
    print(f"{ledger}: one boot log ({log.name}) into an existing ledger, median of {repeat} runs "
          f"({len(modules)} modules loaded)")
    for label, (c, w) in rows:
        print(f"  {label:28} {c * 1000:6.1f} ms CPU" + (f"  {w * 1000:6.1f} ms wall" if w is not None else ""))
    total = med["start-up"][0] + med["imports"][0] + med["command"][0]
    print(f"  {'total':28} {total * 1000:6.1f} ms CPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ledger", help="the ledger command to measure (default: the one on PATH)")
    ap.add_argument("--against", metavar="OTHER", help="another installation's ledger: interleaved pairs")
    ap.add_argument("--pairs", type=int, default=20, help="pairs to run with --against (default 20)")
    ap.add_argument("--phases", action="store_true", help="the one-boot-log ingest's time by phase")
    ap.add_argument("--instructions", action="store_true", help="instruction counts under valgrind's callgrind")
    args = ap.parse_args()
    ledger = args.ledger or shutil.which("ledger") or sys.exit("install ledger first (pip install .)")
    if args.against or args.phases or args.instructions:
        if args.instructions:
            instructions([x for x in (args.against, ledger) if x], SYNTH)
        if args.against and (args.phases or not args.instructions):
            pairs(ledger, args.against, args.pairs, SYNTH)
        if args.phases:
            for exe in [x for x in (args.against, ledger) if x]:
                phases(exe, SYNTH, args.repeat)
        return
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
