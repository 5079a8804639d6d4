"""A table's layout: ``tabulate``'s "simple" format (imported when a table is drawn:
``--format json`` never pays for it), fitted to the terminal — a table wider than the terminal
gives up width from the columns a command names as flexible, whose cells are cut with ``…`` —
and the figures people read in tables (``human``, ``figures_text``).

Which rows go into a table, and when, is the format engine's (``ledger.render.formats``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .values import cell, clip

__all__ = ["GAP", "MIN_FLEX", "cell", "clip", "cut", "figures_text", "fit_widths", "human", "layout", "soften"]

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
    tabulate_module.PRESERVE_WHITESPACE = keep_spaces
    # no alignments for a table without rows: tabulate 0.9 fails on them (0.10 ignores them), and
    # there each column is as wide as its header (MIN_PADDING 0), so they would change nothing
    align = ["right" if c in align_right else "left" for c in columns] if cells else None
    text = tabulate(cells, headers=names, tablefmt="simple", colalign=align, disable_numparse=True)
    return "\n".join(line.rstrip() for line in text.splitlines())
