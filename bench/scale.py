"""What each command costs as the ledger grows (issue 17): ledgers of 100, 1k, 10k and 100k boots,
one group or many, each boot with runtime samples; for each command the median wall time and
peak RSS, against the interpreter floor (``python -c "import sqlite3"``) measured the same way,
the ratio to the 100-boot ledger and the growth from 10k to 100k.

The ledgers are built quickly, not by ingesting 100k logs: one real boot (the synthetic
journald fixture's ready boot, with its shape, facts and failures) is ingested, then cloned
with SQL — each clone its own content digest, start time and samples, and in "many" mode its
own model (a group per 10 boots); the clones' kv_reference_candidate and boot_runtime rows are
written with the same SQL the Writer uses.  Samples are generated rows of runtime_sample_row
(integral hundredths, as the generated runtime logs give), ``--samples`` per boot.

Usage: python bench/scale.py [--sizes 100 1000 10000 100000] [--samples 100] [--repeat 3]
       [--out bench/out] [--postgres URL --pg-size 10000]
Also prints bytes per million samples of the largest ledger.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_LOG = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"
PY = sys.executable
LEDGER = [PY, "-m", "ledger"]


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed: {err[-400:]}")
    return wall, usage.ru_maxrss / 1024


def build(path: Path, boots: int, groups: str, samples: int) -> None:
    """A SQLite ledger of ``boots`` boots cloned from the template boot."""
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    env = {**os.environ, "LEDGER_DB": str(path)}
    subprocess.run([*LEDGER, "ingest", "--year", "2026", "--label", "bench", str(TEMPLATE_LOG)], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    (tid,) = con.execute("SELECT boot_id FROM kv_cost_per_token WHERE outcome = 'ready'").fetchone()
    # the template alone, with id 1: the others go
    con.execute("BEGIN")
    for table in ("fact", "shape", "failure", "runtime_sample_row", "boot_runtime", "kv_reference_candidate"):
        con.execute(f"DELETE FROM {table} WHERE boot_id <> {tid}")
    con.execute(f"DELETE FROM boot WHERE id <> {tid}")
    for table in ("fact", "shape", "failure", "runtime_sample_row", "boot_runtime", "kv_reference_candidate"):
        con.execute(f"UPDATE {table} SET boot_id = 1 WHERE boot_id = {tid}")
    con.execute(f"UPDATE boot SET id = 1 WHERE id = {tid}")
    con.execute("DELETE FROM runtime_sample_row")
    con.execute("DELETE FROM boot_runtime")
    con.execute("COMMIT")
    cols = [r[1] for r in con.execute("PRAGMA table_info(boot)") if r[1] != "id"]
    seq = f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {boots})"
    clone = {"content_sha256": "printf('%064d', n.i)", "source_sha256": "printf('%064d', n.i)",
             # a start time per boot, a minute apart
             "started_at": "datetime('2026-01-01 00:00:00', '+' || n.i || ' minutes')",
             "source_path": "'bench-' || n.i || '.log'"}
    con.execute("BEGIN")
    con.execute(f"{seq} INSERT INTO boot (id, {', '.join(cols)}) SELECT n.i + 1, "
                + ", ".join(clone.get(c, f"t.{c}") for c in cols) + " FROM n, boot t WHERE t.id = 1 AND n.i < "
                f"{boots}")
    model = "'bench-model-' || (b.id / 10)" if groups == "many" else "s.value_text"
    con.execute("INSERT INTO shape (boot_id, key, value, value_text, source, line, pack) "
                f"SELECT b.id, s.key, s.value, CASE WHEN s.key = 'model' THEN {model} ELSE s.value_text END, "
                "s.source, s.line, s.pack FROM boot b, shape s WHERE s.boot_id = 1 AND b.id > 1")
    for table in ("fact", "failure"):
        fcols = [r[1] for r in con.execute(f"PRAGMA table_info({table})") if r[1] not in ("id", "boot_id")]
        con.execute(f"INSERT INTO {table} (boot_id, {', '.join(fcols)}) SELECT b.id, "
                    + ", ".join(f"x.{c}" for c in fcols) + f" FROM boot b, {table} x WHERE x.boot_id = 1 AND b.id > 1")
    if groups == "many":
        con.execute("UPDATE shape SET value_text = 'bench-model-0' WHERE boot_id = 1 AND key = 'model'")
    con.execute("DELETE FROM kv_reference_candidate")
    con.execute("INSERT INTO kv_reference_candidate (boot_id, group_key, sort_at) "
                "SELECT boot_id, group_key, COALESCE(started_at, '9999-12-31 23:59:59') FROM kv_cost_per_token "
                "WHERE outcome = 'ready' AND group_key IS NOT NULL")
    con.execute("COMMIT")
    con.execute("BEGIN")
    figures = ", ".join([
        "(k.j * 7919 % 900000) * 1.0", "(k.j * 104729 % 14000) * 1.0", "(k.j % 64) * 100.0", "(k.j % 7) * 100.0",
        "NULL", "NULL", "(k.j * 31 % 10000) * 1.0", "NULL", "(k.j * 17 % 10000) * 1.0"])
    con.execute(f"WITH RECURSIVE k(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM k WHERE j < {samples}) "
                "INSERT INTO runtime_sample_row (boot_id, id, kind, line, logged_at_num, logged_at_text, engine, "
                "hundredths, figure_1, figure_2, figure_3, figure_4, figure_5, figure_6, figure_7, figure_8, figure_9, "
                "spec_per_position_acceptance) "
                f"SELECT b.id, (b.id - 1) * {samples} + k.j, 0, 1000 + k.j * 4, 1767225600 + b.id * 60 + k.j * 10, NULL, "
                f"k.j % 4, 1, {figures}, NULL FROM boot b, k ORDER BY b.id, k.j")
    con.execute(f"INSERT INTO boot_runtime (boot_id, engine_stats, spec_decode, last_sample_id) "
                f"SELECT id, {samples}, 0, id * {samples} FROM boot")
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def bytes_per_million(path: Path) -> float | None:
    con = sqlite3.connect(path)
    try:
        (n,) = con.execute("SELECT count(*) FROM runtime_sample_row").fetchone()
        (size,) = con.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'runtime_sample_row'").fetchone()
    finally:
        con.close()
    return size / n * 1e6 if n else None


def commands(n: int) -> dict[str, list[str]]:
    mid = str(max(1, n // 2))
    return {
        "show N": ["show", mid],
        "check D": ["check", "bench"],
        "diff A B": ["diff", "1", mid],
        "runtime N": ["runtime", mid],
        "history --limit 20": ["history", "--limit", "20"],
        "history (all, csv)": ["history", "--format", "csv"],
        "export (all, jsonl)": ["export", "--format", "jsonl"],
    }


ALL_ROWS = ("history (all, csv)", "export (all, jsonl)")


def run_commands(db: str, n: int, repeat: int) -> dict[str, tuple[float, float]]:
    env = {**os.environ, "LEDGER_DB": db}
    out = {}
    for name, args in commands(n).items():
        runs = [measure([*LEDGER, *args], env) for _ in range(1 if name in ALL_ROWS else repeat)]
        out[name] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    ap.add_argument("--groups", nargs="+", default=["one", "many"])
    ap.add_argument("--samples", type=int, default=100, help="runtime samples per boot")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    ap.add_argument("--skip-all-rows-above", type=int, default=10**9,
                    help="time history/export of everything only up to this many boots")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    floor = [measure([PY, "-c", "import sqlite3"], dict(os.environ)) for _ in range(args.repeat)]
    floor_wall, floor_rss = statistics.median(f[0] for f in floor), max(f[1] for f in floor)
    print(f"interpreter floor (python -c 'import sqlite3'): {floor_wall:.3f} s, {floor_rss:.1f} MB")
    results: dict[tuple[str, int], dict[str, tuple[float, float]]] = {}
    for groups in args.groups:
        for n in args.sizes:
            path = out / f"ledger-{groups}-{n}.db"
            t = time.perf_counter()
            build(path, n, groups, args.samples)
            built = time.perf_counter() - t
            size = path.stat().st_size / 1e6
            print(f"\n{groups} group(s), {n:,} boots, {n * args.samples:,} samples: built in {built:.1f} s, "
                  f"{size:,.0f} MB, {bytes_per_million(path) / 1e6:.1f} MB per million samples", flush=True)
            r = run_commands(str(path), n, args.repeat)
            results[(groups, n)] = r
            base = results.get((groups, args.sizes[0]))
            for name, (wall, rss) in r.items():
                ratio = f"{wall / base[name][0]:.2f}x the {args.sizes[0]}-boot ledger" if base else ""
                print(f"  {name:<22} {wall:7.3f} s  (floor +{wall - floor_wall:6.3f} s)  {rss:6.1f} MB "
                      f"(floor +{rss - floor_rss:5.1f} MB)  {ratio}", flush=True)
        if 10000 in args.sizes and 100000 in args.sizes:
            print(f"\ngrowth 10k -> 100k boots ({groups} group(s)):")
            for name in results[(groups, 100000)]:
                a, b = results[(groups, 10000)][name], results[(groups, 100000)][name]
                print(f"  {name:<22} time x{b[0] / a[0]:.2f}  RSS x{b[1] / a[1]:.2f}")


if __name__ == "__main__":
    main()
