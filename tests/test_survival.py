"""Runtime survival in the verdicts (issue 37, item 4): how a boot ended is a verdict of its own.
The seeds: five 262,144-token contexts "passed every boot gate" and a real request then killed
Worker_TP1 — "Boot is not proof of runtime survivability."  That boot is
fixtures/reconcile/fp8-5x262144-runtime-oom.log (ready at line 10, 02:11:33; the worker's death at
line 17, 02:15:14: 0:03:41 after ready).  A deploy whose latest boot failed, or crashed after
ready, is never ``ok``: ``check`` exits 1, history's verdict says it, and the pages show the
same objects."""

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


def test_a_requested_stop_once_stored_is_ok(seeded):
    """The hook for how a boot ended (the ingest does not store it yet): a ready boot that was
    stopped on request, with no failure before, is the one survival that is ``ok``."""
    from ledger.db.connect import connect
    from ledger.render.survival import survival_text
    from ledger.verdicts import survival

    s = survival(connect(seeded, mode="read"), [3], end={3: "stopped"})[3]
    assert (s.verdict, s.end) == ("ok", "stopped")
    assert survival_text(s.to_json()) == "stopped on request 0:00:02 after ready (ready at line 10, last line 13), " \
        "no failure before it"


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


# -- serve ----------------------------------------------------------------------------------------------


def test_the_check_page_and_its_json_say_crashed(five):
    from test_serve import pages

    with pages(five) as get:
        status, body = get("/api/check")
        assert status == 200 and json.loads(body)[0]["checks"][0]["verdict"] == "crashed"
        status, html = get("/check")
        assert status == 200 and 'class="verdict v-crashed failing"' in html and "passed every boot gate" in html


def test_the_deploys_page_shows_the_crash_as_failing(five):
    from test_serve import pages

    with pages(five) as get:
        status, html = get("/")
        assert status == 200 and 'class="verdict v-crashed failing"' in html
        assert json.loads(get("/api/deploys")[1])[0]["verdicts"]["survival"] == "crashed"
