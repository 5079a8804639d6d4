"""What the terminal allows: its width, colour (never on a pipe, never with ``NO_COLOR``), a
pager for long output.  No third-party imports: every command's start-up passes through here."""

from __future__ import annotations

import os
import sys
from typing import IO, Any

from ledger.parsers.vocabulary import Outcome, Verdict

# verdicts and outcomes, coloured by what they mean
GOOD = {Verdict.ok, Outcome.ready}
BAD = {Verdict.off, Verdict.broken, Verdict.over, Outcome.failed, Outcome.crashed}
UNSURE = {Verdict.insufficient, Outcome.incomplete}


def width(stream: IO[str] | None = None) -> int | None:
    """The columns to fit a table to: ``$COLUMNS`` if set, else the terminal's; None on a pipe
    (a table written to a file is not cut)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    stream = stream or sys.stdout
    if not _isatty(stream):
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80


def height(stream: IO[str] | None = None) -> int:
    try:
        return os.get_terminal_size((stream or sys.stdout).fileno()).lines
    except (OSError, ValueError, AttributeError):
        return 24


def colour(stream: IO[str] | None = None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set to anything (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return _isatty(stream or sys.stdout)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def paint(word: str, text: str | None = None) -> str:
    """``text`` (default ``word``) in the colour of the verdict or outcome ``word``."""
    import click

    text = word if text is None else text
    key = word.strip()
    if key in GOOD:
        return click.style(text, fg="green")
    if key in BAD:
        return click.style(text, fg="red", bold=True)
    if key in UNSURE:
        return click.style(text, fg="yellow")
    return text


def echo_long(text: str) -> None:
    """Print ``text``; through a pager (``$PAGER``, else less) when it is longer than a
    terminal's height and stdout is a terminal."""
    import click

    if _isatty(sys.stdout) and text.count("\n") + 1 > height() - 1:
        click.echo_via_pager(text + "\n", color=colour())
    else:
        click.echo(text, color=colour() or None)
