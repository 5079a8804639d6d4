"""How a source is scanned: the one set of knobs of the fast paths, passed in (never patched).

The defaults are what the benchmarks chose (``bench/``); tests set the others to show that
every way of scanning gives the same boots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..source import BLOCK_SIZE


@dataclass(frozen=True)
class ScanOptions:
    # "hyperscan" (all anchors in one pass), "re2" (one alternation, google-re2) or "python"
    # (bytes.find per group of anchors); None: the fastest installed (scanner.available_engines)
    engine: Literal["hyperscan", "re2", "python"] | None = None
    # Below this size a plain file is scanned by the python engine when ``engine`` is None:
    # building Hyperscan's database of the grammar's anchors took 10 ms (and importing it 2),
    # more than the python engine's scan of 64 KiB of the real excerpts (4 ms; Hyperscan's: 1)
    small_file_bytes: int = 64 * 1024
    # From this size a plain file is counted by grep and scanned in a forked child, each on a
    # core of its own; below it, starting them costs more than they save.
    large_file_bytes: int = 8 * 1024 * 1024
    grep: bool = True  # a large plain file's counted lines come from ``grep -c`` (else Python's)
    fork: bool = True  # a large plain file is scanned in a forked child
    # ... when this process may run on at least this many cores (its CPU affinity): on one core
    # the child has no core of its own, and handing every hit over to this process only adds
    # to the work (measured under `taskset -c 0`: ~10 % more CPU for a served log than in-process)
    fork_min_cores: int = 2
    # When the scanning child reads runs of runtime records itself: "when behind" (this process
    # has not read its last batches: the work is then shared by both cores), "always", "never".
    child_refines: Literal["when behind", "always", "never"] = "when behind"
    # Blocks from this size find their newlines with numpy (when installed: pandas brings it)
    numpy_min_block: int = 1024 * 1024
    # A run of runtime records ends after this many, so a run in flight never holds much memory.
    run_limit: int = 1024
    block_size: int = BLOCK_SIZE  # bytes read at a time (each block is cut at a line end)


DEFAULT = ScanOptions()
