"""Nothing lost: hostile input, killed processes, concurrent writers, read-only SQL, bad ledgers."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REAL, ROOT
from dbutil import IS_PG, rows, sqlite_only
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger import parsers

LOGS = sorted(REAL.glob("*.log"))
F008 = next(REAL.glob("008_*.log"))


def parse_bytes(tmp_path: Path, data: bytes) -> list[parsers.Boot] | None:
    p = tmp_path / "input.log"
    p.write_bytes(data)
    try:
        return parsers.parse_source(parsers.Source(str(p)), default_year=2026).boots
    except parsers.SourceError:
        return None  # refused with a message: fine


def evidence_is_in_the_input(boots, data: bytes) -> None:
    # a NUL is a hole, not text: it is dropped as the input is read (issue 20, item 15)
    text = data.replace(b"\0", b"").decode("utf-8", errors="replace")
    for b in boots:
        for f in b.facts:
            assert f.text in text
        for f in b.failures:
            assert f.text in text


# -- hostile input ------------------------------------------------------------------------------------

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.binary(max_size=4000))
def test_arbitrary_bytes_never_raise_anything_but_a_refusal(tmp_path, data):
    boots = parse_bytes(tmp_path, data)
    if boots is not None:
        evidence_is_in_the_input(boots, data)


@SETTINGS
@given(st.text(max_size=300))
def test_the_line_model_takes_any_text(text):
    line = parsers.parse_line(1, text)
    assert isinstance(line.message, str)


@SETTINGS
@given(log=st.sampled_from(LOGS), cuts=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=6),
       junk=st.binary(min_size=1, max_size=200), newline=st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_spliced_and_mangled_real_logs(tmp_path, log, cuts, junk, newline):
    """Real lines spliced at random points with junk, invalid UTF-8, NULs, CRLF or lone CR:
    nothing raises, nothing is stored that the input does not hold."""
    data = log.read_bytes().replace(b"\n", newline)
    for c in sorted(cuts, reverse=True):
        c %= max(len(data), 1)
        data = data[:c] + junk + b"\xff\x00\xc3" + data[c:]
    boots = parse_bytes(tmp_path, data)
    if boots is not None:
        evidence_is_in_the_input(boots, data)


@SETTINGS
@given(log=st.sampled_from(LOGS), seed=st.integers(0, 2**32 - 1))
def test_junk_between_lines_keeps_every_intact_fact(tmp_path, log, seed):
    """Whole junk lines inserted between intact lines: every fact of the clean file is still
    read, with the same value and raw text."""
    rnd = random.Random(seed)
    lines = log.read_bytes().split(b"\n")
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i > 12 and rnd.random() < 0.2 and i < len(lines) - 1:
            out.append(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 80))).replace(b"\n", b" "))
    clean = parse_bytes(tmp_path, log.read_bytes())
    mangled = parse_bytes(tmp_path, b"\n".join(out))
    if clean is None:
        return
    assert mangled is not None
    want = {(f.name, f.value, f.text) for b in clean for f in b.facts}
    got = {(f.name, f.value, f.text) for b in mangled for f in b.facts}
    assert want <= got


def test_a_file_that_ends_mid_line(tmp_path):
    data = F008.read_bytes()
    cut = data.index(b"Available KV cache memory: 9.7")  + len(b"Available KV cache memory: 9.7")
    boots = parse_bytes(tmp_path, data[:cut])
    assert boots is not None
    assert not any(f.name == "available_kv_cache_bytes" for b in boots for f in b.facts)  # "9.7" of "9.74" is not read


@pytest.mark.heavy
def test_a_50_mb_single_line(tmp_path):
    line = b"INFO 05-04 01:05:57 [gpu_worker.py:440] Available KV cache memory: 9.74 GiB " + b"x" * (50 * 2**20) + b"\n"
    boots = parse_bytes(tmp_path, line + b"INFO 05-04 01:05:58 [k.py:1] GPU KV cache size: 67,728 tokens\n")
    assert [f.name for f in boots[0].facts] == ["available_kv_cache_bytes", "kv_cache_tokens"]


def test_nul_bytes_inside_a_log(tmp_path):
    data = F008.read_bytes().replace(b"[gpu_worker.py:440]", b"[gpu_worker.py:440]\x00")
    boots = parse_bytes(tmp_path, data)
    assert any(f.name == "kv_cache_tokens" for b in boots for f in b.facts)


def test_truncated_multi_line_record(tmp_path):
    data = (b"INFO 03-22 18:53:23 [worker.py:267] Memory profiling takes 27.78 seconds\n"
            b"INFO 03-22 18:53:23 [worker.py:267] the current vLLM instance can use total_gpu_memory (23.58GiB) x gpu_m")
    boots = parse_bytes(tmp_path, data)
    assert [f.name for f in boots[0].facts] == ["memory_profiling_seconds"]


# -- killed mid-ingest ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "runtime.log"
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(path), "--mb", "40"], check=True)
    boots = parsers.parse_source(parsers.Source(str(path)), default_year=2026).boots
    return path, sum(b.samples.values() for b in boots) if False else sum(sum(b.samples.values()) for b in boots)


def _ingest_cmd(db, log: Path) -> list[str]:
    return [sys.executable, "-m", "ledger", "ingest", "--db", str(db), "--year", "2026", str(log)]


def _integrity_ok(db: str) -> bool:
    if IS_PG:
        return True  # PostgreSQL's own WAL: a killed client leaves no torn pages to check for
    return rows(db, "PRAGMA integrity_check") == [("ok",)]


@pytest.mark.heavy
def test_sigkill_at_random_moments_leaves_the_whole_boot_or_nothing(db, tmp_path, big_log):
    log, samples = big_log
    t = time.perf_counter()
    subprocess.run(_ingest_cmd(tmp_path / "probe.db", log), check=True, capture_output=True)
    full = time.perf_counter() - t
    rnd = random.Random(1234)
    for delay in [rnd.uniform(0.2, full) for _ in range(6)]:
        proc = subprocess.Popen(_ingest_cmd(db, log), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        try:
            boots = rows(db, "SELECT count(*) FROM boot")[0][0]
        except Exception:  # noqa: BLE001 - killed before the schema existed
            continue
        assert _integrity_ok(db)
        stored = rows(db, "SELECT count(*) FROM runtime_sample")[0][0]
        assert (boots, stored) in ((0, 0), (1, samples))
    r = subprocess.run(_ingest_cmd(db, log), capture_output=True, text=True)
    assert r.returncode == 0
    r = subprocess.run(_ingest_cmd(db, log), capture_output=True, text=True)
    assert "already in the ledger" in r.stdout
    assert rows(db, "SELECT count(*), (SELECT count(*) FROM runtime_sample) FROM boot") == [(1, samples)]


@pytest.mark.heavy
def test_sigkill_amid_a_file_of_many_boots_leaves_whole_boots_and_the_rerun_stores_the_rest_once(db, tmp_path):
    """A file's boots are committed in groups (ledger.ingest.GROUP_BOOTS): killed amid them, the
    ledger holds whole boots only (each with its figure and runtime row), and the next ingest
    stores the others, none twice."""
    from test_ceilings import _many_boots

    log = _many_boots(tmp_path / "boots.log", 10_000, 4 << 20)
    proc = subprocess.Popen(_ingest_cmd(db, log), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stored = 0
    for _ in range(1200):  # killed once a few groups are in (a hang fails: 120 s)
        time.sleep(0.1)
        try:
            stored = rows(db, "SELECT count(*) FROM boot")[0][0]
        except Exception:  # noqa: BLE001 - the schema is not there yet
            continue
        if stored >= 1_000:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _integrity_ok(db)
    whole = "SELECT count(*), (SELECT count(*) FROM fact), (SELECT count(*) FROM boot_runtime) FROM boot"
    boots, facts, runtime = rows(db, whole)[0]
    assert 1_000 <= boots < 10_000 and facts == runtime == boots
    r = subprocess.run(_ingest_cmd(db, log), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert rows(db, whole) == [(10_000, 10_000, 10_000)]
    assert rows(db, "SELECT count(DISTINCT content_sha256) FROM boot") == [(10_000,)]


# -- concurrent writers -------------------------------------------------------------------------------


@pytest.mark.heavy
def test_eight_processes_ingesting_into_one_new_ledger(db):
    logs = [p for p in LOGS if parsers.parse_file(str(p), year=2026)][:16]
    expected = sum(len(parsers.parse_file(str(p), year=2026)) for p in logs)
    groups = [logs[i::8] for i in range(8)]
    procs = [subprocess.Popen([sys.executable, "-m", "ledger", "ingest", "--db", str(db), "--year", "2026",
                               *map(str, g)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for g in groups]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err
    assert rows(db, "SELECT count(*), count(DISTINCT content_sha256) FROM boot") == [(expected, expected)]
    assert _integrity_ok(db)


# -- read-only SQL ------------------------------------------------------------------------------------


@sqlite_only
@pytest.mark.parametrize("statement,message", [
    ("ATTACH DATABASE '/tmp/ledger-attack.db' AS other", "read-only"),
    ("PRAGMA writable_schema = ON", "read-only"),
    ("VACUUM INTO '/tmp/ledger-copy.db'", "read-only"),
    ("SELECT 1; DELETE FROM fact", "one statement at a time"),
    ("CREATE TABLE x (a)", "read-only"),
    ("INSERT INTO fact (boot_id, name, value, unit, line, text) VALUES (1, 'x', 1, 'x', 1, 'x')", "read-only"),
])
def test_sql_refuses_everything_that_writes(db, cli, statement, message):
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    r = cli("sql", statement)
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1
    assert rows(db, "SELECT count(*) FROM fact") == before
    assert not Path("/tmp/ledger-attack.db").exists() and not Path("/tmp/ledger-copy.db").exists()


@pytest.mark.parametrize("statement", ["DELETE FROM fact", "DROP TABLE fact", "UPDATE boot SET outcome = 'x'",
                                       "CREATE TABLE x (a int)", "SELECT 1; DELETE FROM fact"])
def test_sql_cannot_change_the_ledger_on_any_database(db, cli, statement):
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    r = cli("sql", statement)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "read-only" in r.output or "one statement at a time" in r.output
    assert rows(db, "SELECT count(*) FROM fact") == before


@sqlite_only
def test_sql_still_reads_table_info(db, cli):
    cli("ingest", str(F008))
    assert "value_text" in cli("sql", "PRAGMA table_info(shape)").output


# -- bad ledgers --------------------------------------------------------------------------------------


@pytest.mark.parametrize("target,error,hint", [
    ("_insert_samples", "database or disk is full", "the disk is full; nothing of the boot being written was kept"),
    ("_store_boot_once", "attempt to write a readonly database", "this user cannot write the ledger file, its folder or its -wal/-shm files"),
])
def test_a_database_error_while_writing_is_one_line_and_keeps_nothing(db, cli, monkeypatch, target, error, hint):
    import ledger.db.writes as writing

    def fail(*args, **kwargs):
        raise sqlite3.OperationalError(error)  # what the driver raises (psycopg's errors read alike)

    monkeypatch.setattr(writing, target, fail)
    r = cli("ingest", str(F008))
    assert r.exit_code == 2
    assert r.output.strip() == f"Error: ledger database error: {error} ({hint})"
    assert rows(db, "SELECT count(*) FROM boot") == [(0,)]


@sqlite_only
def test_a_read_only_ledger_file(cli):
    # as a user who is not root (root writes read-only files): tests/nonroot.py
    from nonroot import run_as_user, shared_folder

    with shared_folder() as folder:
        db = str(folder / "ledger.db")
        cli("ingest", "--db", db, str(F008))
        os.chmod(db, 0o444)
        r = run_as_user("ingest", "--db", db, str(next(REAL.glob("017_*.log"))))
    assert r.exit_code == 2 and "read-only" in r.output


# -- moving a ledger ----------------------------------------------------------------------------------


def test_copy_moves_every_row_and_twice_is_harmless(db, cli, tmp_path):
    """A host's SQLite ledger into the shared one (PostgreSQL in the PostgreSQL pass)."""
    src = tmp_path / "host.db"
    five = ROOT / "fixtures" / "reconcile" / "fp8-5x262144-runtime-oom.log"
    for log, label in ((F008, "dual-4090"), (five, "fp8-5slot")):
        assert cli("ingest", "--db", str(src), "--year", "2026", str(log), "--label", label).exit_code == 0
    cli("deploy", "set", "--db", str(src), "fp8-5slot", "card_ceiling_bytes=30GiB")
    r = cli("copy", str(src), db)
    assert r.exit_code == 0 and r.output.startswith("copied 2 boots")
    query = ("SELECT d.label, b.outcome, b.content_sha256, (SELECT count(*) FROM fact f WHERE f.boot_id = b.id), "
             "(SELECT count(*) FROM runtime_sample s WHERE s.boot_id = b.id), "
             "(SELECT max(s.logged_at) FROM runtime_sample s WHERE s.boot_id = b.id) "
             "FROM boot b JOIN deploy d ON d.id = b.deploy_id ORDER BY b.content_sha256")
    assert rows(db, query) == rows(str(src), query)
    assert rows(db, "SELECT key, value FROM deploy_setting") == [("card_ceiling_bytes", str(30 * 2**30))]
    again = cli("copy", str(src), db)
    assert "copied 0 boots" in again.output and "2 already there" in again.output
    assert rows(db, "SELECT count(*) FROM boot") == [(2,)]
    assert cli("check", "fp8-5slot").exit_code in (0, 1)  # the views work on the copy


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=3000),
                      st.sampled_from(LOGS).map(lambda p: p.read_bytes()[: len(p.read_bytes()) // 2] + b"\xff\xfe\x00")))
def test_the_whole_ingest_never_raises_past_the_cli(tmp_path, data):
    import uuid

    from click.testing import CliRunner

    from ledger.cli import main

    log = tmp_path / "hostile.log"
    log.write_bytes(data)
    db = str(tmp_path / f"{uuid.uuid4().hex}.db")  # a fresh ledger per example
    r = CliRunner().invoke(main, ["ingest", "--db", db, "--year", "2026", str(log)], catch_exceptions=True)
    assert r.exit_code in (0, 2)
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "Traceback" not in r.output
    text = data.decode("utf-8", errors="replace")
    if Path(db).exists():
        for (t,) in rows(db, "SELECT text FROM fact UNION ALL SELECT text FROM failure"):
            assert t in text
