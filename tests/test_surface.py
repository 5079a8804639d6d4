"""The everyday surface (issue 13): one output contract on every command, tables that fit the
terminal, honest filters and exit codes, fixing mistakes, and the small things users expect.

The JSON contract (docs/output-contract.md): a boot id is a string everywhere; a
timestamp is ISO 8601 with ``year_inferred`` beside it; missing is null, never ""."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REAL, ROOT, SYNTH, ledger_on
from dbutil import rows, sqlite_only

RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"
F008 = next(REAL.glob("008_*.log"))  # stats and spec-decode lines
REC = ROOT / "fixtures" / "reconcile"
RADIANCE = ROOT / "fixtures" / "radiance"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$")
ANSI = "\x1b["


def no_empty_strings(obj, where="$"):
    """Every "" in a JSON document, by path (the contract says null)."""
    found = []
    if obj == "":
        found.append(where)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            found += no_empty_strings(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += no_empty_strings(v, f"{where}[{i}]")
    return found


def as_json(cli, *args):
    r = cli(*args, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.output)


@pytest.fixture
def restart(filled):
    """Two boots (failed, then ready) of one deploy, year inferred."""
    return filled("surface-restart", lambda db: ledger_on(db, "ingest", str(RESTART), "--label", "qwen32"))


def _seed(db: str) -> None:
    for name in ("bf16-3x241664-ready", "fp8-4x262144-ready", "fp8-3x262144-ready"):
        ledger_on(db, "ingest", str(REC / f"{name}.log"), "--label", name)


@pytest.fixture
def seeded(filled):
    return filled("surface-seeded", _seed)


# -- the JSON contract, command by command ---------------------------------------------------------


def test_history_json_contract(restart, cli):
    data = as_json(cli, "history")
    assert [d["boot"] for d in data] == ["2", "1"]
    for d in data:
        assert ISO.match(d["started_at"]) and d["year_inferred"] is True
        assert d["engine_version"] == "0.20.2" and no_empty_strings(d) == []


def test_history_json_missing_is_null(db, cli):
    cli("ingest", str(next(REAL.glob("050_*.log"))))  # no engine version printed
    (d,) = as_json(cli, "history")
    assert d["engine_version"] is None and d["kv_tokens"] is None and no_empty_strings(d) == []
    assert d["verdict"] is None  # no view had enough figures: null, not "" or "insufficient"


def test_show_json_contract(restart, cli):
    obj = as_json(cli, "show", "2")
    assert obj["boot"] == "2" and ISO.match(obj["started_at"]) and obj["year_inferred"] is True
    assert no_empty_strings(obj) == []


def test_export_json_contract_times(restart, cli):
    objs = as_json(cli, "export")
    assert [o["boot"] for o in objs] == ["1", "2"]
    assert all(ISO.match(o["started_at"]) and o["year_inferred"] is True for o in objs)


def test_diff_json_contract(restart, cli):
    d = as_json(cli, "diff", "1", "2")
    assert (d["a"]["boot"], d["b"]["boot"]) == ("1", "2")


def test_runtime_json_contract(db, cli):
    cli("ingest", str(F008))
    r = as_json(cli, "runtime", "1")
    assert r["boot"] == "1" and isinstance(r["year_inferred"], bool)
    assert r["ready_at"] is None or ISO.match(r["ready_at"])
    assert r["ended_at"] is None or ISO.match(r["ended_at"])


def test_check_json_contract(seeded, cli):
    data = as_json(cli, "check")
    assert data and all(isinstance(c["boot"], str) and c["boot"].isdigit() for c in data)
    assert all(isinstance(c["failing"], bool) for c in data) and no_empty_strings(data) == []


def test_deploy_list_json_contract(seeded, cli):
    cli("deploy", "set", "fp8-4x262144-ready", "card_ceiling_bytes=29120MiB")
    data = as_json(cli, "deploy", "list")
    d = next(d for d in data if d["label"] == "fp8-4x262144-ready")
    assert d["settings"] == {"card_ceiling_bytes": 29120 * 2**20} and d["boots"] == 1  # a number, not text
    assert next(d for d in data if d["label"] == "bf16-3x241664-ready")["settings"] == {}
    assert no_empty_strings(data) == []


@sqlite_only
def test_db_current_json_contract(restart, cli):
    from ledger.db.columns import HEAD_REVISION

    d = as_json(cli, "db", "current")
    assert d["path"] == restart and d["revision"] == HEAD_REVISION and d["at_head"] is True


@sqlite_only
def test_copy_json_contract(restart, cli, tmp_path):
    dst = str(tmp_path / "copy.db")
    d = as_json(cli, "copy", restart, dst)
    assert (d["copied"], d["present"], d["dst"]) == (2, 0, dst)


def test_grammar_list_json_contract(cli):
    data = as_json(cli, "grammar", "list")
    assert data[0]["pack"] == "vllm" and data[0]["path"] is None and no_empty_strings(data) == []


def test_grammar_check_json_contract(cli):
    d = as_json(cli, "grammar", "check", "radiance", str(RADIANCE / "fp8-3x200k-ready.log"))
    assert d["pack"] == "radiance" and d["lines"] > 0 and d["matches"]
    hit = next(m for m in d["matches"] if m["matched"])
    assert set(hit["first_match"]) == {"log", "line", "values"}


def test_sql_json_contract(restart, cli):
    assert as_json(cli, "sql", "SELECT id FROM boot ORDER BY id") == [{"id": 1}, {"id": 2}]


def test_ingest_json_is_an_alias_of_format_json(db, cli, tmp_path):
    a = json.loads(cli("ingest", str(RESTART), "--json").output)
    b = json.loads(cli("ingest", str(F008), "--format", "json").output)
    assert [o["boot"] for o in a] == ["1", "2"] and [o["boot"] for o in b] == ["3"]


def test_every_row_command_offers_the_same_format_names(cli):
    for command in (["history"], ["show", "1"], ["sql", "x"], ["diff", "1", "2"], ["check"], ["deploy", "list"],
                    ["grammar", "list"], ["grammar", "check", "vllm"], ["sweep", "max_model_len"]):
        out = cli(*command, "--help").output
        assert "table|markdown|csv|json|jsonl" in out.replace("\n", "").replace(" ", ""), command


# -- tables that fit the terminal ------------------------------------------------------------------


def test_history_fits_80_columns(seeded, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for log in sorted(REAL.glob("*.log"))[:12]:
        cli("ingest", str(log))
    out = cli("history").output.splitlines()
    assert len(out) > 10 and max(len(line) for line in out) <= 80
    assert out[0].split() == ["boot", "started", "deploy", "vllm", "outcome", "kv", "tokens", "conc", "verdict"]


def test_history_wide_has_every_column(restart, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    head = cli("history", "--wide").output.splitlines()[0]
    assert "kv memory" in head and "weights" in head and "source" in head and "vram_check" in head


def test_history_columns_picks_columns(restart, cli):
    assert cli("history", "--columns", "boot,outcome", "--format", "csv").output.splitlines() == \
        ["boot,outcome", "2,ready", "1,failed"]
    r = cli("history", "--columns", "boot,nope")
    assert r.exit_code == 2 and "nope: no such column" in r.output


def test_a_table_without_rows_is_its_headers_over_their_dashes():
    """(tabulate 0.9 fails on column alignments without rows; the layout gives it none there.)"""
    from ledger.render.table import layout

    assert layout([], ["name", "value"], align_right=["value"]) == "name  value\n----  -----"


def test_check_fits_80_columns(cli, db, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for name, label in (("fp8-3x200k-ready", "fp8-3slot"), ("bf16-2x200k-ready", "bf16-2slot")):
        cli("ingest", "--grammar", "radiance", str(RADIANCE / f"{name}.log"), "--label", label)
    r = cli("check")
    lines = r.output.splitlines()
    assert "vram ceiling       over" in r.output and max(len(line) for line in lines) <= 80


def test_show_fits_the_terminal(restart, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("show", "2").output.splitlines()
    assert max(len(line) for line in out) <= 80


def test_no_colour_on_a_pipe(seeded, cli):
    assert ANSI not in cli("history").output and ANSI not in cli("check").output


def test_colour_on_a_terminal_unless_no_color(monkeypatch):
    from ledger.render import terminal

    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert terminal.colour(Tty()) is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert terminal.colour(Tty()) is False


def test_verdicts_are_coloured_by_meaning():
    from ledger.render.terminal import paint

    assert "\x1b[31" in paint("off") and "\x1b[32" in paint("ok") and paint("ok") != paint("insufficient")


def test_history_and_check_colour_verdicts_on_a_terminal(cli, db, monkeypatch):
    from click.testing import CliRunner

    from ledger.cli import main
    from ledger.render import terminal

    for name, label in (("fp8-3x200k-ready", "fp8-3slot"), ("bf16-2x200k-ready", "bf16-2slot")):
        cli("ingest", "--grammar", "radiance", str(RADIANCE / f"{name}.log"), "--label", label)
    monkeypatch.setattr(terminal, "colour", lambda stream=None: True)  # as on a terminal
    history = CliRunner().invoke(main, ["history"], color=True).output
    check = CliRunner().invoke(main, ["check"], color=True).output
    assert "\x1b[31m\x1b[1m" in history and "\x1b[32mready" in history  # a failing verdict in red
    assert "\x1b[31m\x1b[1mover" in check and "\x1b[32mok" in check


# -- honest filters and exit codes ----------------------------------------------------------------


def test_since_refuses_words(restart, cli):
    r = cli("history", "--since", "yesterday")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "--since 'yesterday'" in r.output and "7d" in r.output


def test_since_accepts_iso_dates_and_times(restart, cli):
    assert [d["boot"] for d in as_json(cli, "history", "--since", "2026-09-28T21:06")] == ["2"]
    assert len(as_json(cli, "history", "--since", "2026-09-28")) == 2


def test_since_accepts_relative_spans(restart, cli):
    assert len(as_json(cli, "history", "--since", "100000d")) == 2
    assert as_json(cli, "history", "--since", "1h") == []  # both boots are from September


def test_since_relative_span_is_counted_back_from_now():
    import datetime as dt

    from ledger.since import parse_since

    now = dt.datetime(2026, 11, 30, 12, 0, 0)
    assert parse_since("7d", now) == "2026-11-23 12:00:00"
    assert parse_since("12h", now) == "2026-11-30 00:00:00"


def test_no_boots_match_differs_from_an_empty_ledger(restart, cli):
    out = cli("history", "--outcome", "crashed").output
    assert "no boots match" in out and "no boots in the ledger" not in out


def test_check_of_an_unknown_deploy_is_a_usage_error(seeded, cli):
    r = cli("check", "nosuch")
    assert r.exit_code == 2 and r.output.startswith("Error: nosuch:")


def test_check_finding_exits_1(cli, db):
    for name, label in (("fp8-3x200k-ready", "fp8-3slot"), ("bf16-2x200k-ready", "bf16-2slot")):
        cli("ingest", "--grammar", "radiance", str(RADIANCE / f"{name}.log"), "--label", label)
    assert cli("check").exit_code == 1


def test_a_bad_option_exits_2(cli):
    assert cli("history", "--format", "yaml").exit_code == 2


def test_one_error_prefix(db, cli, tmp_path):
    r = cli("ingest", str(tmp_path / "nope.log"))
    assert r.exit_code == 2 and r.output.startswith("Error: ")


# -- fixing mistakes -------------------------------------------------------------------------------


def test_rm_removes_a_boot_with_everything_it_holds(db, cli):
    cli("ingest", str(F008))
    cli("ingest", str(RESTART))
    r = cli("rm", "1", "--yes")
    assert r.exit_code == 0 and "removed 1 boot" in r.output
    for table in ("fact", "failure", "shape", "runtime_sample"):
        assert rows(db, f"SELECT count(*) FROM {table} WHERE boot_id = 1") == [(0,)]
    assert rows(db, "SELECT id FROM boot ORDER BY id") == [(2,), (3,)]
    assert rows(db, "SELECT count(*) FROM fact WHERE boot_id = 3")[0][0] > 0


def test_rm_off_a_terminal_needs_yes(restart, cli):
    r = cli("rm", "1")
    assert r.exit_code == 2 and "--yes" in r.output
    assert rows(restart, "SELECT count(*) FROM boot") == [(2,)]


def test_rm_of_a_missing_boot_removes_nothing(restart, cli):
    r = cli("rm", "1", "99", "--yes")
    assert r.exit_code == 2 and "99" in r.output
    assert rows(restart, "SELECT count(*) FROM boot") == [(2,)]


def test_rm_refuses_a_pinned_reference_boot(seeded, cli):
    ref = rows(seeded, "SELECT b.id FROM boot b JOIN deploy d ON d.id = b.deploy_id "
                       "WHERE d.label = 'fp8-4x262144-ready'")[0][0]
    assert cli("deploy", "set", "fp8-3x262144-ready", f"kv_reference_boot={ref}").exit_code == 0
    r = cli("rm", str(ref), "--yes")
    assert r.exit_code == 2 and "kv_reference_boot" in r.output
    assert rows(seeded, f"SELECT count(*) FROM boot WHERE id = {ref}") == [(1,)]


def test_rm_then_ingest_stores_the_boot_again(db, cli):
    cli("ingest", str(F008))
    cli("rm", "1", "--yes")
    out = cli("ingest", str(F008)).output
    assert out.startswith("boot ") and "already in the ledger" not in out


def test_deploy_label_renames(restart, cli):
    r = cli("deploy", "label", "qwen32", "qwen32-fp8")
    assert r.exit_code == 0 and "qwen32 -> qwen32-fp8" in r.output
    assert rows(restart, "SELECT label FROM deploy") == [("qwen32-fp8",)]
    assert as_json(cli, "history", "--deploy", "qwen32-fp8")[0]["deploy"] == "qwen32-fp8"


def test_deploy_label_refuses_a_label_in_use(seeded, cli):
    r = cli("deploy", "label", "fp8-4x262144-ready", "fp8-3x262144-ready")
    assert r.exit_code == 2 and "another deploy has that label" in r.output


def test_a_relabelled_deploy_takes_later_ingests_under_its_new_label(db, cli):
    cli("ingest", str(F008), "--label", "old")
    cli("deploy", "label", "old", "new")
    cli("ingest", str(RESTART), "--label", "new")
    assert rows(db, "SELECT count(*) FROM deploy") == [(1,)]


def test_deploy_unset_removes_a_setting(seeded, cli):
    cli("deploy", "set", "fp8-4x262144-ready", "card_ceiling_bytes=29120MiB", "host_cap_bytes=200GiB")
    r = cli("deploy", "unset", "fp8-4x262144-ready", "card_ceiling_bytes")
    assert r.exit_code == 0 and "card_ceiling_bytes" not in r.output and "host_cap_bytes" in r.output
    assert rows(seeded, "SELECT \"key\" FROM deploy_setting") == [("host_cap_bytes",)]
    assert cli("deploy", "unset", "fp8-4x262144-ready", "colour").exit_code == 2


def test_a_reference_boot_of_another_group_is_refused(seeded, cli):
    bf16 = rows(seeded, "SELECT b.id FROM boot b JOIN deploy d ON d.id = b.deploy_id "
                        "WHERE d.label = 'bf16-3x241664-ready'")[0][0]
    r = cli("deploy", "set", "fp8-4x262144-ready", f"kv_reference_boot={bf16}")
    assert r.exit_code == 2 and "another group" in r.output
    assert "kv auto" in r.output and "kv fp8" in r.output  # both group keys shown
    assert rows(seeded, "SELECT count(*) FROM deploy_setting") == [(0,)]


# -- small things ------------------------------------------------------------------------------------


@sqlite_only
def test_a_read_command_on_a_missing_ledger_says_so_and_creates_nothing(cli, tmp_path):
    typo = tmp_path / "legder.db"
    for command in (["history"], ["show", "1"], ["check"], ["deploy", "list"], ["export"],
                    ["deploy", "set", "x", "card_ceiling_bytes=1GiB"], ["rm", "1", "--yes"]):
        r = cli(*command, "--db", str(typo))
        assert r.exit_code == 2 and "no ledger here yet" in r.output, command
    assert not typo.exists()


@sqlite_only
def test_db_path_prints_the_bare_path(restart, cli):
    assert cli("db", "path").output == restart + "\n"


def test_db_path_of_a_server_ledger_is_an_error(cli):
    r = cli("db", "path", "--db", "postgresql+psycopg://ledger:secret@db.lan/ledger")
    assert r.exit_code == 2 and "not a SQLite file" in r.output and "secret" not in r.output


def test_a_missing_driver_names_the_extra(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if psycopg were not installed
    r = cli("history", "--db", "postgresql+psycopg://ledger@127.0.0.1:1/ledger")
    assert r.exit_code == 2 and "pip install 'vllm-ledger[postgres]'" in r.output


def test_vllm_ledger_is_a_second_command_name():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["vllm-ledger"] == scripts["ledger"] == "ledger.cli:main"


def test_hyperscan_is_a_dependency_wherever_it_has_a_wheel():
    import tomllib

    from packaging.markers import Marker
    from packaging.requirements import Requirement

    deps = [Requirement(d) for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    hs = [d for d in deps if d.name == "hyperscan"]

    def wanted(system: str, machine: str) -> list[str]:
        env = {"platform_system": system, "platform_machine": machine}
        return [str(d.specifier) for d in hs if d.marker is None or Marker(str(d.marker)).evaluate(env)]

    assert wanted("Linux", "x86_64") and wanted("Darwin", "arm64") and wanted("Windows", "AMD64")
    assert wanted("Linux", "aarch64") == ["<0.8,>=0.7.23"]  # the last release with manylinux_2_17 wheels there
    assert wanted("Linux", "ppc64le") == []  # no wheel: the pure-Python scanner, said by --version


def test_long_output_goes_through_a_pager_on_a_terminal(monkeypatch):
    import click

    from ledger.render import terminal

    paged: list[str] = []
    monkeypatch.setattr(terminal, "_isatty", lambda stream: True)
    monkeypatch.setattr(terminal, "height", lambda stream=None: 24)
    monkeypatch.setattr(click, "echo_via_pager", lambda text, color=None: paged.append(text))
    terminal.echo_long("\n".join(f"line {i}" for i in range(100)))
    assert len(paged) == 1 and paged[0].count("\n") == 100


def test_short_output_is_not_paged(monkeypatch, capsys):
    import click

    from ledger.render import terminal

    monkeypatch.setattr(terminal, "_isatty", lambda stream: True)
    monkeypatch.setattr(terminal, "height", lambda stream=None: 24)
    monkeypatch.setattr(click, "echo_via_pager", lambda text, color=None: pytest.fail("paged"))
    terminal.echo_long("one\ntwo")
    assert capsys.readouterr().out == "one\ntwo\n"


def test_version_names_the_scan_engine():
    r = subprocess.run([sys.executable, "-m", "ledger", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and re.search(r"scan engine: (hyperscan|re2|python)", r.stdout)


@sqlite_only
def test_boot_ids_complete_from_the_ledger(restart, cli):
    import click

    from ledger.cli import _complete_boots, main

    ctx = click.Context(main, info_name="ledger")
    ctx.params = {"db": None}
    items = _complete_boots(ctx, "")
    assert {i.value for i in items} >= {"1", "2", "qwen32"}


def test_the_quick_start_uses_a_ledger_in_the_clone():
    readme = (ROOT / "README.md").read_text()
    quick = readme[readme.index("## Quick start"):readme.index("## Commands")]
    assert "--db demo.db" in quick or "LEDGER_DB=demo.db" in quick


# -- progress and compressed input -------------------------------------------------------------------


def _compressed(tmp_path, kind: str) -> Path:
    # 20 copies (40 boots): compressed, about a fiftieth of the text, so progress that
    # counted the text's bytes, not the file's, would pass the file's size
    data = RESTART.read_bytes() * 20
    if kind == "gz":
        import gzip

        out = tmp_path / "boot.log.gz"
        out.write_bytes(gzip.compress(data))
    else:
        import zstandard

        out = tmp_path / "boot.log.zst"
        out.write_bytes(zstandard.ZstdCompressor().compress(data))
    return out


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_progress_counts_the_compressed_bytes_read(db, tmp_path, kind):
    from ledger.db.connect import open_writer
    from ledger.db.writes import DeployInfo
    from ledger.ingest import ingest_file

    log = _compressed(tmp_path, kind)
    seen: list[int] = []
    writer = open_writer(db)
    try:
        result = ingest_file(writer, str(log), DeployInfo(), progress=seen.append)
    finally:
        writer.close()
    assert result.error is None and seen
    assert max(seen) <= log.stat().st_size  # a percent of the file never passes 100%
    assert seen[-1] == log.stat().st_size


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_compressed_input_on_stdin_is_read(db, tmp_path, kind):
    log = _compressed(tmp_path, kind)
    with open(log, "rb") as f:
        r = subprocess.run([sys.executable, "-m", "ledger", "ingest", "-"], stdin=f, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("boot 1  failed") and "binary" not in r.stderr


def test_compressed_input_is_known_by_its_magic_not_its_name(db, cli, tmp_path):
    import gzip

    log = tmp_path / "boot.log"  # no .gz
    log.write_bytes(gzip.compress(RESTART.read_bytes()))
    r = cli("ingest", str(log))
    assert r.exit_code == 0 and r.output.startswith("boot 1  failed")


def _bar(monkeypatch, path: str):
    import io

    from ledger.render.progress import Progress

    err, out = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", out)
    progress = Progress(path)
    progress.start -= 10  # past the second it waits before showing
    return progress, err, out


def test_progress_is_throttled(monkeypatch):
    progress, err, _out = _bar(monkeypatch, "-")
    for i in range(2000):
        progress(i * 65536)
    progress.done()
    assert err.getvalue().count("\r") < 50  # not a redraw per block


def test_progress_of_a_pipe_shows_bytes_and_rate(monkeypatch):
    progress, err, _out = _bar(monkeypatch, "-")
    progress(5 * 2**20)
    progress.bar.refresh()
    assert "MB" in err.getvalue() or "M" in err.getvalue()
    assert "B/s" in err.getvalue()
    progress.done()


def test_a_stored_boot_is_said_above_the_bar_not_on_it(monkeypatch):
    progress, _err, out = _bar(monkeypatch, "-")
    progress(2**20)
    progress.say("boot 1  ready")
    progress.done()
    assert out.getvalue() == "boot 1  ready\n"


# -- the year vLLM does not print ----------------------------------------------------------------


def test_an_inferred_year_is_never_later_than_the_files_mtime(tmp_path):
    import datetime as dt
    import os

    from ledger import parsers

    log = tmp_path / "boot.log"
    log.write_bytes(RESTART.read_bytes())  # lines stamped 09-28, no year printed
    touched = dt.datetime(2026, 3, 15, 12, 0).timestamp()
    os.utime(log, (touched, touched))
    boots = parsers.parse_file(str(log))
    assert boots[0].year_inferred
    assert boots[0].started_at.startswith("2025-09-28")  # not September 2026, after the file was written


def test_json_writes_an_inf_or_nan_figure_as_null_wherever_it_stands():
    from ledger.render.values import dumps, json_text

    obj = {"a": [1.5, float("inf")], "b": {"c": float("nan")}, "d": (2.0, -float("inf"))}
    assert dumps(obj) == '{"a": [1.5, null], "b": {"c": null}, "d": [2.0, null]}'
    assert json_text({"a": float("nan")}) == '{\n  "a": null\n}'
