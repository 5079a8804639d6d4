"""Finding the lines worth reading in large byte blocks, without looking at the others.

Two kinds of anchors:

* **event anchors** — a line that holds one is cut out, decoded and handed to the rules;
* **count anchors** — only counted (access and request lines): their occurrences between two
  event lines are credited to whatever boot is current there.

Two engines find event anchors and give identical results (tests run both over every fixture):
Hyperscan (``pip install 'vllm-ledger[fast]'``), which scans all anchors in one pass at
several GB/s, and a pure-Python fallback that runs ``bytes.find`` once per anchor.  Counting
uses ``bytes.count`` on the gaps between event lines, so count lines never cost a Python step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

try:  # optional: the fast multi-pattern engine
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the install
    _hs = None

ENGINES = ("hyperscan", "python")


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


@dataclass(slots=True)
class Hit:
    number: int  # 1-based line number
    offset: int  # byte offset of the line in the input
    raw: bytes  # the line, without its newline
    anchors: set[int]  # indexes (into LineScanner.anchor_texts) of the event anchors it holds
    counts: dict[str, int]  # count-anchor occurrences since the previous hit (or the start)
    block: bytes  # the block it came from, for ``following``
    end: int

    def following(self) -> list[bytes]:
        """Up to three physical lines after it (for terminal-wrapped records)."""
        out: list[bytes] = []
        block, p = self.block, self.end + 1
        for _ in range(3):
            if p >= len(block):
                break
            q = block.find(b"\n", p)
            q = len(block) if q < 0 else q
            out.append(block[p:q])
            p = q + 1
        return out


class LineScanner:
    """Scan byte blocks (each ending at a newline, except maybe the last) for event lines."""

    def __init__(self, event_anchors: Iterable[str], count_anchors: dict[str, str], engine: str | None = None):
        self.anchor_texts = sorted(set(event_anchors))
        self.event_anchors = [a.encode("utf-8") for a in self.anchor_texts]
        self.count_anchors = {a.encode("utf-8"): kind for a, kind in count_anchors.items()}
        self.kinds = sorted(set(self.count_anchors.values()))
        self.engine = engine or ("hyperscan" if _hs is not None else "python")
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
    def _line_starts(self, block: bytes) -> list[tuple[int, set[int]]]:
        """(start offset, anchor indexes) of the lines in ``block`` that hold event anchors."""
        lines: dict[int, set[int]] = {}
        if self.engine == "hyperscan":
            found: list[tuple[int, int]] = []

            def on_match(anchor: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
                found.append((to, anchor))

            self._db.scan(block, match_event_handler=on_match)
            found.sort()
            start, end = -1, -1
            for to, anchor in found:
                if to > end:  # a match in a line not seen yet
                    start = block.rfind(b"\n", 0, to) + 1
                    e = block.find(b"\n", to)
                    end = len(block) if e < 0 else e
                lines.setdefault(start, set()).add(anchor)
        else:
            for index, a in enumerate(self.event_anchors):
                i = block.find(a)
                while i >= 0:
                    start = block.rfind(b"\n", 0, i) + 1
                    lines.setdefault(start, set()).add(index)
                    e = block.find(b"\n", i)
                    if e < 0:
                        break
                    i = block.find(a, e)
        return sorted(lines.items())

    def scan(self, blocks: Iterable[bytes], count: bool = True) -> Iterator[Hit | int]:
        """Yield a Hit per event line, in order; last, the total line count (an int).  The
        counts after the last event line are left in ``tail_counts``.  With ``count=False`` the
        caller counts some other way (an external ``grep -c``) and hits carry no counts."""
        base = 0
        offset = 0
        pending = dict.fromkeys(self.kinds, 0)
        anchors = self.count_anchors if count else {}
        for block in blocks:
            pos = 0
            line_no = base
            for start, found in self._line_starts(block):
                end = block.find(b"\n", start)
                end = len(block) if end < 0 else end
                counts = dict(pending)
                for anchor, kind in anchors.items():
                    counts[kind] += count_lines(block, anchor, pos, end)
                line_no += block.count(b"\n", pos, start)
                pos = end  # the newline after this line is counted with the next gap
                yield Hit(line_no + 1, offset + start, block[start:end], found, counts, block, end)
                pending = dict.fromkeys(self.kinds, 0)
            # the rest of the block: counts carry over to the next hit (or the end)
            for anchor, kind in anchors.items():
                pending[kind] += count_lines(block, anchor, pos)
            base += block.count(b"\n")
            if block and not block.endswith(b"\n"):
                base += 1
            offset += len(block)
        self.tail_counts = pending
        yield base

