"""One-line reports fitted to the terminal the way ``check`` is: a long line is wrapped at
word (or part) boundaries, never mid-word, its continuation indented under its text."""

from __future__ import annotations

import re
from collections.abc import Iterable

_LABELLED = re.compile(r"^( *\S[^ ]*(?: [^ ]+)*? {2,})(?=\S)")  # "  decode t/s     " / "cost         "


def wrap_labelled(lines: Iterable[str], width: int | None) -> list[str]:
    """Lines of ``label   text`` (the text starting after a run of two or more spaces), each
    wrapped to ``width`` with its continuation under the text; a line without such a label is
    wrapped under its own indent.  None: as they are (a pipe)."""
    out: list[str] = []
    for line in lines:
        if width is None or len(line) <= width:
            out.append(line)
            continue
        lead = _LABELLED.match(line)
        head = lead.group(1) if lead and len(lead.group(1)) <= width // 2 else line[: len(line) - len(line.lstrip())]
        room = width - len(head)
        if room < 20:
            out.append(line)
            continue
        import textwrap  # only for a line too long: an ingest's lines to a pipe do not load it

        pieces = textwrap.wrap(line[len(head):], room, break_on_hyphens=False)  # a word wider than the room (a path) is split
        out.append(head + pieces[0])
        out += [" " * len(head) + p for p in pieces[1:]]
    return out


def wrap_parts(parts: Iterable[str], width: int | None, indent: str = "    ", gap: str = "  ") -> str:
    """Parts joined by ``gap`` (an ingest line: boot, outcome, figures, source), a new line
    (indented) where the next part would pass ``width``; a part is never split."""
    lines: list[str] = []
    for part in parts:
        if lines and (width is None or len(lines[-1]) + len(gap) + len(part) <= width):
            lines[-1] += gap + part
        elif lines and width is not None and len(indent) + len(part) > width > len(indent) + 20:
            # a part wider than a line of its own (a list of failures): at its spaces
            import textwrap

            lines += [indent + piece for piece in textwrap.wrap(part, width - len(indent), break_long_words=False)]
        elif lines:
            lines.append(indent + part)
        else:
            lines.append(part)
    return "\n".join(lines)
