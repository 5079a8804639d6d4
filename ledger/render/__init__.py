"""The one output contract: every command that prints rows prints them here.

* ``FORMATS``: ``--format table|markdown|csv|json|jsonl``, the same names on every command.
* JSON is written by ``dumps`` alone: always valid JSON (an inf or nan figure is ``null``).
* The JSON contract (README, "The output contract"): a boot id is a string (``boot_id``)
  everywhere, as in the export; a timestamp is ISO 8601 (``iso``) with ``year_inferred`` as a
  field of its own; what is missing is ``null``, never ``""``.
* ``table``: the layout (``tabulate``), fitted to the terminal; ``terminal``: width, colour
  (``NO_COLOR``, never on a pipe), the pager.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

FORMATS = ("table", "markdown", "csv", "json", "jsonl")


def boot_id(value: Any) -> str | None:
    """A boot id as the contract has it: a string (``"12"``)."""
    return None if value is None else str(value)


def iso(stamp: str | None) -> str | None:
    """A stored timestamp (``2026-09-28 21:06:47[.123]``) as ISO 8601 (``2026-09-28T21:06:47``)."""
    if not stamp:
        return None
    return stamp.replace(" ", "T", 1)


def null_if_empty(value: Any) -> Any:
    return None if value == "" else value


def json_safe(value: Any) -> Any:
    """``value`` with every float that JSON cannot spell (inf, nan: a ledger written before
    figures were range-checked may hold them) as null, so the output is always valid JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` that only ever writes valid JSON (``json_safe``); what is not JSON's own
    type (a date) as its text.  Every JSON the ledger prints is written by this."""
    return json.dumps(json_safe(value), allow_nan=False, default=str, **options)


def json_text(obj: Any) -> str:
    return dumps(obj, indent=2)


def jsonl_text(objs: Iterable[Any]) -> str:
    return "\n".join(dumps(o) for o in objs)


def document(obj: Any, fmt: str, human: Callable[[Any], str]) -> str:
    """One object (a report, not rows): json as it is, jsonl on one line, else ``human(obj)``."""
    if fmt == "json":
        return json_text(obj)
    if fmt == "jsonl":
        return dumps(obj)
    return human(obj)


def rows_text(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None, fmt: str, *,
              human: Callable[[dict[str, Any]], dict[str, Any]] | None = None, align_right: Sequence[str] = (),
              flexible: Sequence[str] = (), headers: dict[str, str] | None = None,
              coloured: Sequence[str] = ()) -> str:
    """Rows in ``fmt``: json/jsonl/csv get the machine values; table and markdown get
    ``human(row)`` (figures with units and separators).  A table fits the terminal (cutting
    the ``flexible`` columns) and colours the ``coloured`` columns' verdicts and outcomes when
    colour is on."""
    from . import terminal
    from .table import render

    if fmt in ("table", "markdown") and human is not None:
        rows = [human(r) for r in rows]
    style = None
    if fmt == "table" and coloured and terminal.colour():
        def style(column: str, text: str) -> str:
            return terminal.paint(text) if column in coloured else text
    return render(rows, columns, fmt, align_right, width=terminal.width() if fmt == "table" else None,
                  flexible=flexible, headers=headers, style=style)


def rows_stream(rows: Iterable[Sequence[Any]], columns: Sequence[str], fmt: str, *,
                flexible: Sequence[str] = ()) -> Iterator[str]:
    """``rows_text`` for a result too large to hold (``ledger sql``): the text in pieces as the
    rows (tuples in ``columns``' order) arrive.  A table fits the terminal by its first page."""
    from . import terminal
    from .table import render_stream

    return render_stream(rows, columns, fmt, width=terminal.width() if fmt == "table" else None,
                         flexible=flexible)
