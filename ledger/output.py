"""Rendering rows for people and scripts: table, markdown, csv, json, jsonl."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any


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
        return json.dumps([{c: r.get(c) for c in columns} for r in rows], indent=2, default=str)
    if fmt == "jsonl":
        return "\n".join(json.dumps({c: r.get(c) for c in columns}, default=str) for r in rows)
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


def table_lines(rows: Callable[[], Iterable[dict[str, Any]]], columns: Sequence[str],
                align_right: Sequence[str] = ()) -> Iterator[str]:
    """``render(…, "table")`` of more rows than memory should hold, a line at a time: ``rows()``
    is called twice — once for the column widths, once to print."""
    widths = [len(c) for c in columns]
    for r in rows():
        for i, c in enumerate(columns):
            widths[i] = max(widths[i], len(_cell(r.get(c))))

    def fmt_row(values: Sequence[str]) -> str:
        parts = []
        for i, (v, w) in enumerate(zip(values, widths, strict=True)):
            parts.append(v.rjust(w) if columns[i] in align_right else v.ljust(w))
        return "  ".join(parts).rstrip()

    yield fmt_row(columns)
    yield fmt_row(["-" * w for w in widths])
    for r in rows():
        yield fmt_row([_cell(r.get(c)) for c in columns])
