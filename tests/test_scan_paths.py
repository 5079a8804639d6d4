"""Every way of finding the interesting lines gives identical boots: Hyperscan, RE2 or the
pure-Python scanner, counts from grep or from Python, small or large blocks — and all of them
the same as reading every line through every rule."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT
from hypothesis import assume, given
from hypothesis import strategies as st
from reference import reference_boots

from ledger import parsers
from ledger.parsers.fast.child import ChildScan
from ledger.parsers.fast.options import ScanOptions
from ledger.parsers.fast.scanner import LineScanner, available_engines
from ledger.parsers.items import RuntimeRun
from ledger.parsers.lines import fast_line
from ledger.parsers.rules import RuleSet
from ledger.parsers.vllm import BUILTIN_RULES

FIXTURES = sorted((ROOT / "fixtures").glob("*/*.log"))


def summary(boots: list[parsers.Boot]) -> list[dict]:
    return [{
        "lines": (b.first_line, b.last_line), "outcome": b.outcome, "engine": (b.engine_version, b.engine_commit),
        "facts": [(f.name, f.value, f.line, f.rank, f.text) for f in b.facts],
        "failures": [(f.kind, f.phase, f.line, f.figures, f.text) for f in b.failures],
        "shape": {k: (v.value, v.source, v.line) for k, v in b.shape.items()},
        "runtime": [(s.kind, s.line, s.engine, s.values, s.timestamp) for s in b.runtime],
        "counts": (b.access_lines, b.request_lines), "digest": b.content_sha256,
        "times": (b.started_at, b.ready_at, b.ended_at),
    } for b in boots]


@pytest.fixture(scope="module")
def rules():
    return RuleSet(BUILTIN_RULES)


ENGINES = ("hyperscan", "re2", "python")


def test_every_engine_is_installed_for_the_tests():
    assert set(available_engines()) == set(ENGINES)


def test_the_fastest_installed_engine_is_the_default(rules):
    assert LineScanner(rules.anchors, rules.count_anchors).engine == "hyperscan"


def _engine_of(path, options=None):
    parse = parsers.start(str(path), year=2026, **({"options": options} if options else {}))
    parse.close()
    return parse.scanner.engine


def test_a_small_plain_file_is_scanned_by_the_python_engine_unless_one_is_named(tmp_path):
    """Building Hyperscan's database costs a boot log more than its scan saves
    (``ScanOptions.small_file_bytes``); a named engine is the one used, and a larger file gets
    the fastest installed."""
    log = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"
    assert _engine_of(log) == "python"
    assert _engine_of(log, ScanOptions(engine="hyperscan")) == "hyperscan"
    big = tmp_path / "big.log"
    big.write_bytes(log.read_bytes() * (ScanOptions().small_file_bytes // log.stat().st_size + 1))
    assert _engine_of(big) == "hyperscan"


def event_lines(engine, rules, block):
    """(line, anchor texts) of each event line the engine finds in one block."""
    scanner = LineScanner(rules.anchors, rules.count_anchors, engine)
    return [(block[s:e], sorted(scanner.anchor_texts[i] for i in found))
            for s, e, found in scanner._event_lines(block)]


@pytest.mark.parametrize("engine", ENGINES)
def test_overlapping_anchors_in_one_line_are_all_found(engine, rules):
    # "Capturing CUDA graph" and "CUDA graph pool memory: " overlap: one regex pass reports one
    line = b"INFO 10-01 09:00:00 [gpu_model_runner.py:3480] Capturing CUDA graph pool memory: 0.5 GiB"
    found = event_lines(engine, rules, b"a line\n" + line + b"\nanother\n")
    assert found == [(line, ["CUDA graph pool memory: ", "Capturing CUDA graph"])]


@pytest.mark.parametrize("engine", ENGINES)
def test_anchors_are_found_between_bytes_that_are_not_utf8(engine, rules):
    block = b"\xff\xfeCUDA out of memory\xe2\x96\n\x88\xe2\x96\x88  version 0.11.0\n"
    assert event_lines(engine, rules, block) == [
        (b"\xff\xfeCUDA out of memory\xe2\x96", ["CUDA out of memory"]),
        (b"\x88\xe2\x96\x88  version 0.11.0", ["\u2588  version "])]


# a forked child either reads the runtime records itself or leaves them to this process
FORKS = (None, "always", "never")
PATHS = [(engine, grep, fork, numpy) for engine in ENGINES for grep in (True, False) for fork in FORKS
         for numpy in (True, False)]


def options_for(path, **options) -> ScanOptions:
    """The ScanOptions of one way: scan engine, grep counting, forked child (reading runtime
    records or not), numpy newlines; ``options``: more ScanOptions.  The fixtures are small:
    every way treats them as large files, so grep counts them and a child scans them too."""
    engine, grep, fork, numpy = path
    return ScanOptions(engine=engine, large_file_bytes=0, grep=grep, fork=fork is not None, fork_min_cores=1,
                       child_refines=fork or "never", numpy_min_block=0 if numpy else 1 << 62, **options)


def parse_by(path, log, rules, **options):
    """Parse ``log`` one way (``options_for``)."""
    return parsers.parse_source(parsers.Source(str(log)), rules, 2026, options=options_for(path, **options)).boots


def _holds_any(log, anchors: set[str]) -> bool:
    text = log.read_bytes().decode("utf-8", errors="replace")
    return any(anchor in text for anchor in anchors)


# every fixture goes through each engine once (Python counts, no child; numpy's and
# bytes.count's line numbers both) and through a scanning child that leaves the runs to this
# process; the paths that only matter where there is something for them — grep's counts, a
# child that reads runs of runtime records — are taken by the files that hold a count rule's
# anchor, or a runtime rule's (without one, grep counts nothing and no run is ever formed, so
# every such path is the path without it).  The three single-file tests below take all of PATHS.
EVERY_FILE = [("hyperscan", False, None, True), ("re2", False, None, True), ("python", False, None, False),
              ("hyperscan", False, "never", False)]
COUNTED = [("hyperscan", True, None, True), ("re2", True, "never", False), ("python", True, "always", True)]
RUNS = [("hyperscan", False, "always", True), ("re2", True, "always", False), ("python", False, "always", True),
        ("python", True, "never", True)]


def paths_for(log, rules) -> list[tuple]:
    from ledger.parsers.rules import RuntimeRule

    counted = {r.anchor for r in rules.count_rules}
    runs = {r.anchor for r in rules.rules if isinstance(r, RuntimeRule)}
    paths = list(EVERY_FILE)
    if _holds_any(log, counted):
        paths += COUNTED
    if _holds_any(log, runs):
        paths += RUNS
    return list(dict.fromkeys(paths))


def test_the_paths_taken_cover_the_matrix(rules):
    """Across the fixtures, every value of every option is taken, every engine with grep and
    with a child that reads runs, and each special path by files that reach it."""
    taken = {path for log in FIXTURES for path in paths_for(log, rules)}
    for engine in ENGINES:
        assert {(engine, grep) for engine_, grep, _fork, _numpy in taken if engine_ == engine} == \
            {(engine, True), (engine, False)}
        assert any(p[0] == engine and p[2] == "always" for p in taken)
    assert {p[2] for p in taken} == set(FORKS) and {p[3] for p in taken} == {True, False}
    assert taken <= set(PATHS)
    reached = [log for log in FIXTURES if len(paths_for(log, rules)) == len(EVERY_FILE) + len(COUNTED) + len(RUNS)]
    assert reached  # some fixture holds both a count line and runtime records


@pytest.mark.heavy
@pytest.mark.parametrize("log", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name[:28]}")
def test_every_path_gives_the_reference_result(log, rules):
    results = []
    paths = paths_for(log, rules)
    for path in paths:
        try:
            results.append(summary(parse_by(path, log, rules)))
        except parsers.SourceError as e:
            results.append(str(e))
    if isinstance(results[0], str):  # not a vLLM log (the SGLang excerpts): refused by every path alike
        assert results == [results[0]] * len(paths)
        return
    # the reference reads every line and never refuses a file
    expected = summary(reference_boots(log, rules, 2026))
    for path, result in zip(paths, results, strict=True):
        assert result == expected, path


@pytest.mark.heavy
def test_tiny_blocks_change_nothing(rules):
    log = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"
    expected = summary(parsers.parse_source(parsers.Source(str(log)), rules, 2026).boots)
    for path in PATHS:  # blocks end mid-line, anchors straddle blocks
        assert summary(parse_by(path, log, rules, block_size=97)) == expected, path


@pytest.mark.heavy
def test_a_generated_runtime_log_through_every_path(tmp_path, rules):
    import subprocess
    import sys

    log = tmp_path / "runtime.log"
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(log), "--mb", "2"], check=True)
    expected = summary(reference_boots(log, rules, 2026))
    assert expected[0]["counts"][0] > 1000 and len(expected[0]["runtime"]) > 100
    for path in PATHS:
        assert summary(parse_by(path, log, rules)) == expected, path


def _stats_line(pid: int, second: int, running: int) -> str:
    # loggers.py: "Engine %03d: Avg prompt throughput: %.1f tokens/s, …" under the API server's prefix
    return (f"(APIServer pid={pid}) INFO 10-01 09:{second // 60:02d}:{second % 60:02d} [loggers.py:271] Engine 000: "
            f"Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 51.2 tokens/s, Running: {running} reqs, "
            f"Waiting: 0 reqs, GPU KV cache usage: 3.5%, Prefix cache hit rate: 0.0%\n")


def _access_line(pid: int) -> str:
    return f'(APIServer pid={pid}) INFO:     172.18.0.1:50504 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'


@pytest.mark.parametrize("refines", ["always", "never"])
def test_the_scanning_child_reads_runs_of_records_only_when_it_should(tmp_path, rules, refines):
    log = tmp_path / "stats.log"
    log.write_text("".join(_stats_line(1, s, 1) for s in range(0, 600, 10)))
    options = ScanOptions(engine="python", large_file_bytes=0, fork_min_cores=1, child_refines=refines)
    parse = parsers.Parse(parsers.Source(str(log)), rules, 2026, options)
    assert parse.child is not None
    runs = [item for item in parse.child if isinstance(item, RuntimeRun)]
    parse.close()
    assert (sum(len(r.samples) for r in runs), refines) in [(60, "always"), (0, "never")]


@pytest.mark.heavy
def test_a_new_api_server_pid_inside_a_run_of_stats_lines_starts_a_boot(tmp_path, rules):
    """A run of records gathered at once must still split where a restarted server's first
    line is (no banner: the log was cut), and credit the access lines to the right boot."""
    text = "".join(_stats_line(1, s, s % 5) + _access_line(1) for s in range(0, 70, 10))
    text += "".join(_access_line(7) * 2 + _stats_line(7, s, 1) for s in range(70, 120, 10))
    log = tmp_path / "restart.log"
    log.write_text(text)
    expected = summary(reference_boots(log, rules, 2026))
    assert [len(b["runtime"]) for b in expected] == [7, 5]
    assert [b["counts"][0] for b in expected] == [9, 8]  # the new pid's first access lines come before its stats line
    for path in PATHS:  # and runs end mid-series
        assert summary(parse_by(path, log, rules, run_limit=3)) == expected, path


def _v0_prefix_line(pid: int, second: int) -> str:
    # V0's metrics.py: "Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%", the line after its stats line
    return (f"(APIServer pid={pid}) INFO 10-01 09:{second // 60:02d}:{second % 60:02d} [metrics.py:425] "
            f"Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%\n")


def stored_by(path, log, rules, **options) -> list[tuple[int, list[tuple]]]:
    """What an ingest's runtime sink is handed parsing ``log`` one way with the ledger's store
    (``staging.STORED_ROWS``: a run's records read straight to their rows), each sample as its
    stored row (``staging.stored_row``), by boot."""
    from ledger.db.staging import STORED_ROWS, stored_row

    got: dict[int, list[tuple]] = {}

    def sink(boot, samples):
        got.setdefault(boot.index, []).extend(s if type(s) is tuple else stored_row(s) for s in samples)

    parsers.Parse(parsers.Source(str(log)), rules, 2026, options_for(path, **options), store=STORED_ROWS).run(
        lambda boot: None, sink)
    return sorted(got.items())


@pytest.mark.heavy
def test_the_rows_worked_out_with_the_runs_are_the_samples_rows_through_every_path(tmp_path, rules):
    """A parse given the ledger's store hands the sink each run's rows as the samples read one
    by one would be stored, whoever refines the hits; runs end mid-series and at a restarted
    server, and a V1 stats line that ends a run still takes the V0 prefix-hit line after it."""
    from ledger.db.staging import stored_row

    text = "".join(_stats_line(1, s, s % 5) + _access_line(1) for s in range(0, 70, 10))
    text += _v0_prefix_line(1, 70)
    text += "".join(_access_line(7) * 2 + _stats_line(7, s, 1) for s in range(80, 130, 10))
    log = tmp_path / "restart.log"
    log.write_text(text)
    boots = reference_boots(log, rules, 2026)
    expected = [(b.index, [stored_row(s) for s in b.runtime]) for b in boots]
    assert [len(rows) for _, rows in expected] == [7, 5]
    assert boots[0].runtime[-1].values["prefix_cache_hit_rate_pct"] == 12.5  # the V0 line's, on the run's last
    for path in PATHS:
        assert stored_by(path, log, rules, run_limit=3) == expected, path


def fixture_lines():
    for log in FIXTURES:
        yield from enumerate(log.read_bytes().split(b"\n"), start=1)


def test_fast_line_is_parse_line_on_every_fixture_line():
    taken = 0
    for number, raw in fixture_lines():
        fast = fast_line(number, raw)
        if fast is not None:
            taken += 1
            assert fast == parsers.parse_line(number, raw.decode("utf-8", errors="replace")), raw
    assert taken > 100  # the shortcut does get used on real logs


@given(st.sampled_from([b"", b"(APIServer pid=1) ", b"(EngineCore_DP0 pid=43) ", b"(VllmWorker rank=2 pid=9) ",
                        b"qwen3-1  | ", b"\x1b[32m", b"(Worker_TP1 pid=147) ", b"  "]),
       st.sampled_from([b"INFO", b"WARNING", b"ERROR", b"DEBUG", b"INF"]),
       st.sampled_from([b"10-01 09:00:10", b"10-01 09:00:10.123", b"1-01 09:00:10"]),
       st.sampled_from([b"[loggers.py:271] ", b"loggers.py:271] ", b"[loggers.py:271]  ", b"[a b.py:1] "]),
       st.binary(max_size=40), st.sampled_from([b"", b"\r", b" ", b"\x1c", b" [repeated 3x across cluster]"]))
def test_fast_line_is_parse_line_or_declines(prefix, level, stamp, where, message, end):
    raw = prefix + level + b" " + stamp + b" " + where + message + end
    fast = fast_line(7, raw)
    if fast is not None:
        assert fast == parsers.parse_line(7, raw.decode("utf-8", errors="replace"))


def _general(rule):
    return dataclasses.replace(rule, fast=None)


@pytest.mark.parametrize("name", ["engine_stats", "spec_decode_v1"])
def test_the_fast_extractor_agrees_with_the_general_one_on_every_fixture_line(name, rules):
    (rule,) = [r for r in rules.rules if r.name == name]
    assert rule.fast is not None
    taken = 0
    for number, raw in fixture_lines():
        if rule.anchor.encode() not in raw:
            continue
        line = parsers.parse_line(number, raw.decode("utf-8", errors="replace"))
        data = rule.fast_data(line.message)
        if data is not None:
            taken += 1
            (event,) = _general(rule).events(line, line.message, line.raw)
            assert data == event.data, raw
    assert taken >= 2  # real excerpts that are in the plain shape


@pytest.mark.parametrize("raw", [
    "(APIServer pid=1) INFO 10-01 09:00:10 [loggers.py:271] Engine 000: Avg prompt throughput: 5123.4 tokens/s, "
    "Avg generation throughput: 88.1 tokens/s, Running: 7 reqs, Waiting: 1 reqs, GPU KV cache usage: 43.2%, "
    "Prefix cache hit rate: 12.5%",
    "INFO 06-16 10:03:14 [loggers.py:87] Engine 003: Avg prompt throughput: 0.0 tokens/s, Avg generation "
    "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%",
    "(APIServer pid=1) INFO 10-01 09:00:10 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 3.14, "
    "Accepted throughput: 85.70 tokens/s, Drafted throughput: 120.00 tokens/s, Accepted: 857 tokens, Drafted: 1200 "
    "tokens, Per-position acceptance rate: 0.812, 0.601, 0.433, Avg Draft acceptance rate: 71.4%",
])
def test_the_fast_extractors_agree_with_the_general_ones(raw, rules):
    line = parsers.parse_line(5, raw)
    (rule,) = [r for r in rules.rules if r.anchor in raw and getattr(r, "fast", None) is not None]
    data = rule.fast_data(line.message)
    assert data is not None
    (event,) = _general(rule).events(line, line.message, line.raw)
    assert data == event.data


@pytest.mark.parametrize("message", [
    # 0.11.1+ builds the line from optional parts: "Preemptions" between them
    "Engine 000: Avg prompt throughput: 2.5 tokens/s, Avg generation throughput: 89.6 tokens/s, Running: 1 reqs, "
    "Waiting: 0 reqs, Preemptions: 2, GPU KV cache usage: 5.2%, Prefix cache hit rate: 0.0%",
    # a per-position rate of nan (no drafts at that position yet)
    "SpecDecoding metrics: Mean acceptance length: 1.00, Accepted throughput: 0.00 tokens/s, Drafted throughput: "
    "0.00 tokens/s, Accepted: 0 tokens, Drafted: 0 tokens, Per-position acceptance rate: nan, nan, "
    "Avg Draft acceptance rate: 0.0%",
])
def test_the_fast_extractors_decline_other_shapes(message, rules):
    (rule,) = [r for r in rules.rules if getattr(r, "fast", None) is not None and r.anchor in message]
    assert rule.fast_data(message) is None
    line = parsers.parse_line(1, "INFO 05-04 01:06:53 [loggers.py:271] " + message)
    (event,) = rule.events(line, line.message, line.raw)  # the general extractor reads it
    assert event.data["values"]


def _as_general(rule, number, raw):
    """What a record read in one match must equal: the line model's fields and the general
    extractor's data."""
    line = parsers.parse_line(number, raw.decode("utf-8", errors="replace"))
    assert line.raw.encode() == raw and line.year is None  # the evidence and identity are the raw bytes
    (event,) = _general(rule).events(line, line.message, line.raw)
    d = event.data
    return line.process, line.pid, parsers.RuntimeSample.of(d["kind"], number, line.timestamp, d["engine"], d["values"])


@pytest.mark.parametrize("name", ["engine_stats", "spec_decode_v1"])
def test_line_and_figures_in_one_match_agree_with_the_general_path_on_every_fixture_line(name, rules):
    (rule,) = [r for r in rules.rules if r.name == name]
    taken = 0
    for number, raw in fixture_lines():
        if rule.anchor.encode() not in raw:
            continue
        record = rule.fast_runtime(number, raw)
        if record is not None:
            taken += 1
            assert record == _as_general(rule, number, raw), raw
    assert taken >= 2


STATS_MESSAGE = (b"Engine 000: Avg prompt throughput: 5123.4 tokens/s, Avg generation throughput: 88.1 tokens/s, "
                 b"Running: 7 reqs, Waiting: 1 reqs, GPU KV cache usage: 43.2%, Prefix cache hit rate: 12.5%")


@given(st.sampled_from([b"", b"(APIServer pid=1) ", b"(EngineCore_DP0 pid=43) ", b"qwen3-1  | ", b"\x1b[32m",
                        b"(Worker_TP1 pid=147) ", b"  ", b"2026-01-02T03:04:05Z "]),
       st.sampled_from([b"INFO", b"WARNING", b"INF"]),
       st.sampled_from([b"10-01 09:00:10", b"10-01 09:00:10.123"]),
       st.sampled_from([b"[loggers.py:271] ", b"loggers.py:271] ", b"[loggers.py:271]  "]),
       st.sampled_from([STATS_MESSAGE, STATS_MESSAGE.replace(b"5123.4", b"5123.45"),
                        STATS_MESSAGE.replace(b"Waiting: 1 reqs, ", b"Waiting: 1 reqs, Preemptions: 0, "),
                        STATS_MESSAGE + b" (x)", STATS_MESSAGE.replace(b"000", b"\xd9\xa3")]),
       st.sampled_from([b"", b"\r", b" ", b"\x1c", b" [repeated 3x across cluster]"]))
def test_line_and_figures_in_one_match_agree_with_the_general_path_or_decline(prefix, level, stamp, where,
                                                                             message, end):
    (rule,) = [r for r in BUILTIN_RULES if r.name == "engine_stats"]
    raw = prefix + level + b" " + stamp + b" " + where + message + end
    record = rule.fast_runtime(9, raw)
    if record is not None:
        assert record == _as_general(rule, 9, raw)


def test_fast_line_declines_bytes_that_are_not_ascii():
    raw = (b"INFO 05-19 10:13:11 [loggers\xff.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
           b"throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit "
           b"rate: 0.0%")
    assert fast_line(1, raw) is None


@given(st.binary(max_size=3000).map(lambda b: b.replace(b"\r", b"\n")), st.integers(1, 300))
def test_blocks_give_back_every_byte_but_nuls_cut_at_line_ends_and_hash_it(data, block_size):
    import hashlib
    import tempfile

    assume(not data.startswith((b"\x1f\x8b", b"\x28\xb5\x2f\xfd")))  # gzip, zstd: decompressed
    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data)
        f.flush()
        source = parsers.Source(f.name)
        blocks = list(source.blocks(block_size))
    assert b"".join(blocks) == data.replace(b"\0", b"")  # a NUL is a hole, not text (issue 20, item 15)
    assert all(b.endswith(b"\n") for b in blocks[:-1])
    assert source.sha256 == hashlib.sha256(data).hexdigest() and source.size == len(data)


def _no_children_left() -> bool:
    import os

    try:
        os.waitpid(-1, os.WNOHANG)  # a running or unreaped child is still there
    except ChildProcessError:
        return True
    return False


def test_an_error_in_the_scanning_child_is_raised_here(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"x\n")

    def scan_then_fail():
        raise ValueError("bad block")
        yield  # a generator, like LineScanner.scan

    with pytest.raises(ValueError, match="bad block"):
        list(ChildScan(scan_then_fail, lambda: None, lambda: 0, str(log)))
    assert _no_children_left()


def test_a_child_that_dies_is_one_clear_error(tmp_path):
    import os

    log = tmp_path / "a.log"
    log.write_bytes(b"x\n")

    def die():
        os._exit(3)
        yield

    with pytest.raises(parsers.SourceError, match="scanning process ended without a result"):
        list(ChildScan(die, lambda: None, lambda: 0, str(log)))
    assert _no_children_left()


def test_leaving_a_child_scan_early_stops_the_child(rules):
    log = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"
    parse = parsers.Parse(parsers.Source(str(log)), rules, 2026, ScanOptions(engine="hyperscan", large_file_bytes=0, fork_min_cores=1))
    assert parse.child is not None
    next(iter(parse.child))
    parse.close()
    assert _no_children_left()


def test_a_large_file_is_scanned_in_a_child_only_with_the_cores_for_one(rules):
    """With fewer usable cores (CPU affinity, e.g. `taskset -c 0`) than fork_min_cores the
    scan runs in this process, reading the same boots."""
    from ledger.parsers.pipeline import usable_cores

    log = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"
    cores = usable_cores()
    forked = parsers.Parse(parsers.Source(str(log)), rules, 2026, ScanOptions(large_file_bytes=0, fork_min_cores=cores))
    here = parsers.Parse(parsers.Source(str(log)), rules, 2026, ScanOptions(large_file_bytes=0, fork_min_cores=cores + 1))
    assert (forked.child is not None, here.child is None) == (True, True)
    assert summary(here.run().boots) == summary(forked.run().boots)
    assert _no_children_left()


def test_a_parse_that_never_runs_leaves_no_process(rules):
    log = ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log"
    parsers.Parse(parsers.Source(str(log)), rules, 2026, ScanOptions(engine="hyperscan", large_file_bytes=0, fork_min_cores=1)).close()
    assert _no_children_left()


def test_a_ledger_that_cannot_open_stops_the_early_scan(tmp_path):
    from click.testing import CliRunner

    from ledger.cli import main

    (tmp_path / "file").write_text("not a folder")
    # a log large enough to be scanned by a child and counted by grep while the ledger opens
    text = (ROOT / "fixtures" / "synthetic" / "journald-restart-capture-oom-then-ready.log").read_bytes()
    log = tmp_path / "large.log"
    log.write_bytes(text * (ScanOptions().large_file_bytes // len(text) + 1))
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "file" / "ledger.db"), "ingest", str(log)])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "Traceback" not in result.output
    assert _no_children_left()


def test_a_fast_shape_names_its_figures_from_the_vocabulary():
    from ledger.parsers.rules import FastShape

    with pytest.raises(ValueError, match="no series 'running'"):
        FastShape("engine_stats", r"Running: (?P<running>\d+) reqs", {"running": int})
    with pytest.raises(ValueError, match="no group named 'running_reqs'"):
        FastShape("engine_stats", r"Running: (\d+) reqs", {"running_reqs": int})
    shape = FastShape("engine_stats", r"Running: (?P<running_reqs>\d+) reqs", {"running_reqs": int})
    assert shape.data(("7",)) == {"kind": "engine_stats", "engine": None, "values": {"running_reqs": 7}}
