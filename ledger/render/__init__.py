"""The one output contract: every command's report is turned into words here, and only here.

* ``FORMATS``: ``--format table|markdown|csv|json|jsonl``, the same names on every command;
  ``formats`` is the one engine that writes rows in each (a writer per format), for a list at
  hand (``rows_text``) and for rows printed as they are read (``rows_lines``, ``rows_stream``).
* JSON is written by ``values.dumps`` alone: always valid JSON (an inf or nan figure is ``null``).
* The JSON contract (docs/output-contract.md): a boot id is a string (``boot_id``)
  everywhere, as in the export; a timestamp is ISO 8601 (``iso``) with ``year_inferred`` as a
  field of its own; what is missing is ``null``, never ``""``.
* One module per report (``show``, ``diff``, ``runtime``, ``predict``, ``check``, ``grammar``,
  ``ingest``, ``deploys``, ``admin``, ``history``, ``export``; ``progress`` is ingest's bar): each
  takes the library's contract object and gives its text in a format.
* ``table``: the layout (``tabulate``), fitted to the terminal; ``terminal``: width, colour
  (``NO_COLOR``, never on a pipe), the pager.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .formats import FORMATS, Json, pieces, stream_widths, writer
from .values import boot_id, document, dumps, iso, json_safe, json_text, jsonl_text, null_if_empty

__all__ = ["FORMATS", "boot_id", "document", "dumps", "echo", "iso", "json_array_pieces", "json_safe", "json_text",
           "jsonl_text", "null_if_empty", "rows_lines", "rows_stream", "rows_text"]


def json_array_pieces(objs: Iterable[Any]) -> Iterator[str]:
    """``json_text(list(objs))`` a piece at a time, an object each (the pieces joined by
    newlines are that text): a long array printed as it is read."""
    w = Json([], project=False)
    for obj in objs:
        yield from w.row(obj)
    yield from w.tail()


def echo(text: str | Iterable[str] | None) -> None:
    """Print a report's text (a string, or pieces a line or chunk each; nothing for None)."""
    import click

    if text is None:
        return
    for piece in [text] if isinstance(text, str) else text:
        click.echo(piece)


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


def rows_lines(rows: Callable[[], Iterable[dict[str, Any]]], columns: Sequence[str], fmt: str, *,
               human: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
               align_right: Sequence[str] = (), flexible: Sequence[str] | dict[str, int] = (),
               headers: dict[str, str] | None = None, coloured: Sequence[str] = ()) -> Iterator[str]:
    """``rows_text`` for more rows than memory should hold, a chunk of lines at a time, the
    same text.  ``rows()`` gives the rows again each time it is called: csv, jsonl, json and
    markdown read them once, a table twice (its column widths, then its lines)."""
    from . import terminal

    def shown() -> Iterator[dict[str, Any]]:
        return (human(r) for r in rows()) if human is not None and fmt in ("table", "markdown") else iter(rows())

    if fmt != "table":
        yield from pieces(shown(), writer(fmt, columns, headers=headers, align_right=align_right))
        return
    widths, soft = stream_widths(shown(), columns, headers=headers, flexible=flexible, width=terminal.width())
    style = None
    if coloured and terminal.colour():
        def style(column: str, text: str) -> str:
            return terminal.paint(text) if column in coloured else text

    yield from pieces(shown(), writer("table", columns, headers=headers, align_right=align_right, style=style,
                                      widths=widths, soft=soft))


SQL_PAGE = 1000  # ledger sql: a table takes its widths from this many rows


def unique_keys(labels: Sequence[str]) -> list[str]:
    """A key per column for ``labels`` that may repeat (``ledger sql``: PostgreSQL names both
    ``count(*)`` and ``count(DISTINCT x)`` "count"; ``SELECT 1 AS a, 2 AS a``): a label's first
    column keeps it, each later one gets ``_2``, ``_3`` … — the first of those no column is
    labelled or keyed yet (docs/output-contract.md)."""
    taken = set(labels)
    used: set[str] = set()
    keys = []
    for label in labels:
        key = label
        if key in used:
            n = 2
            while f"{label}_{n}" in taken or f"{label}_{n}" in used:
                n += 1
            key = f"{label}_{n}"
        used.add(key)
        keys.append(key)
    return keys


def rows_stream(rows: Iterable[Sequence[Any]], columns: Sequence[str], fmt: str, *,
                flexible: Sequence[str] = (), page: int = SQL_PAGE) -> Iterator[str]:
    """``rows_text`` for a result too large to hold (``ledger sql``): the text in pieces (to
    be printed one after the other as they are, no newline between) as the rows (tuples in
    ``columns``' order) arrive.  A table fits the terminal by its first ``page`` rows."""
    from . import terminal

    labels = list(columns)
    keys = unique_keys(labels)  # a row is a dict: a repeated label must not overwrite a column
    # for people (table, markdown) the labels as the database gave them; for machines the keys
    headers = {k: label for k, label in zip(keys, labels, strict=True)} if fmt in ("table", "markdown") else None
    wanted = set(flexible)
    flex = [k for k, label in zip(keys, labels, strict=True) if label in wanted]
    w = writer(fmt, keys, headers=headers, width=terminal.width() if fmt == "table" else None, flexible=flex,
               fit_by=page)
    first = True
    for piece in pieces((dict(zip(keys, r, strict=True)) for r in rows), w, chunk=page):
        yield piece if first else "\n" + piece
        first = False
