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

Usage: python bench/scale.py [--sizes 100 1000 10000 100000] [--samples 100 [one per size]]
       [--many-samples N] [--repeat 3] [--out bench/out]
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
# the tables with a boot's rows that the template keeps and the clones copy
BOOT_TABLES = ("fact", "shape", "failure", "runtime_sample_row", "boot_runtime", "kv_reference_candidate",
               "kv_formula_prediction")
PREDICTION_COLUMNS = ("status", "reason", "model", "geometry", "budget_bytes", "budget_source", "budget_precision_bytes",
                      "tensor_parallel_size", "pipeline_parallel_size", "block_size", "kv_cache_dtype", "max_model_len",
                      "engine_version", "v0", "predicted_blocks", "predicted_tokens", "predicted_tokens_low",
                      "predicted_tokens_high", "predicted_concurrency", "assumed")


def _clone_predictions(template: int) -> str:
    """Every clone's kv_formula_prediction row: the template's (as the Writer would store it)."""
    cols = ", ".join(PREDICTION_COLUMNS)
    return (f"INSERT INTO kv_formula_prediction (boot_id, {cols}) SELECT b.id, "
            + ", ".join(f"p.{c}" for c in PREDICTION_COLUMNS)
            + f" FROM boot b, kv_formula_prediction p WHERE p.boot_id = {template} AND b.id <> {template}")
PY = sys.executable
LEDGER = [PY, str(Path(__file__).resolve()), "--inner"]


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and the seconds the command took after its imports (what the
    ledger's size can change; -1 for a command that does not say) of one child process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.stderr.close()
    inner = -1.0
    for line in err.splitlines():
        if line.startswith("bench-inner "):
            inner = float(line.split()[1])
    # exit 1 is `ledger check` finding a verdict off; anything else is a failure
    if os.waitstatus_to_exitcode(status) not in ((0, 1) if "check" in cmd else (0,)):
        sys.exit(f"{' '.join(cmd)} failed: {err[-400:]}")
    return wall, usage.ru_maxrss / 1024, inner


def inner_main(args: list[str]) -> None:
    """``ledger ARGS`` with everything a command imports loaded first; says on stderr how long the
    command itself took."""
    import click  # noqa: F401
    import sqlalchemy.orm  # noqa: F401

    import ledger.cli as cli
    import ledger.diff  # noqa: F401
    import ledger.queries  # noqa: F401
    import ledger.reconcile  # noqa: F401
    import ledger.render.show  # noqa: F401
    import ledger.runtime  # noqa: F401

    t = time.perf_counter()
    code = 0
    try:
        cli.main.main(args, prog_name="ledger", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code or 0
    except Exception as exc:  # click's Exit(1) from `check`
        code = getattr(exc, "exit_code", 1)
    sys.stdout.flush()
    print(f"bench-inner {time.perf_counter() - t:.6f}", file=sys.stderr)
    sys.exit(code)


def build(path: Path, boots: int, groups: str, samples: int) -> None:
    """A SQLite ledger of ``boots`` boots cloned from the template boot."""
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    env = {**os.environ, "LEDGER_DB": str(path)}
    subprocess.run([PY, "-m", "ledger", "ingest", "--year", "2026", "--label", "bench", str(TEMPLATE_LOG)], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    (tid,) = con.execute("SELECT boot_id FROM kv_cost_per_token WHERE outcome = 'ready'").fetchone()
    # the template alone, with id 1: the others go
    con.execute("BEGIN")
    for table in BOOT_TABLES:
        con.execute(f"DELETE FROM {table} WHERE boot_id <> {tid}")
    con.execute(f"DELETE FROM boot WHERE id <> {tid}")
    for table in BOOT_TABLES:
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
    con.execute(_clone_predictions(1))
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


def build_postgres(url: str, boots: int, samples: int) -> None:
    """The same ledger as ``build`` (one group) in a new PostgreSQL database at ``url``."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    target = make_url(url)
    admin = create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{target.database}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{target.database}"')
    admin.dispose()
    env = {**os.environ, "LEDGER_DB": url}
    subprocess.run([PY, "-m", "ledger", "ingest", "--year", "2026", "--label", "bench", str(TEMPLATE_LOG)], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    engine = create_engine(url)
    with engine.begin() as conn:
        tid = conn.execute(text("SELECT boot_id FROM kv_cost_per_token WHERE outcome = 'ready'")).scalar()
        others = BOOT_TABLES
        for table in others:
            conn.execute(text(f"DELETE FROM {table} WHERE boot_id <> {tid}"))
        conn.execute(text(f"DELETE FROM boot WHERE id <> {tid}"))
        conn.execute(text("DELETE FROM runtime_sample_row"))
        conn.execute(text("DELETE FROM boot_runtime"))
        # the template becomes boot 1, as in the SQLite ledgers (foreign keys unchecked meanwhile)
        conn.execute(text("SET LOCAL session_replication_role = replica"))
        for table in others:
            conn.execute(text(f"UPDATE {table} SET boot_id = 1 WHERE boot_id = {tid}"))
        conn.execute(text(f"UPDATE boot SET id = 1 WHERE id = {tid}"))
        conn.execute(text("SET LOCAL session_replication_role = origin"))
        tid = 1
        cols = [c for c in conn.execute(text("SELECT column_name FROM information_schema.columns WHERE "
                                             "table_name = 'boot' ORDER BY ordinal_position")).scalars() if c != "id"]
        clone = {"content_sha256": "lpad(n.i::text, 64, '0')", "source_sha256": "lpad(n.i::text, 64, '0')",
                 "started_at": "to_char(timestamp '2026-01-01' + n.i * interval '1 minute', 'YYYY-MM-DD HH24:MI:SS')",
                 "source_path": "'bench-' || n.i || '.log'"}
        conn.execute(text(f"INSERT INTO boot (id, {', '.join(cols)}) SELECT n.i + {tid}, "
                          + ", ".join(clone.get(c, f"t.{c}") for c in cols)
                          + f" FROM generate_series(1, {boots - 1}) n(i), boot t WHERE t.id = {tid}"))
        conn.execute(text("SELECT setval(pg_get_serial_sequence('boot', 'id'), (SELECT max(id) FROM boot))"))
        for table in ("shape", "fact", "failure"):
            fcols = [c for c in conn.execute(text(f"SELECT column_name FROM information_schema.columns WHERE "
                                                  f"table_name = '{table}' ORDER BY ordinal_position")).scalars()
                     if c not in ("id", "boot_id")]
            conn.execute(text(f"INSERT INTO {table} (boot_id, {', '.join(fcols)}) SELECT b.id, "
                              + ", ".join(f"x.{c}" for c in fcols)
                              + f" FROM boot b, {table} x WHERE x.boot_id = {tid} AND b.id <> {tid}"))
        conn.execute(text("DELETE FROM kv_reference_candidate"))
        conn.execute(text("INSERT INTO kv_reference_candidate (boot_id, group_key, sort_at) "
                          "SELECT boot_id, group_key, COALESCE(started_at, '9999-12-31 23:59:59') FROM kv_cost_per_token "
                          "WHERE outcome = 'ready' AND group_key IS NOT NULL"))
        conn.execute(text(_clone_predictions(tid)))
        figures = ", ".join([
            "(k * 7919 % 900000) * 1.0", "(k * 104729 % 14000) * 1.0", "(k % 64) * 100.0", "(k % 7) * 100.0",
            "NULL", "NULL", "(k * 31 % 10000) * 1.0", "NULL", "(k * 17 % 10000) * 1.0"])
        conn.execute(text(
            "INSERT INTO runtime_sample_row (boot_id, id, kind, line, logged_at_num, logged_at_text, engine, hundredths, "
            "figure_1, figure_2, figure_3, figure_4, figure_5, figure_6, figure_7, figure_8, figure_9, "
            f"spec_per_position_acceptance) SELECT b.id, (b.id - 1) * {samples} + k, 0, 1000 + k * 4, "
            f"1767225600 + b.id * 60 + k * 10, NULL, k % 4, 1, {figures}, NULL "
            f"FROM boot b, generate_series(1, {samples}) k ORDER BY b.id, k"))
        conn.execute(text(f"INSERT INTO boot_runtime (boot_id, engine_stats, spec_decode, last_sample_id) "
                          f"SELECT id, {samples}, 0, id * {samples} FROM boot"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM ANALYZE")
    engine.dispose()


def bytes_per_million(path: Path) -> float | None:
    con = sqlite3.connect(path)
    try:
        (n,) = con.execute("SELECT count(*) FROM runtime_sample_row").fetchone()
        (size,) = con.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'runtime_sample_row'").fetchone()
    finally:
        con.close()
    return size / n * 1e6 if n else None


# runtime_sample as migration 0001 made it (the layout before 0004): a rowid table with every
# column as its text or REAL, and an index on boot_id
OLD_LAYOUT = ["CREATE TABLE runtime_sample (id INTEGER PRIMARY KEY, boot_id INTEGER NOT NULL, kind VARCHAR(16) NOT NULL, "
              "line INTEGER NOT NULL, logged_at VARCHAR(32), engine INTEGER, "
              + ", ".join(f"{c} FLOAT" for c in (
                  "prompt_throughput_tps", "generation_throughput_tps", "running_reqs", "waiting_reqs", "swapped_reqs",
                  "pending_reqs", "gpu_kv_cache_usage_pct", "cpu_kv_cache_usage_pct", "prefix_cache_hit_rate_pct",
                  "spec_mean_acceptance_length", "spec_accepted_tokens", "spec_drafted_tokens",
                  "spec_draft_acceptance_rate_pct")) + ", spec_per_position_acceptance TEXT)",
              "CREATE INDEX ix_runtime_sample_boot_id ON runtime_sample (boot_id)"]


def bytes_per_million_before(path: Path) -> float:
    """The same samples (the runtime_sample view's rows) in the old layout, per million."""
    scratch = path.with_name(path.name + ".old-layout")
    scratch.unlink(missing_ok=True)
    con = sqlite3.connect(scratch, isolation_level=None)
    try:
        for ddl in OLD_LAYOUT:
            con.execute(ddl)
        con.execute("ATTACH DATABASE ? AS src", (str(path),))
        con.execute("BEGIN")
        con.execute("INSERT INTO runtime_sample SELECT * FROM src.runtime_sample ORDER BY id")
        con.execute("COMMIT")
        (n,) = con.execute("SELECT count(*) FROM runtime_sample").fetchone()
        (size,) = con.execute("SELECT sum(pgsize) FROM dbstat WHERE name IN "
                              "('runtime_sample', 'ix_runtime_sample_boot_id')").fetchone()
    finally:
        con.close()
        scratch.unlink(missing_ok=True)
    return size / n * 1e6


def commands(n: int) -> dict[str, list[str]]:
    mid = str(max(1, n // 2))
    return {
        "show N": ["show", mid],
        "check D": ["check", "bench"],
        "diff A B": ["diff", "1", mid],
        "runtime N": ["runtime", mid],
        "history --limit 20": ["history", "--limit", "20"],
        "history (all, csv)": ["history", "--format", "csv"],
        "history (all, table)": ["history"],
        "export (all, jsonl)": ["export", "--format", "jsonl"],
    }


ALL_ROWS = ("history (all, csv)", "history (all, table)", "export (all, jsonl)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    ap.add_argument("--groups", nargs="+", default=["one", "many"])
    ap.add_argument("--samples", type=int, nargs="+", default=[100],
                    help="runtime samples per boot (one number, or one per size)")
    ap.add_argument("--many-samples", type=int, help="samples per boot of the many-group ledgers (default: --samples)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--all-rows-repeat", type=int, default=1, help="runs of history/export of everything")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    ap.add_argument("--layout-at", type=int, default=10000,
                    help="compare bytes per sample with the old layout on the ledger of this many boots")
    ap.add_argument("--postgres", metavar="URL", help="also on PostgreSQL: a server URL (its databases "
                    "ledger_bench_<n> are created and dropped)")
    ap.add_argument("--pg-sizes", type=int, nargs="+", default=[100, 10000])
    ap.add_argument("--sqlite", action=argparse.BooleanOptionalAction, default=True, help="the SQLite ledgers")
    ap.add_argument("--reuse", action="store_true", help="use a ledger already built in --out (at the head schema)")
    ap.add_argument("--all-rows", action=argparse.BooleanOptionalAction, default=True,
                    help="also time history and export of everything")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    samples = dict(zip(args.sizes, args.samples * len(args.sizes) if len(args.samples) == 1 else args.samples,
                       strict=True))
    floor = [measure([PY, "-c", "import sqlite3"], dict(os.environ)) for _ in range(args.repeat)]
    floor_wall, floor_rss = statistics.median(f[0] for f in floor), max(f[1] for f in floor)
    print(f"interpreter floor (python -c 'import sqlite3'): {floor_wall:.3f} s, {floor_rss:.1f} MB; "
          f"the machine was shared with other work while this ran")
    print("wall: the whole process; cmd: the command after its imports; ratios against the "
          f"{args.sizes[0]}-boot ledger of the same kind, run alternately")
    results: dict[tuple[str, int], dict[str, dict[str, float]]] = {}
    if args.postgres:
        from sqlalchemy.engine import make_url

        urls = {n: make_url(args.postgres).set(database=f"ledger_bench_{n}").render_as_string(hide_password=False)
                for n in args.pg_sizes}
        for n, url in urls.items():
            t = time.perf_counter()
            build_postgres(url, n, 100)
            print(f"\nPostgreSQL, one group, {n:,} boots, {n * 100:,} samples: built in {time.perf_counter() - t:.1f} s",
                  flush=True)
            for name, cargs in commands(n).items():
                if name in ALL_ROWS and n != args.pg_sizes[-1]:
                    continue
                if name in ALL_ROWS:
                    runs = [measure([*LEDGER, *cargs], {**os.environ, "LEDGER_DB": url})]
                    x = {"wall": runs[0][0], "rss": runs[0][1], "inner": runs[0][2], "ratio": float("nan")}
                else:
                    x = _paired(urls[args.pg_sizes[0]], url, commands(args.pg_sizes[0])[name], cargs, args.repeat)
                ratio = "" if x["ratio"] != x["ratio"] else f"  x{x['ratio']:.2f} (cmd x{x['inner_ratio']:.2f})"
                print(f"  {name:<22} wall {x['wall']:6.2f} s  cmd {x['inner']:6.3f} s  RSS {x['rss']:6.1f} MB{ratio}",
                      flush=True)
    for groups in args.groups if args.sqlite else []:
        ref = out / f"ledger-{groups}-{args.sizes[0]}.db"
        for n in args.sizes:
            path = out / f"ledger-{groups}-{n}.db"
            per_boot = args.many_samples if groups == "many" and args.many_samples else samples[n]
            t = time.perf_counter()
            if not (args.reuse and path.exists()):
                build(path, n, groups, per_boot)
            built = time.perf_counter() - t
            size = path.stat().st_size / 1e6
            con = sqlite3.connect(path)
            (stored,) = con.execute("SELECT sum(engine_stats + spec_decode) FROM boot_runtime").fetchone()
            con.close()
            print(f"\n{groups} group{'s' if groups == 'many' else ''}, {n:,} boots, {stored:,} samples: "
                  f"built in {built:.1f} s, {size:,.0f} MB, {bytes_per_million(path) / 1e6:.1f} MB per million samples",
                  flush=True)
            if n == args.layout_at and groups == args.groups[0]:
                print(f"  the same samples in the layout before 0004: {bytes_per_million_before(path) / 1e6:.1f} MB "
                      f"per million", flush=True)
            r = {}
            for name, cargs in commands(n).items():
                ref_args = commands(args.sizes[0])[name]
                if name in ALL_ROWS and not args.all_rows:
                    continue
                if name in ALL_ROWS:
                    runs = [measure([*LEDGER, *cargs], {**os.environ, "LEDGER_DB": str(path)})
                            for _ in range(args.all_rows_repeat)]
                    r[name] = {"wall": statistics.median(x[0] for x in runs), "rss": max(x[1] for x in runs),
                               "inner": statistics.median(x[2] for x in runs), "ratio": float("nan"),
                               "inner_ratio": float("nan")}
                else:
                    # the reference ledger runs the same command (on its own middle boot) alternately
                    r[name] = _paired(str(ref), str(path), ref_args, cargs, args.repeat)
                x = r[name]
                ratio = "" if x["ratio"] != x["ratio"] else f"  x{x['ratio']:.2f} (cmd x{x['inner_ratio']:.2f})"
                print(f"  {name:<22} wall {x['wall']:6.2f} s (floor +{x['wall'] - floor_wall:5.2f})  cmd "
                      f"{x['inner']:6.3f} s  RSS {x['rss']:6.1f} MB (floor +{x['rss'] - floor_rss:5.1f}){ratio}",
                      flush=True)
            results[(groups, n)] = r
        if 10000 in args.sizes and 100000 in args.sizes:
            print(f"\ngrowth 10k -> 100k boots ({groups} group{'s' if groups == 'many' else ''}):")
            for name in [k for k in results[(groups, 100000)] if k in results[(groups, 10000)]]:
                a, b = results[(groups, 10000)][name], results[(groups, 100000)][name]
                if a["ratio"] == a["ratio"]:  # each against the reference run beside it: load cancels out
                    print(f"  {name:<22} wall x{b['ratio'] / a['ratio']:.2f}  cmd x{b['inner_ratio'] / a['inner_ratio']:.2f}"
                          f"  RSS x{b['rss'] / a['rss']:.2f}")
                else:
                    print(f"  {name:<22} wall x{b['wall'] / a['wall']:.2f} (runs minutes apart)  "
                          f"RSS x{b['rss'] / a['rss']:.2f}")


def _paired(ref_db: str, db: str, ref_args: list[str], args: list[str], repeat: int) -> dict[str, float]:
    """The command on the reference ledger and on ``db``, alternately: the machine is shared, and a
    ratio of runs side by side is steadier than two medians taken minutes apart."""
    ref_env, env = {**os.environ, "LEDGER_DB": ref_db}, {**os.environ, "LEDGER_DB": db}
    ref_runs, runs = [], []
    for _ in range(repeat):
        ref_runs.append(measure([*LEDGER, *ref_args], ref_env))
        runs.append(measure([*LEDGER, *args], env))
    return {
        "wall": statistics.median(r[0] for r in runs),
        "rss": max(r[1] for r in runs),
        "inner": statistics.median(r[2] for r in runs),
        "ratio": statistics.median(r[0] / q[0] for r, q in zip(runs, ref_runs, strict=True)),
        "inner_ratio": statistics.median(r[2] / q[2] for r, q in zip(runs, ref_runs, strict=True)),
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inner"]:
        inner_main(sys.argv[2:])
    else:
        main()
