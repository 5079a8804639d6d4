"""Finding the lines worth reading in large byte blocks, without looking at the others.

Two kinds of anchors:

* **event anchors** — a line that holds one is cut out, decoded and handed to the rules;
* **count anchors** — only counted (access and request lines): their occurrences between two
  event lines are credited to whatever boot is current there.

Three engines find event anchors and give identical results (tests run each over every
fixture), the first one installed by default:

* ``hyperscan`` — all anchors in one pass (a regular dependency wherever it has a wheel);
* ``re2`` — google-re2, one compiled alternation of the anchors over the block, then an RE2 set
  for the anchors each hit line holds (a dependency where Hyperscan has no wheel and RE2 has);
* ``python`` — ``bytes.find`` per group of anchors that share a prefix (no dependency).

Counting uses ``bytes.count`` on the gaps between event lines, so count lines never cost a
Python step.

``LineScanner.scan`` yields a ``Hit`` per event line, then ``Counts`` (counted lines after the
last one) and ``End``; ``parsers.fast.runs`` turns hits into the item stream.
"""

from __future__ import annotations

import functools
import importlib
import re
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from ..items import Counts, End
from ..rules import RuleSet

# the engines' modules, imported when a scanner of theirs is first built (or the engines are
# listed): a boot log is scanned by the python engine (``ScanOptions.small_file_bytes``), and
# need not load them.  None: not installed.  Hyperscan is the fast multi-pattern engine,
# wherever it has a wheel; RE2 the fallback's, where Hyperscan has none (or the `re2` extra).
_ENGINE_MODULES: dict[str, Any] = {}


def _engine_module(name: str) -> Any:
    if name not in _ENGINE_MODULES:
        try:
            _ENGINE_MODULES[name] = importlib.import_module(name)
        except ImportError:  # pragma: no cover - depends on the install
            _ENGINE_MODULES[name] = None
    return _ENGINE_MODULES[name]


ENGINES = ("hyperscan", "re2", "python")  # fastest first: the first installed one is the default
_RE2_MAX_MEM = 64 << 20  # room for the alternation's DFA (RE2 falls back to a slower NFA without)
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
# a block whose lines are this short on average (bytes) has its hits' line numbers counted gap
# by gap: the newlines' offsets (8 bytes each) would be as large as the block itself
_DENSE_LINES = 32


def available_engines() -> list[str]:
    """The scan engines this install can run, fastest first (the first one is the default)."""
    missing = {"hyperscan": _engine_module("hyperscan") is None, "re2": _engine_module("re2") is None}
    return [e for e in ENGINES if not missing.get(e)]


def default_engine() -> str:
    return available_engines()[0]


def _prefix_groups(anchors: list[bytes], min_prefix: int = 4) -> list[tuple[bytes, list[tuple[int, bytes]]]]:
    """Anchors grouped by a shared prefix of at least ``min_prefix`` bytes (in sorted order, each
    group's common prefix): the python engine runs one ``bytes.find`` per group, not per anchor
    (the 22 ``, in …`` traceback anchors are one pass).  Measured on a generated runtime log:
    4-byte prefixes 58 passes, 1.5x the speed of one pass per anchor; 3 bytes no faster, 6 slower."""
    groups: list[tuple[bytes, list[tuple[int, bytes]]]] = []
    for index, anchor in sorted(enumerate(anchors), key=lambda ia: ia[1]):
        if groups:
            prefix, members = groups[-1]
            n = 0
            while n < min(len(prefix), len(anchor)) and prefix[n] == anchor[n]:
                n += 1
            if n >= min_prefix:
                groups[-1] = (prefix[:n], [*members, (index, anchor)])
                continue
        groups.append((anchor, [(index, anchor)]))
    return groups


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
        self.engine = engine or default_engine()
        self._is_newline: Any = None  # numpy's scratch array for a block's newlines
        if self.engine == "hyperscan":
            _hs = _engine_module("hyperscan")
            if _hs is None:
                raise RuntimeError("hyperscan is not installed")
            self._db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            self._db.compile(expressions=[re.escape(a) for a in self.event_anchors],
                             ids=list(range(len(self.event_anchors))),
                             flags=[0] * len(self.event_anchors))
        elif self.engine == "re2":
            _re2 = _engine_module("re2")
            if _re2 is None:
                raise RuntimeError("google-re2 is not installed")
            options = _re2.Options()
            options.max_mem = _RE2_MAX_MEM
            # Latin-1: every byte is a character, so an anchor matches its bytes in any input,
            # valid UTF-8 or not (as bytes.find and Hyperscan do)
            options.encoding = _re2.Options.Encoding.LATIN1
            # longest first, so that of two anchors starting at one place the longer is reported
            longest_first = sorted(self.event_anchors, key=len, reverse=True)
            self._alternation = _re2.compile(b"|".join(_re2.escape(a) for a in longest_first), options)
            # finditer reports no overlapping matches: a hit line's anchors come from a set
            # match of all of them (measured 2x faster than testing each anchor `in` the line)
            self._set = _re2.Set.SearchSet(options)
            for a in self.event_anchors:  # added in index order: Set.Match returns the indexes
                self._set.Add(_re2.escape(a))
            self._set.Compile()
        elif self.engine == "python":
            self._groups = _prefix_groups(self.event_anchors)
        else:
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
        if self.engine == "re2":
            return self._re2_lines(block)
        return self._python_lines(block)

    def _re2_lines(self, block: bytes) -> list[tuple[int, int, tuple[int, ...]]]:
        out: list[tuple[int, int, tuple[int, ...]]] = []
        end = -1
        match_set = self._set.Match
        for match in self._alternation.finditer(block):
            i = match.start()
            if i < end:  # another anchor in a line already found
                continue
            start = block.rfind(b"\n", 0, i) + 1
            e = block.find(b"\n", i)
            end = len(block) if e < 0 else e
            out.append((start, end, tuple(sorted(match_set(block[start:end])))))
        return out

    def _python_lines(self, block: bytes) -> list[tuple[int, int, tuple[int, ...]]]:
        lines: dict[int, tuple[int, set[int]]] = {}
        for prefix, members in self._groups:
            single = len(members) == 1
            i = block.find(prefix)
            while i >= 0:
                if single:  # the prefix is the anchor
                    found = [members[0][0]]
                else:
                    found = [index for index, a in members if block.startswith(a, i)]
                    if not found:
                        i = block.find(prefix, i + 1)
                        continue
                start = block.rfind(b"\n", 0, i) + 1
                e = block.find(b"\n", i)
                lines.setdefault(start, (len(block) if e < 0 else e, set()))[1].update(found)
                if e < 0:
                    break
                # a single anchor: the next line; a group: other members may follow in this line
                i = block.find(prefix, e if single else i + 1)
        return [(start, end, tuple(sorted(found))) for start, (end, found) in sorted(lines.items())]

    def _line_numbers(self, block: bytes, hits: list[tuple[int, int, tuple[int, ...]]], base: int,
                      vectorised: bool) -> list[int]:
        """The 1-based line number of each hit line (``base``: lines before the block), then the
        lines before the next block (its newlines added to ``base``).

        ``vectorised`` (a large block, numpy installed): one pass marks the block's newlines
        (into one reused buffer: a new 8 MiB array per block costs page faults); the hits' line
        numbers are then found at once (numpy's searchsorted over the newlines' offsets: a
        numpy call per hit cost ~2 us, 0.1 s per 56,000 records).  A block of very short lines
        counts gap by gap instead, in C, so the offsets (8 bytes a newline) stay small."""
        np = _numpy() if vectorised else None
        if np is not None:
            if self._is_newline is None or len(self._is_newline) < len(block):
                self._is_newline = np.empty(len(block), dtype=bool)
            is_newline = self._is_newline[: len(block)]
            np.equal(np.frombuffer(block, np.uint8), 10, out=is_newline)
            total = int(np.count_nonzero(is_newline))
            if not hits:
                return [base + total]
            if total <= len(block) // _DENSE_LINES:
                before = np.searchsorted(np.flatnonzero(is_newline), [start for start, _, _ in hits])
                return [*(before + (base + 1)).tolist(), base + total]
            count_nonzero = np.count_nonzero

            def newlines(a: int, b: int) -> int:
                return int(count_nonzero(is_newline[a:b]))
        else:
            def newlines(a: int, b: int) -> int:
                return block.count(b"\n", a, b)
        # each newline of the block is counted once: gap by gap, then the rest
        numbers: list[int] = []
        line_no, pos = base, 0
        for start, end, _ in hits:
            line_no += newlines(pos, start)
            numbers.append(line_no + 1)
            pos = end
        numbers.append(line_no + newlines(pos, len(block)))
        return numbers

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
            numbers = self._line_numbers(block, hits, base, len(block) >= numpy_min_block)
            after = numbers.pop()  # the lines up to the block's end
            pos = 0
            for (start, end, found), number in zip(hits, numbers, strict=True):
                if anchors:
                    counts = pending
                    for anchor, kind in anchors.items():
                        counts[kind] += count_lines(block, anchor, pos, end)
                    pending = dict.fromkeys(self.kinds, 0)
                else:
                    counts = no_counts
                pos = end  # the newline after this line belongs to the next gap
                yield make_hit((number, offset + start, block[start:end], found, counts, block, end, None))
            # the rest of the block: counts carry over to the next hit (or the end)
            for anchor, kind in anchors.items():
                pending[kind] += count_lines(block, anchor, pos)
            base = after
            if block and not block.endswith(b"\n"):
                base += 1
            offset += len(block)
        yield Counts(pending if anchors else no_counts)
        yield End(base)


_SCANNERS: weakref.WeakKeyDictionary[RuleSet, dict[str, LineScanner]] = weakref.WeakKeyDictionary()


def scanner_for(rules: RuleSet, engine: str | None = None) -> LineScanner:
    """The ruleset's scanner for ``engine`` (None: the fastest installed), built once."""
    engine = engine or default_engine()
    built = _SCANNERS.setdefault(rules, {})
    if engine not in built:
        built[engine] = LineScanner(rules.anchors, rules.count_anchors, engine)
    return built[engine]
