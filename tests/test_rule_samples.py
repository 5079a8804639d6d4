"""Every built-in rule carries its samples (ledger/parsers/vllm_samples.py): a real line (a
fixture's, or one the reference quotes) and the figures it must yield, checked when the grammar
is imported by the check a grammar pack's samples pass when it loads (lnav's rule)."""

from __future__ import annotations

import dataclasses

import pytest

from ledger.parsers import vllm
from ledger.parsers.rules import FactRule, Kind, Sample, sample_problem
from ledger.parsers.vllm import BUILTIN_RULES
from ledger.parsers.vllm_samples import SAMPLES


def test_every_builtin_rule_carries_a_sample():
    assert [r.name for r in BUILTIN_RULES if not r.samples] == []


def test_every_sample_says_what_it_yields_and_where_it_is_from():
    for rule in BUILTIN_RULES:
        for s in rule.samples:
            assert isinstance(s, Sample) and s.source, rule.name
            assert (s.yields is None) == (rule.kind is Kind.counted), rule.name


def test_the_whole_grammar_passes_its_sample_check():
    vllm.check_samples()


def test_every_sample_reads_as_it_says():
    problems = [(r.name, p) for r in BUILTIN_RULES for s in r.samples if (p := sample_problem(r, s))]
    assert problems == []


def test_a_fact_rule_yields_its_figures_from_its_sample():
    rule = next(r for r in BUILTIN_RULES if r.name == "v1_kv_tokens")
    assert [s.yields for s in rule.samples] == [{"kv_cache_tokens": 811008}]


def test_a_sample_that_yields_another_figure_is_refused():
    rule = next(r for r in BUILTIN_RULES if r.name == "v1_kv_tokens")
    wrong = dataclasses.replace(rule.samples[0], yields={"kv_cache_tokens": 811009})
    assert "yields {'kv_cache_tokens': 811008}, not {'kv_cache_tokens': 811009}" in sample_problem(rule, wrong)


def test_a_sample_the_rule_does_not_read_is_refused():
    rule = next(r for r in BUILTIN_RULES if r.name == "v1_kv_tokens")
    assert "does not match" in sample_problem(rule, Sample("GPU KV cache size: many tokens", {}, "here"))
    assert "does not contain the anchor" in sample_problem(rule, Sample("KV cache: 5 tokens", {}, "here"))


def test_a_builtin_rule_that_stops_reading_its_sample_fails_the_sample_check():
    """What the suite (and ``ledger grammar check vllm``) runs: a rule whose pattern no longer
    reads its sample line (a wording widened the wrong way) is refused with its name."""
    broken = FactRule(name="v1_kv_tokens", anchor="GPU KV cache size: ", pattern=r"GPU KV cache size: (?P<n>x)",
                      fields={"n": ("kv_cache_tokens", "tokens")})
    with pytest.raises(RuntimeError, match="rule v1_kv_tokens: sample .* does not match"):
        vllm.check_samples([broken if r.name == "v1_kv_tokens" else r for r in BUILTIN_RULES])


def test_a_builtin_rule_without_a_sample_fails_the_import_check():
    extra = FactRule(name="no_sample_yet", anchor="Nothing: ", pattern=r"Nothing: (?P<n>\d+)",
                     fields={"n": ("kv_cache_tokens", "tokens")})
    with pytest.raises(RuntimeError, match="rule no_sample_yet: no sample"):
        vllm._carry_samples([*BUILTIN_RULES, extra])


def test_samples_name_only_rules_that_exist():
    assert set(SAMPLES) == {r.name for r in BUILTIN_RULES}
