"""``ledger history``: one row per boot (``ledger.queries.iter_history``'s rows), printed as
they are read; for people, the time to the minute, bytes as GiB, verdicts coloured."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ledger.parsers.units import format_bytes

HISTORY_HEADERS = {"started_at": "started", "engine_version": "vllm", "kv_tokens": "kv tokens",
                   "concurrency": "conc", "kv_memory": "kv memory", "source_path": "source"}
ALIGN_RIGHT = ("kv_tokens", "concurrency", "kv_memory", "weights")
# the table's columns that give up width on a narrow terminal, least identifying first (each to
# its minimum: a source path, the start time's year, a version's dev/commit tail, then the deploy)
FLEXIBLE = {"source_path": 12, "started_at": 12, "engine_version": 9, "deploy": 10}
COLOURED = ("outcome", "verdict", "kv_check", "formula_check", "contract", "vram_check", "host_check")


def humanize_history(row: dict[str, Any]) -> dict[str, Any]:
    """A history row for the terminal: the time to the minute (``*``: year inferred), bytes as
    GiB, thousands separators, ``-`` for no verdict."""
    h = dict(row)
    started = row["started_at"]
    h["started_at"] = (started[:16].replace("T", " ") + ("*" if row["year_inferred"] else "")) if started else "—"
    for col in ("kv_memory", "weights"):
        h[col] = format_bytes(row[col]) if row[col] is not None else ""
    h["kv_tokens"] = f"{row['kv_tokens']:,}" if row["kv_tokens"] is not None else ""
    h["concurrency"] = f"{row['concurrency']:.2f}x" if row["concurrency"] is not None else ""
    h["verdict"] = row["verdict"] or "-"
    h["engine_version"] = row["engine_version"] or "?"
    return h


def history_lines(rows: Callable[[], Iterable[dict[str, Any]]], columns: Sequence[str], fmt: str) -> Iterator[str]:
    """The rows in ``fmt``, a chunk at a time (``rows()`` is read again for a table's widths);
    a table ends with what its marks mean (``legend.Legend``), the marks it shows only."""
    from . import rows_lines
    from .legend import Legend
    from .terminal import width

    legend = Legend(humanize_history)
    yield from rows_lines(rows, columns, fmt, human=legend, headers=HISTORY_HEADERS,
                          align_right=ALIGN_RIGHT, flexible=FLEXIBLE, coloured=COLOURED)
    if fmt == "table" and legend.seen:
        yield legend.text(width())


def echo_history(rows: Callable[[], Iterable[dict[str, Any]]], columns: Sequence[str], fmt: str) -> None:
    """Print the history; a table on a terminal through the pager, as it is read."""
    import click

    from .terminal import echo_pieces

    if fmt == "table":
        echo_pieces(history_lines(rows, columns, fmt))
    else:
        for text in history_lines(rows, columns, fmt):
            click.echo(text)


def no_boots(ledger_empty: bool) -> str:
    """What an empty table says instead (on stderr): why there is nothing to show."""
    if ledger_empty:
        return "no boots in the ledger yet (try: ledger ingest LOG)"
    return "no boots match (the ledger has boots; loosen --deploy, --outcome or --since)"


def default_columns(fmt: str, wide: bool, compact: list[str], every: list[str]) -> list[str]:
    """A table or markdown shows the compact columns (unless ``--wide``); csv and JSON every one."""
    return compact if fmt in ("table", "markdown") and not wide else every


def says_empty(fmt: str) -> bool:
    """Whether no rows are said in words (a table) rather than printed as an empty list."""
    return fmt == "table"
