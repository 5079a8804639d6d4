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
