"""``ledger ingest``'s progress bar on a terminal."""

from __future__ import annotations

import sys

import click


class Progress:
    """A progress bar on a terminal (stderr; tqdm), shown once an input has taken a second:
    the percent of the file's own bytes read (compressed bytes for .gz and .zst), or bytes and
    rate from a pipe.  tqdm redraws at most a few times a second, and ``say`` prints a line
    (a stored boot) above the bar, never into it."""

    DELAY = 1.0  # seconds before the bar appears: most inputs are done by then

    def __init__(self, path: str):
        import os
        import time

        self.path, self.start, self.bar = path, time.monotonic(), None
        self.total = os.path.getsize(path) if path != "-" and os.path.isfile(path) else None

    def __call__(self, done: int) -> None:
        if self.bar is None:
            import time

            if time.monotonic() - self.start < self.DELAY:
                return
            from tqdm import tqdm  # loaded only when a bar is drawn

            from ledger.parsers.source import printable

            done = min(done, self.total) if self.total else done
            self.bar = tqdm(total=self.total, initial=done, desc="<stdin>" if self.path == "-" else printable(self.path),
                            unit="B", unit_scale=True, unit_divisor=1000, file=sys.stderr, leave=False,
                            mininterval=0.25, dynamic_ncols=True)
            return
        done = min(done, self.total) if self.total else done
        self.bar.update(done - self.bar.n)

    def say(self, line: str) -> None:
        if self.bar is None:
            click.echo(line)
        else:
            self.bar.write(line, file=sys.stdout)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.close()
