"""Every whole log recorded from the real vLLM (``fixtures/live/vllm-*/``, made by ``python -m lab
record``) reads as the lab made it: one boot per start of the server, at the lines where each
start began; each boot's outcome and how it ended (a requested stop is no crash); and the
figures the log's text prints — KV tokens, the printed pool, the concurrency, the window — and
its stats and spec-decode lines, as the lab's own patterns found them (``NAME.expected.json``,
written from the text, not from ``ledger``)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from conftest import ROOT

from ledger import parsers

LIVE = ROOT / "fixtures" / "live"
LOGS = sorted(LIVE.glob("vllm-*/*.log"))


def test_the_lab_recorded_every_scenario():
    """The set ``python -m lab record`` makes: each scenario's log and its expectations."""
    from lab.scenarios import SCENARIOS

    for version in sorted(p for p in LIVE.glob("vllm-*") if p.is_dir()):
        assert sorted(p.stem for p in version.glob("*.log")) == sorted(s.name for s in SCENARIOS), version
        assert all(p.with_suffix(".expected.json").exists() for p in version.glob("*.log"))
    assert len(LOGS) >= 17


@functools.cache
def _case(log: Path) -> tuple[dict, list[parsers.Boot]]:
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    return expected, parsers.parse_source(parsers.Source(str(log)), default_year=2026).boots


@pytest.fixture(params=LOGS, ids=lambda p: p.stem)
def case(request):
    return _case(request.param)


def _figure(boot: parsers.Boot, name: str) -> float | int | None:
    fact = boot.summary(name)
    return None if fact is None else fact.value


def test_one_boot_per_start_at_its_lines(case):
    expected, boots = case
    assert [[b.first_line, b.last_line] for b in boots] == [s["lines"] for s in expected["starts"]]


def test_outcome_and_how_each_start_ended(case):
    expected, boots = case
    assert [(b.outcome, b.ended) for b in boots] == [(s["outcome"], s["ended"]) for s in expected["starts"]]


def test_the_failures_the_lab_caused(case):
    expected, boots = case
    for start, boot in zip(expected["starts"], boots, strict=True):
        kinds = {f.kind for f in boot.failures}
        assert set(start["failures"]) <= kinds, (start["note"], kinds)
        if start["outcome"] == "ready":
            assert boot.failures == [], start["note"]
        else:
            assert boot.failures, start["note"]


def test_kv_tokens_pool_and_concurrency_as_printed(case):
    expected, boots = case
    for start, boot in zip(expected["starts"], boots, strict=True):
        p = start["printed"]
        assert _figure(boot, "kv_cache_tokens") == p["kv_cache_tokens"]
        assert _figure(boot, "available_kv_cache_bytes") == p["kv_pool_bytes"]
        assert _figure(boot, "max_concurrency") == p["max_concurrency"]
        assert boot.engine_version == p["engine_version"]


def test_the_contract_inputs_of_that_start(case):
    """max_num_seqs and max_model_len of the start itself (its own API server's arguments)."""
    expected, boots = case
    for start, boot in zip(expected["starts"], boots, strict=True):
        args = dict(zip(start["args"][::2], start["args"][1::2], strict=False))
        shape = {k: v.value for k, v in boot.shape.items()}
        if "--max-num-seqs" in args:
            assert shape.get("max_num_seqs") == int(args["--max-num-seqs"])
        if "--max-model-len" in args:
            assert shape.get("max_model_len") == int(args["--max-model-len"])
        if start["printed"]["max_model_len"] is not None:
            assert _figure(boot, "max_model_len") == start["printed"]["max_model_len"]


def test_runtime_series_as_printed(case):
    """Each stats line a sample, with the engine's own KV usage (``CPU KV cache usage`` is the
    CPU engine's, not V0's swap); each SpecDecoding line a sample."""
    expected, boots = case
    for start, boot in zip(expected["starts"], boots, strict=True):
        p = start["printed"]
        stats = [s for s in boot.runtime if s.kind == "engine_stats"]
        assert len(stats) == p["engine_stats_lines"]
        assert sum(1 for s in boot.runtime if s.kind == "spec_decode") == p["spec_decode_lines"]
        usage = [s.values.get("gpu_kv_cache_usage_pct") for s in stats]
        assert None not in usage
        assert all(s.values.get("cpu_kv_cache_usage_pct") is None for s in stats)
        assert (max(usage) if usage else None) == p["kv_usage_max_pct"]


# -- the recorded boots in a ledger: the printed pool is the budget, the formula from the config ---

MODELS = ROOT / "fixtures" / "models"


def _ledger(db: str) -> None:
    from conftest import ledger_on

    for log in LOGS:
        ledger_on(db, "ingest", "--label", log.stem, str(log))
    for geometry in ("tiny", "wide", "gqa"):  # the boots of each model are predicted again
        ledger_on(db, "model", "add", str(MODELS / f"lab-{geometry}" / "config.json"), "--as", f"/models/{geometry}")


@pytest.fixture
def recorded(filled):
    """Every recorded log in one ledger, each its own deploy, with the lab models' geometries."""
    return filled("live-recorded", _ledger)


def _up(db: str) -> list[dict]:
    from dbutil import dict_rows

    return dict_rows(db, "SELECT d.label, b.id AS boot_id, b.outcome, f.verdict, f.predicted_tokens, "
                         "f.measured_tokens, f.reason FROM boot b JOIN deploy d ON d.id = b.deploy_id "
                         "JOIN kv_formula f ON f.boot_id = b.id WHERE b.outcome IN ('ready', 'crashed') "
                         "ORDER BY b.id")


def test_kv_formula_is_ok_with_the_printed_tokens_on_every_recorded_boot_that_came_up(recorded):
    rows = _up(recorded)
    assert len(rows) >= 20
    assert [r for r in rows if r["verdict"] != "ok"] == []
    assert all(r["predicted_tokens"] == r["measured_tokens"] for r in rows)


def test_the_cost_of_a_token_comes_from_the_printed_pool(recorded):
    from dbutil import dict_rows

    cost = {r["label"]: r["bytes_per_token"] for r in dict_rows(
        recorded, "SELECT d.label, k.bytes_per_token FROM kv_cost_per_token k JOIN deploy d ON d.id = k.deploy_id "
                  "WHERE d.label IN ('bf16-kv', 'fp8-kv', 'ignored-argument', 'wide-model', 'gqa-model')")}
    assert cost == {"bf16-kv": 512, "fp8-kv": 256, "ignored-argument": 512, "wide-model": 16384, "gqa-model": 2048}


def test_an_argument_the_engine_ignored_is_said_and_never_the_budget(recorded):
    from dbutil import dict_rows

    (row,) = dict_rows(recorded, "SELECT k.kv_cache_memory_bytes, k.kv_budget_bytes, k.kv_budget_source, "
                                 "k.kv_argument_ignored FROM boot_kv k JOIN deploy d ON d.id = k.deploy_id "
                                 "WHERE d.label = 'ignored-argument'")
    assert row == {"kv_cache_memory_bytes": 268435456, "kv_budget_bytes": 2**30,
                   "kv_budget_source": "available_kv_cache_bytes", "kv_argument_ignored": 1}


def test_note_says_the_argument_was_not_used(recorded, cli):
    out = cli("--db", recorded, "note", "ignored-argument", "--against", "bf16-kv").output
    assert "--kv-cache-memory-bytes 268,435,456 was asked and not used" in out
    assert "512.00 B/token" in out and "128.00 B/token" not in out
