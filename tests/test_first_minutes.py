"""The first ten minutes (issue 23): what a new user meets on a terminal — colour that survives
Debian's pager, one-line usage errors, honest words where a log has nothing to say, and the
Datasette metadata shipped with the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import REAL, SYNTH

RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"


def _through_a_terminal(args: list[str], env: dict[str, str], keys: str = "q") -> str:
    """What a person sees when ``args`` runs on a real terminal (util-linux ``script`` gives it
    a pty); ``keys`` are typed to it (``q`` quits less)."""
    command = " ".join(["exec", sys.executable, "-m", "ledger", *args])
    run = subprocess.run(["script", "-qec", command, "/dev/null"], input=keys, text=True,
                         capture_output=True, env=env, timeout=60)
    return run.stdout


@pytest.mark.skipif(not (shutil.which("script") and shutil.which("less")), reason="needs script and less")
def test_show_in_debians_less_shows_colour_not_escape_codes(tmp_path):
    ledger = tmp_path / "l.db"
    subprocess.run([sys.executable, "-m", "ledger", "ingest", "--db", str(ledger), "--year", "2026",
                    str(RESTART)], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PAGER", "LESS", "NO_COLOR", "MANPAGER")}
    env.update(TERM="xterm", COLUMNS="100", LINES="10")
    screen = _through_a_terminal(["--db", str(ledger), "show", "1"], env)
    assert "failed" in screen
    assert "ESC[" not in screen  # less without -R prints the escapes as text
    assert "\x1b[31m" in screen or "\x1b[1;31m" in screen or "\x1b[31;1m" in screen


def test_the_pager_keeps_a_less_setting_of_the_users_own(monkeypatch):
    import click

    from ledger.render import terminal

    seen: list[str | None] = []
    monkeypatch.setenv("LESS", "-S")
    monkeypatch.setattr(terminal, "_isatty", lambda stream: True)
    monkeypatch.setattr(terminal, "height", lambda stream=None: 5)
    monkeypatch.setattr(click, "echo_via_pager", lambda text, color=None: seen.append(os.environ.get("LESS")))
    terminal.echo_long("\n".join(str(i) for i in range(20)))
    assert seen == ["-S"]


@pytest.mark.parametrize("args, help_of", [
    (["history", "--limit", "-1"], "ledger history"),
    (["history", "--outcome", "readyy"], "ledger history"),
    (["export", "--format", "markdown"], "ledger export"),
    (["histroy"], "ledger"),
    (["deploy", "set"], "ledger deploy set"),
])
def test_a_usage_error_is_one_error_line_and_the_help_hint(args, help_of, tmp_path):
    run = subprocess.run([sys.executable, "-m", "ledger", "--db", str(tmp_path / "l.db"), *args],
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("Error: "), run.stderr
    assert lines[1] == f"Try '{help_of} --help' for help."


# -- Datasette, the tool these users already run ---------------------------------------------------


def test_every_table_view_and_column_of_the_schema_is_described():
    from ledger.datasette import metadata
    from ledger.db.sqlite import head_columns

    schema = head_columns()
    tables = metadata(schema)["databases"]["ledger"]["tables"]
    assert set(tables) == set(schema)
    for name, columns in schema.items():
        assert tables[name]["description"]
        assert list(tables[name]["columns"]) == columns, name


def test_an_undescribed_column_is_named():
    from ledger.datasette import metadata

    with pytest.raises(KeyError, match="boot.new_figure"):
        metadata({"boot": ["id", "new_figure"]})


def test_datasette_metadata_names_the_database_after_the_ledger_file(cli, tmp_path):
    import json

    doc = json.loads(cli("--db", str(tmp_path / "demo.db"), "db", "datasette").output)
    assert list(doc["databases"]) == ["demo"]
    assert not (tmp_path / "demo.db").exists()  # it reads no ledger


def test_datasette_shows_the_ledger_with_descriptions_units_and_canned_queries(tmp_path, cli):
    """The metadata in real Datasette: the raw sample rows hidden, bytes columns with units, and
    the canned queries answering on the seeds' boots (the 6-slot boot breaks its contract)."""
    datasette_app = pytest.importorskip("datasette.app")
    import asyncio
    import json

    from conftest import ROOT

    ledger = tmp_path / "ledger.db"
    for name in ("fp8-4x262144-ready", "bf16-3x241664-ready"):
        run = cli("--db", str(ledger), "ingest", str(ROOT / "fixtures" / "reconcile" / f"{name}.log"), "--label", name)
        assert run.exit_code == 0, run.output
    meta = json.loads(cli("--db", str(ledger), "db", "datasette").output)

    async def visit() -> dict[str, object]:
        ds = datasette_app.Datasette([str(ledger)], metadata=meta)
        pages = {}
        for path in ("/ledger.json", "/ledger/boot_figures.json?_shape=objects",
                     "/ledger/kv_tokens_per_deploy.json?_shape=objects", "/ledger/ooms_by_phase.json",
                     "/ledger/boot_figures", "/-/metadata.json"):
            response = await ds.client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
            pages[path] = response.json() if ".json" in path else response.text
        return pages

    pages = asyncio.run(visit())
    listing = {t["name"]: t for t in pages["/ledger.json"]["tables"]}
    assert listing["runtime_sample_row"]["hidden"] and not listing["boot"]["hidden"]
    tokens = [r["kv_cache_tokens"] for r in pages["/ledger/kv_tokens_per_deploy.json?_shape=objects"]["rows"]]
    assert sorted(tokens) == [798280, 1079582]
    assert "GiB" in pages["/ledger/boot_figures"] or "byte" in pages["/ledger/boot_figures"]
    assert pages["/-/metadata.json"]["databases"]["ledger"]["tables"]["fact"]["description"]


def test_runtime_of_a_boot_only_log_says_there_are_no_stats_intervals(db, cli):
    cli("ingest", str(RESTART))
    out = cli("runtime", "1").output
    assert "no stats intervals in this log" in out and "no spec-decode reports" in out
    assert "median —" not in out and "over 0 of 0" not in out


# -- one unit convention ----------------------------------------------------------------------------


def test_check_states_the_contract_margin_in_vllms_units(db, cli):
    from conftest import ROOT

    cli("ingest", str(ROOT / "fixtures" / "reconcile" / "fp8-4x262144-ready.log"), "--label", "fp8-4slot")
    line = next(x for x in cli("check").output.splitlines() if "capacity contract" in x)
    assert "margin +31,006 tokens (227.64 MiB)" in line and " MB)" not in line


# -- marks explained where they appear ---------------------------------------------------------


def test_history_says_what_its_marks_mean_under_the_table(db, cli):
    cli("ingest", str(RESTART))  # journald: no year printed, no version printed
    lines = cli("history").output.splitlines()
    assert "2026" in lines[2] and lines[2].split()[2].endswith("*")
    assert lines[-2] == "" and lines[-1] == "* year not printed, inferred"


def test_history_names_no_mark_that_is_not_shown(db, cli):
    from conftest import ROOT

    cli("ingest", str(ROOT / "fixtures" / "reconcile" / "fp8-4x262144-ready.log"), "--label", "fp8")
    out = cli("history").output
    assert "inferred" not in out and "not printed" not in out


def test_the_legend_is_for_people_only(db, cli):
    cli("ingest", str(RESTART))
    for fmt in ("csv", "json", "jsonl", "markdown"):
        assert "not printed" not in cli("history", "--format", fmt).output


def test_the_legend_fits_the_terminal(db, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    for log in sorted(REAL.glob("*.log"))[:12]:
        cli("ingest", str(log))
    out = cli("history").output.split("\n\n")[-1].splitlines()
    assert out == ["* year not printed, inferred", "? version not printed", "- no verdict (figures not printed)"]


# -- the web view's charts --------------------------------------------------------------------------

_STATS = ("(APIServer pid=1) INFO {at:%m-%d %H:%M:%S} [loggers.py:271] Engine 000: Avg prompt throughput: 2.5 tokens/s, "
          "Avg generation throughput: {tps} tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
          "GPU KV cache usage: 5.2%, Prefix cache hit rate: 0.0%\n")


def _served(tmp_path, intervals: int):
    """fixture 008's start-up, then ``intervals`` stats lines 10 s apart in vLLM 0.20's wording,
    busy (121.5 t/s, one request running) and idle (0.0 t/s, none running) in turn."""
    import datetime as dt

    head = next(REAL.glob("008_*.log")).read_text().split("# ---\n", 1)[1].splitlines(keepends=True)[:3]
    start = dt.datetime(2026, 5, 4, 1, 10, 0)
    lines = [_STATS.format(at=start + dt.timedelta(seconds=10 * i), tps="121.5" if i % 2 == 0 else "0.0",
                           running=1 if i % 2 == 0 else 0) for i in range(intervals)]
    log = tmp_path / "served.log"
    log.write_text("".join(head + lines))
    return log


def _chart_of(db, cli, log):
    from ledger.db.connect import connect
    from ledger.serve import charts, data

    assert cli("ingest", str(log), "--year", "2026").exit_code == 0
    ledger = connect(db, mode="read")
    try:
        frame, report = data.runtime_frame(ledger, "1")
    finally:
        ledger.dispose()
    return frame, report, charts


def test_the_decode_chart_averages_only_intervals_with_running_requests(db, cli, tmp_path):
    pytest.importorskip("matplotlib")
    frame, report, charts = _chart_of(db, cli, _served(tmp_path, 2000))  # binned: more than MAX_POINTS
    series, _, how = charts.runtime_series(frame)
    decode = next(iter(series["generation_throughput_tps"].values())).dropna()
    assert how.startswith("mean per") and len(decode) < 2000
    assert report["decode_tps"]["median"] == 121.5
    assert decode.min() == decode.max() == 121.5  # the idle 0.0 t/s intervals are not averaged in


def test_a_short_runs_time_axis_carries_the_date_and_clock_times(db, cli, tmp_path):
    pytest.importorskip("matplotlib")
    frame, report, charts = _chart_of(db, cli, _served(tmp_path, 6))  # a minute of serving
    fig = charts.runtime_figure(frame, report)
    fig.canvas.draw()
    axis = fig.axes[-1]
    ticks = [t.get_text() for t in axis.get_xticklabels() if t.get_text()]
    assert ticks and all(len(t) == 8 and t.count(":") == 2 for t in ticks), ticks  # 01:10:20, not "20"
    assert "2026-05-04" in axis.get_xlabel()


# -- terminal fitting: the least identifying characters first -------------------------------------

REC = SYNTH.parent / "reconcile"


@pytest.fixture
def two_tuning_labels(db, cli):
    """Two deploys whose labels differ only at their ends, on the fork's 0.20.2rc1 dev build."""
    cli("ingest", str(REC / "fp8-4x262144-ready.log"), "--label", "qwen-fp8-tuned")
    cli("ingest", str(REC / "fp8-3x262144-ready.log"), "--label", "qwen-fp8-6slot")
    return db


def test_history_at_80_columns_keeps_labels_apart_and_versions_to_their_release(two_tuning_labels, cli,
                                                                                 monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for log in sorted(REAL.glob("*.log"))[:8]:
        cli("ingest", str(log))
    lines = cli("history").output.splitlines()
    assert max(map(len, lines)) <= 80
    rows = [line for line in lines if "qwen" in line]
    assert len(rows) == 2 and rows[0].split()[2] != rows[1].split()[2]  # still told apart
    assert all("0.20.2rc1 " in row and "dev9" not in row for row in rows)  # the release, whole


def test_diff_and_show_never_cut_a_digit_or_a_fact_name(two_tuning_labels, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    from ledger.parsers.vocabulary import FACTS

    for out in (cli("diff", "qwen-fp8-tuned", "qwen-fp8-6slot").output, cli("show", "1").output):
        for line in out.splitlines():
            assert len(line) <= 80
            words = line.split()
            if words and words[0].rstrip("…") in {n[: len(words[0]) - 1] for n in FACTS} and words[0].endswith("…"):
                pytest.fail(f"a fact name cut: {line}")
            assert not any(w[:1].isdigit() and w.endswith("…") for w in words), line  # 8,310,7…


def test_one_line_reports_wrap_at_words_to_the_terminal(two_tuning_labels, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    outputs = [cli("ingest", str(RESTART)).output, cli("runtime", "1").output,
               cli("predict", "--like", "qwen-fp8-tuned", "--kv-bytes", "7.3e9", "--max-num-seqs", "2",
                   "--max-model-len", "262144").output]
    for out in outputs:
        assert out.strip() and max(len(line) for line in out.splitlines()) <= 60, out
    assert "\n    kv memory 4.39 GiB  weights 16.80 GiB\n" in outputs[0]  # parts go to the next line whole


def test_a_long_history_goes_through_the_pager_on_a_terminal(db, cli, monkeypatch):
    import click

    from ledger.render import terminal

    for log in sorted(REAL.glob("*.log"))[:30]:
        cli("ingest", str(log))
    paged: list[str] = []
    monkeypatch.setattr(terminal, "_isatty", lambda stream: True)
    monkeypatch.setattr(click, "echo_via_pager", lambda pieces, color=None: paged.extend(pieces))
    cli("history")
    assert sum(piece.count("\n") for piece in paged) > 30 and paged[0].startswith("boot")


def test_the_deploy_chart_joins_only_boots_of_one_comparable_group(db, cli):
    pytest.importorskip("matplotlib")
    from ledger.db.connect import connect
    from ledger.serve import charts, data

    for name in ("fp8-3x262144-ready", "fp8-4x262144-ready", "bf16-3x241664-ready"):  # fp8 twice, bf16
        assert cli("ingest", str(REC / f"{name}.log"), "--label", "ladder").exit_code == 0
    ledger = connect(db, mode="read")
    try:
        frame, title = data.deploy_frame(ledger, "ladder")
    finally:
        ledger.dispose()
    fig = charts.boots_figure(frame, title)
    joined = [len(line.get_xdata()) for line in fig.axes[0].get_lines()]
    assert joined == [2]  # the two fp8 boots; the bf16 boot stands alone


# -- a boot read from a pipe can be named ----------------------------------------------------------


def test_a_boot_from_a_pipe_is_stored_under_the_source_name_given(db, cli):
    import json

    r = cli("ingest", "-", "--source-name", "docker:vllm@host-a", "--year", "2026", input=RESTART.read_text())
    assert r.exit_code == 0 and "(docker:vllm@host-a:1-25)" in r.output
    sources = {o["source"]["path"] for o in json.loads(cli("export").output)}
    assert sources == {"docker:vllm@host-a"}


def test_a_source_name_names_one_log_only(db, cli, tmp_path):
    r = cli("ingest", str(RESTART), str(RESTART), "--source-name", "x")
    assert r.exit_code == 2 and r.output.startswith("Error: --source-name names one LOG")


def test_the_decode_bins_the_database_averages_leave_idle_intervals_out_too(db, cli, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from ledger.serve import data

    monkeypatch.setattr(data, "DOWNSAMPLE_OVER", 1000)  # 2,000 intervals: binned by the database
    frame, report, charts = _chart_of(db, cli, _served(tmp_path, 2000))
    assert frame.attrs.get("bin")  # the SQL path
    series, _, _ = charts.runtime_series(frame)
    decode = next(iter(series["generation_throughput_tps"].values())).dropna()
    assert len(decode) and decode.min() == decode.max() == 121.5
