"""What the terminal's marks mean, said under the table that shows them (only the marks that
appear): a person meeting ``2026-11-14 21:01*``, ``?`` or ``-`` should not have to open the
README to read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# the mark, the column it stands in (as ``queries.humanize_history`` writes it), what it means
HISTORY_MARKS = (
    ("*", "started_at", "year not printed, inferred"),
    ("?", "engine_version", "version not printed"),
    ("-", "verdict", "no verdict (figures not printed)"),
)


class Legend:
    """Wraps a row humanizer, noting which marks its rows carry; ``text()`` says what they mean."""

    def __init__(self, humanize: Callable[[dict[str, Any]], dict[str, Any]],
                 marks: tuple[tuple[str, str, str], ...] = HISTORY_MARKS) -> None:
        self._humanize = humanize
        self._marks = marks
        self.seen: set[str] = set()

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        shown = self._humanize(row)
        for mark, column, _ in self._marks:
            value = shown.get(column)
            if isinstance(value, str) and (value == mark or (mark == "*" and value.endswith("*"))):
                self.seen.add(mark)
        return shown

    def text(self, width: int | None = None) -> str:
        """A blank line, then the marks seen, as many to a line as ``width`` allows."""
        said = [f"{mark} {meaning}" for mark, _, meaning in self._marks if mark in self.seen]
        lines: list[str] = []
        for item in said:
            if lines and (width is None or len(lines[-1]) + 3 + len(item) <= width):
                lines[-1] += "   " + item
            else:
                lines.append(item)
        return "\n".join(["", *lines]) if lines else ""
