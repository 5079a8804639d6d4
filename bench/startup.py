"""How long each read command takes on a SQLite ledger, against the interpreter floor
(``python -c pass``) measured in the same run (issue 28).

Each command runs ``--repeat`` times, each run paired with a floor run just before it (the
machine's speed drifts; a pair sees the same drift); printed: the command's median wall time,
the floor's median, their ratio, and the median of the pairs' ratios.  The target: every read
command <= 10x the floor on the fixtures' ledger, <= 12x on the 100k-boot ledger (two cores).

The ledgers:

* default: every real fixture (``fixtures/real/*.log``) ingested into a new ledger, labelled
  ``fixtures`` (so that a deploy reference and a sweep have something to name);
* ``--ledger PATH``: an existing ledger, e.g. the 100k-boot one that ``bench/scale.py`` builds
  (``python bench/scale.py --sizes 100000 --groups one --reuse`` keeps it in
  ``bench/out/ledger-one-100000.db``; ``--scale`` is a shortcut for that path).  On such a
  ledger the commands that print every boot (``history``, ``export`` without a boot, ``sweep``
  of a group: there every boot is of the one group) are left out: they print 100k rows, a cost
  of the rows, not of start-up (``bench/scale.py`` times history and export of everything).

The boots the commands name (``show A``, ``diff A B`` …) are read from the ledger: the two
newest boots, the newest one with a KV group (``sweep --group``) and a cost per token
(``predict --like``).

``--cpu`` times the processor instead of the clock (user + system time of each run, from
``getrusage``): on a loaded machine a run's wall time is mostly its wait for a core, its CPU
time much less so (the ratio to the floor's CPU time is then the figure to read).

Usage: python bench/startup.py [--repeat N] [--ledger PATH | --scale] [--only NAME ...] [--cpu]
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = sorted((ROOT / "fixtures" / "real").glob("*.log"))
SCALE_LEDGER = ROOT / "bench" / "out" / "ledger-one-100000.db"
FLOOR = [sys.executable, "-c", "pass"]
LEDGER = [sys.executable, "-m", "ledger"]  # what the console script runs, without its shim

# name -> argv ({a}, {b}: the two newest boots; {g}: a boot with a KV group; {c}: one with a cost
# per token; {d}: a deploy reference); True marks the commands that print a row per boot
COMMANDS: dict[str, tuple[list[str], bool]] = {
    "history": (["history"], True),
    "history --limit 20": (["history", "--limit", "20"], False),
    "history --format json --limit 20": (["history", "--format", "json", "--limit", "20"], False),
    "history --deploy D": (["history", "--deploy", "{d}", "--limit", "20"], False),
    "show": (["show", "{a}"], False),
    "show --format json": (["show", "{a}", "--format", "json"], False),
    "diff": (["diff", "{a}", "{b}"], False),
    "check": (["check"], False),
    "check D": (["check", "{d}"], False),
    "runtime": (["runtime", "{a}"], False),
    "export": (["export"], True),
    "export A": (["export", "{a}"], False),
    "sql": (["sql", "SELECT count(*) FROM boot"], False),
    "deploy list": (["deploy", "list"], False),
    "model list": (["model", "list"], False),
    "db current": (["db", "current"], False),
    "db path": (["db", "path"], False),
    "note": (["note", "{a}", "--against", "{b}"], False),
    "sweep": (["sweep", "max_model_len", "--group", "{g}"], True),  # a row per boot of the group
    "predict": (["predict", "--like", "{c}", "--tokens", "100000"], False),
    "--version": (["--version"], False),
}
# shell completion of a boot id (``ledger show <TAB>``): click's protocol, through the environment
COMPLETION = {"_LEDGER_COMPLETE": "bash_complete", "COMP_WORDS": "ledger show ", "COMP_CWORD": "2"}


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def cpu(cmd: list[str], env: dict[str, str]) -> float:
    """The run's user + system time (its children's, as getrusage counts them)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def references(path: str) -> dict[str, str]:
    """The boots and the deploy the commands name, read from the ledger."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        newest = [r[0] for r in con.execute("SELECT id FROM boot ORDER BY id DESC LIMIT 2")]
        group = con.execute("SELECT max(boot_id) FROM boot_kv WHERE group_key IS NOT NULL").fetchone()[0]
        cost = con.execute("SELECT max(boot_id) FROM kv_cost_per_token").fetchone()[0]
        deploy = con.execute("SELECT deploy_id FROM boot WHERE id = ?", (newest[0],)).fetchone()[0]
    finally:
        con.close()
    a, b = (newest + newest)[:2]
    return {"a": str(a), "b": str(b), "g": str(group or a), "c": str(cost or a), "d": f"deploy:{deploy}"}


def run(path: str, repeat: int, whole: bool, only: list[str] | None, measure=wall) -> None:
    env = dict(os.environ, LEDGER_DB=path)
    env.pop("NO_COLOR", None)
    refs = references(path)
    wall(FLOOR, env)  # warm the file cache
    wall([*LEDGER, "history", "--limit", "1"], env)
    print(f"ledger {path}: boots {refs['a']} and {refs['b']}, group {refs['g']}, cost {refs['c']}, {refs['d']}")
    print(f"{'command':<36} {'median':>8} {'floor':>8} {'ratio':>7} {'pairs':>7}"
          + ("  (CPU time)" if measure is cpu else ""))
    jobs = [(name, [*LEDGER, *(a.format(**refs) for a in argv)], env)
            for name, (argv, every) in COMMANDS.items() if whole or not every]
    jobs.append(("completion (show <TAB>)", LEDGER, dict(env, **COMPLETION)))
    for name, cmd, cmd_env in jobs:
        if only and name not in only:
            continue
        pairs = []
        for _ in range(repeat):
            floor = measure(FLOOR, env)
            pairs.append((measure(cmd, cmd_env), floor))
        cmd_median, floor_median = statistics.median(c for c, _ in pairs), statistics.median(f for _, f in pairs)
        print(f"{name:<36} {cmd_median:7.3f}s {floor_median:7.3f}s {cmd_median / floor_median:6.1f}x "
              f"{statistics.median(c / f for c, f in pairs):6.1f}x", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=11)
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--ledger", help="an existing SQLite ledger (default: a new one of every real fixture)")
    where.add_argument("--scale", action="store_true", help=f"the 100k-boot ledger of bench/scale.py ({SCALE_LEDGER})")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these commands (as the first column names them)")
    ap.add_argument("--cpu", action="store_true", help="time user + system CPU, not the clock (a loaded machine)")
    args = ap.parse_args()
    measure = cpu if args.cpu else wall
    if args.scale or args.ledger:
        path = Path(args.ledger or SCALE_LEDGER)
        if not path.exists():
            raise SystemExit(f"{path}: no ledger (python bench/scale.py --sizes 100000 --groups one --reuse builds it)")
        run(str(path), args.repeat, whole=False, only=args.only, measure=measure)
        return
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ledger.db")
        subprocess.run([*LEDGER, "ingest", "--db", path, "--label", "fixtures", *map(str, REAL)],
                       stdout=subprocess.DEVNULL, check=True)
        run(path, args.repeat, whole=True, only=args.only, measure=measure)


if __name__ == "__main__":
    main()
