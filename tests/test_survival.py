"""Runtime survival in the verdicts (issue 37, item 4): how a boot ended is a verdict of its own.
The seeds: five 262,144-token contexts "passed every boot gate" and a real request then killed
Worker_TP1 — "Boot is not proof of runtime survivability."  That boot is
fixtures/reconcile/fp8-5x262144-runtime-oom.log (ready at line 10, 02:11:33; the worker's death at
line 17, 02:15:14: 0:03:41 after ready).  A deploy whose latest boot failed, or crashed after
ready, is never ``ok``: ``check`` exits 1, history's verdict says it, ``predict --like``, ``note``
and ``sweep`` name the crash of that shape, and the pages show the same objects."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REAL, ROOT, ingest_seed_boots, ledger_on

REC = ROOT / "fixtures" / "reconcile"
SWEEPS = ROOT / "fixtures" / "sweeps"
FIVE = "fp8-5x262144-runtime-oom"
SIX = "fp8-6x262144-kv-alloc-oom"  # 6 x 262,144 fp8: failed at kv_alloc, before ready
CRASH_DETAIL = ("passed every boot gate (ready at line 10), crashed at runtime after 0:03:41: worker_died (line 17), "
                "then oom, engine_dead")


@pytest.fixture
def five(filled):
    """The 5-slot boot alone, its deploy labelled."""
    return filled("survival-five", lambda db: ledger_on(db, "ingest", str(REC / f"{FIVE}.log"), "--label", FIVE))


@pytest.fixture
def six(filled):
    return filled("survival-six", lambda db: ledger_on(db, "ingest", str(SWEEPS / f"{SIX}.log"), "--label", SIX))


@pytest.fixture
def seeded(filled):
    """The seed notes' four boots, each its own deploy (boot 2 is the 5-slot one)."""
    return filled("seed-boots", ingest_seed_boots)


@pytest.fixture
def slots(filled):
    """The seeds' four boots and the six-slot one that failed at kv_alloc (boot 5)."""
    def build(db: str) -> None:
        ingest_seed_boots(db)
        ledger_on(db, "ingest", str(SWEEPS / f"{SIX}.log"), "--label", SIX)
    return filled("survival-slots", build)


def as_json(cli, *args: str, code: int = 0):
    r = cli(*args, "--format", "json")
    assert r.exit_code == code, r.output
    return json.loads(r.output)


def survival_of(db: str, label: str):
    """The library's survival of the latest boot of the deploy ``label``."""
    from ledger.db.connect import connect
    from ledger.queries import latest_boot, one_deploy
    from ledger.verdicts import survival

    ledger = connect(db, mode="read")
    with ledger.reading() as r:
        bid = latest_boot(r, one_deploy(r, label).id).id
    return survival(ledger, [bid])[bid]


# -- check ------------------------------------------------------------------------------------------


def test_check_exits_1_when_the_latest_boot_crashed_at_runtime(five, cli):
    r = cli("check", FIVE)
    assert r.exit_code == 1
    assert r.output.splitlines()[:2] == [f"{FIVE}: boot 1 (crashed)",
                                         f"  survival           crashed      {CRASH_DETAIL}"]


def test_check_json_marks_a_crashed_deploy_failing_whatever_its_figures(five, cli):
    (obj,) = as_json(cli, "check", FIVE, code=1)
    checks = {c["what"]: c["verdict"] for c in obj["checks"]}
    assert obj["failing"] is True and obj["checks"][0] == {"what": "survival", "verdict": "crashed",
                                                            "detail": CRASH_DETAIL}
    assert checks["capacity contract"] == "ok"  # 1,350,182 tokens back 5 x 262,144: the figures pass


def test_check_exits_1_when_the_latest_boot_failed_before_ready(six, cli):
    r = cli("check", SIX)
    assert r.exit_code == 1
    assert ("  survival           failed       did not come up: failed at kv_alloc, 0:01:17 after the boot's "
            "first line: worker_died (line 10), then oom, engine_init_failed") in r.output


def test_a_ready_boot_is_running_not_ok_and_passes_check(seeded, cli):
    """A boot whose log ends while it serves shows no end: ``running``, not ``ok`` (no test
    passed), and no finding."""
    r = cli("check", "fp8-4x262144-ready")
    assert r.exit_code == 0
    assert "  survival           running      running at the end of its log: no failure in 0:00:02 after ready" \
        in r.output


def test_show_carries_the_survival_line_first(five, cli):
    checks = as_json(cli, "show", "1")["checks"]
    assert checks[0] == {"what": "survival", "verdict": "crashed", "detail": CRASH_DETAIL}


# -- the library --------------------------------------------------------------------------------------


def test_the_crash_is_timed_from_ready_to_the_failure_line(five):
    s = survival_of(five, FIVE)
    assert (s.verdict, s.seconds, s.at_least, s.ready_line) == ("crashed", 221.0, False, 10)
    assert [(f["kind"], f["phase"], f["line"]) for f in s.failures] == \
        [("worker_died", "runtime", 17), ("oom", "runtime", 18), ("engine_dead", "runtime", 19)]


def test_an_untimed_crash_is_timed_at_least_to_the_last_stats_line(tmp_path, db, cli):
    """The 5-slot log as it reads without docker's stamps and with the worker's OOM printed bare
    on stderr (no vLLM header, so no time): the crash is at least 0:03:38 after ready (the last
    stats line, 02:15:11), never a guessed time."""
    lines = []
    for line in (REC / f"{FIVE}.log").read_text().splitlines()[:18]:
        line = re.sub(r"^\S+Z ", "", line)
        if "WorkerProc hit an exception" in line:
            continue
        lines.append(line[line.index("torch.OutOfMemoryError"):] if "torch.OutOfMemoryError" in line else line)
    log = tmp_path / "untimed-oom.log"
    log.write_text("\n".join(lines) + "\n")
    assert cli("ingest", str(log), "--year", "2026", "--label", "untimed").exit_code == 0
    s = survival_of(db, "untimed")
    assert (s.verdict, s.seconds, s.at_least) == ("crashed", 218.0, True)
    assert ("crashed at runtime after at least 0:03:38 (the last stats line before it): oom (line 17)"
            in cli("check", "untimed").output)


def test_a_requested_stop_is_ok_and_says_where(db, cli):
    """The real vLLM stopped with SIGTERM after serving (the lab's recording): the ingest stores
    that it was stopped, at the stop's first line; the one survival that is ``ok``."""
    log = ROOT / "fixtures" / "live" / "vllm-0.32.0" / "ready-served-sigterm.log"
    assert cli("ingest", str(log), "--label", "stopped").exit_code == 0
    s = survival_of(db, "stopped")
    assert (s.verdict, s.end, s.stop_line) == ("ok", "stopped", 175)
    from ledger.render.survival import survival_text

    assert survival_text(s.to_json()) == "stopped on request at line 175, 0:00:27 after ready (ready at line 79), no failure before it"


def test_a_crash_in_an_excerpt_without_ready_says_no_time_is_known(db, cli):
    """058 starts at the runtime OOM's traceback: no ready line, so no time after ready."""
    assert cli("ingest", str(next(REAL.glob("058_*.log"))), "--label", "r058").exit_code == 0
    s = survival_of(db, "r058")
    assert (s.verdict, s.seconds) == ("crashed", None)
    r = cli("check", "r058")
    assert r.exit_code == 1 and "survival           crashed      crashed at runtime: oom (line 11), then engine_dead; " \
        "the log shows no ready line before it (it starts after start-up), so no time after ready is known" in r.output


def test_serving_seen_only_after_the_failure_is_not_a_passed_boot_gate(db, cli):
    """056's requests answered 500 after the EngineDeadError make it 'ready' at line 17, after
    its failure at line 16: that is no boot gate passed before the crash."""
    assert cli("ingest", str(next(REAL.glob("056_*.log"))), "--label", "r056").exit_code == 0
    out = cli("check", "r056").output
    assert "crashed at runtime: engine_dead (line 16), then cuda_error; the log shows no ready line" in out
    assert "passed every boot gate" not in out


def test_a_log_cut_before_start_up_ended_is_insufficient_not_failing(db, cli):
    assert cli("ingest", str(next(REAL.glob("002_*.log"))), "--label", "r002").exit_code == 0
    obj = as_json(cli, "history")[0]
    assert (obj["outcome"], obj["survival"]) == ("incomplete", "insufficient")
    assert cli("check", "r002").exit_code == 0


# -- history --------------------------------------------------------------------------------------------


def test_history_says_crashed_not_ok_on_the_crashed_boot(seeded, cli):
    rows = {r["deploy"]: r for r in as_json(cli, "history")}
    assert (rows[FIVE]["survival"], rows[FIVE]["verdict"]) == ("crashed", "crashed")
    assert rows[FIVE]["contract"] == "ok" and rows[FIVE]["kv_check"] == "ok"  # the figures alone passed


def test_history_keeps_ok_on_ready_boots_whose_log_ends_running(seeded, cli):
    rows = {r["deploy"]: r for r in as_json(cli, "history")}
    assert (rows["fp8-4x262144-ready"]["survival"], rows["fp8-4x262144-ready"]["verdict"]) == ("running", "ok")


def test_history_gives_no_verdict_for_running_alone(db, cli):
    """225 came up and printed stats, but no figure a view needs: running is not a verdict of
    the boot's (a past boot in history is not "running" now), so the column stays empty."""
    assert cli("ingest", str(next(REAL.glob("225_*.log")))).exit_code == 0
    (row,) = as_json(cli, "history")
    assert (row["outcome"], row["survival"], row["verdict"]) == ("ready", "running", None)


def test_history_says_failed_on_a_boot_that_did_not_come_up(six, cli):
    (row,) = as_json(cli, "history")
    assert (row["outcome"], row["contract"], row["verdict"]) == ("failed", "ok", "failed")


def test_history_paints_a_crashed_row_red_not_green(seeded, monkeypatch):
    from click.testing import CliRunner

    from ledger.cli import main
    from ledger.render import terminal

    monkeypatch.setattr(terminal, "colour", lambda stream=None: True)  # as on a terminal
    out = CliRunner().invoke(main, ["--db", seeded, "history"], color=True).output
    (row,) = [line for line in out.splitlines() if FIVE in line]
    assert row.count("\x1b[31m\x1b[1mcrashed") == 2 and "\x1b[32m" not in row  # outcome and verdict, red


# -- predict --------------------------------------------------------------------------------------------


def test_predict_names_the_shape_that_crashed_at_runtime(seeded, cli):
    """'Five 262144-token contexts passed every boot gate ... killed Worker_TP1': the arithmetic
    from the 4-slot boot says 5 x 262,144 fits; the ledger says that shape crashed."""
    r = cli("predict", "--like", "fp8-4x262144-ready", "--max-num-seqs", "5", "--max-model-len", "262144")
    assert r.exit_code == 0
    assert "contract     5 x 262,144 = 1,310,720 tokens: margin +0 tokens (0 B, 0 B) — ok" in r.output
    assert "shape        5 x 262,144: crashed at runtime after 0:03:41: oom (boot 2)" in r.output
    assert ("verdict      crashed: the contract's arithmetic holds, but a boot of this shape crashed at runtime"
            in r.output)


def test_predict_json_keeps_the_contracts_verdict_beside_the_crash(seeded, cli):
    p = as_json(cli, "predict", "--like", "fp8-4x262144-ready", "--max-num-seqs", "5", "--max-model-len", "262144")
    assert (p["verdict"], p["contract_verdict"]) == ("crashed", "ok")
    (f,) = p["shape_failures"]
    assert (f["boot"], f["verdict"], f["seconds"], f["answered_by"]) == ("2", "crashed", 221.0, None)


def test_predict_like_the_crashed_boot_itself_is_crashed(seeded, cli):
    p = as_json(cli, "predict", "--like", FIVE, "--kv-bytes", "10388766720")
    assert (p["max_num_seqs"], p["max_model_len"], p["verdict"]) == (5, 262144, "crashed")


def test_predict_names_a_shape_that_did_not_come_up(slots, cli):
    """'Six full-length contexts do NOT fit at any KV dtype'."""
    r = cli("predict", "--like", "fp8-4x262144-ready", "--max-num-seqs", "6", "--max-model-len", "262144")
    assert "shape        6 x 262,144: failed at kv_alloc: oom (boot 5)" in r.output
    assert as_json(cli, "predict", "--like", "fp8-4x262144-ready", "--max-num-seqs", "6", "--max-model-len",
                   "262144")["verdict"] == "failed"


def test_predict_of_a_shape_no_boot_failed_is_the_contracts(seeded, cli):
    p = as_json(cli, "predict", "--like", "fp8-4x262144-ready", "--max-num-seqs", "4", "--max-model-len", "262144")
    assert (p["verdict"], p["contract_verdict"], p["shape_failures"]) == ("ok", "ok", [])


def test_predict_does_not_borrow_a_crash_from_another_kv_dtype(seeded, cli):
    """The bf16 boot's group is not the fp8 one: fp8's 5 x 262,144 crash says nothing of bf16's."""
    p = as_json(cli, "predict", "--like", "bf16-3x241664-ready", "--max-num-seqs", "5", "--max-model-len", "262144")
    assert p["shape_failures"] == [] and p["verdict"] == p["contract_verdict"]


def test_a_failure_is_answered_by_a_newer_boot_that_came_up_a_crash_only_by_a_stop():
    """A newer boot of the shape that came up answers a failure to come up; a crash at runtime
    is answered only by a newer boot stopped on request (one still running proves nothing of the
    load that killed the other)."""
    from ledger.verdicts import ShapeRecord, Survival

    def boot(bid: int, verdict: str) -> Survival:
        return Survival(bid, verdict, verdict, None, 1)

    record = ShapeRecord("g", 5, 262144, [boot(4, "running"), boot(3, "crashed"), boot(2, "failed")])
    assert [(f.survival.boot, f.answered_by) for f in record.failures] == [(3, None), (2, 3)]
    assert record.verdict == "crashed"
    stopped = ShapeRecord("g", 5, 262144, [boot(5, "ok"), boot(3, "crashed")])
    assert [f.answered_by for f in stopped.failures] == [5] and stopped.verdict is None


# -- note -------------------------------------------------------------------------------------------------


def test_note_says_how_the_crashed_boot_ended(seeded, cli):
    out = cli("note", FIVE, "--against", "fp8-4x262144-ready").output
    assert f"survival        crashed: {CRASH_DETAIL} (was running)" in out.splitlines()


def test_note_trailers_carry_the_crash(seeded, cli):
    out = cli("note", FIVE, "--format", "trailers").output
    assert "Survival: crashed at runtime after 0:03:41: oom" in out.splitlines()


def test_note_on_another_boot_of_the_shape_names_the_crash(seeded, cli, tmp_path):
    """The 5-slot boot's log up to 'Application startup complete' (as a watch or an ingest sees
    it while it still serves), read as a boot of its own: it came up, and the note of it names
    the boot of its group and shape that crashed at runtime."""
    log = tmp_path / "fp8-5x262144-up.log"
    log.write_text("\n".join((REC / f"{FIVE}.log").read_text().splitlines()[:13]) + "\n")
    assert cli("ingest", str(log), "--label", "fp8-5-up").exit_code == 0
    out = cli("note", "fp8-5-up").output.splitlines()
    assert "same shape      5 x 262,144: crashed at runtime after 0:03:41: oom (boot 2)" in out
    trailers = cli("note", "fp8-5-up", "--format", "trailers").output.splitlines()
    assert "Ledger-Shape-Failure: 5 x 262,144: crashed at runtime after 0:03:41: oom (boot 2)" in trailers


def test_note_json_carries_the_survival_object(seeded, cli):
    a = as_json(cli, "note", FIVE)["a"]
    assert (a["survival"]["verdict"], a["survival"]["seconds"], a["shape_failures"]) == ("crashed", 221.0, [])


# -- sweep (more in test_sweep_and_decode) ---------------------------------------------------------------


def test_sweep_counts_the_crash_as_the_smallest_failing_rung(slots, cli):
    out = cli("sweep", "max_num_seqs", "--group", "fp8-4x262144-ready").output
    assert ("frontier: largest passing 4 (boot 3); smallest failing 5 (passed boot, crashed at runtime after "
            "0:03:41: oom, boot 2)") in out


# -- serve ----------------------------------------------------------------------------------------------


def test_the_check_page_and_its_json_say_crashed(five):
    from test_serve import pages

    with pages(five) as get:
        status, body = get("/api/check")
        assert status == 200 and json.loads(body)[0]["checks"][0]["verdict"] == "crashed"
        status, html = get("/check")
        assert status == 200 and 'class="verdict v-crashed failing"' in html and "passed every boot gate" in html


def test_the_deploys_page_shows_the_crash_as_failing(five):
    """The outcome's badge says it (a survival column would push the page past 1,280 px), its
    title names the survival verdict, and the JSON carries it."""
    from test_serve import pages

    with pages(five) as get:
        status, html = get("/")
        assert status == 200 and 'title="survival: crashed" class="failing"><span class="outcome o-crashed"' in html
        assert json.loads(get("/api/deploys")[1])[0]["verdicts"]["survival"] == "crashed"
