"""One name per figure (issue 22): a boot never holds two values of one fact name for one rank
read from two different wordings.  Held over every fixture, with the wording of each fact found
again from its line (the rules of the built-in grammar that yield that name there)."""

from __future__ import annotations

from collections import defaultdict

import pytest
from conftest import ROOT

from ledger import parsers
from ledger.parsers.lines import parse_line
from ledger.parsers.pipeline import builtin_ruleset

G = 2**30
LOGS = [p for p in sorted((ROOT / "fixtures").glob("*/*.log")) if p.parent.name not in ("sglang", "radiance")]


def wordings(fact) -> frozenset[str]:
    events = builtin_ruleset().match_line(parse_line(fact.line, fact.text))
    return frozenset(ev.rule.name for ev in events if fact.name in (ev.data or {})
                     or (ev.data or {}).get("items", {}).get(fact.name) is not None)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name[:24]}")
def test_a_boot_holds_one_wording_per_name_and_rank(log):
    for boot in parsers.parse_file(str(log), year=2026, force=True):
        seen: dict[tuple[str, int | None], set[frozenset[str]]] = defaultdict(set)
        for fact in boot.facts:
            seen[(fact.name, fact.rank)].add(wordings(fact))
        assert {k: v for k, v in seen.items() if len(v) > 1} == {}


HDR = "(EngineCore pid=1) INFO 09-16 13:51:51 [f.py:1] "


def facts(*messages: str) -> list[tuple[str, float | int]]:
    (boot,) = parsers.parse_text("".join(HDR + m + "\n" for m in messages), year=2026)
    return [(f.name, f.value) for f in boot.facts]


def test_graph_capture_bytes_comes_only_from_the_capture_line():
    got = facts("Graph capturing finished in 6 secs, took 0.22 GiB",
                "CUDA graph pool memory: 0.22 GiB (actual), 0.42 GiB (estimated), difference: 0.2 GiB (91.2%).")
    assert [v for n, v in got if n == "graph_capture_bytes"] == [round(0.22 * G)]


def test_the_graph_pool_line_has_its_own_two_names():
    got = dict(facts("CUDA graph pool memory: 0.22 GiB (actual), 0.42 GiB (estimated), difference: 0.2 GiB (91.2%)."))
    assert got == {"cuda_graph_pool_bytes": round(0.22 * G), "cuda_graph_pool_estimated_bytes": round(0.42 * G)}


def test_estimated_cuda_graph_bytes_is_only_the_profilers_estimate():
    got = facts("Estimated CUDA graph memory: 0.73 GiB total",
                "CUDA graph pool memory: 0.70 GiB (actual), 0.71 GiB (estimated), difference: 0.01 GiB (1.4%).")
    assert [v for n, v in got if n == "estimated_cuda_graph_bytes"] == [round(0.73 * G)]


def test_a_second_wording_of_one_name_for_one_rank_yields_to_the_preferred_one():
    got = facts("Loading weights took 2.30 seconds", "Model loading took 12.8848 GiB and 3.081864 seconds")
    assert [v for n, v in got if n == "model_load_seconds"] == [3.081864]


def test_the_same_wording_on_two_ranks_keeps_both():
    text = ("(Worker_TP0 pid=2) INFO 09-16 13:51:51 [f.py:1] Loading weights took 2.30 seconds\n"
            "(Worker_TP1 pid=3) INFO 09-16 13:51:51 [f.py:1] Loading weights took 2.40 seconds\n")
    (boot,) = parsers.parse_text(text, year=2026)
    assert [(f.rank, f.value) for f in boot.facts] == [(0, 2.3), (1, 2.4)]
