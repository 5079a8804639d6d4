"""Hostile input never crashes the ingest, and the files after it are still read (issue 15, items
3-6): figures out of range, file names that are not UTF-8, input without newlines, devices,
damaged compressed files."""

from __future__ import annotations

import gzip
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REAL, ROOT
from dbutil import rows, sqlite_only

from ledger import parsers
from ledger.parsers.units import UnitError, parse_number, quantity

F008 = next(REAL.glob("008_*.log"))
F005 = next(REAL.glob("005_*.log"))
NINES = "9" * 400
LEDGER = [sys.executable, "-m", "ledger"]


def _body(path: Path) -> list[str]:
    return path.read_text().split("# ---\n", 1)[1].splitlines()


def _hostile_log(tmp_path: Path) -> Path:
    """008's lines as vLLM prints them, with figures no column can hold."""
    lines = _body(F008)
    lines[1] = lines[1].replace("67,728", NINES)  # GPU KV cache size: <400 nines> tokens
    lines[2] = lines[2].replace("1.06x", "1" + NINES + ".5x")  # Maximum concurrency … 1<400 nines>.5x
    lines[5] = lines[5].replace("Running: 1 reqs", "Running: 99999999999999999999999999999 reqs")
    lines.insert(1, "(Worker_TP0 pid=118) INFO 05-04 01:05:50 [gpu_model_runner.py:1962] Model loading took 1"
                 + NINES + ".8 GiB and 3.081864 seconds")
    path = tmp_path / "hostile.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("text", ["99999999999999999999999999999", NINES, "1" + NINES + ".8", "1e400", "-1e400"])
def test_a_figure_out_of_range_is_not_a_number(text):
    with pytest.raises(UnitError, match="out of range"):
        parse_number(text)


def test_a_size_out_of_range_is_not_a_size():
    with pytest.raises(UnitError):
        quantity("1" + NINES + ".8", "GiB")
    with pytest.raises(UnitError):
        quantity("99999999999", "TiB")  # 1.1e23 bytes: past any 64-bit column


def test_figures_out_of_range_are_not_read_and_the_next_file_is(db, cli, tmp_path):
    r = cli("ingest", str(_hostile_log(tmp_path)), str(F005), "--year", "2026")
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    names = {n for (n,) in rows(db, "SELECT name FROM fact")}
    assert {"kv_cache_tokens", "max_concurrency", "model_weights_bytes"}.isdisjoint(names)
    assert "available_kv_cache_bytes" in names  # the line that was in range is read
    assert rows(db, "SELECT count(*) FROM boot WHERE source_path LIKE '%005_%'")[0][0] >= 1
    assert rows(db, "SELECT max(running_reqs) FROM runtime_sample") == [(1,)]  # the hostile sample's is null


def test_export_is_valid_json_even_for_a_ledger_holding_infinity(db, cli, tmp_path):
    cli("ingest", str(F008))
    from dbutil import _engine

    with _engine(db).begin() as conn:  # as an older ledger stored 1<400 nines>.5x
        conn.exec_driver_sql("UPDATE fact SET value = 'Infinity' WHERE name = 'max_concurrency'"
                             if db.startswith("postgresql") else
                             "UPDATE fact SET value = 9e999 WHERE name = 'max_concurrency'")
    for fmt in ("json", "jsonl"):
        out = cli("export", "--format", fmt).output
        assert "Infinity" not in out and "NaN" not in out
        for chunk in ([out] if fmt == "json" else out.splitlines()):
            json.loads(chunk, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    out = cli("show", "1", "--format", "json").output
    json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))


# -- 4. file names that are not UTF-8 ------------------------------------------------------------------------


@sqlite_only
def test_a_file_name_that_is_not_utf8(tmp_path):
    bad = os.fsdecode(b"x\xff\xfe.log")
    (tmp_path / bad).write_bytes(F008.read_bytes())
    db = tmp_path / "l.db"
    p = subprocess.run([*LEDGER, "--db", str(db), "ingest", bad, str(F005), "--year", "2026"], cwd=tmp_path,
                       capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    assert b"Traceback" not in p.stderr
    assert b"x\\xff\\xfe.log" in p.stdout
    con = sqlite3.connect(db)
    paths = [r[0] for r in con.execute("SELECT DISTINCT source_path FROM boot ORDER BY id")]
    con.close()
    assert paths[0] == "x\\xff\\xfe.log" and paths[-1].endswith(F005.name)


# -- 5. input without newlines ------------------------------------------------------------------------------


def test_a_long_line_is_cut_and_the_lines_after_it_keep_their_numbers(tmp_path):
    body = F008.read_bytes()
    path = tmp_path / "long.log"
    path.write_bytes(b"Available KV cache memory: 9.74 GiB " + b"a" * (20 * 2**20) + b"\n" + body)
    source = parsers.Source(str(path))
    boots = parsers.parse_source(source, default_year=2026, options=parsers.ScanOptions(fork=False, grep=False)).boots
    assert source.long_lines == 1
    tokens = [f for b in boots for f in b.facts if f.name == "kv_cache_tokens"]
    assert tokens and tokens[0].line == 1 + body.decode().splitlines().index(
        next(x for x in body.decode().splitlines() if "GPU KV cache size" in x)) + 1


def test_the_blocks_of_an_endless_line_stay_small(tmp_path):
    path = tmp_path / "zeros.log"
    path.write_bytes(b"z" * (40 * 2**20))
    sizes = [len(b) for b in parsers.Source(str(path)).blocks(block_size=2**20)]
    assert max(sizes) <= 2**20 + 1 and len(sizes) == 1


def test_a_stream_without_newlines_is_read_flat_and_refused(tmp_path):
    """`head -c 100000000 /dev/zero | ledger ingest -`: 91 s before; now it is read at the speed
    of the pipe with a line kept up to 1 MiB."""
    code = ("import sys; from ledger.cli import main\n"
            "try:\n    main(sys.argv[1:])\n"
            "except SystemExit as e:\n    code = e.code\n"
            "sys.stderr.write('\\nRSS ' + [x.split()[1] for x in open('/proc/self/status') if x.startswith('VmHWM')][0])")
    feeder = subprocess.Popen(["head", "-c", "100000000", "/dev/zero"], stdout=subprocess.PIPE)
    p = subprocess.run([sys.executable, "-c", code, "--db", str(tmp_path / "l.db"), "ingest", "-"], cwd=ROOT,
                       stdin=feeder.stdout, capture_output=True, text=True, timeout=60)
    feeder.stdout.close()
    feeder.wait()
    assert "Traceback" not in p.stderr and "Error: <stdin>:" in p.stderr
    assert int(p.stderr.rsplit("RSS ", 1)[1]) < 150_000


def test_a_device_is_refused(cli, db):
    r = cli("ingest", "/dev/zero", str(F005), "--year", "2026")
    assert r.exit_code == 2
    assert "/dev/zero: is a device, not a log file" in r.output
    assert rows(db, "SELECT count(*) FROM boot")[0][0] >= 1  # the next file is read


def test_a_long_line_is_said_once(cli, db, tmp_path):
    path = tmp_path / "long.log"
    # lines longer than a read block (8 MiB); a shorter one is held whole, memory stays bounded
    path.write_bytes(b"a" * (9 * 2**20) + b"\n" + b"b" * (9 * 2**20) + b"\n" + F008.read_bytes())
    r = cli("ingest", str(path))
    assert r.exit_code == 0
    assert r.output.count("longer than 1 MiB") == 1 and "2 lines" in r.output


# -- 6. compressed files --------------------------------------------------------------------------------


def test_a_truncated_zst_is_refused_like_a_truncated_gz(cli, db, tmp_path):
    import zstandard

    data = F008.read_bytes() * 200
    full = zstandard.ZstdCompressor().compress(data)
    (tmp_path / "cut.log.zst").write_bytes(full[: len(full) // 2])
    (tmp_path / "cut.log.gz").write_bytes(gzip.compress(data)[: len(full) // 2])
    for name in ("cut.log.zst", "cut.log.gz"):
        r = cli("ingest", str(tmp_path / name))
        assert r.exit_code == 2 and "cannot read" in r.output and "Traceback" not in r.output, (name, r.output)
    assert rows(db, "SELECT count(*) FROM boot") == [(0,)]


def test_a_zst_written_by_a_stream_is_read(cli, db, tmp_path):
    """A frame without a content size (what `zstd` writes from a pipe) is complete when it ends."""
    import zstandard

    path = tmp_path / "stream.log.zst"
    with open(path, "wb") as f, zstandard.ZstdCompressor().stream_writer(f) as w:
        w.write(F008.read_bytes())
    r = cli("ingest", str(path))
    assert r.exit_code == 0 and "boot 1" in r.output


def test_a_gz_with_trailing_garbage_is_read_with_a_warning(cli, db, tmp_path):
    path = tmp_path / "tail.log.gz"
    path.write_bytes(gzip.compress(F008.read_bytes()) + b"\x00\x00garbage after the member")
    r = cli("ingest", str(path))
    assert r.exit_code == 0 and "boot 1" in r.output
    assert "trailing garbage" in r.output
    assert rows(db, "SELECT count(*) FROM fact")[0][0] > 0


# -- shape values the views cast: whatever the args dump says, every read still answers ----------

_ARGS_BOOT = """\
(APIServer pid=1) INFO 05-16 10:00:00 [api_utils.py:339] vLLM server version 0.20.2, serving model m
(APIServer pid=1) INFO 05-16 10:00:00 [api_utils.py:273] non-default args: {{'model': 'm', {args}}}
(EngineCore_DP0 pid=43) INFO 05-16 10:00:10 [kv_cache_utils.py:1713] GPU KV cache size: {tokens} tokens
(EngineCore_DP0 pid=43) INFO 05-16 10:00:10 [kv_cache_utils.py:1717] Maximum concurrency for {tokens} tokens per request: 1.00x
(APIServer pid=1) INFO 05-16 10:00:20 [api_server.py:1000] Starting vLLM API server 0 on http://0.0.0.0:8000
"""


def _args_boot(tmp_path: Path, name: str, args: str, tokens: str) -> Path:
    path = tmp_path / f"{name}.log"
    path.write_text(_ARGS_BOOT.format(args=args, tokens=tokens))
    return path


def test_a_contract_beyond_32_bits_is_read_on_both_databases(db, cli, tmp_path):
    """1,024 sequences of 3,000,000 tokens: the product overflowed PostgreSQL's 32-bit integer,
    and every history and check of the ledger failed ("integer out of range")."""
    log = _args_boot(tmp_path, "long", "'max_model_len': 3000000, 'max_num_seqs': 1024, "
                     "'kv_cache_memory_bytes': 80000000000", "3,000,000")
    assert cli("ingest", str(log), "--year", "2026", "--label", "long").exit_code == 0
    assert "broken" in cli("history").output
    r = cli("check", "long")
    assert r.exit_code == 1 and "1024 x 3,000,000 = 3,072,000,000" in r.output, r.output


def test_shape_values_that_are_not_counts_are_not_read_and_every_read_answers(db, cli, tmp_path):
    """Text, a fraction, 19 digits: stored as printed, read as no count (SQLite read the digits
    before the point; PostgreSQL failed the boot's ingest, or every read of the views)."""
    odd = _args_boot(tmp_path, "odd", "'max_model_len': 9223372036854775000, 'max_num_seqs': 'abc', "
                     "'tensor_parallel_size': 2.5, 'block_size': '16x', 'kv_cache_memory_bytes': '1e400'",
                     "9,223,372,036,854,775,000")
    assert cli("ingest", str(odd), "--year", "2026", "--label", "odd").exit_code == 0
    for command in (["history"], ["check"], ["show", "odd"], ["export"], ["note", "odd"]):
        r = cli(*command)
        assert r.exit_code in (0, 1) and "Error" not in r.output, (command, r.output)
    figures = cli("sql", "SELECT max_num_seqs, max_model_len, tensor_parallel_size, block_size, "
                  "kv_cache_memory_bytes, kv_cache_tokens FROM boot_figures", "--format", "json").output
    assert json.loads(figures) == [dict.fromkeys(("max_num_seqs", "max_model_len", "tensor_parallel_size",
                                                  "block_size", "kv_cache_memory_bytes", "kv_cache_tokens"))]
    shape = dict(rows(db, "SELECT key, value_text FROM shape"))
    assert shape["max_num_seqs"] == "abc" and shape["tensor_parallel_size"] == "2.5"  # the evidence, as printed


# -- issue 38, item 1: a figure with no digits before its exponent ------------------------------------------

_STATS_LINE = ("(APIServer pid=1) INFO 05-04 01:06:53 [loggers.py:271] Engine 000: Avg prompt throughput: {a} tokens/s, "
               "Avg generation throughput: {b} tokens/s, Running: {r} reqs, Waiting: {w} reqs, "
               "GPU KV cache usage: {u}%, Prefix cache hit rate: {p}%")
_SPEC_LINE = ("(APIServer pid=1) INFO 05-04 01:06:43 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {m}, "
              "Accepted throughput: 63.19 tokens/s, Drafted throughput: 165.49 tokens/s, Accepted: {a} tokens, "
              "Drafted: {d} tokens, Per-position acceptance rate: {pp}, Avg Draft acceptance rate: {r}%")
_SPEC_V0_LINE = ("INFO 05-04 01:06:43 metrics.py:400] Speculative metrics: Draft acceptance rate: {rate}, "
                 "System efficiency: 0.300, Number of speculative tokens: 5, Number of accepted tokens: {acc}, "
                 "Number of draft tokens: {d}, Number of emitted tokens: 150.")
_GOOD = {"a": "2.5", "b": "89.6", "r": "1", "w": "0", "u": "5.2", "p": "0.0"}
_GOOD_SPEC = {"m": "2.91", "a": "632", "d": "1655", "pp": "0.770, 0.523", "r": "38.2"}
_GOOD_V0 = {"rate": "0.500", "acc": "100", "d": "200"}
# what the trial printed (e3, .e3, -e3, E3) and their kin: no digit before the exponent, a
# superscript digit (str.isdigit() says yes, int() says no), a lone point, 5,000 digits
_NO_FIGURES = ["e3", ".e3", "-e3", "E3", "+e3", "e", ".", "..", "1..2", "²", "٣", "9" * 5000]


def _records(bad: str) -> list[tuple[str, str, str]]:
    """(kind, series, line): a runtime record per figure, that figure printed as ``bad``."""
    out = []
    for key, series in (("a", "prompt_throughput_tps"), ("b", "generation_throughput_tps"), ("r", "running_reqs"),
                        ("w", "waiting_reqs"), ("u", "gpu_kv_cache_usage_pct"), ("p", "prefix_cache_hit_rate_pct")):
        out.append(("engine_stats", series, _STATS_LINE.format(**{**_GOOD, key: bad})))
    for key, series in (("m", "spec_mean_acceptance_length"), ("a", "spec_accepted_tokens"),
                        ("d", "spec_drafted_tokens"), ("r", "spec_draft_acceptance_rate_pct")):
        out.append(("spec_decode", series, _SPEC_LINE.format(**{**_GOOD_SPEC, key: bad})))
    out.append(("spec_decode", "spec_per_position_acceptance",
                _SPEC_LINE.format(**{**_GOOD_SPEC, "pp": f"0.770, {bad}, 0.523"})))
    for key, series in (("rate", "spec_draft_acceptance_rate_pct"), ("acc", "spec_accepted_tokens"),
                        ("d", "spec_drafted_tokens")):
        out.append(("spec_decode", series, _SPEC_V0_LINE.format(**{**_GOOD_V0, key: bad})))
    return out


def _samples_both_ways(text: str, tmp_path: Path) -> list[list[parsers.RuntimeSample]]:
    """The samples of ``text`` as a file's parse reads them for the ingest (the runs' stored rows
    worked out as it reads, ``staging.STORED_ROWS``) and as the watch's live parse reads them."""
    from ledger.db.staging import STORED_ROWS
    from ledger.parsers.live import LiveParse
    from ledger.parsers.pipeline import Parse

    path = tmp_path / "one.log"
    path.write_text(text)
    filed: list[parsers.RuntimeSample] = []
    parse = Parse(parsers.Source(str(path)), None, 2026, parsers.ScanOptions(fork=False, grep=False),
                  store=STORED_ROWS)
    parse.run(runtime_sink=lambda boot, got: filed.extend(got))
    live: list[parsers.RuntimeSample] = []
    watch = LiveParse(runtime_sink=lambda boot, got: live.extend(got))
    watch.feed(text.encode())
    watch.end()
    return [filed, live]


@pytest.mark.parametrize("bad", _NO_FIGURES, ids=lambda b: b if len(b) < 9 else f"{len(b)}-digits")
def test_a_runtime_figure_that_is_no_number_costs_that_figure_only(bad, tmp_path):
    """Every figure of every runtime record, printed as ``bad``: the record is still a sample
    at its line, the other figures read, the bad one unread (None) — on the ingest's path (the
    rows worked out as the file is read) and the watch's (fed live)."""
    from ledger.db.staging import FIGURE_SERIES, KIND_CODES, stored_row

    head = "\n".join(_body(F008)[:3]) + "\n"
    for kind, series, record in _records(bad):
        text = head + record + "\n" + _STATS_LINE.format(**_GOOD) + "\n"
        for way, samples in zip(("ingest", "watch"), _samples_both_ways(text, tmp_path), strict=True):
            rows = [stored_row(s) if isinstance(s, parsers.RuntimeSample) else s for s in samples]
            assert [(r[0], r[1]) for r in rows] == [(KIND_CODES[kind], 4), (0, 5)], (way, record)  # each at its line
            figures = rows[0][5:-1]  # the row's figure columns, in its kind's series order
            if series == "spec_per_position_acceptance":
                assert json.loads(rows[0][-1]) == [0.77, None, 0.523], (way, bad)
                assert None not in figures[:len(FIGURE_SERIES[kind])], (way, bad)
            else:
                at = FIGURE_SERIES[kind].index(series)
                assert figures[at] is None, (way, record, figures)
                assert sum(f is not None for f in figures) >= 2, (way, record, figures)  # the others are read


def test_a_stats_figure_that_is_no_number_costs_one_figure_and_not_the_next_file(db, cli, tmp_path):
    """The trial's `Waiting: e3 reqs`: the ingest exited 1 with a traceback and stored neither
    this boot nor the next file's."""
    lines = _body(F008)
    at = next(i for i, x in enumerate(lines) if "Waiting: 0 reqs" in x)
    for bad in ("e3", ".e3", "-e3", "E3"):
        lines[at] = re.sub(r"Waiting: \S+ reqs", f"Waiting: {bad} reqs", lines[at])
        path = tmp_path / f"bad{bad}.log"
        path.write_text("\n".join(lines) + "\n")
        r = cli("ingest", str(path), str(F005), "--year", "2026")
        assert r.exit_code == 0, r.output
        assert "Traceback" not in r.output
    assert rows(db, "SELECT count(*) FROM boot WHERE source_path LIKE '%005_%'")[0][0] >= 1
    assert rows(db, "SELECT count(*) FROM boot WHERE source_path LIKE '%bad%'")[0][0] == 4
    got = rows(db, f"SELECT running_reqs, waiting_reqs, gpu_kv_cache_usage_pct FROM runtime_sample "
                   f"WHERE line = {at + 1} AND kind = 'engine_stats'")
    assert len(got) == 4 and all(r[0] is not None and r[1] is None and r[2] is not None for r in got), got


@pytest.mark.parametrize("bad", ["e3", "9" * 5000, "²", "."], ids=["e3", "5000-digits", "superscript", "point"])
def test_every_built_in_rule_s_sample_with_any_figure_damaged_is_read_without_an_error(bad):
    """Each digit run of each built-in rule's sample line, printed as ``bad``: matched without an
    exception (an OOM's `GPU <5,000 digits>` raised int()'s ValueError through the ingest)."""
    from ledger.parsers import vllm
    from ledger.parsers.lines import parse_line

    rules = parsers.builtin_ruleset()
    lines = {s if isinstance(s, str) else s.line for r in vllm.BUILTIN_RULES for s in r.samples}
    assert len(lines) > 100
    for text in sorted(lines):
        for m in re.finditer(r"\d+(?:\.\d+)?", text):
            damaged = text[:m.start()] + bad + text[m.end():]
            for line in (damaged, "(Worker_TP1 pid=97) INFO 05-04 01:06:53 [x.py:1] " + damaged):
                rules.match_line(parse_line(1, line), lambda: [])


@pytest.mark.parametrize("prefix", ["(APIServer pid={n}) ", "(VllmWorker rank={n} pid=1) ", "(Worker_TP{n} pid=1) ",
                                    "(EngineCore_DP0 pid=1) (Worker_DP0_EP{n} pid=2) "])
def test_a_process_prefix_with_5000_digits_is_read_without_an_error(prefix):
    """int() refuses a string of more than 4,300 digits: a pid or rank that long raised through
    the line model and took the file's boots with it.  Past 18 digits it is not read."""
    from ledger.parsers.lines import fast_line, parse_line

    text = prefix.format(n="9" * 5000) + "INFO 05-04 01:06:53 [loggers.py:271] Engine 000: Avg prompt throughput: " \
        "2.5 tokens/s, Avg generation throughput: 89.6 tokens/s, Running: 1 reqs, Waiting: 0 reqs, " \
        "GPU KV cache usage: 5.2%, Prefix cache hit rate: 0.0%"
    for line in (parse_line(1, text), fast_line(1, text.encode())):
        assert line is None or (line.pid is None or line.pid < 10**18) and (line.rank is None or line.rank < 10**18)
    head = "\n".join(_body(F008)[:3]) + "\n"
    boots = parsers.parse_text(head + text + "\n", year=2026)
    assert [b.outcome for b in boots] and sum(len(b.runtime) for b in boots) == 1


# -- issue 38, item 2: a model's config.json that is no geometry ---------------------------------------------

_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 16,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "hidden_size": 2048,
          "torch_dtype": "bfloat16"}
_MODEL_BOOT = """\
(APIServer pid=1) INFO 05-16 10:00:00 [api_utils.py:339] vLLM server version 0.11.0, serving model {model}
(APIServer pid=1) INFO 05-16 10:00:00 [api_utils.py:273] non-default args: {{'model': '{model}', 'max_model_len': 32768}}
(EngineCore_DP0 pid=43) INFO 05-16 10:00:09 [gpu_worker.py:298] Available KV cache memory: 9.74 GiB
(EngineCore_DP0 pid=43) INFO 05-16 10:00:10 [kv_cache_utils.py:1087] GPU KV cache size: 319,120 tokens
(EngineCore_DP0 pid=43) INFO 05-16 10:00:10 [kv_cache_utils.py:1091] Maximum concurrency for 32,768 tokens per request: 9.74x
(APIServer pid=1) INFO 05-16 10:00:20 [api_server.py:1000] Starting vLLM API server 0 on http://0.0.0.0:8000
"""
_TEXT = "text_config"
# (what is wrong, the key the reason names, the change to the Llama config); the trial's NaN,
# Infinity, strings and huge numbers, and their kin
_BAD_CONFIGS = [
    ("NaN layers", "num_hidden_layers", {"num_hidden_layers": float("nan")}),
    ("Infinity heads", "num_attention_heads", {"num_attention_heads": float("inf")}),
    ("-Infinity KV heads", "num_key_value_heads", {"num_key_value_heads": float("-inf")}),
    ("NaN head_dim", "head_dim", {"head_dim": float("nan")}),
    ("-1 layers", "num_hidden_layers", {"num_hidden_layers": -1}),
    ("0 heads", "num_attention_heads", {"num_attention_heads": 0}),
    ("0 KV heads", "num_key_value_heads", {"num_key_value_heads": 0}),
    ("head_dim 0", "head_dim", {"head_dim": 0}),
    ("1e400 head_dim", "head_dim", {"head_dim": 1e400}),
    ("'32' layers", "num_hidden_layers", {"num_hidden_layers": "32"}),
    ("[] heads", "num_attention_heads", {"num_attention_heads": []}),
    ("{} KV heads", "num_key_value_heads", {"num_key_value_heads": {}}),
    ("null layers", "num_hidden_layers", {"num_hidden_layers": None}),
    ("true heads", "num_attention_heads", {"num_attention_heads": True}),
    ("10**30 head_dim", "head_dim", {"head_dim": 10**30}),
    ("10**19 KV heads", "num_key_value_heads", {"num_key_value_heads": 10**19}),
    ("1.5 layers", "num_hidden_layers", {"num_hidden_layers": 1.5}),
    ("no layers", "num_hidden_layers", {"num_hidden_layers": ...}),
    ("no heads", "num_attention_heads", {"num_attention_heads": ...}),
    ("KV heads > heads", "num_key_value_heads", {"num_key_value_heads": 64}),
    ("hidden_size NaN, no head_dim", "hidden_size", {"head_dim": ..., "hidden_size": float("nan")}),
    ("hidden_size below the heads", "hidden_size", {"head_dim": ..., "hidden_size": 16}),
    ("nested text_config bad", "num_attention_heads", {_TEXT: {**_LLAMA, "num_attention_heads": "x"}}),
    ("MLA rank Infinity", "kv_lora_rank", {"kv_lora_rank": float("inf")}),
    ("MLA rope text", "qk_rope_head_dim", {"kv_lora_rank": 512, "qk_rope_head_dim": "x"}),
    ("torch_dtype {}", "torch_dtype", {"torch_dtype": {"a": 1}}),
    ("layer_types text", "layer_types", {"layer_types": "full_attention"}),
    ("layer_types [null]", "layer_types", {"layer_types": [None] * 16}),
    ("GDN conv kernel Infinity", "linear_conv_kernel_dim",
     {"layer_types": ["linear_attention", "full_attention"] * 8, "linear_num_key_heads": 16,
      "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
      "linear_conv_kernel_dim": float("inf")}),
]


def _bad_config(tmp_path: Path, change: dict) -> Path:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    config = {k: v for k, v in {**_LLAMA, **change}.items() if v is not ...}
    (folder / "config.json").write_text(json.dumps(config))  # NaN and Infinity as Python writes them
    return folder


@pytest.mark.parametrize(("what", "key", "change"), _BAD_CONFIGS, ids=[c[0] for c in _BAD_CONFIGS])
def test_a_config_that_is_no_geometry_is_insufficient_and_the_boot_is_stored(db, cli, tmp_path, what, key, change):
    """The trial: 11 of 18 hostile configs made the ingest (and the watch) die with a traceback
    and store nothing; a non-text architecture lost the boot to a database error."""
    folder = _bad_config(tmp_path, change)
    log = tmp_path / "boot.log"
    log.write_text(_MODEL_BOOT.format(model=folder))
    r = cli("ingest", str(log), "--year", "2026", "--label", "m")
    assert r.exit_code == 0, r.output
    (got,) = rows(db, "SELECT status, reason FROM kv_formula_prediction")
    assert got[0] == "insufficient" and key in got[1], got
    assert rows(db, "SELECT count(*) FROM model_geometry") == [(0,)]


@pytest.mark.parametrize(("what", "key", "change"), _BAD_CONFIGS, ids=[c[0] for c in _BAD_CONFIGS])
def test_model_add_of_a_config_that_is_no_geometry_is_one_line(db, cli, tmp_path, what, key, change):
    folder = _bad_config(tmp_path, change)
    cli("db", "upgrade")
    r = cli("model", "add", str(folder), "--as", "m")
    assert r.exit_code == 2 and r.output.startswith("Error: ") and len(r.output.splitlines()) == 1, r.output
    assert key in r.output
    assert rows(db, "SELECT count(*) FROM model_geometry") == [(0,)]


def test_a_watch_of_a_boot_whose_config_is_no_geometry_stores_the_boot(tmp_path):
    db = tmp_path / "l.db"
    folder = _bad_config(tmp_path, {"num_key_value_heads": float("nan")})
    p = subprocess.run([*LEDGER, "--db", str(db), "watch", "-"], input=_MODEL_BOOT.format(model=folder),
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 0 and "Traceback" not in p.stderr and "Error" not in p.stderr, p.stderr
    con = sqlite3.connect(db)
    got = con.execute("SELECT status, reason FROM kv_formula_prediction").fetchall()
    con.close()
    assert len(got) == 1 and got[0][0] == "insufficient" and "num_key_value_heads" in got[0][1], got


def test_an_architecture_that_is_no_name_is_left_out_and_the_boot_predicted(db, cli, tmp_path):
    """``architectures: [{}]`` lost the boot: the ingest stored nothing ("Error binding
    parameter 3: type 'dict' is not supported"), the watch retried it until it gave up."""
    folder = _bad_config(tmp_path, {"architectures": [{"x": 1}], "model_type": ["llama"]})
    log = tmp_path / "boot.log"
    log.write_text(_MODEL_BOOT.format(model=folder))
    assert cli("ingest", str(log), "--year", "2026").exit_code == 0
    assert rows(db, "SELECT status FROM kv_formula_prediction") == [("predicted",)]
    assert rows(db, "SELECT architecture FROM model_geometry") == [(None,)]
