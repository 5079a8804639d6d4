"""``parsers.live.LiveParse`` (what ``ledger watch`` parses with) gives the boots a file's parse
gives, whatever chunks the stream arrives in: every real fixture, fed a few lines at a time in
random cuts; and ``peek`` at the end of a stream is the boot its end finishes."""

from __future__ import annotations

import random

import pytest
from conftest import REAL

from ledger import parsers
from ledger.parsers.live import LiveParse, header_lines
from ledger.parsers.pipeline import parse_file

FIXTURES = sorted(REAL.glob("*.log"))


def _key(b: parsers.Boot) -> tuple:
    return (b.content_sha256, b.outcome, b.first_line, b.last_line, b.started_at, b.ready_at, b.ended_at,
            [(f.name, f.value, f.line) for f in b.facts], [(f.kind, f.phase, f.line, f.figures) for f in b.failures],
            sorted(b.shape), b.access_lines, b.request_lines)


def _chunks(data: bytes, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    lines = data.splitlines(keepends=True)
    out, i = [], 0
    while i < len(lines):
        n = rnd.choice([1, 1, 2, 3, 7, 40])
        out.append(b"".join(lines[i:i + n]))
        i += n
    return out


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem[:40])
def test_a_real_log_fed_in_random_chunks_gives_the_boots_of_its_file(path):
    try:
        want = parse_file(str(path))
    except parsers.SourceError:
        want = []  # refused as a whole file (no vLLM line): a stream of it stores nothing either
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"  # a stream's unfinished last line is finished when it ends
    samples: dict[int, list] = {}
    live = LiveParse(runtime_sink=lambda boot, got: samples.setdefault(boot.index, []).extend(got))
    got = [b for chunk in _chunks(data, len(data)) for b in live.feed(chunk)] + live.end()
    assert [_key(b) for b in got] == [_key(b) for b in want]
    assert {i: len(s) for i, s in samples.items()} == {b.index: len(b.runtime) for b in want if b.runtime}


@pytest.mark.parametrize("path", FIXTURES[::7], ids=lambda p: p.stem[:40])
def test_peek_at_the_end_is_the_boot_the_end_finishes(path):
    data = path.read_bytes()
    live = LiveParse()
    live.feed(data if data.endswith(b"\n") else data + b"\n")
    peeked = live.peek()
    finished = live.end()
    if peeked is not None and finished:
        assert _key(peeked) == _key(finished[-1])


def test_an_excerpt_header_is_told_only_once_its_closing_line_came():
    assert header_lines(b"# source: x\n") is None
    assert header_lines(b"# source: x\n# ---\n") == 2
    assert header_lines(b"(APIServer pid=1) INFO ...\n") == 0
    assert header_lines(b"# source: x\n", final=True) == 0
