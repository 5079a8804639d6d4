"""Counting the counted lines (access, request) of a large plain file after, or beside, the scan.

``GrepCounts`` runs ``grep -c -F`` per count anchor on the other core while the file is scanned;
grep counts the whole file, which is each boot's count when the file holds one boot.  Otherwise
``recount`` counts each boot's byte range in Python (one more pass).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from ..source import Source
from .scanner import count_lines


def _grep() -> str | None:
    return None if os.environ.get("LEDGER_NO_GREP") else shutil.which("grep")


GREP = _grep()
# the counters run at a lower priority: they finish well before the scan and should not slow it
_NICE = ["nice", "-n", "10"] if GREP and shutil.which("nice") else []


# grep holds a whole line in memory (a 200 MB line: 390 MB); past this it fails, and the lines
# are counted in Python instead (``totals`` is None), whose reading caps a line (source.MAX_LINE)
_GREP_MEMORY = 64 * 1024 * 1024


def _grep_memory_cap() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (_GREP_MEMORY, _GREP_MEMORY))


class GrepCounts:
    """``grep -c -F`` per count anchor of ``path``, started at once."""

    def __init__(self, path: str, count_anchors: dict[str, str]):
        assert GREP is not None
        env = dict(os.environ, LC_ALL="C")
        self.procs = [
            (kind, subprocess.Popen([*_NICE, GREP, "-a", "-c", "-F", "-e", anchor, "--", path], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    preexec_fn=_grep_memory_cap))
            for anchor, kind in count_anchors.items()
        ]

    def stop(self) -> None:
        for _, proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout:
                proc.stdout.close()

    def totals(self) -> dict[str, int] | None:
        """Lines holding each kind's anchors in the whole file; None when a grep failed."""
        out: dict[str, int] = {}
        ok = True
        for kind, proc in self.procs:
            data, _ = proc.communicate()
            if proc.returncode not in (0, 1):  # 1: no line matched, which is a count of 0
                ok = False
                continue
            try:
                out[kind] = out.get(kind, 0) + int(data.strip() or 0)
            except ValueError:
                ok = False
        return out if ok else None


def recount(path: str, count_anchors: dict[str, str], boot_offsets: Sequence[int], header_lines: int,
            block_size: int) -> list[dict[str, int]]:
    """Counted lines per boot by byte range (``boot_offsets``: where each boot after the first
    starts), the excerpt header left out."""
    anchors = {a.encode("utf-8"): k for a, k in count_anchors.items()}
    bounds: list[int | None] = [*boot_offsets, None]
    per_boot: list[dict[str, int]] = [{} for _ in bounds]
    i = 0
    offset = 0
    line = 0
    for block in Source(path).blocks(block_size):
        end_offset = offset + len(block)
        pos = 0
        if line < header_lines:  # skip the excerpt header: it is not log
            for _ in range(header_lines - line):
                nl = block.find(b"\n", pos)
                if nl < 0:
                    break
                pos = nl + 1
            line = header_lines
        while pos < len(block):
            limit = bounds[i]
            stop = len(block) if limit is None or limit >= end_offset else max(pos, limit - offset)
            counts = per_boot[i]
            for a, k in anchors.items():
                counts[k] = counts.get(k, 0) + count_lines(block, a, pos, stop)
            pos = stop
            if limit is not None and limit < end_offset and pos >= limit - offset:
                i += 1
        offset = end_offset
    return per_boot


class RangeCounter:
    """``recount`` a boot at a time, as the boots end: ``upto(offset)`` counts the counted lines
    from where the last range ended up to ``offset`` (None: to the end of the file), the
    excerpt header left out — one pass over the file in all, however many boots it holds, and
    no boot kept waiting for the end of the file."""

    def __init__(self, path: str, count_anchors: dict[str, str], header_lines: int, block_size: int):
        self.anchors = {a.encode("utf-8"): k for a, k in count_anchors.items()}
        self.blocks = Source(path).blocks(block_size)
        self.block = b""
        self.pos = 0  # where in ``block`` the counting has got
        self.offset = 0  # the file offset of ``block``
        self.header_left = header_lines

    def upto(self, limit: int | None) -> dict[str, int]:
        counts = dict.fromkeys(self.anchors.values(), 0)
        while limit is None or self.offset + self.pos < limit:
            if self.pos >= len(self.block):
                block = next(self.blocks, None)
                if block is None:
                    break
                self.offset += len(self.block)
                self.block, self.pos = block, 0
                while self.header_left and self.pos < len(block):  # the excerpt header is not log
                    nl = block.find(b"\n", self.pos)
                    self.pos = len(block) if nl < 0 else nl + 1
                    self.header_left -= nl >= 0
                continue
            stop = len(self.block) if limit is None else min(len(self.block), limit - self.offset)
            for a, k in self.anchors.items():
                counts[k] += count_lines(self.block, a, self.pos, stop)
            self.pos = stop
        return counts
