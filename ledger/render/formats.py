"""The format engine: one writer per ``--format`` (table, markdown, csv, json, jsonl), each
with ``head()``, ``row(r)`` and ``tail()``, and the two ways to drive one — ``render`` (a list
at hand, one string) and ``pieces`` (rows as they are read, a chunk of lines at a time).  The
pieces joined by newlines are ``render``'s text, whichever way the rows come.

A table needs its column widths before its first line: ``render`` lays out the whole list at
once (``tabulate``, fitted to the width); a stream either knows its widths (``rows_lines``
reads the rows once for them) and lays out chunks of padded cells at those widths, or takes
them from its first page (``ledger sql``: ``fit_by``) and cuts later cells to them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .table import GAP, cut, fit_widths, layout, soften
from .values import cell, clip, dumps, json_text

FORMATS = ("table", "markdown", "csv", "json", "jsonl")
STREAM_CHUNK = 500  # rows laid out (and printed) at a time when rows are printed as they are read

Row = dict[str, Any]


class Writer:
    """One format's text for rows in ``columns``: ``head()`` before the rows, ``row(r)`` for
    each, ``tail()`` after; each yields pieces (a line, or a chunk of lines) that joined by
    newlines are the text."""

    def __init__(self, columns: Sequence[str]):
        self.columns = list(columns)

    def head(self) -> Iterator[str]:
        return iter(())

    def row(self, r: Row) -> Iterator[str]:
        raise NotImplementedError

    def tail(self) -> Iterator[str]:
        return iter(())

    def _values(self, r: Row) -> Row:
        return {c: r.get(c) for c in self.columns}


class JsonLines(Writer):
    """One object per line, the machine values as they are."""

    def row(self, r: Row) -> Iterator[str]:
        yield dumps(self._values(r))


class Json(Writer):
    """A JSON array in ``json_text``'s layout (two spaces of indent), an object at a time: each
    object is held until the next shows whether a comma follows it."""

    def __init__(self, columns: Sequence[str], project: bool = True):
        super().__init__(columns)
        self.project = project
        self.held: str | None = None

    def row(self, r: Any) -> Iterator[str]:
        yield "[" if self.held is None else self.held + ","
        self.held = "\n".join("  " + line for line in json_text(self._values(r) if self.project else r).split("\n"))

    def tail(self) -> Iterator[str]:
        if self.held is None:
            yield "[]"
        else:
            yield self.held
            yield "]"


class Csv(Writer):
    """A header line, then a line per row (csv's quoting; cells as ``cell`` writes them)."""

    def _line(self, values: Sequence[str]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(values)
        return buf.getvalue()[:-1]

    def head(self) -> Iterator[str]:
        yield self._line(self.columns)

    def row(self, r: Row) -> Iterator[str]:
        yield self._line([cell(r.get(c)) for c in self.columns])


class Markdown(Writer):
    """Unpadded rows (what a commit message or an issue wants), aligned by the rule line."""

    def __init__(self, columns: Sequence[str], headers: dict[str, str] | None = None, align_right: Sequence[str] = ()):
        super().__init__(columns)
        self.names = [(headers or {}).get(c, c) for c in columns]
        self.align_right = align_right

    def head(self) -> Iterator[str]:
        yield "| " + " | ".join(self.names) + " |"
        yield "|" + "|".join("---:" if c in self.align_right else "---" for c in self.columns) + "|"

    def row(self, r: Row) -> Iterator[str]:
        yield "| " + " | ".join(cell(r.get(c)).replace("|", "\\|") for c in self.columns) + " |"


class Table(Writer):
    """A table (``tabulate``'s simple format).  Without ``widths`` the rows are held and laid
    out together at the tail, fitted to ``width`` (or, with ``fit_by``, the first ``fit_by``
    rows are, and later rows are cut to the widths those gave); with ``widths`` (a stream whose
    widths were read first) each chunk of rows is laid out at them as it fills."""

    def __init__(self, columns: Sequence[str], *, headers: dict[str, str] | None = None,
                 align_right: Sequence[str] = (), width: int | None = None,
                 flexible: Sequence[str] | dict[str, int] = (), style: Callable[[str, str], str] | None = None,
                 widths: list[int] | None = None, fit_by: int | None = None, soft: Sequence[str] = ()):
        super().__init__(columns)
        self.headers, self.align_right, self.width, self.flexible, self.style = \
            headers, align_right, width, flexible, style
        self.names = [(headers or {}).get(c, c) for c in columns]
        self.widths, self.fit_by = widths, fit_by
        self.soft = set(soft)  # with widths: the columns softened (table.soften) before a cell is cut
        self.held: list[list[str]] = []
        self.first = True  # the header is still to be written

    def row(self, r: Row) -> Iterator[str]:
        if self.widths is None:
            self.held.append([cell(r.get(c)) for c in self.columns])
            if self.fit_by is not None and len(self.held) >= self.fit_by:
                text = self._whole()
                yield text
                # the first page's widths, as its dashes line says them
                self.widths = [len(d) for d in text.splitlines()[1].split(" " * GAP)]
            return
        self.held.append(self._padded(r))
        if len(self.held) >= STREAM_CHUNK:
            yield self._chunk()

    def tail(self) -> Iterator[str]:
        if self.widths is None:
            yield self._whole()
        elif self.held or self.first:
            yield self._chunk()

    def _whole(self) -> str:
        text = layout(self.held, self.columns, self.align_right, width=self.width, flexible=self.flexible,
                      headers=self.headers, style=self.style)
        self.held, self.first = [], False
        return text

    def _padded(self, r: Row) -> list[str]:
        out = []
        for c, w in zip(self.columns, self.widths or [], strict=True):
            text = cell(r.get(c))
            text = cut(soften(text) if c in self.soft else text, w)
            out.append(text.rjust(w) if c in self.align_right else text.ljust(w))
        return out

    def _chunk(self) -> str:
        widths = self.widths or []
        labels = {c: clip(n, w).rjust(w) if c in self.align_right else clip(n, w).ljust(w)
                  for c, n, w in zip(self.columns, self.names, widths, strict=True)}
        text = layout(self.held, self.columns, self.align_right, headers=labels, style=self.style, keep_spaces=True)
        lines = text.split("\n")
        head, self.first, self.held = self.first, False, []
        return "\n".join(lines if head else lines[2:])


def writer(fmt: str, columns: Sequence[str], *, headers: dict[str, str] | None = None,
           align_right: Sequence[str] = (), width: int | None = None,
           flexible: Sequence[str] | dict[str, int] = (), style: Callable[[str, str], str] | None = None,
           widths: list[int] | None = None, fit_by: int | None = None, soft: Sequence[str] = ()) -> Writer:
    """The writer of ``fmt`` (one of ``FORMATS``); the layout options concern tables (and
    markdown's headers and right-aligned columns)."""
    if fmt == "json":
        return Json(columns)
    if fmt == "jsonl":
        return JsonLines(columns)
    if fmt == "csv":
        return Csv(columns)
    if fmt == "markdown":
        return Markdown(columns, headers, align_right)
    if fmt == "table":
        return Table(columns, headers=headers, align_right=align_right, width=width, flexible=flexible,
                     style=style, widths=widths, fit_by=fit_by, soft=soft)
    raise ValueError(f"no format {fmt!r} (formats: {', '.join(FORMATS)})")


def pieces(rows: Iterable[Row], w: Writer, chunk: int | None = None) -> Iterator[str]:
    """``w``'s text for ``rows`` as they come, in pieces of about ``chunk`` rows (default
    ``STREAM_CHUNK``) that joined by newlines are the text."""
    size = STREAM_CHUNK if chunk is None else chunk
    held = list(w.head())
    n = 0
    for r in rows:
        held.extend(w.row(r))
        n += 1
        if n >= size and held:
            yield "\n".join(held)
            held, n = [], 0
    held.extend(w.tail())
    if held:
        yield "\n".join(held)


def render(rows: Sequence[Row], columns: Sequence[str] | None = None, fmt: str = "table",
           align_right: Sequence[str] = (), *, width: int | None = None,
           flexible: Sequence[str] | dict[str, int] = (), headers: dict[str, str] | None = None,
           style: Callable[[str, str], str] | None = None) -> str:
    """``rows`` in ``fmt``, a list at hand.  For json/jsonl the values go out as they are (the
    command has already made them the contract's); for the others each value becomes a cell.
    ``width`` and ``flexible`` fit a table to the terminal; ``headers`` names columns for
    people; ``style(column, text)`` colours a table cell."""
    columns = list(columns or (rows[0].keys() if rows else []))
    w = writer(fmt, columns, headers=headers, align_right=align_right, width=width, flexible=flexible, style=style)
    return "\n".join(pieces(rows, w, chunk=len(rows) + 1))


def stream_widths(rows: Iterable[Row], columns: Sequence[str], *, headers: dict[str, str] | None = None,
                  flexible: Sequence[str] | dict[str, int] = (), width: int | None = None
                  ) -> tuple[list[int], list[str]]:
    """A streamed table's column widths, read from every row first (the widest cell of each
    column, then fitted to ``width`` as ``render`` would fit the whole list), and the columns
    softened to fit (``table.soften``: the least identifying characters go first)."""
    names = [(headers or {}).get(c, c) for c in columns]
    widest = [len(n) for n in names]
    softest = list(widest)  # the widths once the flexible columns are softened
    for r in rows:
        for i, c in enumerate(columns):
            text = cell(r.get(c))
            widest[i] = max(widest[i], len(text))
            softest[i] = max(softest[i], len(soften(text) if c in flexible else text))
    flex: Sequence[str] | dict[str, int]
    if isinstance(flexible, dict):
        flex = {(headers or {}).get(c, c): n for c, n in flexible.items()}
    else:
        flex = [(headers or {}).get(c, c) for c in flexible]
    widths = fit_widths(names, [["x" * w for w in widest]], width, flex)
    if widths is None:
        return widest, []
    return fit_widths(names, [["x" * w for w in softest]], width, flex) or softest, list(flexible)
