"""Finding the lines worth reading in large byte blocks, without looking at the others.

Two kinds of anchors:

* **event anchors** — a line that holds one is cut out, decoded and handed to the rules;
* **count anchors** — only counted (access and request lines): their occurrences between two
  event lines are credited to whatever boot is current there.

Two engines find event anchors and give identical results (tests run both over every fixture):
Hyperscan (``pip install 'vllm-ledger[fast]'``), which scans all anchors in one pass at
several GB/s, and a pure-Python fallback that runs ``bytes.find`` once per anchor.  Counting
uses ``bytes.count`` on the gaps between event lines, so count lines never cost a Python step.

``LineScanner.scan`` yields a ``Hit`` per event line, then ``Counts`` (counted lines after the
last one) and ``End``; ``parsers.fast.runs`` turns hits into the item stream.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from ..items import Counts, End
from ..rules import RuleSet

_hs: Any
try:  # optional: the fast multi-pattern engine
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the install
    _hs = None

ENGINES = ("hyperscan", "python")
_NUMPY: Any = None


def _numpy() -> Any:
    """numpy, imported on first use (it costs a tenth of a second); False when it is missing."""
    global _NUMPY
    if _NUMPY is None:
        try:
            import numpy

            _NUMPY = numpy
        except ImportError:  # pragma: no cover - pandas depends on it
            _NUMPY = False
    return _NUMPY or None


_FOLLOWING_BYTES = 64 * 1024  # enough for three wrapped terminal lines


def available_engines() -> list[str]:
    return [e for e in ENGINES if e != "hyperscan" or _hs is not None]


def count_lines(block: bytes, anchor: bytes, start: int = 0, end: int | None = None) -> int:
    """Lines in block[start:end] that hold ``anchor`` (each line once, like ``grep -c``)."""
    end = len(block) if end is None else end
    n = 0
    i = block.find(anchor, start, end)
    while i >= 0:
        n += 1
        e = block.find(b"\n", i, end)
        if e < 0:
            break
        i = block.find(anchor, e, end)
    return n


class Hit(NamedTuple):
    """A line that holds event anchors (a named tuple: one is made per stats line of a served log)."""

    number: int  # 1-based line number
    offset: int  # byte offset of the line in the input
    raw: bytes  # the line, without its newline
    anchors: tuple[int, ...]  # indexes (into LineScanner.anchor_texts) of the event anchors it holds
    counts: dict[str, int]  # count-anchor occurrences since the previous hit (or the start)
    block: bytes | None  # the block it came from, for ``following`` (None: read from ``path``)
    end: int  # where the line ends in ``block`` (or in the file, when block is None)
    path: str | None = None

    def following(self) -> list[bytes]:
        """Up to three physical lines after it (for terminal-wrapped records)."""
        out: list[bytes] = []
        block, p = self.block, self.end + 1
        if block is None:  # a hit from the child: the lines are still in the file
            assert self.path is not None
            with open(self.path, "rb") as f:
                f.seek(p)
                block, p = f.read(_FOLLOWING_BYTES), 0
        for _ in range(3):
            if p >= len(block):
                break
            q = block.find(b"\n", p)
            q = len(block) if q < 0 else q
            out.append(block[p:q])
            p = q + 1
        return out


#: a Hit from all its fields, without NamedTuple's __new__ (one is made per stats line)
make_hit: Any = functools.partial(tuple.__new__, Hit)


class LineScanner:
    """Scan byte blocks (each ending at a newline, except maybe the last) for event lines."""

    def __init__(self, event_anchors: Iterable[str], count_anchors: dict[str, str], engine: str | None = None):
        self.anchor_texts = sorted(set(event_anchors))
        self.event_anchors = [a.encode("utf-8") for a in self.anchor_texts]
        self.count_anchors = {a.encode("utf-8"): kind for a, kind in count_anchors.items()}
        self.kinds = sorted(set(self.count_anchors.values()))
        self.engine = engine or ("hyperscan" if _hs is not None else "python")
        self._is_newline: Any = None  # numpy's scratch array for a block's newlines
        if self.engine == "hyperscan":
            if _hs is None:
                raise RuntimeError("hyperscan is not installed")
            self._db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            self._db.compile(expressions=[re.escape(a) for a in self.event_anchors],
                             ids=list(range(len(self.event_anchors))),
                             flags=[0] * len(self.event_anchors))
        elif self.engine != "python":
            raise ValueError(f"unknown scan engine {self.engine!r}")

    # -- anchors in one block ------------------------------------------------------------------
    def _event_lines(self, block: bytes) -> list[tuple[int, int, tuple[int, ...]]]:
        """(start, end, anchor indexes) of the lines in ``block`` that hold event anchors; ``end``
        is the offset of the line's newline (or the block's length)."""
        if self.engine == "hyperscan":
            found: list[tuple[int, int]] = []

            def on_match(anchor: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
                found.append((to, anchor))

            self._db.scan(block, match_event_handler=on_match)
            found.sort()  # by where each match ends: a line's matches come together
            out: list[tuple[int, int, tuple[int, ...]]] = []
            start, end = -1, -1
            for to, anchor in found:
                if to > end:  # a match in a line not seen yet
                    start = block.rfind(b"\n", 0, to) + 1
                    e = block.find(b"\n", to)
                    end = len(block) if e < 0 else e
                    out.append((start, end, (anchor,)))
                elif anchor not in out[-1][2]:
                    out[-1] = (start, end, out[-1][2] + (anchor,))
            return out
        lines: dict[int, tuple[int, set[int]]] = {}
        for index, a in enumerate(self.event_anchors):
            i = block.find(a)
            while i >= 0:
                start = block.rfind(b"\n", 0, i) + 1
                e = block.find(b"\n", i)
                lines.setdefault(start, (len(block) if e < 0 else e, set()))[1].add(index)
                if e < 0:
                    break
                i = block.find(a, e)
        return [(start, end, tuple(sorted(found))) for start, (end, found) in sorted(lines.items())]

    def scan(self, blocks: Iterable[bytes], count: bool = True,
             numpy_min_block: int = 1024 * 1024) -> Iterator[Hit | Counts | End]:
        """Yield a Hit per event line, in order; then the ``Counts`` after the last event line;
        last, ``End`` with the total line count.  With ``count=False`` the caller counts some
        other way (an external ``grep -c``) and hits carry no counts.  Blocks from
        ``numpy_min_block`` bytes find their newlines with numpy (vectorised); smaller ones count
        with bytes.count.  Both give the same numbers (tests run both)."""
        base = 0
        offset = 0
        pending = dict.fromkeys(self.kinds, 0)
        anchors = self.count_anchors if count else {}
        no_counts: dict[str, int] = {}
        for block in blocks:
            hits = self._event_lines(block)
            np = _numpy() if len(block) >= numpy_min_block else None
            if np is not None:
                # one vectorised pass marks every newline (into one reused buffer: a new 8 MiB
                # array per block costs page faults); a gap's newlines are then counted in C
                if self._is_newline is None or len(self._is_newline) < len(block):
                    self._is_newline = np.empty(len(block), dtype=bool)
                is_newline = self._is_newline[:len(block)]
                np.equal(np.frombuffer(block, np.uint8), 10, out=is_newline)
                count_nonzero = np.count_nonzero

                # (the closures below are called only while their block is scanned)
                def newlines(a: int, b: int) -> int:
                    return int(count_nonzero(is_newline[a:b]))  # noqa: B023
            else:
                def newlines(a: int, b: int) -> int:
                    return block.count(b"\n", a, b)  # noqa: B023
            pos = 0
            line_no = base
            for start, end, found in hits:
                # each newline of the block is counted once: gap by gap, then the rest
                line_no += newlines(pos, start)
                if anchors:
                    counts = pending
                    for anchor, kind in anchors.items():
                        counts[kind] += count_lines(block, anchor, pos, end)
                    pending = dict.fromkeys(self.kinds, 0)
                else:
                    counts = no_counts
                pos = end  # the newline after this line belongs to the next gap
                yield make_hit((line_no + 1, offset + start, block[start:end], found, counts, block, end, None))
            # the rest of the block: counts carry over to the next hit (or the end)
            for anchor, kind in anchors.items():
                pending[kind] += count_lines(block, anchor, pos)
            base = line_no + newlines(pos, len(block))
            if block and not block.endswith(b"\n"):
                base += 1
            offset += len(block)
        yield Counts(pending if anchors else no_counts)
        yield End(base)


_SCANNERS: weakref.WeakKeyDictionary[RuleSet, dict[str, LineScanner]] = weakref.WeakKeyDictionary()


def scanner_for(rules: RuleSet, engine: str | None = None) -> LineScanner:
    """The ruleset's scanner for ``engine`` (None: Hyperscan when installed), built once."""
    engine = engine or ("hyperscan" if _hs is not None else "python")
    built = _SCANNERS.setdefault(rules, {})
    if engine not in built:
        built[engine] = LineScanner(rules.anchors, rules.count_anchors, engine)
    return built[engine]
