"""A ledger of years (issue 17): the views return what their first definitions (migration 0002)
return, on every fixture, on SQLite and PostgreSQL; one boot's reads are index lookups; the
runtime samples come back from their compact table as the parser read them."""

from __future__ import annotations

import importlib.util
import re

import pytest
from conftest import REAL, ROOT, SYNTH
from dbutil import _engine, sqlite_only
from sqlalchemy import text

VIEWS = ["boot_figures", "boot_kv", "kv_cost_per_token", "kv_reference", "kv_reconciliation",
         "capacity_contract", "budget_ceilings"]


def _first_definitions() -> list[tuple[str, str]]:
    """The views as migration 0002 created them, renamed old_<view> and made temporary."""
    spec = importlib.util.spec_from_file_location("m0002", ROOT / "ledger" / "migrations" / "versions" / "0002_reconciliation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = []
    for name, ddl in module.VIEWS:
        for view in VIEWS:
            ddl = re.sub(rf"\b{view}\b", f"old_{view}", ddl)
        out.append((name, ddl.replace("CREATE VIEW", "CREATE TEMP VIEW")))
    return out


def _every_fixture(db: str) -> None:
    from click.testing import CliRunner

    from ledger.cli import main

    logs = [str(p) for p in sorted(REAL.glob("*.log"))] + [str(p) for p in sorted(SYNTH.glob("*.log"))]
    CliRunner().invoke(main, ["--db", db, "ingest", "--year", "2026", "--label", "fixtures", *logs])


@pytest.fixture
def every_fixture(filled):
    return filled("every-fixture", _every_fixture)


def _as_0007(view: str, row: dict) -> dict:
    """A first-definition row as 0007_reference_verdict words it: the reference boot itself is
    ``reference`` (its ``ok`` was true by construction); nothing else changed."""
    if view == "kv_reconciliation" and row["verdict"] != "insufficient" and row["ref_boot_id"] == row["boot_id"]:
        row["verdict"] = "reference"
    return _as_0010(view, row)


def _as_0010(view: str, row: dict) -> dict:
    """... and as 0010_integer_counts gives its two estimates: to the nearest whole token and
    byte (every other count was a whole REAL, and compares equal as an integer)."""
    import math

    key = {"kv_reconciliation": "predicted_tokens", "capacity_contract": "margin_bytes"}.get(view)
    if key and row[key] is not None:
        row[key] = int(math.copysign(math.floor(abs(row[key]) + 0.5), row[key]))
    return row


def _compare(db: str) -> None:
    with _engine(db).connect() as conn:
        for _, ddl in _first_definitions():
            conn.execute(text(ddl))
        for view in VIEWS:
            rows = [r._mapping for r in conn.execute(text(f"SELECT * FROM {view} ORDER BY boot_id"))]
            # a column a later revision added (0011's kv_argument_ignored): none of these fixtures
            # prints a pool that contradicts its argument, so the budgets are the first definition's
            assert all(r.get("kv_argument_ignored", 0) == 0 for r in rows), view
            now = [tuple(v for k, v in r.items() if k != "kv_argument_ignored") for r in rows]
            before = [tuple(_as_0007(view, dict(r._mapping)).values())
                      for r in conn.execute(text(f"SELECT * FROM old_{view} ORDER BY boot_id"))]
            assert now == before, view
        conn.rollback()


def test_the_views_return_what_their_first_definitions_return_on_every_fixture(every_fixture):
    with _engine(every_fixture).connect() as conn:
        refs = conn.execute(text("SELECT count(*) FROM kv_reference WHERE ref_boot_id IS NOT NULL")).scalar()
    assert refs > 0  # the fixtures have groups with a reference: the comparison is not of NULLs
    _compare(every_fixture)


def test_a_pinned_reference_is_the_reference_as_before(every_fixture, cli):
    with _engine(every_fixture).connect() as conn:
        last = conn.execute(text("SELECT max(boot_id) FROM kv_cost_per_token")).scalar()
    r = cli("deploy", "set", "fixtures", f"kv_reference_boot={last}")
    assert r.exit_code == 0, r.output
    _compare(every_fixture)


def test_removing_a_groups_reference_makes_the_next_earliest_the_reference(every_fixture):
    with _engine(every_fixture).begin() as conn:
        ref = conn.execute(text("SELECT ref_boot_id FROM kv_reference WHERE ref_chosen_by LIKE 'earliest%' "
                                "ORDER BY boot_id")).scalar()
        for table in ("fact", "shape", "failure", "runtime_sample_row", "boot_runtime", "kv_reference_candidate"):
            conn.execute(text(f"DELETE FROM {table} WHERE boot_id = {ref}"))
        conn.execute(text(f"DELETE FROM boot WHERE id = {ref}"))
    _compare(every_fixture)


@sqlite_only
@pytest.mark.parametrize("view", VIEWS)
def test_one_boots_row_of_a_view_is_found_by_index_lookups(every_fixture, view):
    import sqlite3

    con = sqlite3.connect(every_fixture)
    plan = [row[3] for row in con.execute(f"EXPLAIN QUERY PLAN SELECT * FROM {view} WHERE boot_id = 3")]
    con.close()
    # a co-routine is a subquery the filter was pushed into: scanning it reads that boot's row
    coroutines = {step.split()[1] for step in plan if step.startswith("CO-ROUTINE")}
    scans = [step for step in plan if step.startswith(("SCAN", "MATERIALIZE", "USE TEMP B-TREE FOR ORDER"))
             and not (step.startswith("SCAN") and step.split()[1] in coroutines)]
    assert plan and not scans, plan


@sqlite_only
def test_one_boots_samples_are_a_range_of_the_table(every_fixture):
    import sqlite3

    con = sqlite3.connect(every_fixture)
    plan = [row[3] for row in con.execute("EXPLAIN QUERY PLAN SELECT * FROM runtime_sample WHERE boot_id = 3")]
    con.close()
    assert plan == ["SEARCH r USING PRIMARY KEY (boot_id=?)"]


def test_a_sample_whose_figures_are_not_whole_hundredths_is_stored_as_it_is(db, cli, tmp_path):
    """A figure printed with more decimals than hundredths (or a time that is no real date)
    comes back exactly: the row keeps the numbers as they are."""
    log = tmp_path / "odd.log"
    base = (REAL / "008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log").read_text()
    line = next(x for x in base.splitlines() if "Avg prompt throughput" in x)
    odd = re.sub(r"Avg prompt throughput: [0-9.]+", "Avg prompt throughput: 1234.567", line)
    odd = re.sub(r"\d\d-\d\d (\d\d:\d\d:\d\d)", r"02-30 \1", odd, count=1)
    log.write_text(base.replace(line, odd, 1))
    assert cli("ingest", "--year", "2026", str(log)).exit_code == 0
    with _engine(db).connect() as conn:
        got = conn.execute(text("SELECT prompt_throughput_tps, logged_at FROM runtime_sample "
                                "WHERE prompt_throughput_tps = 1234.567")).all()
        stored = conn.execute(text("SELECT hundredths, logged_at_text FROM runtime_sample_row "
                                   "WHERE figure_1 = 1234.567")).all()
    when = "2026-02-30 " + re.search(r"02-30 (\d\d:\d\d:\d\d)", odd).group(1)
    assert got == [(1234.567, when)]
    assert stored == [(0, when)]


def test_history_as_a_streamed_table_is_the_table_it_was(every_fixture, cli, monkeypatch):
    """``ledger history`` prints its table in two passes over the rows (widths, then chunks of
    lines) as they are read: the same table the layout of the whole list gives (``tabulate``
    over every row at once, fitted to the width), however the rows fall into chunks."""
    import ledger.render.formats
    from ledger.db.connect import connect
    from ledger.queries import HISTORY_COMPACT, history
    from ledger.render.formats import render
    from ledger.render.history import FLEXIBLE, HISTORY_HEADERS, humanize_history
    from ledger.render.legend import Legend

    monkeypatch.setenv("COLUMNS", "80")
    ledger_ = connect(every_fixture, mode="read")
    try:
        rows = history(ledger_)
    finally:
        ledger_.dispose()
    table = render([humanize_history(r) for r in rows], HISTORY_COMPACT, "table",
                   align_right=("kv_tokens", "concurrency", "kv_memory", "weights"), width=80,
                   flexible=FLEXIBLE, headers=HISTORY_HEADERS)
    legend = Legend(humanize_history)
    for r in rows:
        legend(r)
    assert len(rows) > 40
    for chunk in (ledger.render.formats.STREAM_CHUNK, 7, 1):
        monkeypatch.setattr(ledger.render.formats, "STREAM_CHUNK", chunk)
        assert cli("history").output == table + "\n" + legend.text(80) + "\n"  # the marks' legend under it


def test_history_streamed_as_json_is_the_list_it_was(every_fixture, cli):
    """``history --format json`` prints its rows as they are read, in the very layout
    ``json_text`` gives the whole list (no comma left on a line of its own)."""
    from ledger.db.connect import connect
    from ledger.queries import history
    from ledger.render import json_text

    ledger = connect(every_fixture, mode="read")
    try:
        rows = history(ledger)
    finally:
        ledger.dispose()
    assert len(rows) > 1
    assert cli("history", "--format", "json").output == json_text(rows) + "\n"


def test_no_boots_as_json_is_an_empty_array(db, cli):
    cli("db", "upgrade")
    assert cli("history", "--format", "json").output == "[]\n"
    assert cli("export").output == "[]\n"


def test_export_streamed_as_csv_is_the_table_it_was(every_fixture, cli):
    from ledger.db.connect import connect
    from ledger.queries import export
    from ledger.render.formats import render

    ledger = connect(every_fixture, mode="read")
    try:
        objs = export(ledger)
    finally:
        ledger.dispose()
    cols = ["boot", "outcome", "commit", "image_digest", "label", "engine_version", "name", "value",
            "unit", "precision", "rank", "process", "pack", "line", "text"]
    rows = [{"boot": o["boot"], "outcome": o["outcome"], "commit": o["deploy"]["commit"],
             "image_digest": o["deploy"]["image_digest"], "label": o["deploy"]["label"],
             "engine_version": o["engine"]["version"], **f} for o in objs for f in o["facts"]]
    assert len(rows) > 100
    assert cli("export", "--format", "csv", "--no-redact").output == render(rows, cols, "csv") + "\n"


@sqlite_only
def test_history_limit_and_a_deploys_latest_boot_walk_an_index(every_fixture):
    """``history --limit K`` and a deploy's latest boot read the boots in order from an index
    (no sort of every boot): the plans of the statements they run."""
    from ledger.db.connect import connect
    from ledger.queries import history, latest_boot

    ledger = connect(every_fixture, mode="read")
    statements: list[str] = []
    try:
        with ledger.reading() as r:  # the read commands' sqlite3 connection: its statements, values bound
            r.conn.set_trace_callback(statements.append)
            rows = history(ledger, limit=20)
            newest = latest_boot(r, 1)
            r.conn.set_trace_callback(None)
            plans = [r.tuples("EXPLAIN QUERY PLAN " + sql) for sql in statements
                     if sql.lstrip().startswith("SELECT") and "FROM boot" in sql and "ORDER BY" in sql]
    finally:
        ledger.dispose()
    assert len(rows) == 20 and newest is not None
    assert len(plans) >= 2  # history (its 20 boots all have a start time) and the latest boot
    for plan in plans:
        steps = [row[3] for row in plan]
        assert not [s for s in steps if s.startswith(("SCAN boot", "USE TEMP B-TREE"))], steps


@pytest.mark.parametrize("figures", [
    (12.3, 0.0, 4, 0, 87.5, 99.9), (None, 1234.567, 3), (0.1 + 0.2, 1.0), (1e-3,), (10**17, -2.25),
    (float("inf"), 1.0), (float("nan"),), (None, None), (7,),
])
def test_a_spooled_row_is_stored_in_hundredths_exactly_when_every_figure_is(figures):
    """The spool's row holds a sample's figures as hundredths exactly when in_hundredths holds
    for each of them (the definition, figure by figure), else the figures as they are."""
    from ledger.db.staging import STORED_FIGURES, in_hundredths, stamp_code, stored_row
    from ledger.parsers.rules import RuntimeSample

    row = stored_row(RuntimeSample("engine_stats", 17, "10-01 09:00:10", 0, figures))
    stamp = stamp_code("10-01 09:00:10")
    unprinted = (None,) * (len(STORED_FIGURES) - len(figures) + 1)  # the figure columns past them, the per-position list
    if all(v is None or in_hundredths(v) for v in figures):
        assert row == (0, 17, stamp, 0, 1, *(None if v is None else float(round(v * 100)) for v in figures), *unprinted)
    else:
        assert row[:5] == (0, 17, stamp, 0, 0)
        assert [repr(v) for v in row[5:]] == [repr(v) for v in (*figures, *unprinted)]


@pytest.mark.parametrize("hold, reads", [(3, 1), (2, 3)], ids=["held: read once", "more than held: read each time"])
def test_a_replay_reads_its_source_once_when_it_holds_every_row(hold, reads):
    from ledger.queries import Replay

    calls = []

    def source():
        calls.append(1)
        return iter([1, 2, 3])

    rows = Replay(source, hold=hold)
    assert rows.any()
    assert [list(rows()) for _ in range(3)] == [[1, 2, 3]] * 3
    assert len(calls) == reads  # more rows than held: any()'s reading went on as the first list


def test_a_replay_of_no_rows_has_none_to_give():
    from ledger.queries import Replay

    rows = Replay(lambda: iter([]))
    assert not rows.any()
    assert list(rows()) == []


@pytest.mark.parametrize("hold", [1000, 10])
def test_history_reads_its_rows_once_when_they_are_few_and_prints_the_same_table(every_fixture, cli,
                                                                                  monkeypatch, hold):
    """A history table reads its rows twice (whether there is one and the widths, then the
    lines): from the ledger once when they are within ``REPLAY_HOLD``, else twice; the same
    table."""
    import ledger.queries

    readings = []
    iter_history = ledger.queries.iter_history

    def counted(*args, **kwargs):
        readings.append(1)
        return iter_history(*args, **kwargs)

    monkeypatch.setenv("COLUMNS", "80")
    before = cli("history").output
    monkeypatch.setattr(ledger.queries, "iter_history", counted)
    monkeypatch.setattr(ledger.queries, "REPLAY_HOLD", hold)
    assert cli("history").output == before
    assert len(readings) == (1 if hold == 1000 else 2)  # 90 fixture boots
