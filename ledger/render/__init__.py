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


def json_array_pieces(objs: Iterable[Any]) -> Iterator[str]:
    """``json_text(list(objs))`` a piece at a time, an object each (the pieces joined by
    newlines are that text): a long array printed as it is read."""
    held = None
    for obj in objs:
        if held is None:
            yield "["
        else:
            yield held + ","
        held = "\n".join("  " + line for line in json_text(obj).split("\n"))
    if held is None:
        yield "[]"
    else:
        yield held
        yield "]"


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
              flexible: Sequence[str] | dict[str, int] = (), headers: dict[str, str] | None = None,
              coloured: Sequence[str] = ()) -> str:
    """Rows in ``fmt``: json/jsonl/csv get the machine values; table and markdown get
    ``human(row)`` (figures with units and separators).  A table fits the terminal (cutting
    the ``flexible`` columns) and colours the ``coloured`` columns' verdicts and outcomes when
    colour is on.  (``rows_lines`` with every row at hand.)"""
    rows = list(rows)
    columns = list(columns or (rows[0].keys() if rows else []))
    return "\n".join(rows_lines(lambda: rows, columns, fmt, human=human, align_right=align_right,
                                flexible=flexible, headers=headers, coloured=coloured))


STREAM_CHUNK = 500  # rows laid out at a time when a table is printed as it is read


def rows_lines(rows: Callable[[], Iterable[dict[str, Any]]], columns: Sequence[str], fmt: str, *,
               human: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
               align_right: Sequence[str] = (), flexible: Sequence[str] | dict[str, int] = (),
               headers: dict[str, str] | None = None, coloured: Sequence[str] = ()) -> Iterator[str]:
    """``rows_text`` for more rows than memory should hold, a line (or a chunk of lines) at a
    time, the same text.  ``rows()`` gives the rows again each time it is called: csv, jsonl,
    json and markdown read them once, a table twice (its column widths, then its lines)."""
    from . import terminal
    from .table import cell, cut, fit_widths, render, soften

    if fmt == "jsonl":
        for r in rows():
            yield dumps({c: r.get(c) for c in columns})
        return
    if fmt == "json":
        yield from json_array_pieces({c: r.get(c) for c in columns} for r in rows())
        return
    def shown() -> Iterator[dict[str, Any]]:
        return (human(r) for r in rows()) if human is not None and fmt in ("table", "markdown") else iter(rows())
    if fmt in ("csv", "markdown"):
        head = True
        chunk: list[dict[str, Any]] = []
        for r in shown():
            chunk.append(r)
            if len(chunk) == STREAM_CHUNK:
                yield _without_head(render(chunk, columns, fmt, align_right, headers=headers), fmt, head)
                head, chunk = False, []
        if chunk or head:
            yield _without_head(render(chunk, columns, fmt, align_right, headers=headers), fmt, head)
        return
    # a table: the widest cell of each column first, then chunks laid out at those widths
    names = [(headers or {}).get(c, c) for c in columns]
    widest = [len(n) for n in names]
    softest = list(widest)  # the widths once the flexible columns are softened (table.soften)
    for r in shown():
        for i, c in enumerate(columns):
            text = cell(r.get(c))
            widest[i] = max(widest[i], len(text))
            softest[i] = max(softest[i], len(soften(text) if c in flexible else text))
    flex: Sequence[str] | dict[str, int]
    if isinstance(flexible, dict):
        flex = {(headers or {}).get(c, c): n for c, n in flexible.items()}
    else:
        flex = [(headers or {}).get(c, c) for c in flexible]
    widths = fit_widths(names, [["x" * w for w in widest]], terminal.width(), flex)
    soft = widths is not None  # too wide: give up the least identifying characters first
    if soft:
        widths = fit_widths(names, [["x" * w for w in softest]], terminal.width(), flex) or softest
    widths = widths or widest
    style = None
    if coloured and terminal.colour():
        def style(column: str, text: str) -> str:
            return terminal.paint(text) if column in coloured else text

    def padded(r: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for c, w in zip(columns, widths, strict=True):
            text = cell(r.get(c))
            text = cut(soften(text) if soft and c in flexible else text, w)
            out[c] = text.rjust(w) if c in align_right else text.ljust(w)
        return out

    head = True
    chunk = []
    for r in shown():
        chunk.append(padded(r))
        if len(chunk) == STREAM_CHUNK:
            yield _table_chunk(chunk, columns, names, widths, align_right, style, head)
            head, chunk = False, []
    if chunk or head:
        yield _table_chunk(chunk, columns, names, widths, align_right, style, head)


def _without_head(text: str, fmt: str, head: bool) -> str:
    """A chunk of csv (one header line) or markdown (header and rule) without its head after the
    first chunk."""
    return text if head else "\n".join(text.split("\n")[1 if fmt == "csv" else 2:])


def _table_chunk(rows: list[dict[str, Any]], columns: Sequence[str], names: list[str], widths: list[int],
                 align_right: Sequence[str], style: Callable[[str, str], str] | None, head: bool) -> str:
    from .table import clip, render

    labels = {c: clip(n, w).rjust(w) if c in align_right else clip(n, w).ljust(w)
              for c, n, w in zip(columns, names, widths, strict=True)}
    text = render(rows, columns, "table", align_right, width=None, headers=labels, style=style, keep_spaces=True)
    lines = text.split("\n")
    return "\n".join(lines if head else lines[2:])


def rows_stream(rows: Iterable[Sequence[Any]], columns: Sequence[str], fmt: str, *,
                flexible: Sequence[str] = ()) -> Iterator[str]:
    """``rows_text`` for a result too large to hold (``ledger sql``): the text in pieces as the
    rows (tuples in ``columns``' order) arrive.  A table fits the terminal by its first page."""
    from . import terminal
    from .table import render_stream

    return render_stream(rows, columns, fmt, width=terminal.width() if fmt == "table" else None,
                         flexible=flexible)
