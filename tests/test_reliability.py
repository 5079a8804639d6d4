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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parsers
from conftest import REAL, ROOT

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
    text = data.decode("utf-8", errors="replace")
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


def _ingest_cmd(db: Path, log: Path) -> list[str]:
    return [sys.executable, "-m", "ledger", "ingest", "--db", str(db), "--year", "2026", str(log)]


def test_sigkill_at_random_moments_leaves_the_whole_boot_or_nothing(tmp_path, big_log):
    log, samples = big_log
    db = tmp_path / "l.db"
    t = time.perf_counter()
    subprocess.run(_ingest_cmd(tmp_path / "probe.db", log), check=True, capture_output=True)
    full = time.perf_counter() - t
    rnd = random.Random(1234)
    for delay in [rnd.uniform(0.2, full) for _ in range(6)]:
        proc = subprocess.Popen(_ingest_cmd(db, log), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not db.exists():
            continue
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        boots = con.execute("SELECT count(*) FROM boot").fetchone()[0]
        stored = con.execute("SELECT count(*) FROM runtime_sample").fetchone()[0]
        con.close()
        assert (boots, stored) in ((0, 0), (1, samples))
    r = subprocess.run(_ingest_cmd(db, log), capture_output=True, text=True)
    assert r.returncode == 0
    r = subprocess.run(_ingest_cmd(db, log), capture_output=True, text=True)
    assert "already in the ledger" in r.stdout
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), (SELECT count(*) FROM runtime_sample) FROM boot").fetchone() == (1, samples)
    con.close()


# -- concurrent writers -------------------------------------------------------------------------------


def test_eight_processes_ingesting_into_one_new_ledger(tmp_path):
    logs = [p for p in LOGS if parsers.parse_file(str(p), year=2026)][:16]
    expected = sum(len(parsers.parse_file(str(p), year=2026)) for p in logs)
    db = tmp_path / "shared.db"
    groups = [logs[i::8] for i in range(8)]
    procs = [subprocess.Popen([sys.executable, "-m", "ledger", "ingest", "--db", str(db), "--year", "2026",
                               *map(str, g)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for g in groups]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), count(DISTINCT content_sha256) FROM boot").fetchone() == (expected, expected)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


# -- read-only SQL ------------------------------------------------------------------------------------


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
    before = sqlite3.connect(db).execute("SELECT count(*) FROM fact").fetchone()
    r = cli("sql", statement)
    assert r.exit_code == 1 and message in r.output and len(r.output.strip().splitlines()) == 1
    assert sqlite3.connect(db).execute("SELECT count(*) FROM fact").fetchone() == before
    assert not Path("/tmp/ledger-attack.db").exists() and not Path("/tmp/ledger-copy.db").exists()


def test_sql_still_reads_table_info(db, cli):
    cli("ingest", str(F008))
    assert "value_text" in cli("sql", "PRAGMA table_info(shape)").output


# -- bad ledgers --------------------------------------------------------------------------------------


def test_a_database_error_while_writing_is_one_line_and_keeps_nothing(db, cli, monkeypatch):
    from sqlalchemy.exc import OperationalError

    import ledger.store as store

    def full(*args, **kwargs):
        raise OperationalError("INSERT", {}, sqlite3.OperationalError("database or disk is full"))

    monkeypatch.setattr(store, "_insert_samples", full)
    r = cli("ingest", str(F008))
    assert r.exit_code == 1
    assert r.output.strip() == ("Error: ledger database error: database or disk is full "
                                "(the disk is full; nothing of the boot being written was kept)")
    assert sqlite3.connect(db).execute("SELECT count(*) FROM boot").fetchone() == (0,)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_ledger_file(db, cli):
    cli("ingest", str(F008))
    os.chmod(db, 0o444)
    r = cli("ingest", str(next(REAL.glob("017_*.log"))))
    assert r.exit_code == 1 and "read-only" in r.output
