"""A table's layout: ``tabulate``'s "simple" format (imported when a table is drawn:
``--format json`` never pays for it), fitted to the terminal — a table wider than the terminal
gives up width from the columns a command names as flexible, whose cells are cut with ``…`` —
and the figures people read in tables (``human``, ``figures_text``).

Which rows go into a table, and when, is the format engine's (``ledger.render.formats``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .values import cell, clip

__all__ = ["GAP", "MIN_FLEX", "cell", "clip", "figures_text", "fit_widths", "human", "layout"]

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


def fit_widths(columns: Sequence[str], cells: list[list[str]], width: int | None,
               flexible: Sequence[str] | dict[str, int]) -> list[int] | None:
    """Each column's width so that the table is at most ``width`` wide, taken from the widest
    flexible column first, none cut below its minimum (``flexible`` as a dict: column ->
    minimum; else ``MIN_FLEX``) or its header; None when it fits as it is (or there is no width
    to fit)."""
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    if width is None:
        return None
    total = sum(widths) + GAP * (len(widths) - 1)
    if total <= width:
        return None
    minimum = flexible if isinstance(flexible, dict) else dict.fromkeys(flexible, MIN_FLEX)
    flex = [i for i, c in enumerate(columns) if c in minimum]
    while total > width:
        shrinkable = [i for i in flex if widths[i] > max(minimum[columns[i]], len(columns[i]))]
        if not shrinkable:
            break
        i = max(shrinkable, key=lambda j: widths[j])
        widths[i] -= 1
        total -= 1
    return widths


def layout(cells: list[list[str]], columns: Sequence[str], align_right: Sequence[str] = (), *,
           width: int | None = None, flexible: Sequence[str] | dict[str, int] = (),
           headers: dict[str, str] | None = None, style: Callable[[str, str], str] | None = None,
           keep_spaces: bool = False) -> str:
    """``cells`` (rows of cell text, in ``columns``' order) as a table.  ``width`` and
    ``flexible`` fit it to the terminal; ``headers`` names columns for people;
    ``style(column, text)`` colours a cell (after fitting, so colour never counts);
    ``keep_spaces``: cells already padded to their column's width (a table printed a chunk at
    a time) keep it."""
    names = [(headers or {}).get(c, c) for c in columns]
    if isinstance(flexible, dict):
        flex: Sequence[str] | dict[str, int] = {(headers or {}).get(c, c): n for c, n in flexible.items()}
    else:
        flex = [(headers or {}).get(c, c) for c in flexible]
    widths = fit_widths(names, cells, width, flex)
    if widths is not None:
        cells = [[clip(v, w) for v, w in zip(row, widths, strict=True)] for row in cells]
        names = [clip(n, w) for n, w in zip(names, widths, strict=True)]
    if style is not None:
        cells = [[style(c, v) for c, v in zip(columns, row, strict=True)] for row in cells]
    import tabulate as tabulate_module
    from tabulate import tabulate

    tabulate_module.MIN_PADDING = 0  # columns as wide as their widest cell: the width fitting counts on it
    tabulate_module.PRESERVE_WHITESPACE = keep_spaces
    align = ["right" if c in align_right else "left" for c in columns]
    text = tabulate(cells, headers=names, tablefmt="simple", colalign=align, disable_numparse=True)
    return "\n".join(line.rstrip() for line in text.splitlines())
