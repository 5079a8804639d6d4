"""`ledger plot history|runtime|deploy`: the charts of `ledger serve`'s pages in files, and how
the charts treat time, gaps, engines and long runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from conftest import REAL, ROOT
from dbutil import imports_after_each

if TYPE_CHECKING:
    import pandas as pd

F008 = next(REAL.glob("008_*.log"))
F062 = next(REAL.glob("062_*.log"))  # a config error: no KV figures at all
FIVE = ROOT / "fixtures" / "reconcile" / "fp8-5x262144-runtime-oom.log"


def test_an_unwritable_output_path_is_one_line(db, cli, tmp_path):
    cli("ingest", str(FIVE))
    r = cli("plot", "runtime", "1", "-o", str(tmp_path / "missing-dir" / "x.png"))
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [f"Error: {tmp_path / 'missing-dir' / 'x.png'}: cannot write: "
                                             "No such file or directory"]


def test_the_suffix_picks_svg_or_png(db, cli, tmp_path):
    cli("ingest", str(FIVE))
    assert cli("plot", "runtime", "1", "-o", str(tmp_path / "r.svg")).exit_code == 0
    svg = (tmp_path / "r.svg").read_text()
    assert "<svg" in svg and "log time" in svg and "decode throughput" in svg
    r = cli("plot", "runtime", "1", "-o", str(tmp_path / "r.jpg"))
    assert r.exit_code == 2 and "write .png or .svg" in r.output


def test_runtime_chart_marks_the_crash(db, cli, tmp_path):
    cli("ingest", str(FIVE))
    cli("plot", "runtime", "1", "-o", str(tmp_path / "r.svg"))
    assert "crashed: worker_died, oom, engine_dead" in (tmp_path / "r.svg").read_text()


def test_history_chart_has_time_outcomes_and_units(db, cli, tmp_path):
    cli("ingest", str(F008), str(FIVE), str(F062))
    assert cli("plot", "history", "-o", str(tmp_path / "h.svg")).exit_code == 0
    svg = (tmp_path / "h.svg").read_text()
    for text in ("boot start (log time)", "ready", "crashed", "failed", "tokens", "GiB"):
        assert text in svg


def test_deploy_chart(db, cli, tmp_path):
    cli("ingest", str(FIVE), "--label", "fp8-5slot")
    out = tmp_path / "d.png"
    assert cli("plot", "deploy", "fp8-5slot", "-o", str(out)).exit_code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = cli("plot", "deploy", "nothing-like-it", "-o", str(out))
    assert r.exit_code == 2 and "no deploy by that id, commit, digest or label" in r.output


def test_matplotlib_is_not_imported_before_a_chart_is_drawn(db, cli, tmp_path):
    """Its import is most of a chart's time (about a second): a plot that fails before it draws,
    and every other command, never pays it."""
    cli("ingest", str(FIVE))
    # one process for the three (a process each cost a start and a pandas import more)
    codes, loaded, err = imports_after_each(["--db", db, "plot", "runtime", "99", "-o", str(tmp_path / "r.png")],
                                            ["--db", db, "history"],
                                            ["--db", db, "plot", "runtime", "1", "-o", str(tmp_path / "r.png")], cwd=ROOT)
    assert codes == [2, 0, 0] and "no boot or deploy" in err
    assert "matplotlib" not in loaded[0] and "matplotlib" not in loaded[1]
    assert "matplotlib" in loaded[2]  # the probe sees it when a chart is drawn


def test_a_figure_a_boot_did_not_print_is_missing_not_zero(db):
    from click.testing import CliRunner

    from ledger.cli import main
    from ledger.db.connect import open_read_only
    from ledger.serve.data import history_frame

    CliRunner().invoke(main, ["ingest", str(F062), str(FIVE)])
    ledger = open_read_only(db)
    try:
        frame, _ = history_frame(ledger, None)
    finally:
        ledger.dispose()
    failed = frame[frame["outcome"] == "failed"]
    assert len(failed) == 1 and failed["kv_tokens"].isna().all()
    assert frame.loc[frame["outcome"] == "crashed", "kv_tokens"].tolist() == [1_350_182]


# -- runtime series -------------------------------------------------------------------------------------


# pandas and the chart modules are imported by the tests that use them, not when the module is
# collected: every xdist worker collects every module, and most workers never draw a chart


def _stats(times: list[pd.Timestamp], engines: int, decode: float = 100.0) -> pd.DataFrame:
    import pandas as pd

    from ledger.serve.data import RUNTIME_SERIES, SPEC_SERIES

    rows = []
    for i, t in enumerate(times):
        for e in range(engines):
            rows.append({"kind": "engine_stats", "line": i * engines + e + 1, "logged_at": str(t), "engine": e,
                         "prompt_throughput_tps": 1000.0, "generation_throughput_tps": decode + e,
                         "running_reqs": 2.0, "waiting_reqs": 0.0, "gpu_kv_cache_usage_pct": 10.0 * (e + 1)})
    frame = pd.DataFrame(rows, columns=["kind", "line", "logged_at", "engine", *RUNTIME_SERIES, *SPEC_SERIES])
    frame["at"] = pd.to_datetime(frame["logged_at"])
    return frame


def test_a_ten_hour_four_engine_run_is_resampled_and_summed():
    import pandas as pd

    from ledger.serve import charts

    start = pd.Timestamp("2026-10-01 09:00:00")
    frame = _stats([start + pd.Timedelta(seconds=10 * i) for i in range(3600)], engines=4)
    series, _, how = charts.runtime_series(frame)
    decode = series["generation_throughput_tps"]["all engines"]
    assert len(decode) <= charts.MAX_POINTS and how == "mean per 2min"
    assert decode.iloc[0] == pytest.approx(100 + 101 + 102 + 103)  # engines summed
    assert series["gpu_kv_cache_usage_pct"]["all engines"].iloc[0] == pytest.approx(25.0)  # a share: averaged
    split, _, _ = charts.runtime_series(frame, split=True)
    assert list(split["generation_throughput_tps"]) == ["engine 0", "engine 1", "engine 2", "engine 3"]


def test_a_silence_in_the_log_is_a_gap_in_the_line():
    import pandas as pd

    from ledger.serve import charts

    start = pd.Timestamp("2026-10-01 09:00:00")
    times = [start + pd.Timedelta(seconds=10 * i) for i in range(20)]
    times += [times[-1] + pd.Timedelta(minutes=10) + pd.Timedelta(seconds=10 * i) for i in range(20)]
    series, _, how = charts.runtime_series(_stats(times, engines=1))
    decode = series["generation_throughput_tps"]["engine 0"]
    assert how == "every stats interval"
    assert decode.notna().sum() == 40 and decode.isna().sum() == 1
    assert decode.index.get_loc(decode[decode.isna()].index[0]) == 20  # between the two stretches
