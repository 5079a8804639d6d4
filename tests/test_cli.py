"""The ledger command end to end, on real fixtures: ingest, history, show, export, sql, diff,
and bad input that must give one line, a non-zero exit and an untouched ledger."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
from conftest import REAL, SYNTH
from dbutil import imports_of

F008 = next(REAL.glob("008_*.log"))  # dual 4090: KV pool + spec decode + stats
F010 = next(REAL.glob("010_*.log"))  # args dump, max_model_len 200000
F011 = next(REAL.glob("011_*.log"))  # args dump, max_model_len 185000, engine 0.20.2rc1
F017 = next(REAL.glob("017_*.log"))  # kv_cache_memory_bytes boot failing kv_too_small
SGLANG = next((REAL / "sglang").glob("001_*.log"))
RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"


from dbutil import rows, sqlite_only  # noqa: E402


def test_ingest_prints_one_line_per_boot(db, cli):
    r = cli("ingest", str(RESTART))
    assert r.exit_code == 0, r.output
    out = r.output.strip().splitlines()
    assert len(out) == 2
    assert out[0].startswith("boot 1  failed") and "oom@graph_capture" in out[0]
    assert out[1].startswith("boot 2  ready") and "kv 71,920 tokens" in out[1] and "2.19x" in out[1]


def test_reingesting_the_same_content_is_a_noop_that_says_so(db, cli):
    cli("ingest", str(F008))
    r = cli("ingest", str(F008))
    assert "already in the ledger" in r.output and r.exit_code == 0
    assert rows(db, "SELECT count(*) FROM boot") == [(1,)]
    assert rows(db, "SELECT count(*) FROM fact") == [(4,)]


def test_facts_are_stored_with_their_evidence(db, cli):
    cli("ingest", str(F008))
    (value, unit, precision, rank, line, text), = rows(
        db, "SELECT value, unit, precision, rank, line, text FROM fact WHERE name = 'available_kv_cache_bytes'")
    assert (value, unit, rank, line) == (round(9.74 * 2**30), "bytes", 0, 11)
    assert precision == pytest.approx(0.005 * 2**30)
    assert text == F008.read_text().splitlines()[10]


def test_deploy_keys_from_options(db, cli):
    digest = "sha256:" + "7923b48047be655ab8a18f2d152f7a67a03acb80866ee7cae298fea13c7ac9c7"
    cli("ingest", str(F008), "--commit", "f532e03", "--image", digest, "--label", "dual-4090")
    assert rows(db, "SELECT commit_sha, image_digest, label FROM deploy") == [("f532e03", digest, "dual-4090")]


def test_bad_image_digest_is_refused(db, cli):
    r = cli("ingest", str(F008), "--image", "latest")
    assert r.exit_code == 2 and "expected sha256:" in r.output


def test_repo_option_reads_commit_and_dirty_flag(db, cli, tmp_path):
    repo = tmp_path / "deploy"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(git + ["init", "-q"], check=True)
    (repo / "serve.sh").write_text("vllm serve\n")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (repo / "serve.sh").write_text("vllm serve --max-num-seqs 2\n")
    cli("ingest", str(F008), "--repo", str(repo))
    assert rows(db, "SELECT commit_sha, dirty FROM deploy") == [(head, True)]


def test_history_newest_first_with_key_figures(db, cli):
    cli("ingest", str(RESTART), "--year", "2026", "--label", "qwen32")
    r = cli("history", "--format", "json")
    data = json.loads(r.output)
    assert [d["outcome"] for d in data] == ["ready", "failed"]
    assert data[0]["kv_tokens"] == 71920 and data[0]["concurrency"] == 2.19
    assert data[0]["kv_memory"] == round(4.39 * 2**30)
    assert data[0]["deploy"] == "qwen32"


def test_history_filters_and_formats(db, cli):
    cli("ingest", str(RESTART), "--year", "2026")
    assert len(json.loads(cli("history", "--outcome", "failed", "--format", "json").output)) == 1
    assert cli("history", "--format", "csv").output.startswith("boot,started_at,year_inferred,deploy")
    assert cli("history", "--format", "markdown").output.startswith("| boot | started")
    assert json.loads(cli("history", "--since", "2026-09-28 21:06:00", "--format", "json").output)[0]["boot"] == "2"


def test_history_on_an_empty_ledger(db, cli):
    cli("db", "upgrade")  # an empty ledger (a read command does not create one)
    assert "no boots in the ledger yet" in cli("history").output


def test_show_lists_evidence(db, cli):
    cli("ingest", str(F017))
    out = cli("show", "1").output
    assert "kv_cache_reserved_bytes" in out and "4.25 GiB (4,563,402,752 B)" in out
    assert "kv_too_small" in out and "kv_alloc" in out
    assert "[gpu_worker.py:492] Initial free memory 31.16 GiB" in out


def test_show_unknown_boot_is_one_line(db, cli):
    cli("ingest", str(F008))
    r = cli("show", "99")
    assert r.exit_code == 2 and r.output.strip() == "Error: 99: no boot or deploy by that id, commit, digest or label"


def test_export_json_contract(db, cli):
    cli("ingest", str(F008), str(F017), "--label", "x")
    objs = json.loads(cli("export").output)
    assert [o["boot"] for o in objs] == ["1", "2"] or [o["boot"] for o in objs] == ["2", "1"]
    o = next(o for o in objs if o["source"]["path"].endswith(F017.name))
    assert set(o) >= {"boot", "source", "deploy", "engine", "outcome", "shape", "facts", "failures", "runtime"}
    assert set(o["source"]) == {"path", "sha256", "first_line", "last_line"}
    assert set(o["deploy"]) == {"id", "commit", "image_digest", "label"}
    assert o["engine"] == {"name": "vllm", "version": "0.27.2rc1.dev77+gac7509e2b", "commit": "ac7509e2b"}
    fact = next(f for f in o["facts"] if f["name"] == "kv_cache_reserved_bytes")
    assert {k: fact[k] for k in ("value", "unit", "rank", "line")} == {
        "value": 4563402752, "unit": "bytes", "rank": None, "line": 16}
    kv = next(f for f in o["failures"] if f["kind"] == "kv_too_small")
    assert kv["max_model_len"] == 100000 and kv["line"] == 35 and kv["phase"] == "kv_alloc"
    assert o["shape"]["kv_cache_dtype"] == "fp8"
    o8 = next(o for o in objs if o["source"]["path"].endswith(F008.name))
    assert o8["runtime"] == {"engine_stats": 2, "spec_decode": 2}


def test_export_oldest_first(db, cli):
    cli("ingest", str(RESTART), "--year", "2026")
    assert [o["outcome"] for o in json.loads(cli("export").output)] == ["failed", "ready"]


def test_export_jsonl_and_csv(db, cli):
    cli("ingest", str(F008))
    assert len(cli("export", "--format", "jsonl").output.strip().splitlines()) == 1
    csv_lines = cli("export", "--format", "csv").output.strip().splitlines()
    assert csv_lines[0].startswith("boot,outcome,commit") and len(csv_lines) == 5


def test_sql_reads(db, cli):
    cli("ingest", str(F008))
    r = cli("sql", "SELECT name, value FROM fact WHERE name = 'kv_cache_tokens'", "--format", "json")
    assert json.loads(r.output) == [{"name": "kv_cache_tokens", "value": 67728.0}]


@pytest.mark.parametrize("statement", ["DELETE FROM fact", "DROP TABLE fact", "UPDATE boot SET outcome = 'x'",
                                       "INSERT INTO deploy (identity, created_at) VALUES ('z', 'now')"])
def test_sql_cannot_write(db, cli, statement):
    cli("ingest", str(F008))
    r = cli("sql", statement)
    assert r.exit_code == 2 and "read-only" in r.output
    assert rows(db, "SELECT count(*) FROM fact") == [(4,)]


def test_sql_error_is_one_line(db, cli):
    cli("ingest", str(F008))
    r = cli("sql", "SELECT nope FROM fact")
    out = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(out) == 1 and out[0].startswith("Error: sql: ") and "nope" in out[0]


def test_diff_of_two_real_boots_shows_the_changes(db, cli):
    cli("ingest", str(F010), "--label", "dual3090-200k")
    cli("ingest", str(F011), "--label", "dual3090-nvlink-185k")
    r = cli("diff", "dual3090-200k", "dual3090-nvlink-185k", "--format", "json")
    d = json.loads(r.output)
    facts = {f["name"]: f for f in d["facts"]}
    assert facts["max_model_len"]["a"] == 200000 and facts["max_model_len"]["b"] == 185000
    assert facts["max_model_len"]["change"] == -15000 and facts["max_model_len"]["change_pct"] == -7.5
    shape = {s["key"]: s for s in d["shape"]}
    assert shape["max_model_len"]["a"] == 200000 and shape["max_model_len"]["b"] == 185000
    assert "language_model_only" not in shape and "language_model_only" in d["one_sided_keys"]  # printed by A only
    every = {s["key"]: s for s in json.loads(cli("diff", "dual3090-200k", "dual3090-nvlink-185k", "--all",
                                                 "--format", "json").output)["shape"]}
    assert every["language_model_only"] == {"key": "language_model_only", "a": True, "b": None}
    assert "tensor_parallel_size" not in shape  # 2 on both sides: unchanged rows hidden
    assert d["b"]["engine"] == "0.20.2rc1.dev9+g01d4d1ad3"


def test_diff_markdown_for_commit_messages(db, cli):
    cli("ingest", str(RESTART), "--year", "2026")
    out = cli("diff", "1", "2", "--format", "markdown").output
    assert "| max_concurrency |" in out and "| max_model_len |" in out
    assert "outcome: failed -> ready" in out


def test_diff_all_lists_unchanged_rows(db, cli):
    cli("ingest", str(RESTART), "--year", "2026")
    d = json.loads(cli("diff", "1", "2", "--all", "--format", "json").output)
    assert any(f["name"] == "kv_cache_tokens" and f["change"] == 0 for f in d["facts"])


def test_compressed_inputs(db, cli, tmp_path):
    gz = tmp_path / "boot.log.gz"
    gz.write_bytes(gzip.compress(F008.read_bytes()))
    zstandard = pytest.importorskip("zstandard")
    zst = tmp_path / "boot.log.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(F017.read_bytes()))
    r = cli("ingest", str(gz), str(zst))
    assert r.exit_code == 0 and len(r.output.strip().splitlines()) == 2


def test_a_damaged_zstd_file_is_one_line(db, cli, tmp_path):
    pytest.importorskip("zstandard")
    bad = tmp_path / "boot.log.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + F008.read_bytes())  # zstd's magic, then no zstd frame
    r = cli("ingest", str(bad))
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert line.startswith(f"Error: {bad}: cannot read: zstd decompress error: ")


def test_a_damaged_gzip_file_is_one_line(db, cli, tmp_path):
    data = gzip.compress(F008.read_bytes())
    bad = tmp_path / "boot.log.gz"
    bad.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:60]) + data[60:])  # the deflate stream broken
    r = cli("ingest", str(bad))
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert line.startswith(f"Error: {bad}: cannot read: ")


def test_stdin(db, cli):
    r = cli("ingest", "-", input=F008.read_text())
    assert r.exit_code == 0 and "kv 67,728 tokens" in r.output
    assert rows(db, "SELECT source_path FROM boot") == [("<stdin>",)]


def _missing(p):
    return p / "missing.log"


def _directory(p):
    return p


def _empty(p):
    (p / "empty.log").write_text("")
    return p / "empty.log"


def _binary(p):
    (p / "bin.log").write_bytes(bytes(range(256)) * 64)
    return p / "bin.log"


def _sglang(p):
    return SGLANG


@pytest.mark.parametrize("make,message", [
    (_missing, "no such file"), (_directory, "is a directory, not a log file"), (_empty, "is empty"),
    (_binary, "is a binary file, not a log"), (_sglang, "no vLLM log lines found"),
])
def test_bad_input_is_one_line_and_leaves_the_ledger_as_it_was(db, cli, tmp_path, make, message):
    cli("ingest", str(F008))
    before = rows(db, "SELECT * FROM fact")
    target = make(tmp_path)
    r = cli("ingest", str(target))
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [f"Error: {target}: {message}"]
    assert rows(db, "SELECT * FROM fact") == before


def test_one_bad_file_does_not_stop_the_others(db, cli, tmp_path):
    r = cli("ingest", str(tmp_path / "nope.log"), str(F008))
    assert r.exit_code == 2
    assert "no such file" in r.output and "kv 67,728 tokens" in r.output
    assert rows(db, "SELECT count(*) FROM boot") == [(1,)]


def test_unreadable_file(db):
    # as a user who is not root (root reads any file): tests/nonroot.py
    from nonroot import run_as_user, shared_folder

    with shared_folder() as folder:
        p = folder / "locked.log"
        p.write_text(F008.read_text())
        p.chmod(0)
        r = run_as_user("ingest", "--db", str(folder / "l.db"), str(p))
    assert r.exit_code == 2 and "permission denied" in r.output


@pytest.mark.parametrize("command", [[], ["ingest"], ["history"], ["show"], ["export"], ["sql"], ["diff"],
                                     ["db"], ["db", "upgrade"], ["db", "current"]])
def test_every_command_has_help_with_an_example(cli, command):
    r = cli(*command, "--help")
    assert r.exit_code == 0
    assert "Example" in r.output or command == ["db"]


def test_version(cli):
    from ledger import __version__
    from ledger.parsers.fast.scanner import available_engines

    engine = available_engines()[0]
    assert cli("--version").output.strip().startswith(f"ledger, version {__version__} (scan engine: {engine}")


def test_python_dash_m_ledger(db):
    r = subprocess.run([sys.executable, "-m", "ledger", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("ledger, version")


@sqlite_only
def test_db_option_on_the_group_and_the_command(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("LEDGER_DB", raising=False)
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    cli("--db", str(a), "ingest", str(F008))
    cli("ingest", "--db", str(b), str(F017))
    assert rows(str(a), "SELECT count(*) FROM boot") == [(1,)]
    assert rows(str(b), "SELECT count(*) FROM boot") == [(1,)]


@sqlite_only
def test_default_location_under_xdg_data_home(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("LEDGER_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    cli("ingest", str(F008))
    assert (tmp_path / "ledger" / "ledger.db").exists()


def test_ingest_json_prints_the_export_objects_of_the_stored_boots(db, cli):
    r = cli("ingest", str(RESTART), "--json", "--year", "2026")
    objs = json.loads(r.output)
    assert [o["outcome"] for o in objs] == ["failed", "ready"]
    assert objs[1]["source"]["first_line"] == 26


def test_parsers_import_no_database_pandas_or_click():
    code = ("import sys; from ledger import parsers;"
            "parsers.parse_text('INFO 01-01 00:00:00 [a.py:1] GPU KV cache size: 1 tokens\\n');"
            "bad = [m for m in ('sqlalchemy', 'pandas', 'click') if m in sys.modules];"
            "bad += [m for m in sys.modules if m.startswith('ledger.') and not m.startswith('ledger.parsers')];"
            "print(bad)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "[]", r.stderr


def test_everyday_commands_import_neither_pandas_nor_matplotlib(db):
    codes, loaded, err = imports_of(["ingest", str(F008)], ["history"], ["show", "1"], ["runtime", "1"], ["check"])
    assert set(codes) <= {0, 1}, err  # each ran (check exits 1 for a finding)
    assert loaded & {"pandas", "matplotlib"} == set()
