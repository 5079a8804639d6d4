"""``ledger export`` (and ``ingest --format json``'s boots): export objects as a JSON array,
JSON lines, or csv with one row per fact — written as they are read."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .formats import Csv
from .values import dumps

FACT_COLUMNS = ["boot", "outcome", "commit", "image_digest", "label", "engine_version", "name", "value",
                "unit", "precision", "rank", "process", "pack", "line", "text"]


def facts_csv(objs: Iterable[dict[str, Any]]) -> Iterator[str]:
    """Export objects as csv, one row per fact: the header, then a piece per boot."""
    w = Csv(FACT_COLUMNS)
    yield from w.head()
    for o in objs:
        rows = [{"boot": o["boot"], "outcome": o["outcome"], "commit": o["deploy"]["commit"],
                 "image_digest": o["deploy"]["image_digest"], "label": o["deploy"]["label"],
                 "engine_version": o["engine"]["version"], **f} for f in o["facts"]]
        if rows:
            yield "\n".join(line for r in rows for line in w.row(r))


def export_pieces(objs: Iterable[dict[str, Any]], fmt: str, redact: bool = False) -> Iterator[str]:
    """The export objects in ``fmt`` (json, jsonl, csv), a piece at a time; ``ledger export``
    redacts them (``ledger.render.redact``) unless ``--no-redact``."""
    from . import json_array_pieces

    if redact:
        from .redact import Redactor

        objs = map(Redactor(), objs)
    if fmt == "json":
        yield from json_array_pieces(objs)
    elif fmt == "jsonl":
        yield from (dumps(o) for o in objs)
    else:
        yield from facts_csv(objs)
