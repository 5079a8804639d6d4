"""Finding the lines worth reading in large byte blocks, without looking at the others.

Two kinds of anchors:

* **event anchors** — a line that holds one is cut out, decoded and handed to the rules;
* **count anchors** — only counted (access and request lines): their occurrences between two
  event lines are credited to whatever boot is current there.

Two engines find event anchors and give identical results (tests run both over every fixture):
Hyperscan (``pip install 'vllm-ledger[fast]'``), which scans all anchors in one pass at
several GB/s, and a pure-Python fallback that runs ``bytes.find`` once per anchor.  Counting
uses ``bytes.count`` on the gaps between event lines, so count lines never cost a Python step.

A large plain file is scanned in a forked child (``ChildScan``): reading, hashing, anchor
search and line counting run on a second core while this process turns the hits into events
(the child reads runs of runtime records too, while this process is behind); the items come
back in order, so the result is the same as scanning here.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from .source import SourceError

try:  # optional: the fast multi-pattern engine
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the install
    _hs = None

ENGINES = ("hyperscan", "python")
# Blocks from this size find their newlines with numpy (vectorised, when it is installed — pandas
# brings it); smaller ones count with bytes.count.  Both give the same numbers (tests run both).
NUMPY_MIN_BLOCK = 1024 * 1024
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
# When the scanning child passes batches through ``refine``: "when behind" (below); tests set
# "always" or "never" to show both give the same result.
CHILD_REFINES = "when behind"
# Behind: this many batches sent and not read yet (~20 MB of a served log).  Measured on 2 cores:
# 8-12 beats 2 (the child then refines too much while this process starts up) and never.
_BEHIND = 8
_BATCH = 256  # hits per message from the scanning child (~2.5 MB of a served log)


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
            with open(self.path, "rb") as f:  # type: ignore[arg-type]
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


_hit = functools.partial(tuple.__new__, Hit)  # a Hit from all its fields, without NamedTuple's __new__


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

    def scan(self, blocks: Iterable[bytes], count: bool = True) -> Iterator[Hit | dict[str, int] | int]:
        """Yield a Hit per event line, in order; then the counts after the last event line (a
        dict); last, the total line count (an int).  With ``count=False`` the caller counts some
        other way (an external ``grep -c``) and hits carry no counts."""
        base = 0
        offset = 0
        pending = dict.fromkeys(self.kinds, 0)
        anchors = self.count_anchors if count else {}
        no_counts: dict[str, int] = {}
        for block in blocks:
            hits = self._event_lines(block)
            np = _numpy() if len(block) >= NUMPY_MIN_BLOCK else None
            if np is not None:
                # one vectorised pass marks every newline (into one reused buffer: a new 8 MiB
                # array per block costs page faults); a gap's newlines are then counted in C
                if self._is_newline is None or len(self._is_newline) < len(block):
                    self._is_newline = np.empty(len(block), dtype=bool)
                is_newline = self._is_newline[:len(block)]
                np.equal(np.frombuffer(block, np.uint8), 10, out=is_newline)
                count_nonzero = np.count_nonzero

                def newlines(a: int, b: int) -> int:
                    return int(count_nonzero(is_newline[a:b]))
            else:
                def newlines(a: int, b: int) -> int:
                    return block.count(b"\n", a, b)
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
                yield _hit((line_no + 1, offset + start, block[start:end], found, counts, block, end, None))
            # the rest of the block: counts carry over to the next hit (or the end)
            for anchor, kind in anchors.items():
                pending[kind] += count_lines(block, anchor, pos)
            base = line_no + newlines(pos, len(block))
            if block and not block.endswith(b"\n"):
                base += 1
            offset += len(block)
        yield pending if anchors else no_counts
        yield base


def _reuse_freed_blocks() -> None:  # pragma: no cover - runs in the scanning child
    """glibc's malloc gives the top of its heap back to the kernel when a block is freed there
    (here: by the hashing thread) and maps fresh pages for the next block: ~30,000 page faults
    and 0.12 s of system time per 500 MB.  The child keeps freed memory for the next block
    instead (its peak stays a few blocks).  A no-op where there is no glibc."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 64 * 1024 * 1024)  # blocks from the heap, not a mapping each
    mallopt(m_trim_threshold, 256 * 1024 * 1024)


class ChildScan:
    """``scan()`` run in a forked child, started at once; iterating yields its items here.

    ``scan`` yields hits, then the tail counts (a dict), then the total (an int), as
    ``LineScanner.scan`` does, over ``path`` (a regular file: ``Hit.following`` reads it again
    here).  After the total, ``result`` holds the child's ``finish()`` (a picklable summary of
    what it saw); ``position()`` (bytes read so far, in the child) drives ``progress``.

    The child writes batches to an unlinked temporary file and announces each through a pipe,
    so it never waits for this process (which may still be opening the ledger).  While this
    process is behind (``_BEHIND`` batches wait), the child passes each batch through
    ``refine`` (``RuleSet.runs``: it reads the runtime records itself), so the work is shared
    by both cores; whichever reads a batch, the items mean the same.  An exception in the
    child is raised here; ``close()`` (or leaving early) kills the child."""

    def __init__(self, scan: Callable[[], Iterator[Hit | dict[str, int] | int]], finish: Callable[[], Any],
                 position: Callable[[], int], path: str, progress: Callable[[int], None] | None = None,
                 refine: Callable[[list[Hit]], Iterable[Any]] | None = None):
        import mmap
        import tempfile

        self.path, self.progress = path, progress
        self.result: Any = None
        self._spool = tempfile.TemporaryFile()
        self._read = mmap.mmap(-1, 8)  # shared: how many messages this process has read
        read_fd, write_fd = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # pragma: no cover - the child; its results are what the tests compare
            os.close(read_fd)
            self._child(write_fd, scan, finish, position, refine)
        os.close(write_fd)
        self._notes = os.fdopen(read_fd, "rb", buffering=0)
        self._ended = False

    def _child(self, write_fd: int, scan: Callable[[], Iterator[Any]], finish: Callable[[], Any],
               position: Callable[[], int], refine: Callable[[list[Hit]], Iterable[Any]] | None
               ) -> None:  # pragma: no cover
        status = 0
        try:
            _reuse_freed_blocks()
            # numpy only marks newlines here: OpenBLAS's thread pool (one thread per core, started
            # on import) would cost the child ~0.1 s of CPU for nothing
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
            spool = self._spool
            written = sent = 0

            def send(*message: Any) -> None:
                nonlocal written, sent
                data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
                spool.write(data)
                spool.flush()
                written += len(data)
                sent += 1
                os.write(write_fd, written.to_bytes(8, "little"))

            def send_hits(batch: list[Hit]) -> None:
                behind = sent - int.from_bytes(self._read[:8], "little") >= _BEHIND
                if CHILD_REFINES != "when behind":  # tests: one way or the other, every time
                    behind = CHILD_REFINES == "always"
                items = refine(batch) if refine is not None and behind else batch
                send("hits", [i[:5] if type(i) is Hit else i for i in items], position())

            try:
                batch: list[Hit] = []
                for item in scan():
                    if type(item) is Hit:
                        batch.append(item)
                        if len(batch) >= _BATCH:
                            send_hits(batch)
                            batch = []
                        continue
                    send_hits(batch)
                    batch = []
                    if isinstance(item, dict):
                        send("tail", item)
                    else:
                        send("end", item, finish())
            except Exception as exc:  # raised in the parent
                send("error", exc)
        except BaseException:
            status = 1
        finally:
            os._exit(status)

    def __iter__(self) -> Iterator[Any]:
        done = read = 0
        try:
            while not self._ended:
                self._read[:8] = read.to_bytes(8, "little")  # messages read (and their items used)
                note = self._notes.read(8)
                if len(note) < 8:
                    from .source import full_temp_folder

                    full = full_temp_folder()
                    if full:
                        raise SourceError(f"{self.path}: the temporary folder {full} is full (set TMPDIR to a folder with room)")
                    raise SourceError(f"{self.path}: the scanning process ended without a result")
                upto = int.from_bytes(note, "little")
                message = pickle.loads(os.pread(self._spool.fileno(), upto - done, done))
                done = upto
                read += 1
                kind = message[0]
                if kind == "hits":
                    for item in message[1]:
                        if type(item) is tuple:
                            yield _hit(item + (None, item[1] + len(item[2]), self.path))
                        else:
                            yield item
                    if self.progress:
                        self.progress(message[2])
                elif kind == "tail":
                    yield message[1]
                elif kind == "end":
                    self._ended = True
                    self.result = message[2]
                    yield message[1]
                else:
                    raise message[1]
        finally:
            self.close()

    def close(self) -> None:
        if self._pid is None:
            return
        if not self._ended:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(self._pid, 0)
        self._pid = None
        self._notes.close()
        self._spool.close()
        self._read.close()
