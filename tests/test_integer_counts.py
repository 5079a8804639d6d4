"""Counts come back from the views as integers (migration 0010, issue 23): read through plain
``sqlite3`` — as Datasette, sqlite-utils and pandas read the file — a view's token counts, byte
figures, sequences and requests are ``int``, its ratios, errors and B/token numbers, and no value
differs from what the views returned before the migration but by its type (and two estimates
rounded to the whole token and byte).

The ledger holds every real fixture, the reconcile and radiance boots (labelled, the radiance
ones with their pack), the model configs that give the KV formula a prediction, and a deploy's
ceilings: every count column of every view holds a value somewhere in it."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from conftest import REAL, ROOT, module_ledger
from dbutil import query

from ledger.cli import main

RECONCILE, RADIANCE, MODELS = ROOT / "fixtures" / "reconcile", ROOT / "fixtures" / "radiance", ROOT / "fixtures" / "models"

# per view: the columns integral by nature (ids, counts of tokens, blocks, bytes, sequences,
# requests; their sums and differences), and the figures that are not (ratios, errors,
# tolerances, B/token, concurrency, percentages, throughputs, printed precisions)
COUNTS = {
    "boot_figures": {"boot_id", "deploy_id", "tensor_parallel_size", "block_size", "max_num_seqs", "max_model_len",
                     "kv_cache_memory_bytes", "kv_cache_tokens", "kv_cache_reserved_bytes", "available_kv_cache_bytes",
                     "model_weights_bytes", "weights_slab_bytes", "card_ceiling_bytes", "pinned_ledger_bytes",
                     "pinned_host_pool_bytes", "prefix_host_tier_bytes", "pinned_cap_bytes"},
    "kv_cost_per_token": {"boot_id", "deploy_id", "tensor_parallel_size", "block_size", "kv_budget_bytes",
                          "kv_cache_tokens"},
    "kv_reference": {"boot_id", "ref_boot_id"},
    "kv_reconciliation": {"boot_id", "deploy_id", "ref_boot_id", "kv_budget_bytes", "measured_tokens",
                          "predicted_tokens"},
    "capacity_contract": {"boot_id", "deploy_id", "kv_cache_tokens", "max_num_seqs", "max_model_len",
                          "contract_tokens", "margin_tokens", "margin_bytes"},
    "budget_ceilings": {"boot_id", "deploy_id", "kv_pool_bytes", "weights_bytes", "vram_bytes", "card_ceiling_bytes",
                        "host_pinned_bytes", "host_cap_bytes", "vram_margin_bytes", "host_margin_bytes"},
    "runtime_sample": {"id", "boot_id", "line", "engine", "running_reqs", "waiting_reqs", "swapped_reqs",
                       "pending_reqs", "spec_accepted_tokens", "spec_drafted_tokens"},
    "kv_formula": {"boot_id", "deploy_id", "budget_bytes", "tensor_parallel_size", "pipeline_parallel_size",
                   "block_size", "max_model_len", "predicted_blocks", "predicted_tokens", "predicted_tokens_low",
                   "predicted_tokens_high", "measured_tokens"},
}
# kv_argument_ignored (0011): 1 where a printed pool contradicts --kv-cache-memory-bytes
COUNTS["boot_kv"] = COUNTS["boot_figures"] | {"kv_budget_bytes", "kv_argument_ignored"}
# columns added by later revisions, absent at 0009
ADDED = {("boot_kv", "kv_argument_ignored")}
REALS = {
    "boot_figures": {"kv_cache_reserved_precision", "available_kv_cache_precision"},
    "kv_cost_per_token": {"kv_budget_precision_bytes", "bytes_per_token", "bytes_per_token_uncertainty"},
    "kv_reference": set(),
    "kv_reconciliation": {"ref_bytes_per_token", "relative_error", "tolerance"},
    "capacity_contract": set(),
    "budget_ceilings": set(),
    "runtime_sample": {"prompt_throughput_tps", "generation_throughput_tps", "gpu_kv_cache_usage_pct",
                       "cpu_kv_cache_usage_pct", "prefix_cache_hit_rate_pct", "spec_mean_acceptance_length",
                       "spec_draft_acceptance_rate_pct"},
    "kv_formula": {"budget_precision_bytes", "predicted_concurrency", "measured_concurrency", "relative_error",
                   "tolerance"},
}
REALS["boot_kv"] = REALS["boot_figures"] | {"kv_budget_precision_bytes"}
# words, times and the one flag (kv_formula.v0: a boolean on PostgreSQL)
TEXT = {
    "boot_figures": {"outcome", "started_at", "engine_version", "model", "kv_cache_dtype"},
    "kv_cost_per_token": {"group_key", "model", "kv_cache_dtype", "engine_version", "outcome", "started_at",
                          "kv_budget_source", "uncertainty_from"},
    "kv_reference": {"ref_chosen_by"},
    "kv_reconciliation": {"group_key", "ref_chosen_by", "kv_budget_source", "tolerance_note", "verdict"},
    "capacity_contract": {"verdict"},
    "budget_ceilings": {"weights_source", "card_ceiling_source", "vram_verdict", "host_verdict"},
    "runtime_sample": {"kind", "logged_at", "spec_per_position_acceptance"},
    "kv_formula": {"model", "geometry", "budget_source", "kv_cache_dtype", "engine_version", "v0", "tolerance_note",
                   "verdict", "reason", "assumed"},
}
TEXT["boot_kv"] = TEXT["boot_figures"] | {"kv_budget_source", "group_key"}
VIEWS = sorted(COUNTS)
# the two estimates through a cost per token, rounded to a whole token / byte by 0010
ROUNDED = {("kv_reconciliation", "predicted_tokens"), ("capacity_contract", "margin_bytes")}
# no fixture prints a block size beside a KV budget: kv_cost_per_token passes boot_kv's column
# through (checked there)
UNFILLED = {("kv_cost_per_token", "block_size")}
# the order a view's rows are compared in
KEY = {"runtime_sample": "id"}


def _build(db: str, hf_cache: str) -> None:
    runner = CliRunner(env={"LEDGER_DB": db, "HF_HUB_CACHE": hf_cache, "HF_HOME": None})

    def run(*args: str) -> None:
        r = runner.invoke(main, list(args), catch_exceptions=False)
        assert r.exit_code == 0, (args, r.output)

    for log in sorted(REAL.glob("*.log")):  # a deploy each: fixture 209's model is named by its deploy
        run("ingest", str(log), "--label", "fx-" + log.name.split("_")[0])
    for log in sorted(RECONCILE.glob("*.log")):
        run("ingest", str(log), "--label", log.stem)
    for log in sorted(RADIANCE.glob("*.log")):
        run("ingest", str(log), "--grammar", "radiance", "--label", "radiance-" + log.stem)
    run("deploy", "set", "fx-209", "model=zai-org/GLM-4.1V-9B-Thinking")
    run("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", "zai-org/GLM-4.1V-9B-Thinking")
    run("model", "add", str(MODELS / "qwen3.6-35b-a3b"), "--as", "/models/Qwen3.6-35B-A3B")
    run("deploy", "set", "fp8-4x262144-ready", "card_ceiling_bytes=29120MiB", "host_cap_bytes=200GiB")


@pytest.fixture(scope="module")
def ledger_db(tmp_path_factory):
    hf_cache = str(tmp_path_factory.mktemp("counts-hf") / "empty-hf-hub")
    with module_ledger("counts", lambda db: _build(db, hf_cache), tmp_path_factory) as db:
        yield db


def read(db: str, view: str) -> tuple[list[str], list[tuple]]:
    """A view's columns and rows, in a fixed order."""
    return query(db, f"SELECT * FROM {view} ORDER BY {KEY.get(view, 'boot_id')}")


def _values(db: str, view: str, names: set[str]) -> dict[str, list]:
    columns, rows = read(db, view)
    return {c: [r[i] for r in rows if r[i] is not None] for i, c in enumerate(columns) if c in names}


def test_the_ledger_has_every_view_and_each_column_is_classed_here(ledger_db):
    for view in VIEWS:
        columns, _ = read(ledger_db, view)
        assert set(columns) == COUNTS[view] | REALS[view] | TEXT[view], view
        assert not (COUNTS[view] & REALS[view]), view


@pytest.mark.parametrize("view", VIEWS)
def test_every_count_of_a_view_holds_a_value_in_the_fixture_ledger(ledger_db, view):
    """Else the next test would check nothing for that column."""
    empty = {c for c, values in _values(ledger_db, view, COUNTS[view]).items() if not values}
    assert empty == {c for v, c in UNFILLED if v == view}


@pytest.mark.parametrize("view", VIEWS)
def test_a_views_counts_are_integers(ledger_db, view):
    floats = {c: values[0] for c, values in _values(ledger_db, view, COUNTS[view]).items()
              if any(type(v) is not int for v in values)}
    assert floats == {}


@pytest.mark.parametrize("view", VIEWS)
def test_a_views_ratios_and_errors_are_numbers(ledger_db, view):
    for column, values in _values(ledger_db, view, REALS[view]).items():
        assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values), column


@pytest.mark.parametrize("view", VIEWS)
def test_the_counts_are_the_numbers_the_views_gave_before_the_migration(ledger_db, tmp_path, view):
    """The same ledger taken back to 0009: every value equal as a number (a count was a whole
    REAL), the two estimates the nearest whole token and byte of the quotient."""
    if "://" in ledger_db:
        pytest.skip("compares a copy of the SQLite file")
    from alembic import command
    from sqlalchemy import create_engine

    from ledger.db.migrate import alembic_config

    old = tmp_path / "at-0009.db"
    shutil.copy(ledger_db, old)
    engine = create_engine(f"sqlite:///{old}")
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0009_kv_formula")
    engine.dispose()
    columns, now = read(ledger_db, view)
    keep = [i for i, c in enumerate(columns) if (view, c) not in ADDED]
    columns, now = [columns[i] for i in keep], [tuple(r[i] for i in keep) for r in now]
    before_columns, before = read(str(old), view)
    assert before_columns == columns and len(before) == len(now)
    for row_now, row_before in zip(now, before, strict=True):
        for column, a, b in zip(columns, row_now, row_before, strict=True):
            if (view, column) in ROUNDED and b is not None:
                assert abs(a - b) <= 0.5, (column, a, b)
            else:
                assert a == b, (column, a, b)
