"""``ledger sweep`` over the night ladder and the slot boots, ``ledger check --against`` on decode,
and ``ledger diff`` for people.  The figures are the seeds' (fixtures/reconcile, fixtures/sweeps,
fixtures/decode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, ledger_on

REC = ROOT / "fixtures" / "reconcile"
SWEEPS = ROOT / "fixtures" / "sweeps"
DECODE = ROOT / "fixtures" / "decode"
RADIANCE = ROOT / "fixtures" / "radiance"
LADDER = ["bf16-3x262144-capture-oom", "bf16-3x245760-capture-oom", "bf16-3x237568-ready", "bf16-3x241664-ready-util098"]


def ingest(cli, path, label: str, *extra: str) -> None:
    r = cli("ingest", *extra, str(path), "--label", label)
    assert r.exit_code == 0, r.output


def run(cli, *args: str, code: int = 0) -> str:
    r = cli(*args)
    assert r.exit_code == code, r.output
    return r.output


def _ingest_all(*logs: tuple[Path, str]):
    """A build for ``filled``: each (log, label) ingested in turn."""
    def build(db: str) -> None:
        for path, label in logs:
            ledger_on(db, "ingest", str(path), "--label", label)
    return build


@pytest.fixture
def night(filled):
    """'Night ladder result (Frank's subtract-16k method)': four rungs of one deploy."""
    return filled("sweep-night", _ingest_all(*((SWEEPS / f"{name}.log", "night") for name in LADDER)))


@pytest.fixture
def slots(filled):
    """The fp8 boots at 3, 4, 5 and 6 slots of 262,144 tokens, one deploy."""
    logs = (REC / "fp8-3x262144-ready.log", REC / "fp8-4x262144-ready.log", REC / "fp8-5x262144-runtime-oom.log",
            SWEEPS / "fp8-6x262144-kv-alloc-oom.log")
    return filled("sweep-slots", _ingest_all(*((path, "fp8-slots") for path in logs)))


# -- sweep -----------------------------------------------------------------------------------------------


def test_the_night_ladder_names_its_frontier(night, cli):
    """'262144 and 245760 both OOM at CUDA graph capture, 237568 passed (KV 718,606 tokens), and the
    +4096 bonus step PASSED -> 241664 is max possible'"""
    out = run(cli, "sweep", "max_model_len", "--deploy", "night")
    assert "frontier: largest passing 241,664 (boot 4); smallest failing 245,760 (oom@graph_capture, boot 2)" in out


def test_the_ladder_rows_are_in_knob_order_with_their_figures(night, cli):
    rows = json.loads(run(cli, "sweep", "max_model_len", "--deploy", "night", "--format", "json"))["rows"]
    assert [r["value"] for r in rows] == [237568, 241664, 245760, 262144]
    assert [r["kv_tokens"] for r in rows[:2]] == [718_606, 732_359]
    assert [r["concurrency"] for r in rows[:2]] == [3.02, 3.03]
    assert [r["failure"] for r in rows] == [None, None, "oom@graph_capture", "oom@graph_capture"]


def test_five_slots_crashed_at_runtime_so_four_is_the_largest_passing(slots, cli):
    """'5 x 262144 at fp8 PASSED on the first rung' and then 'a real client request ... killed
    Worker_TP1': 'Boot is not proof of runtime survivability.'  The crash is a failing rung."""
    obj = json.loads(run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots", "--format", "json"))
    assert [r["value"] for r in obj["rows"]] == [3, 4, 5, 6]
    f = obj["frontier"]
    assert (f["largest_passing"], f["smallest_failing"], f["smallest_failing_outcome"], f["smallest_failing_failure"]) \
        == (4, 5, "crashed", "oom@runtime")


def test_the_slot_sweep_says_five_slots_passed_boot_and_crashed_at_runtime(slots, cli):
    """'Boot is not proof of runtime survivability.'"""
    out = run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots")
    assert ("frontier: largest passing 4 (boot 2); smallest failing 5 (passed boot, crashed at runtime after "
            "0:03:41: oom, boot 3)") in out
    (row,) = [line for line in out.splitlines() if line.startswith("3 ")]
    assert "crashed (passed boot)" in row and "oom@runtime" in row


def test_a_rung_that_crashed_at_runtime_came_up_but_did_not_pass(slots, cli):
    rows = json.loads(run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots", "--format", "json"))["rows"]
    assert [(r["value"], r["came_up"], r["passed"]) for r in rows] == \
        [(3, True, True), (4, True, True), (5, True, False), (6, False, False)]
    assert rows[2]["survival"]["verdict"] == "crashed" and rows[2]["survival"]["seconds"] == 221


def test_six_slots_still_fail_at_kv_alloc(slots, cli):
    """'Six full-length contexts do NOT fit at any KV dtype'"""
    rows = json.loads(run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots", "--format", "json"))["rows"]
    assert (rows[3]["outcome"], rows[3]["failure"]) == ("failed", "oom@kv_alloc")


def test_the_slot_sweep_shows_each_contract_margin(slots, cli):
    rows = json.loads(run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots", "--format", "json"))["rows"]
    assert [r["margin_tokens"] for r in rows[:3]] == [5_728, 31_006, 39_462]


def test_sweep_csv_and_jsonl_are_rows(slots, cli):
    csv = run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots", "--format", "csv").splitlines()
    assert csv[0].startswith("boot,deploy,value,outcome,passed,failure")
    assert len(csv) == 5
    lines = run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots", "--format", "jsonl").splitlines()
    assert [json.loads(x)["value"] for x in lines] == [3, 4, 5, 6]


def test_sweep_markdown_has_the_frontier_under_the_table(slots, cli):
    out = run(cli, "sweep", "max_num_seqs", "--deploy", "fp8-slots", "--format", "markdown")
    assert out.startswith("| boot | deploy | max_num_seqs |") and "\n\nfrontier: largest passing 4" in out


def test_sweep_refuses_boots_of_two_groups(night, slots, cli):
    r = cli("sweep", "max_model_len")
    assert r.exit_code == 2 and "those boots are of 2 groups" in r.output and "--group BOOT" in r.output


def test_sweep_group_takes_a_boots_group(night, slots, cli):
    obj = json.loads(run(cli, "sweep", "max_num_seqs", "--group", "fp8-slots@latest", "--format", "json"))
    assert [r["value"] for r in obj["rows"]] == [3, 4, 5, 6] and "kv fp8" in obj["group_key"]


def test_sweep_says_what_else_varies(night, cli):
    ingest(cli, REC / "bf16-3x241664-ready.log", "bf16-pinned")
    out = run(cli, "sweep", "max_model_len", "--group", "night@ready")
    assert "also varies: gpu_memory_utilization (0.9, 0.98)" in out


def test_a_knob_no_boot_prints_is_said_not_guessed(night, cli):
    """Nothing to sweep is an error that says what does vary (issue 38, finding 18: it was an
    empty table and 'left out: 4 boots'); a boot that does not print a knob others print is
    left out and counted (test_said_aloud)."""
    out = run(cli, "sweep", "block_size", "--deploy", "night", code=2)
    assert "block_size: none of these 4 boots prints that knob; the knobs that vary between them: max_model_len" in out


# -- check --against ------------------------------------------------------------------------------------


@pytest.fixture
def served(filled):
    return filled("sweep-served", _ingest_all((DECODE / "fp8-4x262144-served-136tps.log", "fp8-control"),
                                              (DECODE / "bf16-2x262144-served-129tps.log", "bf16-2x262144")))


def test_a_decode_drop_beyond_the_bound_exits_1(served, cli):
    out = run(cli, "check", "bf16-2x262144", "--against", "fp8-control", code=1)
    assert "decode vs control  slower       decode 129.6 t/s vs 136.0 (-4.7 %), bound -3 %" in out


def test_a_decode_drop_within_the_bound_exits_0(served, cli):
    out = run(cli, "check", "bf16-2x262144", "--against", "fp8-control", "--max-decode-drop", "5%")
    assert "decode vs control  ok" in out


def test_the_decode_check_states_its_noise(served, cli):
    objs = json.loads(run(cli, "check", "bf16-2x262144", "--against", "fp8-control", "--format", "json", code=1))
    (line,) = [c for c in objs[0]["checks"] if c["what"] == "decode vs control"]
    assert "noise ~2.8 % boot to boot (club-3090's measurement" in line["detail"]
    assert "% within boot 2" in line["detail"]


def test_the_control_is_its_own_reference(served, cli):
    objs = json.loads(run(cli, "check", "--against", "fp8-control", "--format", "json", code=1))
    verdicts = {o["deploy"]: {c["what"]: c["verdict"] for c in o["checks"]} for o in objs}
    assert verdicts["fp8-control"]["decode vs control"] == "reference"


def test_no_decode_figure_is_insufficient_and_does_not_fail(db, cli, served):
    ingest(cli, REC / "fp8-3x262144-ready.log", "fp8-3slot")
    out = run(cli, "check", "fp8-3slot", "--against", "fp8-control")
    assert "decode vs control  insufficient no decode figure for boot 3" in out


def test_a_bad_bound_is_an_error(served, cli):
    r = cli("check", "--against", "fp8-control", "--max-decode-drop", "lots")
    assert r.exit_code == 2 and "lots: not a percentage" in r.output


# -- diff for people ------------------------------------------------------------------------------------


@pytest.fixture
def qwen(filled):
    return filled("sweep-qwen", _ingest_all((REC / "fp8-4x262144-ready.log", "qwen-fp8"),
                                            (REC / "bf16-3x241664-ready.log", "qwen-bf16")))


def _section(markdown: str, head: str) -> list[str]:
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {head} |"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start + 2:end]


def test_diff_markdown_has_no_one_sided_shape_rows(qwen, cli):
    shape = _section(run(cli, "diff", "qwen-fp8", "qwen-bf16", "--format", "markdown"), "shape")
    assert shape and not any("| — |" in row or row.endswith("| — |") for row in shape)


def test_diff_markdown_has_the_derived_rows(qwen, cli):
    rows = _section(run(cli, "diff", "qwen-fp8", "qwen-bf16", "--format", "markdown"), "derived")
    assert "| KV bytes per token (per rank) | 7,698.36 B/token (exact) | 13,838.52 B/token (exact) |" in rows[0]
    assert any(r.startswith("| contract margin | +31,006 tokens | +73,288 tokens |") for r in rows)
    assert "| kv reconciliation | reference | reference |  |  |" in rows


def test_diff_prints_figures_to_the_logs_precision_with_units(qwen, cli):
    facts = _section(run(cli, "diff", "qwen-fp8", "qwen-bf16", "--format", "markdown"), "fact")
    assert "| max_concurrency | 4.12x | 3.30x | -0.82x | -19.90% |" in facts
    assert "| kv_cache_tokens | 1,079,582 tokens | 798,280 tokens | -281,302 tokens | -26.06% |" in facts


def test_one_sided_shape_keys_are_counted_and_listed_with_all(qwen, cli):
    ingest(cli, SWEEPS / "bf16-3x241664-ready-util098.log", "bf16-util")
    out = run(cli, "diff", "qwen-fp8", "bf16-util")
    assert "1 shape key printed on one side only (--all lists them)" in out
    assert "kv_cache_memory_bytes" not in out.split("derived")[0]
    every = run(cli, "diff", "qwen-fp8", "bf16-util", "--all")
    (row,) = [line for line in every.splitlines() if line.startswith("kv_cache_memory_bytes ")]
    assert row.split() == ["kv_cache_memory_bytes", "7.74", "GiB", "(8,311,013,376", "B)", "—"]


def test_diff_compares_a_deploys_latest_ready_boot_and_says_so(qwen, cli):
    for name in ("bf16-2x200k-ready", "bf16-3x262144-capture-oom"):
        ingest(cli, RADIANCE / f"{name}.log", "radiance-bf16", "--grammar", "radiance")
    out = run(cli, "diff", "qwen-fp8", "radiance-bf16")
    assert "B: boot 3  radiance-bf16" in out
    assert "note: radiance-bf16: boot 3 is its latest ready boot; the newer boot 4 (failed) is passed over" in out
    assert "B: boot 4  radiance-bf16" in run(cli, "diff", "qwen-fp8", "radiance-bf16@latest")


def test_diff_json_carries_the_derived_rows(qwen, cli):
    obj = json.loads(run(cli, "diff", "qwen-fp8", "qwen-bf16", "--format", "json"))
    bpt = next(r for r in obj["derived"] if r["key"] == "bytes_per_token")
    assert round(bpt["b"], 2) == 13_838.52 and bpt["unit"] == "B/token"
    assert obj["one_sided_keys"] == [] and obj["notices"] == []


# -- the sweep chart on serve's deploy page --------------------------------------------------------------


def test_the_deploy_sweep_is_the_sweep_of_the_knob_that_varies(night):
    from ledger.db.connect import connect
    from ledger.serve.data import deploy_sweep

    ledger = connect(night, mode="read")
    try:
        obj = deploy_sweep(ledger, 1)
    finally:
        ledger.dispose()
    assert obj["knob"] == "max_model_len" and obj["frontier"]["largest_passing"] == 241664


def test_the_sweep_chart_marks_outcomes_and_draws_the_contract(night):
    from ledger.db.connect import connect
    from ledger.serve import charts
    from ledger.serve.data import deploy_sweep

    ledger = connect(night, mode="read")
    try:
        svg = charts.svg(charts.sweep_figure(deploy_sweep(ledger, 1), link=lambda b: f"/boot/{b}"))
    finally:
        ledger.dispose()
    assert "frontier: largest passing 241,664 (boot 4); smallest failing 245,760" in svg
    assert "capacity contract (seqs x max-model-len)" in svg and "failed (did not come up)" in svg
    assert 'href="/boot/2"' in svg


def test_serves_deploy_page_has_the_sweep_chart(night, cli):
    from test_serve import pages

    ingest(cli, REC / "bf16-3x241664-ready.log", "one-boot")
    with pages(night) as get:
        (status, page), (_, single) = get("/deploy/1"), get("/deploy/2")
    assert status == 200
    assert 'id="sweep-chart"' in page and "largest passing 241,664" in page
    assert 'id="sweep-chart"' not in single  # one boot: nothing varies


def test_serves_diff_page_has_the_derived_rows_and_the_markdown(qwen, cli):
    from test_serve import pages

    with pages(qwen) as get:
        status, page = get("/diff?a=qwen-fp8&b=qwen-bf16")
    assert status == 200
    assert 'id="diff-derived"' in page and "13,838.52 B/token (exact)" in page
    assert "| max_concurrency | 4.12x | 3.30x | -0.82x | -19.90% |" in page  # the commit-message block


def test_the_boot_to_boot_noise_is_measured_when_the_control_has_two_boots(served, cli, tmp_path):
    second = tmp_path / "fp8-control-again.log"  # the same shape booted again, decode ~2 % lower
    text = (DECODE / "fp8-4x262144-served-136tps.log").read_text()
    second.write_text(text.replace("2026-10-02T09", "2026-10-02T11").replace("10-02 09:", "10-02 11:")
                      .replace(" 136.", " 133."))
    ingest(cli, second, "fp8-control")
    objs = json.loads(run(cli, "check", "bf16-2x262144", "--against", "fp8-control", "--format", "json"))
    (line,) = [c for c in objs[0]["checks"] if c["what"] == "decode vs control"]
    assert "vs 133.4 (-2.8 %)" in line["detail"]  # against the control's latest ready boot
    assert "noise ~1.4 % boot to boot (measured over the control's 2 ready boots)" in line["detail"]
    assert "club-3090" not in line["detail"]


def test_the_boot_to_boot_noise_reads_only_the_controls_latest_ready_boots(db, cli, monkeypatch):
    """A control of 100,000 boots made check --against and note --against read every one (44 s)."""
    import ledger.decode
    from ledger.db.connect import open_read_only

    ingest(cli, DECODE / "fp8-4x262144-served-136tps.log", "control")
    ingest(cli, DECODE / "bf16-2x262144-served-129tps.log", "control")
    ledger_ = open_read_only(db)
    try:
        noise, over = ledger.decode._boot_to_boot(ledger_, 1)
        assert over == "measured over the control's 2 ready boots" and noise > 0
        monkeypatch.setattr(ledger.decode, "NOISE_BOOTS", 1)
        noise, over = ledger.decode._boot_to_boot(ledger_, 1)  # one boot read: the prior
        assert noise == ledger.decode.BOOT_TO_BOOT_PRIOR_PCT and "club-3090" in over
    finally:
        ledger_.dispose()


def test_the_boot_to_boot_noise_of_a_long_control_says_how_many_ready_boots_it_has(db, cli, tmp_path, monkeypatch):
    """More ready boots than are read: "the latest K (of N)", N the ready ones only."""
    from dbutil import _engine, dispose
    from sqlalchemy import text as sql

    import ledger.decode
    from ledger.db.connect import open_read_only

    text = (DECODE / "fp8-4x262144-served-136tps.log").read_text()
    for hour, rate in (("09", "136."), ("11", "133."), ("13", "135."), ("15", "134.")):
        log = tmp_path / f"control-{hour}.log"
        log.write_text(text.replace("2026-10-02T09", f"2026-10-02T{hour}").replace("10-02 09:", f"10-02 {hour}:")
                       .replace(" 136.", f" {rate}"))
        ingest(cli, log, "control")
    with _engine(db).begin() as conn:
        conn.execute(sql("UPDATE boot SET outcome = 'failed' WHERE id = 2"))  # one boot of the four not ready
    dispose(db)
    monkeypatch.setattr(ledger.decode, "NOISE_BOOTS", 2)
    ledger_ = open_read_only(db)
    try:
        _, over = ledger.decode._boot_to_boot(ledger_, 1)
    finally:
        ledger_.dispose()
    assert over == "measured over the control's 2 latest ready boots (of 3)"
