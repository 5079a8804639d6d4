"""``ledger watch``: a live server's log read as it grows into the ledger, and a person told
when a boot fails, breaks its contract or slows down (docs/watch.md).

``follow`` reads the source (a file like ``tail -F``, stdin, a container's or unit's log
command from ``ledger.origins``), ``session.Watch`` parses it live (``parsers.live``), stores
each boot as its start-up ends and its samples in batches (``ledger.db.watching``), and hands
what it sees to ``alerts.Alerter``; ``sinks`` delivers the alerts to ``--exec`` and
``--webhook``.  Words are ``ledger.render.watch``'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import LedgerError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(option: str, text: str) -> float:
    """``30s``, ``5m``, ``2h``, ``1.5s``, ``300`` (seconds) as seconds; anything else refused."""
    m = _DURATION.match(text)
    if m is None:
        raise LedgerError(f"{option} {text}: expected a duration such as 30s, 5m or 2h")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


def parse_percent(option: str, text: str) -> float:
    """``95%`` or ``95`` as 95.0 (0 to 100)."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise LedgerError(f"{option} {text}: expected a percentage such as 95%") from None
    if not 0 <= value <= 100:
        raise LedgerError(f"{option} {text}: expected a percentage from 0% to 100%")
    return value


def follower_for(source: str | None, container: str | None, runtime: str | None, unit: str | None,
                 since: str | None, on_note: Callable[[str], None], journal_files: tuple[str, ...] = (),
                 journal_dir: str | None = None, ledger: Any = None) -> tuple[Any, str, Any]:
    """The follower of what the command was given, the boots' source name, and the origin (a
    container's or unit's, from ``ledger.origins``; None for a file or stdin).  ``ledger`` is
    the ledger's file (None: a server), whose readers a file swapped in for SOURCE must not
    widen (``follow.may_follow``)."""
    from .follow import CommandFollower, ContainerFollower, FileFollower, StreamFollower

    given = sum(1 for x in (source, container, unit) if x)
    if given != 1:
        raise LedgerError("give one of SOURCE (a log file, or - for stdin), --container NAME and --unit NAME")
    if runtime and not container:
        raise LedgerError("--runtime goes with --container")
    if (journal_files or journal_dir) and not unit:
        raise LedgerError("--journal-file and --journal-dir go with --unit")
    if container or unit:
        from ..origins import container_origin, journal_origin, unit_origin

        if container:
            origin = container_origin(container, runtime)
            found = origin

            def find() -> Any:  # the name looked up again: the container now under it
                return container_origin(found.name, found.runtime)

            return ContainerFollower(origin, find, on_note), origin.source_name, origin
        if journal_files or journal_dir:
            origin = journal_origin(unit or "", list(journal_files), journal_dir, since)
        else:
            origin = unit_origin(unit or "", since)
        argv = origin.argv(follow=True)
        if unit and not since:
            # the unit's whole journal, then new entries (journalctl -f alone starts at its last
            # ten): a restarted watch reads the same lines under the same numbers, as for a file
            argv.insert(len(argv) - 1, "--lines=all")
        return CommandFollower(argv, on_note, transform=origin.text_lines), origin.source_name, origin
    assert source is not None
    if source == "-":
        return StreamFollower(0), "-", None
    return FileFollower(source, on_note, ledger=ledger), source, None
