"""A grammar pack cannot break an ingest (issue 15, item 7): a TOML nesting bomb is a clean
refusal, a pack field named like a built-in fact is refused unless the rule says it reads that
fact, a pack's line never starts or splits a boot, and a rule whose matching backtracks is
refused at load."""

from __future__ import annotations

import textwrap
import time

import pytest
from conftest import SYNTH

from ledger import parsers
from ledger.parsers.packs import PackError, load_pack, pack_rules

RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"


def write(tmp_path, text: str):
    p = tmp_path / "pack.toml"
    p.write_text(textwrap.dedent(text))
    return p


@pytest.mark.parametrize("bomb", ["x = " + "[" * 100_000 + "]" * 100_000,
                                  "x = " + "{a = " * 50_000 + "1" + "}" * 50_000])
def test_a_toml_nesting_bomb_is_refused(tmp_path, bomb):
    with pytest.raises(PackError, match="nested too deep|not valid TOML"):
        load_pack(write(tmp_path, bomb))


def test_a_pack_field_named_like_a_built_in_fact_is_refused(tmp_path):
    pack = write(tmp_path, '''
        name = "fork"
        [[rule]]
        pattern = "fork kv pool: {kv_cache_tokens:n} tokens"
        samples = ["fork kv pool: 71,920 tokens"]
    ''')
    with pytest.raises(PackError, match="'kv_cache_tokens' is a built-in fact.*builtin_facts"):
        load_pack(pack)


def test_a_rule_that_says_it_reads_a_built_in_fact_may_name_it(tmp_path):
    pack = write(tmp_path, '''
        name = "fork"
        [[rule]]
        pattern = "fork kv pool: {kv_cache_tokens:n} tokens"
        builtin_facts = ["kv_cache_tokens"]
        samples = ["fork kv pool: 71,920 tokens"]
    ''')
    assert load_pack(pack).rules


def test_builtin_facts_names_only_built_in_facts(tmp_path):
    pack = write(tmp_path, '''
        name = "fork"
        [[rule]]
        pattern = "fork kv pool: {pool_tokens:n} tokens"
        builtin_facts = ["no_such_fact"]
        samples = ["fork kv pool: 71,920 tokens"]
    ''')
    with pytest.raises(PackError, match="'builtin_facts' lists built-in fact names"):
        load_pack(pack)


def test_a_pack_rule_on_a_start_up_line_does_not_split_boots(tmp_path):
    pack = load_pack(write(tmp_path, '''
        name = "startpack"
        [[rule]]
        pattern = "vLLM server version {server_major:d}.{server_minor:d}.{server_patch:d}, serving model {model_name}"
        samples = ["vLLM server version 0.20.2, serving model Qwen/Qwen3-32B-FP8"]
    '''))
    plain = parsers.parse_file(str(RESTART), year=2026)
    with_pack = parsers.parse_source(parsers.Source(str(RESTART)), parsers.builtin_ruleset(pack_rules([pack])),
                                     default_year=2026).boots
    assert [(b.first_line, b.last_line, b.outcome) for b in with_pack] == \
        [(b.first_line, b.last_line, b.outcome) for b in plain]
    assert any(f.name == "server_minor" for b in with_pack for f in b.facts)


def test_a_pattern_of_many_text_fields_is_refused(tmp_path):
    fields = " ".join(f"{{f{i}}}" for i in range(12))
    pack = write(tmp_path, f'''
        name = "slow"
        [[rule]]
        pattern = "{fields} end"
        samples = ["{' '.join('x' for _ in range(12))} end"]
    ''')
    started = time.monotonic()
    with pytest.raises(PackError, match="12 fields that match any text"):
        load_pack(pack)
    assert time.monotonic() - started < 5


def test_a_pattern_that_backtracks_on_a_near_miss_is_refused(tmp_path):
    """Two text fields pass the count, but with nothing literal before them a line of words
    holding the anchor costs the cube of its length (15 s for 2 KiB): refused at load, quickly."""
    pack = write(tmp_path, '''
        name = "slow"
        [[rule]]
        pattern = "{a} {b} done"
        samples = ["1 2 done"]
    ''')
    started = time.monotonic()
    with pytest.raises(PackError, match=r"rule 1: pattern '\{a\} \{b\} done' backtracks: \d+ ms"):
        load_pack(pack)
    assert time.monotonic() - started < 5


def test_a_pattern_of_typed_fields_loads(tmp_path):
    pack = write(tmp_path, '''
        name = "fast"
        [[rule]]
        pattern = "queue {a} then {b} done {n:d}"
        samples = ["queue x then y done 3"]
    ''')
    assert load_pack(pack).rules


def test_a_pack_loads_however_slowly_the_wall_clock_runs(tmp_path, monkeypatch):
    """The backtracking probe counts the CPU its own matching takes, not wall time: on a busy
    machine a 1 ms probe can take a second of wall time, and a good pack must still load.  Here
    the wall clocks jump a second at every reading."""
    pack = write(tmp_path, '''
        name = "fast"
        [[rule]]
        pattern = "queue {a} then {b} done {n:d}"
        samples = ["queue x then y done 3"]
    ''')
    now = [0.0]

    def slow_clock() -> float:
        now[0] += 1.0
        return now[0]

    for clock in ("perf_counter", "monotonic", "time"):
        monkeypatch.setattr(time, clock, slow_clock)
    assert load_pack(pack).rules


def test_a_nesting_bomb_given_to_ingest_is_one_line(db, cli, tmp_path):
    bomb = write(tmp_path, "x = " + "[" * 100_000 + "]" * 100_000)
    r = cli("ingest", str(RESTART), "--grammar", str(bomb))
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1 and "nested too deep" in r.output
