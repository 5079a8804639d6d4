"""Rows as text: a table that fits the terminal, markdown, csv, json, jsonl.

Tables are laid out by ``tabulate`` (imported when a table is drawn: ``--format
json`` never pays for it); a table wider than the terminal gives up width from the columns a
command names as flexible, whose cells are cut with ``…``.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from . import dumps

MIN_FLEX = 6  # a flexible column is never cut narrower than this (or its header)
GAP = 2  # tabulate's "simple" format puts two spaces between columns


def human(value: Any, unit: str, show_unit: bool = False) -> str:
    """A figure for people: bytes as GiB with the exact count, thousands separators."""
    from ledger.parsers.units import format_bytes

    if value is None:
        return ""
    if unit == "bytes":
        return f"{format_bytes(value)} ({value:,}{' B' if show_unit else ''})"
    suffix = f" {unit}" if show_unit and unit else ""
    if isinstance(value, int):
        return f"{value:,}{suffix}"
    if isinstance(value, float):
        return f"{value:g}{suffix}"
    return f"{value}{suffix}"


def figures_text(figures: dict[str, Any]) -> str:
    """A failure's figures on one line: ``tried_to_allocate_bytes=50.00 MiB, gpu_index=1``."""
    from ledger.parsers.units import format_bytes

    return ", ".join(f"{k}={format_bytes(v) if k.endswith('_bytes') and isinstance(v, (int, float)) else v}"
                     for k, v in figures.items())


def cell(value: Any) -> str:
    """A machine value as one table or csv cell (missing is an empty cell)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return f"{value:.10g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with ``…``."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d")
_EXACT = re.compile(r"^(.*\S) \([\d,.]+(?: B)?\)$")  # "7.74 GiB (8,310,737,059 B)": the human figure first


def soften(text: str) -> str:
    """The cell with the characters that identify least taken out first, before any is cut: a
    figure's exact-bytes parentheses (the GiB figure stays whole), a vLLM version's dev and
    commit tail (``0.20.2rc1.dev9+g01d4d1ad3`` → ``0.20.2rc1``), a deploy name's hashes after
    its label (``qwen-fp8 / f532e03 / da402966…`` → ``qwen-fp8``), a start time's year
    (``2026-10-15 08:32`` → ``10-15 08:32``)."""
    from .names import release

    exact = _EXACT.match(text)
    if exact:
        return exact.group(1)
    if _STAMP.match(text):  # "2026-10-15 08:32*": the year goes first (the day and time identify)
        return text[5:]
    if " / " in text and not text.startswith("("):
        return text.split(" / ", 1)[0]
    return release(text) or text


def cut(text: str, width: int) -> str:
    """``text`` in ``width`` characters for a fitted table cell: softened first, then cut in the
    middle (``qwen-fp8-tuned`` / ``qwen-fp8-6slot`` → ``qwen…tuned`` / ``qwen…6slot``: labels,
    paths and lines differ at their ends at least as often as at their starts)."""
    if len(text) <= width:
        return text
    text = soften(text)
    if len(text) <= width or width < 2:
        return text[:width] if len(text) > width else text
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def fit_widths(columns: Sequence[str], cells: list[list[str]], width: int | None,
               flexible: Sequence[str] | dict[str, int]) -> list[int] | None:
    """Each column's width so that the table is at most ``width`` wide, none cut below its
    minimum or its header; None when it fits as it is (or there is no width to fit).
    ``flexible`` as a sequence: those columns give up width widest first, down to ``MIN_FLEX``
    each; as a dict (column -> minimum): in the dict's order, each down to its minimum before
    the next gives up any — the least identifying column first."""
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    if width is None:
        return None
    total = sum(widths) + GAP * (len(widths) - 1)
    if total <= width:
        return None
    if isinstance(flexible, dict):
        for name, least in flexible.items():
            if name not in columns:
                continue
            i = list(columns).index(name)
            give = min(total - width, widths[i] - max(least, len(name)))
            if give > 0:
                widths[i] -= give
                total -= give
            if total <= width:
                break
        return widths
    minimum = dict.fromkeys(flexible, MIN_FLEX)
    flex = [i for i, c in enumerate(columns) if c in minimum]
    while total > width:
        shrinkable = [i for i in flex if widths[i] > max(minimum[columns[i]], len(columns[i]))]
        if not shrinkable:
            break
        i = max(shrinkable, key=lambda j: widths[j])
        widths[i] -= 1
        total -= 1
    return widths


def render(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, fmt: str = "table",
           align_right: Sequence[str] = (), *, width: int | None = None,
           flexible: Sequence[str] | dict[str, int] = (),
           headers: dict[str, str] | None = None, style: Callable[[str, str], str] | None = None,
           keep_spaces: bool = False) -> str:
    """``rows`` in ``fmt``.  For json/jsonl the values go out as they are (the command has
    already made them the contract's); for the others each value becomes a cell.  ``width``
    and ``flexible`` fit a table to the terminal; ``headers`` names columns for people;
    ``style(column, text)`` colours a table cell (after fitting, so colour never counts)."""
    columns = list(columns or (rows[0].keys() if rows else []))
    if fmt == "json":
        return dumps([{c: r.get(c) for c in columns} for r in rows], indent=2)
    if fmt == "jsonl":
        return "\n".join(dumps({c: r.get(c) for c in columns}) for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([cell(r.get(c)) for c in columns])
        return buf.getvalue().rstrip("\n")
    names = [(headers or {}).get(c, c) for c in columns]
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    if fmt == "markdown":  # unpadded rows (what a commit message or an issue wants), aligned by the rule line
        def esc(text: str) -> str:
            return text.replace("|", "\\|")

        out = ["| " + " | ".join(names) + " |", "|" + "|".join("---:" if c in align_right else "---" for c in columns) + "|"]
        out += ["| " + " | ".join(esc(v) for v in row) + " |" for row in cells]
        return "\n".join(out)
    if isinstance(flexible, dict):
        flex: Sequence[str] | dict[str, int] = {(headers or {}).get(c, c): n for c, n in flexible.items()}
    else:
        flex = [(headers or {}).get(c, c) for c in flexible]
    widths = fit_widths(names, cells, width, flex)
    if widths is not None:  # too wide: the flexible columns give up their least identifying characters first
        soft = [n in flex for n in names]
        cells = [[soften(v) if s else v for v, s in zip(row, soft, strict=True)] for row in cells]
        widths = fit_widths(names, cells, width, flex)
    if widths is not None:
        cells = [[cut(v, w) for v, w in zip(row, widths, strict=True)] for row in cells]
        names = [clip(n, w) for n, w in zip(names, widths, strict=True)]
    if style is not None:
        cells = [[style(c, v) for c, v in zip(columns, row, strict=True)] for row in cells]
    import tabulate as tabulate_module
    from tabulate import tabulate

    tabulate_module.MIN_PADDING = 0  # columns as wide as their widest cell: the width fitting counts on it
    # cells already padded to their column's width (a table printed a chunk at a time) keep it
    tabulate_module.PRESERVE_WHITESPACE = keep_spaces
    align = ["right" if c in align_right else "left" for c in columns]
    text = tabulate(cells, headers=names, tablefmt="simple", colalign=align, disable_numparse=True)
    return "\n".join(line.rstrip() for line in text.splitlines())


def render_stream(rows: Iterable[Sequence[Any]], columns: Sequence[str], fmt: str = "table", *,
                  width: int | None = None, flexible: Sequence[str] = (), page: int = 1000) -> Iterator[str]:
    """``render`` for a result too large to hold (``ledger sql``): the text in pieces, a page of
    rows (tuples in ``columns``' order) at a time, never one string per row.  The output is
    ``render``'s; only a table longer than ``page`` rows takes its column widths from its first
    page (a longer value later is cut to them)."""
    columns = list(columns)
    it = iter(rows)
    if fmt in ("json", "jsonl"):
        first = True
        if fmt == "json":
            yield "["
        while batch := list(itertools.islice(it, page)):
            pieces = []
            for r in batch:
                if fmt == "json":
                    obj = dumps(dict(zip(columns, r, strict=True)), indent=2)
                    pieces.append(("\n" if first else ",\n") + "\n".join("  " + line for line in obj.splitlines()))
                else:
                    pieces.append(("" if first else "\n") + dumps(dict(zip(columns, r, strict=True))))
                first = False
            yield "".join(pieces)
        if fmt == "json":
            yield "]" if first else "\n]"
        return
    head = list(itertools.islice(it, page))
    text = render([dict(zip(columns, r, strict=True)) for r in head], columns, fmt, width=width, flexible=flexible)
    yield text
    if len(head) < page:
        return
    widths = [len(d) for d in text.splitlines()[1].split(" " * GAP)] if fmt == "table" else []
    while batch := list(itertools.islice(it, page)):  # the rest a page at a time
        cells = [[cell(v) for v in r] for r in batch]
        if fmt == "csv":
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(cells)
            yield "\n" + buf.getvalue().rstrip("\n")
        elif fmt == "markdown":
            yield "".join("\n| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
        else:  # a table: the first page's widths (its dashes line says them), cut to them
            yield "".join("\n" + (" " * GAP).join(clip(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                          for row in cells)
