"""The output contract's values: boot ids, timestamps, what is missing, JSON (``dumps`` writes
every JSON the ledger prints), and a machine value as one table or csv cell.

No imports of the rest of ``ledger``: every report and the format engine build on these.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import Any


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
    try:  # most values hold no inf or nan: written without a copy made by json_safe first
        return json.dumps(value, allow_nan=False, default=str, **options)
    except ValueError:  # "Out of range float values are not JSON compliant"
        return json.dumps(json_safe(value), allow_nan=False, default=str, **options)


def json_text(obj: Any) -> str:
    return dumps(obj, indent=2)


def jsonl_text(objs: Iterable[Any]) -> str:
    return "\n".join(dumps(o) for o in objs)


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


def document(obj: Any, fmt: str, human: Callable[[Any], str]) -> str:
    """One object (a report, not rows): json as it is, jsonl on one line, else ``human(obj)``."""
    if fmt == "json":
        return json_text(obj)
    if fmt == "jsonl":
        return dumps(obj)
    return human(obj)
