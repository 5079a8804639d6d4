"""Where ``ledger watch`` reads from: a log file followed like ``tail -F``, standard input, or a
command's output (``podman logs -f``, ``journalctl -f``).  Each follower's ``read(timeout)``
returns whole lines (bytes ending at a newline), ``b""`` when nothing came within the timeout,
and ``None`` once the source has ended for good; ``caught_up`` turns true once what the source
held when the watch began has been read (the file's end; a pipe read dry or pausing).

A file is read from its start (a restarted watch reads it again: the ledger finds the boots it
stored, README "Idempotence"), then followed: appended lines as they come; a file renamed away
and created again (rotation) is read to its end and the new one from its start; a file that
became shorter (truncated) is read again from its start; a file that does not exist yet is
waited for.  Its lines are numbered as one stream across rotations and truncations.

The file followed is the one opened (its descriptor), never the name looked up again: a file
that takes the log's name (a rotation, or a symlink swapped in) is opened, judged on that
descriptor, and followed only when everyone who could read the file first opened — or everyone
who can read the ledger — may read it too (``may_follow``); otherwise that is said once and the
file first opened is read on.  A watch run as root thus never copies a root-only file put in
place of a world-readable log into a world-readable ledger.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BLOCK = 8 * 1024 * 1024  # read at most this much at a time (a large file's catch-up)
POLL_S = 0.05  # how often a file at its end is looked at again
READ = 1 << 20  # a pipe is read this much at a time; a shorter read means it was drained


class _Lines:
    """Bytes in, whole lines out: the part after the last newline waits for the rest."""

    def __init__(self) -> None:
        self.partial = b""

    def take(self, data: bytes) -> bytes:
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        self.partial = data[cut:]
        return data[:cut]

    def rest(self) -> bytes:
        """The unfinished last line, finished (the source ended or was replaced)."""
        rest, self.partial = self.partial, b""
        return rest + b"\n" if rest else b""


@dataclass(frozen=True)
class _Reader:
    """Someone who may read a file: a user (None: anyone but the file's owners) and groups."""

    uid: int | None
    gids: frozenset[int]

    def may(self, st: os.stat_result, want: int) -> bool:
        """Whether the mode bits let this reader ``want`` (4 read, 1 enter) ``st``."""
        if self.uid == 0:
            return True
        if self.uid is not None and self.uid == st.st_uid:
            bits = st.st_mode >> 6
        elif st.st_gid in self.gids:
            bits = st.st_mode >> 3
        else:
            bits = st.st_mode
        return bool(bits & want)

    def reaches(self, real: Path, st: os.stat_result) -> bool:
        """Whether this reader may read the file ``real`` (its stat ``st``): its mode, and every
        folder above it entered."""
        if not self.may(st, 4):
            return False
        try:
            return all(self.may(os.stat(folder), 1) for folder in real.parents)
        except OSError:
            return False


def _owner(uid: int) -> _Reader:
    try:
        import pwd

        entry = pwd.getpwuid(uid)
        return _Reader(uid, frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid)))
    except (KeyError, ImportError, OSError):
        return _Reader(uid, frozenset())


def readers(real: Path, st: os.stat_result) -> list[_Reader]:
    """Who may read the file ``real``: its owner, its group's members, anyone — each when the
    file's mode and the folders above it let them."""
    every = [_owner(st.st_uid), _Reader(None, frozenset({st.st_gid})), _Reader(None, frozenset())]
    return [r for r in every if r.reaches(real, st)]


def _real(fd: int, path: str) -> Path:
    """Where an open file is (Linux names it in /proc; elsewhere its name, resolved)."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return Path(os.path.realpath(path))


def may_follow(first: tuple[Path, os.stat_result], new: tuple[Path, os.stat_result],
               ledger: Path | None) -> bool:
    """Whether a file that took the followed log's name may be read into the ledger: everyone
    who could read the file first opened may read it (a rotation keeps its mode), or everyone
    who can read the ledger may (what is copied there is theirs to read already)."""
    real, st = new
    if all(r.reaches(real, st) for r in readers(*first)):
        return True
    if ledger is None:
        return False
    try:
        at = ledger.resolve()
        return all(r.reaches(real, st) for r in readers(at, os.stat(at)))
    except OSError:
        return False


class FileFollower:
    """A log file followed like ``tail -F`` (module docstring).  ``on_note(text)`` hears of a
    rotation, a truncation, a file that is not there yet, or one that is not followed.
    ``ledger`` is the ledger's file (None: a database server), whose readers a file that takes
    the log's name may be read for."""

    def __init__(self, path: str, on_note: Callable[[str], None] | None = None, poll: float = POLL_S,
                 ledger: Path | None = None):
        self.path, self.poll, self.ledger = path, poll, ledger
        self.on_note = on_note or (lambda _text: None)
        self._f: Any = None
        self._id: tuple[int, int] | None = None
        self._first: tuple[Path, os.stat_result] | None = None  # the file first opened, and its stat
        self._refused: tuple[int, int] | None = None  # the file at the name that was not followed
        self.pos = 0
        self.lines = _Lines()
        self.caught_up = False
        self._waiting_said = False

    def _open(self) -> bool:
        try:
            f = open(self.path, "rb")  # noqa: SIM115 (kept open while it is followed)
        except FileNotFoundError:
            if not self._waiting_said:
                self._waiting_said = True
                self.on_note(f"{self.path}: does not exist yet; waiting for it")
            return False
        except OSError as exc:
            from ..errors import LedgerError

            raise LedgerError(f"{self.path}: cannot be read ({exc.strerror or exc})") from None
        st = os.fstat(f.fileno())
        if self._first is None:
            self._first = (_real(f.fileno(), self.path), st)
        self._f, self._id, self.pos = f, (st.st_dev, st.st_ino), 0
        return True

    def _may_take(self, ident: tuple[int, int]) -> Any:
        """The file that now has the log's name, opened, if it may be followed (``may_follow``,
        judged on the opened descriptor, not the name); else None, said once per file."""
        if ident == self._refused:
            return None
        try:
            f = open(self.path, "rb")  # noqa: SIM115 (kept open while it is followed)
        except OSError:
            return None  # gone again, or not ours to open: the next look decides
        st = os.fstat(f.fileno())
        real = _real(f.fileno(), self.path)
        assert self._first is not None
        if may_follow(self._first, (real, st), self.ledger):
            return f
        f.close()
        self._refused = (st.st_dev, st.st_ino)
        self.on_note(f"{self.path}: now names {real}, which some who may read {self._first[0]} or the ledger "
                     "may not: not followed; still reading the file first opened")
        return None

    def read(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while True:
            if self._f is None and not self._open():
                self.caught_up = True  # nothing there to catch up with
                if time.monotonic() >= deadline:
                    return b""
                time.sleep(self.poll)
                continue
            assert self._f is not None
            data = self._f.read(BLOCK)
            if data:
                self.pos += len(data)
                lines = self.lines.take(data)
                if lines:
                    return lines
                continue
            moved = self._moved()
            if moved is not None:
                return moved
            self.caught_up = True
            if time.monotonic() >= deadline:
                return b""
            time.sleep(self.poll)

    def _moved(self) -> bytes | None:
        """At the end of the file: whether it was rotated or truncated (then what is left of its
        last line, finished, and the file is read anew); None if it is where it was."""
        assert self._f is not None
        try:
            st: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            st = None  # renamed away, the new one not created yet: the old one may still grow
        if st is not None and (st.st_dev, st.st_ino) != self._id:
            data = self._f.read(BLOCK)  # the last lines written before the rename
            if data:
                self.pos += len(data)
                return self.lines.take(data)
            new = self._may_take((st.st_dev, st.st_ino))
            if new is None:
                return None  # not followed: the file first opened is read on
            self._f.close()
            nst = os.fstat(new.fileno())
            self._f, self._id, self.pos, self._refused = new, (nst.st_dev, nst.st_ino), 0, None
            self.on_note(f"{self.path}: rotated; reading the new file from its start")
            return self.lines.rest()
        if st is not None and st.st_size < self.pos:
            assert self._f is not None
            self._f.seek(0)
            self.pos = 0
            self.on_note(f"{self.path}: truncated; reading it again from its start")
            return self.lines.rest()
        return None

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


class StreamFollower:
    """Standard input (or any readable file descriptor): ends at end of file."""

    def __init__(self, fd: int = 0):
        self.fd = fd
        self.lines = _Lines()
        self.caught_up = False
        self.ended = False

    def read(self, timeout: float) -> bytes | None:
        if self.ended:
            return None
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                self.caught_up = True  # a pause: what was waiting in the pipe has been read
                return b""
            data = os.read(self.fd, READ)
            if not data:
                self.ended = True
                rest = self.lines.rest()
                return rest or None
            if len(data) < READ:
                self.caught_up = True  # the pipe is drained: what waited in it has been read
            lines = self.lines.take(data)
            if lines:
                return lines

    def close(self) -> None:
        pass


class CommandFollower:
    """A command's output and errors (a container's or unit's log, followed).  When the command
    ends (a container stopped, ``podman logs`` lost it) it is started again after ``restart_s``;
    the lines it prints again — those logs are printed from their start — are skipped, so the
    stream goes on where it was."""

    def __init__(self, argv: list[str], on_note: Callable[[str], None] | None = None, restart_s: float = 1.0,
                 transform: Callable[[list[bytes]], Iterable[bytes]] | None = None):
        self.argv, self.restart_s = argv, restart_s
        # the command's lines as log lines (a unit's journal entries, JSON, as text lines)
        self.transform = transform
        self.on_note = on_note or (lambda _text: None)
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines = _Lines()
        self.caught_up = False
        self.seen = 0  # lines handed out so far
        self._skip = 0  # lines of a restarted command that were read before
        self._down_since: float | None = None

    def _start(self) -> None:
        from ..errors import LedgerError

        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT)
        except OSError as exc:
            raise LedgerError(f"{self.argv[0]}: cannot be run ({exc.strerror or exc})") from None

    def read(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is None:
                if self._down_since is not None and time.monotonic() - self._down_since < self.restart_s:
                    time.sleep(min(self.poll_left(deadline), self.restart_s))
                    if time.monotonic() >= deadline:
                        return b""
                    continue
                self._start()
                self._skip, self._down_since = self.seen, None
            assert self.proc is not None and self.proc.stdout is not None
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                self.caught_up = True
                return b""
            data = os.read(self.proc.stdout.fileno(), READ)
            if len(data) < READ:
                self.caught_up = True
            if not data:
                code = self.proc.wait()
                self.proc = None
                self._down_since = time.monotonic()
                self.on_note(f"{' '.join(self.argv)}: ended (exit {code}); starting it again")
                rest = self._count(self.lines.rest())
                if rest:
                    return rest
                continue
            lines = self._count(self.lines.take(data))
            if lines:
                return lines

    @staticmethod
    def poll_left(deadline: float) -> float:
        return max(0.01, deadline - time.monotonic())

    def _count(self, lines: bytes) -> bytes:
        """Drop the lines a restarted command printed again; count the rest."""
        if not lines:
            return lines
        if self.transform is not None:
            lines = b"".join(self.transform(lines.splitlines(keepends=True)))
        if self._skip:
            parts = lines.split(b"\n")[:-1]
            dropped = min(self._skip, len(parts))
            self._skip -= dropped
            parts = parts[dropped:]
            lines = b"".join(p + b"\n" for p in parts)
        self.seen += lines.count(b"\n")
        return lines

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
