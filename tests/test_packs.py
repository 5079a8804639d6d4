"""Grammar packs: the TOML contract, every refusal with its message, pack facts through the
same store, export and diff as built-in facts, and the radiance example pack."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import ROOT

from ledger import parsers
from ledger.parsers.packs import PackError, check, discover, load_pack, longest_literal, pack_rules

RADIANCE = ROOT / "fixtures" / "radiance"
FP8 = RADIANCE / "fp8-3x200k-ready.log"
BF16 = RADIANCE / "bf16-2x200k-ready.log"
OOM = RADIANCE / "bf16-3x262144-capture-oom.log"

GOOD = '''
name = "myfork"
description = "test fork"

[[rule]]
pattern = "expert arena: {expert_arena_slots:n} slots"
samples = ["expert arena: 6,499 slots"]

[[rule]]
pattern = "pinned host pool {pinned_host_pool_bytes:g} MiB, prefix host tier {prefix_host_tier_bytes:g} MiB"
units = { pinned_host_pool_bytes = "MiB", prefix_host_tier_bytes = "MiB" }
samples = ["pinned host pool 44928 MiB, prefix host tier 8192 MiB"]
'''


def write(tmp_path, text: str, name: str = "pack.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_the_readme_example_pack_loads(tmp_path):
    pack = load_pack(write(tmp_path, GOOD))
    assert pack.name == "myfork" and [r.anchor for r in pack.rules] == ["expert arena: ", " MiB, prefix host tier "]


def test_pack_facts_are_converted_like_built_in_ones(tmp_path):
    rules = pack_rules([load_pack(write(tmp_path, GOOD))])
    text = ("(Worker_TP1 pid=9) INFO 10-06 09:14:33 [x.py:1] expert arena: 6,499 slots\n"
            "(EngineCore pid=8) INFO 10-06 09:14:33 [x.py:1] pinned host pool 44928 MiB, prefix host tier 8192 MiB\n")
    boot = parsers.parse_text(text, parsers.builtin_ruleset(rules), year=2026)[0]
    facts = {f.name: f for f in boot.facts}
    assert facts["expert_arena_slots"].value == 6499 and facts["expert_arena_slots"].rank == 1
    assert facts["pinned_host_pool_bytes"].value == 44928 * 2**20
    assert facts["pinned_host_pool_bytes"].precision == 0.5 * 2**20
    assert facts["pinned_host_pool_bytes"].pack == "myfork"


def test_rank_from_prefix_false(tmp_path):
    text = GOOD.replace('samples = ["expert arena: 6,499 slots"]',
                        'samples = ["expert arena: 6,499 slots"]\nrank_from_prefix = false')
    rules = pack_rules([load_pack(write(tmp_path, text))])
    boot = parsers.parse_text("(Worker_TP1 pid=9) INFO 10-06 09:14:33 [x.py:1] expert arena: 6,499 slots\n",
                              parsers.builtin_ruleset(rules), year=2026)[0]
    assert boot.facts[0].rank is None


def test_shape_and_failure_rules(tmp_path):
    p = write(tmp_path, '''
        name = "f"
        [[rule]]
        pattern = "arena planner mode {arena_planner_mode}"
        shape = true
        samples = ["arena planner mode precise"]
        [[rule]]
        pattern = "arena overflow: needed {needed_bytes:g} MiB"
        units = { needed_bytes = "MiB" }
        failure = "arena_overflow"
        samples = ["arena overflow: needed 512 MiB"]
    ''')
    text = ("INFO 10-06 09:14:33 [x.py:1] arena planner mode precise\n"
            "ERROR 10-06 09:14:34 [x.py:1] arena overflow: needed 512 MiB\n")
    boot = parsers.parse_text(text, parsers.builtin_ruleset(pack_rules([load_pack(p)])), year=2026)[0]
    assert boot.shape["arena_planner_mode"].value == "precise"
    assert (boot.failures[0].kind, boot.failures[0].figures) == ("arena_overflow", {"needed_bytes": 512 * 2**20})
    assert boot.outcome == "failed"


def test_longest_literal_default_anchor():
    assert longest_literal("a {x:g} long literal {y} b") == " long literal "
    assert longest_literal("{{braces}} {x:d}") == "{braces} "


REFUSALS = [
    ("name = 'x'\n[[rule]\n", "not valid TOML"),
    ("name = 'x'\nflavour = 1\n[[rule]]\npattern='a {b:d}'\nsamples=['a 1']\n", "unknown key 'flavour'"),
    ("[[rule]]\npattern='a {b:d}'\nsamples=['a 1']\n", "'name' must be"),
    ("name = 'x'\n", "no [[rule]] tables"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d}'\nsamples=['a 1']\ncolour='red'\n", "rule 1: unknown key 'colour'"),
    ("name = 'x'\n[[rule]]\nsamples=['a 1']\n", "rule 1: 'pattern' is required"),
    ("name = 'x'\n[[rule]]\npattern='a {b:zz}'\nsamples=['a 1']\n", "rule 1: pattern 'a {b:zz}' does not compile"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d}'\nsamples=['a x']\n", "rule 1: sample 'a x' does not match pattern"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d}'\n", "rule 1: 'samples' must list at least one line"),
    ("name = 'x'\n[[rule]]\npattern='a {ArenaSlots:d}'\nsamples=['a 1']\n", "rule 1: field 'ArenaSlots' is not a snake_case name"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d} {}'\nsamples=['a 1 2']\n", "rule 1: pattern 'a {b:d} {}' has unnamed fields"),
    ("name = 'x'\n[[rule]]\npattern='pool {pool:g} MiB'\nunits={pool='MiB'}\nsamples=['pool 1 MiB']\n",
     "rule 1: 'pool' is printed in MiB, so its name must end in _bytes"),
    ("name = 'x'\n[[rule]]\npattern='pool {pool_bytes:g} MiB'\nunits={pool_bytes='furlongs'}\nsamples=['pool 1 MiB']\n",
     "rule 1: unit 'furlongs' of 'pool_bytes' is not one of"),
    ("name = 'x'\n[[rule]]\npattern='pool {pool_bytes:g} MiB'\nunits={other_bytes='MiB'}\nsamples=['pool 1 MiB']\n",
     "rule 1: units names 'other_bytes', which is not a field of the pattern"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d}'\nanchor='zzz'\nsamples=['a 1']\n", "rule 1: sample 'a 1' does not contain the anchor 'zzz'"),
    # an anchor given but blank is said to be blank (it was "no literal text to anchor on; give 'anchor'")
    ("name = 'x'\n[[rule]]\npattern='pool {b:d} slots'\nanchor=' '\nsamples=['pool 1 slots']\n",
     "rule 1: anchor ' ' is only whitespace; give text every line of the rule holds, such as ' slots'"),
    ("name = 'x'\n[[rule]]\npattern='pool {b:d} slots'\nanchor=''\nsamples=['pool 1 slots']\n",
     "rule 1: anchor '' is empty; give text every line of the rule holds, such as ' slots'"),
    ("name = 'x'\n[[rule]]\npattern='pool {b:d} slots'\nanchor=3\nsamples=['pool 1 slots']\n",
     "rule 1: 'anchor' must be a string (text every line of the rule holds), not 3"),
    ("name = 'x'\n[[rule]]\npattern='plain text'\nsamples=['plain text']\n", "rule 1: pattern 'plain text' has no named field"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d}'\nfailure='Bad Kind'\nsamples=['a 1']\n", "rule 1: 'failure' must be a snake_case"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d}'\nshape='yes'\nsamples=['a 1']\n", "rule 1: 'shape' must be true or false"),
    ("name = 'x'\n[[rule]]\npattern='a {b:d}'\nsamples=['a 1']\n[[rule]]\npattern='c {d:d}'\nsamples=['c x']\n",
     "rule 2: sample 'c x' does not match"),
]


@pytest.mark.parametrize("text,message", REFUSALS, ids=[m for _, m in REFUSALS])
def test_every_refusal_names_the_file_the_rule_and_the_problem(tmp_path, text, message):
    p = write(tmp_path, text)
    with pytest.raises(PackError) as exc:
        load_pack(p)
    assert str(exc.value).startswith(f"{p}: ")
    assert message in str(exc.value)


def test_a_missing_pack(tmp_path):
    with pytest.raises(PackError, match="no such grammar pack"):
        load_pack(tmp_path / "nope.toml")


def test_packs_load_from_the_env_folder_and_the_user_folder(tmp_path, monkeypatch):
    env_dir, cfg = tmp_path / "env", tmp_path / "cfg"
    env_dir.mkdir()
    (cfg / "ledger" / "grammars").mkdir(parents=True)
    write(env_dir, GOOD, "a.toml")
    write(cfg / "ledger" / "grammars", GOOD.replace('"myfork"', '"other"'), "b.toml")
    monkeypatch.setenv("LEDGER_GRAMMARS", str(env_dir))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    assert [(p.name, p.origin) for p in discover()] == [("myfork", "LEDGER_GRAMMARS"), ("other", "user config")]


def test_two_packs_with_one_name_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    a, b = write(tmp_path, GOOD, "a.toml"), write(tmp_path, GOOD, "b.toml")
    with pytest.raises(PackError, match="pack name 'myfork' is already used by"):
        discover([str(a), str(b)])


def test_check_counts_matches_and_lists_unclaimed_lines():
    report = check(load_pack(ROOT / "ledger" / "parsers" / "packs" / "radiance.toml"), [str(FP8), str(REAL021)])
    counts = [h.count for h in report.hits]
    assert counts == [2, 1, 1, 1, 1, 1]
    assert report.hits[2].first[1:] == (15, {"expert_arena_slots": "6,499 slots",
                                              "expert_cache_lend_kv_bytes": "2.69 GiB",
                                              "expert_cache_lend_arena_bytes": "740 MiB"})
    unclaimed = [(log.split("/")[-1][:3], n) for log, n, _ in report.unclaimed]
    assert unclaimed == [("021", 11)]  # "Add 3 padding layers, may waste at most 6.25% KV cache memory"


REAL021 = next((ROOT / "fixtures" / "real").glob("021_*.log"))


# -- through the ledger -------------------------------------------------------------------------------


def test_grammar_check_command(cli):
    r = cli("grammar", "check", "radiance", str(FP8))
    assert r.exit_code == 0
    assert "pack radiance" in r.output and "6 rules, every sample matches" in r.output
    assert "expert_arena_slots=6,499 slots" in r.output
    assert "unclaimed lines with figures: 0" in r.output


def test_grammar_check_refuses_a_bad_pack_in_one_line(cli, tmp_path):
    p = write(tmp_path, "name = 'x'\n[[rule]]\npattern='a {b:d}'\nsamples=['a x']\n")
    r = cli("grammar", "check", str(p))
    assert r.exit_code == 2
    assert r.output.strip() == f"Error: {p}: rule 1: sample 'a x' does not match pattern 'a {{b:d}}'"


def test_grammar_list_shows_packs_and_origins(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("LEDGER_GRAMMARS", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    write(tmp_path, GOOD, "myfork.toml")
    out = cli("grammar", "list").output
    assert "vllm" in out and "built-in" in out
    assert "myfork" in out and "LEDGER_GRAMMARS" in out and "radiance" in out


def test_pack_facts_through_ingest_show_export_and_sql(db, cli):
    r = cli("ingest", "--grammar", "radiance", str(FP8), "--label", "fp8-3slot")
    assert r.exit_code == 0 and "ready" in r.output
    objs = json.loads(cli("export").output)
    arena = [f for f in objs[0]["facts"] if f["name"] == "expert_arena_slots"]
    assert arena == [{"name": "expert_arena_slots", "value": 6499, "unit": "slots", "precision": None, "rank": 0,
                      "line": 15, "text": FP8.read_text().splitlines()[14], "process": "Worker_TP0", "pack": "radiance"}]
    assert "expert_arena_slots [radiance]" in cli("show", "fp8-3slot").output
    assert json.loads(cli("sql", "SELECT value FROM fact WHERE pack = 'radiance' AND name = 'pinned_host_pool_bytes'",
                          "--format", "json").output) == [{"value": 40960 * 2**20}]


def test_without_the_pack_the_fork_lines_are_not_read(db, cli):
    cli("ingest", str(FP8))
    assert json.loads(cli("sql", "SELECT count(*) AS n FROM fact WHERE pack IS NOT NULL", "--format", "json").output) \
        == [{"n": 0}]


def test_diff_between_the_fp8_and_bf16_boots_shows_the_seed_deltas(db, cli):
    cli("ingest", "--grammar", "radiance", str(FP8), "--label", "fp8-3slot")
    cli("ingest", "--grammar", "radiance", str(BF16), "--label", "bf16-2slot")
    d = json.loads(cli("diff", "fp8-3slot", "bf16-2slot", "--format", "json").output)
    facts = {f["name"]: (f["a"], f["b"]) for f in d["facts"]}
    MiB = 2**20
    # "Pool 3543 -> 6912 MiB"
    shape = {s["key"]: (s["a"], s["b"]) for s in d["shape"]}
    assert shape["kv_cache_memory_bytes"] == (3543 * MiB, 6912 * MiB)
    assert shape["kv_cache_dtype"] == ("fp8", "auto") and shape["max_num_seqs"] == (3, 2)
    # "the weights slab pays for all of it: 26071 -> 22208 MiB"
    assert facts["weights_slab_bytes"] == (26071 * MiB, 22208 * MiB)
    # "40960 -> 44928 MiB", "4096 -> 8192 MiB", "58.50 -> 117 KiB"
    assert facts["pinned_host_pool_bytes"] == (40960 * MiB, 44928 * MiB)
    assert facts["prefix_host_tier_bytes"] == (4096 * MiB, 8192 * MiB)
    assert facts["prefix_host_entry_bytes"] == (round(58.5 * 1024), 117 * 1024)
    # "7.3125 -> 14.625 KiB per rank (kv_attn 26.00 -> 52.00 KiB per 4-token page + kv_qsa_bkey 3.25 -> 6.50)"
    assert facts["kv_token_bytes"] == (round(7.3125 * 1024), round(14.625 * 1024))
    assert facts["kv_attn_page_bytes"] == (26 * 1024, 52 * 1024)
    # arena slots move with the pool; KV tokens 386,904 -> 437,248 (">= 2 x 200,000")
    assert facts["expert_arena_slots"] == (6499, 5648)
    assert facts["kv_cache_tokens"] == (386904, 437248)
    assert "card_ceiling_bytes" not in facts  # 29,120 MiB on both: unchanged rows are hidden
    md = cli("diff", "fp8-3slot", "bf16-2slot", "--format", "markdown").output
    assert "| weights_slab_bytes [radiance] |" in md


def test_the_capture_oom_fixture_fails_at_graph_capture(db, cli):
    r = cli("ingest", "--grammar", "radiance", str(OOM))
    assert "failed" in r.output and "oom@graph_capture" in r.output
    oom = json.loads(cli("export").output)[0]["failures"]
    oom = next(f for f in oom if f["kind"] == "oom")
    assert oom["tried_to_allocate_bytes"] == 76 * 2**20 and oom["free_bytes"] == 0


def test_the_readme_walkthrough_pack_works_as_documented(tmp_path):
    """The guide's example pack, copied as a user would, reads the line it says it reads."""
    readme = (ROOT / "docs" / "guide.md").read_text()
    section = readme[readme.index("### 2. Write a rule per line"):]
    toml = section[section.index("```toml") + len("```toml"):section.index("```", section.index("```toml") + 7)]
    pack = load_pack(write(tmp_path, toml, "myfork.toml"))
    report = check(pack, [str(FP8)])
    assert report.hits[0].count == 1 and report.hits[0].first[1] == 15
    assert len(report.unclaimed) == 6
