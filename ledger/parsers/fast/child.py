"""Scanning a large plain file in a forked child, on the other core.

Reading, hashing, anchor search and line counting run in the child while this process turns
the hits into events (the child reads runs of runtime records too, while this process is
behind); the items come back in order, so the result is the same as scanning here.
"""

from __future__ import annotations

import functools
import mmap
import os
import pickle
import signal
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from ..items import Counts, End, RuntimeRun
from ..rules import RuntimeSample
from ..source import SourceError, full_temp_folder, printable
from .scanner import Hit, make_hit

# Behind: this many batches sent and not read yet (~20 MB of a served log).  Measured on 2 cores:
# 8-12 beats 2 (the child then refines too much while this process starts up) and never.
_BEHIND = 8
_BATCH = 256  # hits per message from the scanning child (~2.5 MB of a served log)

Refine = Callable[[list[Hit]], Iterable[Hit | RuntimeRun | Counts | End]]


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


# On the wire a hit is a tuple of its first five fields (its block stays in the child) and a run
# a list whose samples are plain tuples: pickle rebuilds a named tuple or a dataclass by calling
# its class, several times slower.  A run with stored rows (the ingest's) carries two samples,
# its first and last: its rows, flat tuples, cost a third of the samples to read back here.
def _run_to_wire(run: Hit | RuntimeRun | Counts | End) -> list[Any]:
    assert type(run) is RuntimeRun  # a batch holds hits and runs only
    return [run.number, run.offset, run.process, run.pid, run.lines, list(map(tuple, run.samples)),
            run.counts, run.within, run.rows, run.kinds]


def _run_from_wire(data: list[Any]) -> RuntimeRun:
    number, offset, process, pid, lines, samples, counts, within, rows, kinds = data
    return RuntimeRun(number, offset, process, pid, lines, list(map(_as_sample, samples)), counts, within,
                      rows, kinds)


_as_sample: Callable[[tuple[Any, ...]], RuntimeSample] = functools.partial(tuple.__new__, RuntimeSample)


class ChildScan:
    """``scan()`` run in a forked child, started at once; iterating yields its items here.

    ``scan`` yields hits, then ``Counts``, then ``End``, as ``LineScanner.scan`` does, over
    ``path`` (a regular file: ``Hit.following`` reads it again here).  After ``End``, ``result``
    holds the child's ``finish()`` (a picklable summary of what it saw); ``position()`` (bytes
    read so far, in the child) drives ``progress``.

    The child writes batches to an unlinked temporary file and announces each through a pipe,
    so it never waits for this process (which may still be opening the ledger).  While this
    process is behind (``_BEHIND`` batches wait), the child passes each batch through
    ``refine`` (gathering runs of runtime records: it reads them itself), so the work is shared
    by both cores; whichever reads a batch, the items mean the same.  ``refines`` forces one
    way ("always", "never") instead of "when behind".  An exception in the child is raised
    here; ``close()`` (or leaving early) kills the child."""

    def __init__(self, scan: Callable[[], Iterator[Hit | Counts | End]], finish: Callable[[], Any],
                 position: Callable[[], int], path: str, progress: Callable[[int], None] | None = None,
                 refine: Refine | None = None,
                 refines: Literal["when behind", "always", "never"] = "when behind"):
        self.path, self.progress = path, progress
        self.result: Any = None
        self._spool = tempfile.TemporaryFile()
        self._read = mmap.mmap(-1, 8)  # shared: how many messages this process has read
        read_fd, write_fd = os.pipe()
        self._pid: int | None = os.fork()
        if self._pid == 0:  # pragma: no cover - the child; its results are what the tests compare
            os.close(read_fd)
            self._child(write_fd, scan, finish, position, refine, refines)
        os.close(write_fd)
        self._notes = os.fdopen(read_fd, "rb", buffering=0)
        self._ended = False

    def _child(self, write_fd: int, scan: Callable[[], Iterator[Hit | Counts | End]], finish: Callable[[], Any],
               position: Callable[[], int], refine: Refine | None,
               refines: str) -> None:  # pragma: no cover
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
                if refines == "when behind":
                    behind = sent - int.from_bytes(self._read[:8], "little") >= _BEHIND
                else:  # tests: one way or the other, every time
                    behind = refines == "always"
                items: Iterable[Hit | RuntimeRun | Counts | End] = batch
                if refine is not None and behind:
                    items = refine(batch)
                send("hits", [i[:5] if type(i) is Hit else _run_to_wire(i) for i in items], position())

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
                    if isinstance(item, Counts):
                        send("tail", item.counts)
                    elif isinstance(item, End):
                        send("end", item.total_lines, finish())
            except Exception as exc:  # raised in the parent
                send("error", exc)
        except BaseException:
            status = 1
        finally:
            os._exit(status)

    def __iter__(self) -> Iterator[Hit | RuntimeRun | Counts | End]:
        done = read = 0
        try:
            while not self._ended:
                self._read[:8] = read.to_bytes(8, "little")  # messages read (and their items used)
                note = self._notes.read(8)
                if len(note) < 8:
                    full = full_temp_folder()  # the spool lives there: a full one ends the child
                    if full:
                        raise SourceError(f"{printable(self.path)}: the temporary folder {full} is full "
                                          f"(set TMPDIR to a folder with room)")
                    raise SourceError(f"{printable(self.path)}: the scanning process ended without a result")
                upto = int.from_bytes(note, "little")
                message = pickle.loads(os.pread(self._spool.fileno(), upto - done, done))
                done = upto
                read += 1
                kind = message[0]
                if kind == "hits":
                    for item in message[1]:
                        if type(item) is tuple:
                            # the block stays in the child: the lines after a hit are read from the file
                            yield make_hit(item + (None, item[1] + len(item[2]), self.path))
                        else:
                            yield _run_from_wire(item)
                    if self.progress:
                        self.progress(message[2])
                elif kind == "tail":
                    yield Counts(message[1])
                elif kind == "end":
                    self._ended = True
                    self.result = message[2]
                    yield End(message[1])
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
