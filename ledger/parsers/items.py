"""The scan's item stream: what reading one source hands the boot assembler, in line order.

``parsers.fast`` produces the stream (whichever way it scans: Hyperscan or the pure-Python
finder, here or in a forked child); ``BootAssembler.consume`` takes it item by item:

* ``Header`` first: the lines of an excerpt header (not log) and the counted lines inside it;
* a ``LineHit`` per line that holds event anchors, with its events;
* a ``RuntimeRun`` per run of consecutive runtime records in their one common shape (the bulk
  of a served log), read without a ``Line`` or an ``Event`` each;
* ``Counts``: counted lines (access, request) after the last event line;
* ``End``: the scan is over (the source was a readable vLLM log);
* ``CountTotals`` after ``End`` when the lines were counted after the scan (by ``grep``).

Counts ride on the items they precede: every item carries the counted lines since the one before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .lines import Line
from .rules import Event, FastShape, RuntimeSample


@dataclass(slots=True)
class Header:
    lines: int  # lines of the excerpt header ("# key: value" ... "# ---"); 0 when there is none
    counts: dict[str, int]  # counted lines inside it, to take back from the first boot


@dataclass(slots=True)
class LineHit:
    line: Line
    events: list[Event]
    counts: dict[str, int]  # counted lines since the previous item


@dataclass(slots=True)
class RuntimeRun:
    """Consecutive lines holding nothing but a runtime record read in one match, from one
    process: what reading each through the line model and the rules would give."""

    number: int  # the first record's line
    offset: int | None  # and its byte offset
    process: str | None
    pid: int | None
    lines: list[bytes]  # every record's line
    samples: list[RuntimeSample]  # every record's sample; with ``rows``, the first and the last only
    counts: dict[str, int]  # counted lines before the first record
    within: dict[str, int]  # and between its records
    # a parse given a ``Store`` (the ingest): every record's sample as it stores it, and the
    # samples of each kind — so the process that refines the hits (the scanning child, when
    # it can) works the stored rows out, and the one that stores only writes them
    rows: list[tuple[Any, ...]] | None = None
    kinds: dict[str, int] | None = None


# A FastShape record's groups (``RuntimeRule.fast_groups``: PLAIN_SHAPE's, then the shape's) and
# its line -> its stored row; None where the row must be worked out from the sample instead
ShapeRow = Callable[[tuple[Any, ...], int], tuple[Any, ...] | None]


class Store(Protocol):
    """What a parse's runtime sink stores of a sample: (its kind, as the sink codes it, then the
    rest of its row as the sink stores it); the sink takes these tuples among its samples
    (``BootAssembler``).  ``for_shape``: the same straight from a FastShape record's groups,
    without the sample in between (a served log has millions), or None for a shape it cannot
    read that way; it must give what calling the store on the record's sample gives."""

    def __call__(self, sample: RuntimeSample) -> tuple[Any, ...]: ...

    def for_shape(self, shape: FastShape) -> ShapeRow | None: ...


@dataclass(slots=True)
class Counts:
    counts: dict[str, int]  # counted lines after the last event line


@dataclass(slots=True)
class End:
    total_lines: int


@dataclass(slots=True)
class CountTotals:
    per_boot: list[dict[str, int]]  # each boot's counted lines, in boot order


Item = Header | LineHit | RuntimeRun | Counts | End | CountTotals
