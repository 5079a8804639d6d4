"""Rendering rows for people and scripts: table, markdown, csv, json, jsonl."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any


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
    """``json.dumps`` that only ever writes valid JSON (``json_safe``)."""
    return json.dumps(json_safe(value), allow_nan=False, **options)


def human(value: Any, unit: str, show_unit: bool = False) -> str:
    """A figure for people: bytes as GiB with the exact count, thousands separators."""
    from parsers.units import format_bytes

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
    from parsers.units import format_bytes

    return ", ".join(f"{k}={format_bytes(v) if k.endswith('_bytes') and isinstance(v, (int, float)) else v}"
                     for k, v in figures.items())


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return f"{value:.10g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def render(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, fmt: str = "table",
           align_right: Sequence[str] = ()) -> str:
    columns = list(columns or (rows[0].keys() if rows else []))
    if fmt == "json":
        return dumps([{c: r.get(c) for c in columns} for r in rows], indent=2, default=str)
    if fmt == "jsonl":
        return "\n".join(dumps({c: r.get(c) for c in columns}, default=str) for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in columns])
        return buf.getvalue().rstrip("\n")
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    if fmt == "markdown":
        def esc(s: str) -> str:
            return s.replace("|", "\\|")

        out = ["| " + " | ".join(columns) + " |",
               "|" + "|".join("---:" if c in align_right else "---" for c in columns) + "|"]
        out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in cells]
        return "\n".join(out)
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]

    def fmt_row(values: Sequence[str]) -> str:
        parts = []
        for i, (v, w) in enumerate(zip(values, widths, strict=True)):
            parts.append(v.rjust(w) if columns[i] in align_right else v.ljust(w))
        return "  ".join(parts).rstrip()

    out = [fmt_row(columns), fmt_row(["-" * w for w in widths])]
    out += [fmt_row(row) for row in cells]
    return "\n".join(out)


def render_stream(rows: Iterable[Sequence[Any]], columns: Sequence[str], fmt: str = "table",
                  page: int = 1000) -> Iterator[str]:
    """``render`` for a result too large to hold (``ledger sql``): the text in pieces, as rows
    arrive.  The output is ``render``'s; only a table longer than ``page`` rows takes its
    column widths from its first page (a longer value later pushes its row out of line)."""
    columns = list(columns)
    it = iter(rows)
    if fmt in ("json", "jsonl"):
        first = True
        if fmt == "json":
            yield "["
        for r in it:
            obj = dumps(dict(zip(columns, r, strict=True)), indent=2 if fmt == "json" else None, default=str)
            if fmt == "json":
                yield ("\n" if first else ",\n") + "\n".join("  " + line for line in obj.splitlines())
            else:
                yield ("" if first else "\n") + obj
            first = False
        if fmt == "json":
            yield "]" if first else "\n]"
        return
    head = []
    for r in it:
        head.append(r)
        if len(head) >= page:
            break
    text = render([dict(zip(columns, r, strict=True)) for r in head], columns, fmt)
    if len(head) < page:
        yield text
        return
    yield text
    if fmt == "table":
        # the widths of the first page: its dashes line says them
        widths = [len(d) for d in text.splitlines()[1].split("  ")]
    while True:  # the rest a page at a time: one string per page, not per row
        batch = list(itertools.islice(it, page))
        if not batch:
            return
        cells = [[_cell(v) for v in r] for r in batch]
        if fmt == "csv":
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(cells)
            yield "\n" + buf.getvalue().rstrip("\n")
        elif fmt == "markdown":
            yield "".join("\n| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
        else:
            yield "".join("\n" + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
                          for row in cells)
