"""Every way of finding the interesting lines gives identical boots: Hyperscan or the
pure-Python scanner, counts from grep or from Python, small or large blocks — and all of them
the same as reading every line through every rule."""

from __future__ import annotations

import pytest

import parsers
from conftest import ROOT
from parsers.rules import RuleSet
from parsers.scan import available_engines
from parsers.vllm import BUILTIN_RULES
from reference import reference_boots

FIXTURES = sorted((ROOT / "fixtures").glob("*/*.log"))


def summary(boots: list[parsers.Boot]) -> list[dict]:
    return [{
        "lines": (b.first_line, b.last_line), "outcome": b.outcome, "engine": (b.engine_version, b.engine_commit),
        "facts": [(f.name, f.value, f.line, f.rank, f.text) for f in b.facts],
        "failures": [(f.kind, f.phase, f.line, f.figures, f.text) for f in b.failures],
        "shape": {k: (v.value, v.source, v.line) for k, v in b.shape.items()},
        "runtime": [(s.kind, s.line, s.engine, s.values, s.timestamp) for s in b.runtime],
        "counts": (b.access_lines, b.request_lines), "digest": b.content_sha256,
        "times": (b.started_at, b.ready_at, b.ended_at),
    } for b in boots]


@pytest.fixture(autouse=True)
def grep_even_for_small_files(monkeypatch):
    """The fixtures are small; let grep count them too, so both counters are compared."""
    monkeypatch.setattr(parsers, "GREP_MIN_BYTES", 0)


@pytest.fixture(scope="module")
def rulesets():
    return {engine: RuleSet(BUILTIN_RULES, engine=engine) for engine in available_engines()}


def test_both_engines_are_installed_for_the_tests():
    assert set(available_engines()) == {"hyperscan", "python"}


@pytest.mark.parametrize("log", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name[:28]}")
def test_every_path_gives_the_reference_result(log, rulesets):
    try:
        expected = summary(reference_boots(log, rulesets["python"], 2026))
    except parsers.SourceError:
        pytest.skip("not a vLLM log")  # the SGLang excerpts: refused by every path alike
    for engine, rules in rulesets.items():
        for grep in (True, False):
            got = parsers.parse_source(parsers.Source(str(log)), rules, 2026, grep=grep).boots
            assert summary(got) == expected, (engine, grep)


def test_tiny_blocks_change_nothing(rulesets, monkeypatch):
    import parsers.source as source

    log = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"
    expected = summary(parsers.parse_source(parsers.Source(str(log)), rulesets["python"], 2026).boots)
    monkeypatch.setattr(source, "BLOCK_SIZE", 97)  # blocks end mid-line, anchors straddle blocks
    for rules in rulesets.values():
        for grep in (True, False):
            assert summary(parsers.parse_source(parsers.Source(str(log)), rules, 2026, grep=grep).boots) == expected


def test_a_generated_runtime_log_through_every_path(tmp_path, rulesets):
    import subprocess
    import sys

    log = tmp_path / "runtime.log"
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(log), "--mb", "2"], check=True)
    expected = summary(reference_boots(log, rulesets["python"], 2026))
    assert expected[0]["counts"][0] > 1000 and len(expected[0]["runtime"]) > 100
    for rules in rulesets.values():
        for grep in (True, False):
            assert summary(parsers.parse_source(parsers.Source(str(log)), rules, 2026, grep=grep).boots) == expected


@pytest.mark.parametrize("raw", [
    "(APIServer pid=1) INFO 10-01 09:00:10 [loggers.py:271] Engine 000: Avg prompt throughput: 5123.4 tokens/s, "
    "Avg generation throughput: 88.1 tokens/s, Running: 7 reqs, Waiting: 1 reqs, GPU KV cache usage: 43.2%, "
    "Prefix cache hit rate: 12.5%",
    "INFO 06-16 10:03:14 [loggers.py:87] Engine 003: Avg prompt throughput: 0.0 tokens/s, Avg generation "
    "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%",
    "(APIServer pid=3646) INFO 05-19 10:13:41 [loggers.py:271] Engine 000: Avg prompt throughput: 18032.5 tokens/s, "
    "Avg generation throughput: 589.8 tokens/s, Running: 21 reqs, Waiting: 23 reqs, GPU KV cache usage: 95.9%, "
    "Prefix cache hit rate: 0.0%",
])
def test_the_stats_fast_path_agrees_with_the_general_one(raw, rulesets):
    rules = rulesets["python"]
    (fast,) = [r for r in rules.rules if r.name == "engine_stats"]
    line_fast, data_fast = fast.fast(5, raw.encode())
    line = parsers.parse_line(5, raw)
    (event,) = rules.match_line(line)
    assert data_fast == event.data
    for attr in ("number", "raw", "message", "process", "pid", "rank", "level", "timestamp", "source_file"):
        assert getattr(line_fast, attr) == getattr(line, attr), attr


def test_the_fast_path_declines_other_shapes(rulesets):
    (fast,) = [r for r in rulesets["python"].rules if r.name == "engine_stats"]
    assert fast.fast(1, b"qwen3-1  | INFO 05-04 01:06:53 [loggers.py:271] Engine 000: Avg prompt throughput: 2.5 "
                        b"tokens/s, Avg generation throughput: 89.6 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
                        b"GPU KV cache usage: 5.2%, Prefix cache hit rate: 0.0%") is None
    assert fast.fast(1, b"INFO 05-04 01:06:53 [loggers.py:271] Engine 000: Avg prompt throughput: 2.5 tokens/s, "
                        b"Avg generation throughput: 89.6 tokens/s, Running: 1 reqs, Waiting: 0 reqs, Preemptions: 2, "
                        b"GPU KV cache usage: 5.2%, Prefix cache hit rate: 0.0%") is None


def test_the_fast_path_declines_bytes_that_are_not_ascii(rulesets):
    (fast,) = [r for r in rulesets["python"].rules if r.name == "engine_stats"]
    raw = (b"INFO 05-19 10:13:11 [loggers\xff.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
           b"throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit "
           b"rate: 0.0%")
    assert fast.fast(1, raw) is None
