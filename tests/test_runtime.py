"""Runtime: the series of real runtime excerpts, `ledger runtime`, `ledger plot`, streaming from
stdin, and the spool that keeps memory flat."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from conftest import REAL, ROOT
from dbutil import rows as dbrows

F008 = next(REAL.glob("008_*.log"))
F028 = next(REAL.glob("028_*.log"))
F058 = next(REAL.glob("058_*.log"))
FIVE = ROOT / "fixtures" / "reconcile" / "fp8-5x262144-runtime-oom.log"
RESTART = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"


def test_runtime_of_a_serving_boot(db, cli):
    cli("ingest", str(F008))
    r = json.loads(cli("runtime", "1", "--format", "json").output)
    assert r["decode_tps"]["median"] == pytest.approx((89.6 + 90.1) / 2)
    assert (r["decode_tps"]["max"], r["decode_tps"]["intervals_with_running_requests"]) == (90.1, 2)
    assert r["peak_gpu_kv_cache_usage_pct"] == 5.2
    assert r["spec_decode"]["mean_acceptance_length"] == pytest.approx((2.91 + 2.66) / 2)
    assert r["spec_decode"]["draft_acceptance_rate_pct"] == pytest.approx((38.2 + 33.3) / 2)
    assert r["requests"] == {"access_lines": 2, "request_lines": 0}
    assert r["uptime_seconds"] == 20 and r["ended"]["how"] == "still serving when the log ends"


def test_decode_speed_ignores_idle_intervals(db, cli):
    cli("ingest", str(F028))
    r = json.loads(cli("runtime", "1", "--format", "json").output)
    assert r["decode_tps"]["max"] == 1242.7 and r["decode_tps"]["intervals_with_running_requests"] == 5
    assert r["peak_gpu_kv_cache_usage_pct"] == 98.4


def test_a_runtime_crash_says_how_long_after_ready(db, cli):
    """'Five 262144-token contexts passed every boot gate ... but ... killed Worker_TP1 with
    torch.OutOfMemoryError' — boot is not proof of runtime survivability."""
    cli("ingest", str(FIVE))
    r = json.loads(cli("runtime", "1", "--format", "json").output)
    assert r["outcome"] == "crashed"
    e = r["ended"]
    assert e["kinds"] == ["worker_died", "oom", "engine_dead"]
    assert e["seconds_after_ready"] == 221  # ready 02:11:33, crash 02:15:14
    assert e["figures"]["tried_to_allocate_bytes"] == 50 * 2**20 and e["figures"]["free_bytes"] == 0
    assert "0:03:41 after ready" in cli("runtime", "1").output


def test_a_crash_with_no_ready_line_in_the_excerpt(db, cli):
    cli("ingest", str(F058))
    r = json.loads(cli("runtime", "1", "--format", "json").output)
    assert r["ended"]["kinds"] == ["oom", "engine_dead"] and r["ended"]["seconds_after_ready"] is None


def test_runtime_samples_keep_their_time_and_engine(db, cli):
    cli("ingest", str(F008), "--year", "2026")
    rows = dbrows(db, "SELECT kind, line, logged_at, engine, generation_throughput_tps, spec_per_position_acceptance "
                      "FROM runtime_sample ORDER BY line")
    assert rows[0] == ("spec_decode", 14, "2026-05-04 01:06:43", None, None, "[0.77, 0.523, 0.329, 0.181, 0.106]")
    assert rows[1][:5] == ("engine_stats", 16, "2026-05-04 01:06:53", 0, 89.6)


def _png_ok(path) -> None:
    import matplotlib.image as mpimg

    assert path.stat().st_size > 10_000
    pixels = mpimg.imread(path)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 300
    assert pixels[..., :3].std() > 0.05  # not blank


def test_plot_runtime_writes_a_chart(db, cli, tmp_path):
    cli("ingest", str(F028))
    out = tmp_path / "rt.png"
    r = cli("plot", "runtime", "1", "-o", str(out))
    assert r.exit_code == 0 and out.exists()
    _png_ok(out)


def test_plot_history_writes_a_chart(db, cli, tmp_path):
    cli("ingest", str(F008), str(FIVE), str(RESTART))
    out = tmp_path / "h.png"
    assert cli("plot", "history", "-o", str(out)).exit_code == 0
    _png_ok(out)


def test_plot_without_samples_is_one_line(db, cli, tmp_path):
    cli("ingest", str(RESTART))
    r = cli("plot", "runtime", "1", "-o", str(tmp_path / "x.png"))
    assert r.exit_code == 2 and "no stats intervals to plot" in r.output


def test_stdin_stores_each_boot_as_it_completes(db):
    """`journalctl -u vllm -f | ledger ingest -`: the first boot is in the ledger while the
    stream is still open."""
    lines = RESTART.read_text().splitlines(keepends=True)
    proc = subprocess.Popen([sys.executable, "-m", "ledger", "ingest", "--db", str(db), "--year", "2026", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write("".join(lines[:27]).encode())  # boot 1 and the first lines of boot 2
        proc.stdin.flush()
        deadline = time.time() + 30
        first = []
        while time.time() < deadline and not first:
            time.sleep(0.2)
            try:
                first = dbrows(db, "SELECT outcome FROM boot")
            except Exception:  # noqa: BLE001 - not created yet
                pass
        assert first == [("failed",)]
        assert proc.poll() is None  # still reading
        proc.stdin.write("".join(lines[27:]).encode())
        proc.stdin.close()
        proc.wait(timeout=30)
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.decode().count("boot ") == 2
    assert dbrows(db, "SELECT outcome, source_sha256 IS NOT NULL FROM boot ORDER BY id") == [
        ("failed", True), ("ready", True)]


def test_the_spool_spills_to_disk_and_gives_everything_back():
    from ledger.db.staging import SampleSpool, Staging
    from ledger.parsers import RuntimeSample

    spool = SampleSpool(Staging(None))
    spool.LIMIT = 10
    samples = [RuntimeSample.of("engine_stats", i, "10-01 09:00:00", 0, {"running_reqs": i}) for i in range(35)]
    for start, end in [(0, 1), (1, 4), (4, 16), (16, 17), (17, 30), (30, 35)]:  # lists as the parser hands them
        spool.add(samples[start:end])
    assert spool.table is not None and spool.held == 5  # 30 staged, 5 in memory
    assert spool.counts() == {"engine_stats": 35, "spec_decode": 0}
    got = [row for batch in spool.batches() for row in batch]
    assert [r[1] for r in got] == list(range(35))


@pytest.mark.parametrize("limit", [7, 10_000])  # staged (copied in by the database), or straight from memory
def test_every_runtime_sample_is_stored_as_the_parser_read_it(db, cli, tmp_path, monkeypatch, limit):
    from ledger import parsers
    from ledger.db.staging import SampleSpool

    log = tmp_path / "runtime.log"
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(log), "--mb", "1"], check=True)
    (boot,) = parsers.parse_file(str(log), year=2026)
    monkeypatch.setattr(SampleSpool, "LIMIT", limit)
    cli("ingest", str(log), "--year", "2026")
    stored = dbrows(db, "SELECT kind, line, logged_at, engine, running_reqs, gpu_kv_cache_usage_pct, "
                        "spec_accepted_tokens, spec_per_position_acceptance FROM runtime_sample ORDER BY id")
    expected = [(s.kind, s.line, f"2026-{s.timestamp}", s.engine, s.values.get("running_reqs"),
                 s.values.get("gpu_kv_cache_usage_pct"), s.values.get("spec_accepted_tokens"),
                 json.dumps(s.values["spec_per_position_acceptance"]) if s.kind == "spec_decode" else None)
                for s in boot.runtime]
    assert len(expected) > 50 and stored == expected


def test_two_boots_with_staged_samples_each_keep_their_own(db, cli, tmp_path, monkeypatch):
    from ledger import parsers
    from ledger.db.staging import SampleSpool

    one, two = tmp_path / "one.log", tmp_path / "two.log"
    for path, seed in ((one, "3"), (two, "4")):
        subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(path), "--mb", "0.5",
                        "--seed", seed], check=True)
    log = tmp_path / "restarted.log"
    log.write_bytes(one.read_bytes() + two.read_bytes())  # the server came back: a second boot
    boots = parsers.parse_file(str(log), year=2026)
    assert len(boots) == 2
    monkeypatch.setattr(SampleSpool, "LIMIT", 5)
    cli("ingest", str(log), "--year", "2026")
    for boot_id, boot in enumerate(boots, start=1):
        stored = dbrows(db, f"SELECT kind, line, engine, generation_throughput_tps, spec_drafted_tokens "
                            f"FROM runtime_sample WHERE boot_id = {boot_id} ORDER BY id")
        expected = [(s.kind, s.line, s.engine, s.values.get("generation_throughput_tps"),
                     s.values.get("spec_drafted_tokens")) for s in boot.runtime]
        assert len(expected) > 20 and stored == expected


def test_pandas_frames_for_notebooks(db, cli):
    import ledger.frames as lf

    cli("ingest", str(F008), "--year", "2026", "--label", "dual-4090")
    facts = lf.facts(db)
    wide = facts.pivot_table(index="boot_id", columns="name", values="value", aggfunc="min")
    assert wide.loc[1, "kv_cache_tokens"] == 67728
    assert lf.boots(db).loc[0, "label"] == "dual-4090"
    rt = lf.runtime(db, 1)
    assert len(rt) == 4 and str(rt["logged_at"].iloc[0]) == "2026-05-04 01:06:43"
    assert list(lf.view("kv_cost_per_token", db)["boot_id"]) == [1]


@pytest.mark.parametrize("limit", [1, 10_000])  # staged (converted by the database), or straight from memory
@pytest.mark.parametrize(("year", "first"), [(2026, None), (2024, "2024-02-29 01:06:53")])
def test_a_stamp_that_is_no_real_date_keeps_its_text_staged_or_not(db, cli, tmp_path, monkeypatch, limit, year, first):
    """A sample's time is its stamp in the boot's year where that is a real date and time (a
    February 29 in a leap year); where it is not (February 29 in a common year, February 30)
    it is kept as the text the log printed, whichever way the samples reach the ledger."""
    from ledger.db.staging import SampleSpool

    lines = F008.read_text().splitlines(keepends=True)
    stats = [i for i, line in enumerate(lines) if "Avg prompt throughput" in line]
    lines[stats[0]] = lines[stats[0]].replace("05-04 01:06:53", "02-29 01:06:53")
    lines[stats[1]] = lines[stats[1]].replace("05-04 01:07:03", "02-30 01:07:03")
    log = tmp_path / "odd-days.log"
    log.write_text("".join(lines))
    monkeypatch.setattr(SampleSpool, "LIMIT", limit)
    assert cli("ingest", "--year", str(year), str(log)).exit_code == 0
    got = dbrows(db, "SELECT r.logged_at_num IS NULL, s.logged_at FROM runtime_sample s "
                     "JOIN runtime_sample_row r ON r.boot_id = s.boot_id AND r.id = s.id "
                     "WHERE s.kind = 'engine_stats' ORDER BY s.id")
    assert got == [(first is None, first or f"{year}-02-29 01:06:53"), (True, f"{year}-02-30 01:07:03")]
