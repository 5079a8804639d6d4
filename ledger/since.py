"""``--since``: an ISO 8601 date or time, or a span back from now (``7d``, ``12h``, ``30m``,
``2w``), as the stored timestamp it compares with (``YYYY-MM-DD HH:MM:SS``, the log's own
clock).  Anything else is refused in one line, never compared as a string."""

from __future__ import annotations

import datetime as dt
import re

from .errors import LedgerError

_SPAN = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: dt.datetime | None = None) -> str:
    """The stored-format timestamp ``text`` means."""
    value = text.strip()
    span = _SPAN.match(value.lower())
    if span:
        seconds = int(span.group(1)) * _UNIT_SECONDS[span.group(2)]
        when = (now or dt.datetime.now()) - dt.timedelta(seconds=seconds)
        return when.strftime("%Y-%m-%d %H:%M:%S")
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise LedgerError(f"--since {text!r}: expected an ISO date or time (2026-09-28, 2026-09-28T21:06) "
                          "or a span back from now (7d, 12h, 30m, 2w)") from None
    return when.strftime("%Y-%m-%d %H:%M:%S")
