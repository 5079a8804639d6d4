"""What the terminal allows: its width, colour (never on a pipe, never with ``NO_COLOR``), a
pager for long output.  No third-party imports: every command's start-up passes through here."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO, Any

from ledger.parsers.vocabulary import Outcome, Verdict

# verdicts and outcomes, coloured by what they mean
GOOD = {Verdict.ok, Outcome.ready}
BAD = {Verdict.off, Verdict.broken, Verdict.over, Verdict.slower, Verdict.failed, Verdict.crashed, Outcome.failed,
       Outcome.crashed}
# a reference is no test passed; unsupported: the formula cannot say; running: no failure seen,
# but the log shows no end (survival is not shown)
UNSURE = {Verdict.insufficient, Verdict.unsupported, Verdict.reference, Verdict.running, Outcome.incomplete}


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
        _pager_env()
        click.echo_via_pager(text + "\n", color=colour())
    else:
        click.echo(text, color=colour() or None)


def echo_pieces(pieces: Iterable[str]) -> None:
    """Print pieces of text (a streamed table, a line or a chunk each) as they come; on a
    terminal through the pager, fed as they come (with ``LESS=FRX`` a table that fits one
    screen is printed and less quits at once, as git's log does)."""
    import click

    if _isatty(sys.stdout):
        _pager_env()
        click.echo_via_pager((piece + "\n" for piece in pieces), color=colour())
    else:
        for piece in pieces:
            click.echo(piece, color=colour() or None)


def _pager_env() -> None:
    """Let less show colour: with ``color=True`` click hands the escapes through untouched and
    does not add ``-R`` itself, so Debian's less (no ``LESS`` set) printed ``ESC[31m…`` as text.
    Like git, set ``LESS=FRX`` when the user has set no ``LESS`` of their own (F: quit when the
    text fits one screen, R: colour escapes, X: leave the text on the screen); ``LV=-c`` for lv."""
    os.environ.setdefault("LESS", "FRX")
    os.environ.setdefault("LV", "-c")
