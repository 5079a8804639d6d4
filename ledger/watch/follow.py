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

Every follower is bounded, in memory and in time, whatever the bytes: NULs are dropped as the
ingest drops them (a hole of them is no text; a sparse file's holes are skipped unread with
``SEEK_DATA``), a line with no end in sight is kept up to ``MAX_LINE`` (its start, as the ingest
keeps it) and the rest skipped to its newline, and ``read`` returns by its timeout even while it
reads a long run of bytes without a line — so Ctrl-C and SIGTERM are heard within it.  A named
pipe is opened without waiting for a writer (a blocking open cannot be interrupted) and read
as it is written, across writers; a device is refused.

The file followed is the one opened (its descriptor), never the name looked up again: a file
that takes the log's name (a rotation, or a symlink swapped in) is opened, judged on that
descriptor, and followed only when everyone who could read the file first opened — or everyone
who can read the ledger — may read it too (``may_follow``); otherwise that is said once and the
file first opened is read on.  A watch run as root thus never copies a root-only file put in
place of a world-readable log into a world-readable ledger.
"""

from __future__ import annotations

import errno
import hashlib
import os
import select
import stat
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.parsers.source import MAX_LINE, drop_nuls, line_start

BLOCK = 8 * 1024 * 1024  # read at most this much at a time (a large file's catch-up)
POLL_S = 0.05  # how often a file at its end is looked at again
READ = 1 << 20  # a pipe is read this much at a time; a shorter read means it was drained


class _Lines:
    """Bytes in, whole lines out: the part after the last newline waits for the rest.  NULs are
    dropped, and a line longer than ``MAX_LINE`` without its end is handed out as its start (cut
    at a space) and the rest skipped up to its newline — as ``parsers.source`` reads a file — so
    what waits here is bounded whatever the bytes."""

    def __init__(self) -> None:
        self.partial = b""
        self.skipping = False  # within the rest of an over-long line
        self.long_lines = 0

    def take(self, data: bytes) -> bytes:
        if b"\0" in data:
            data = drop_nuls(data)
        if self.skipping:
            cut = data.find(b"\n")
            if cut < 0:
                return b""
            self.skipping = False
            data = data[cut + 1:]
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        lines, rest = data[:cut], data[cut:]
        if len(rest) > MAX_LINE:
            lines += line_start(rest)
            rest, self.skipping = b"", True
            self.long_lines += 1
        self.partial = rest
        return lines

    def rest(self) -> bytes:
        """The unfinished last line, finished (the source ended or was replaced)."""
        rest, self.partial = self.partial, b""
        self.skipping = False
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
    the log's name may be read for.

    A truncation is told by the file's bytes, not by when it is looked at: the first
    ``CHECK`` bytes of the file and the last ``CHECK`` bytes before the read position are kept,
    and after every read both must still be what they were — a file truncated and written again
    past the old position between two looks (a server restarted with ``>``) has other bytes
    there, and is read again from its start.  ``new_run`` turns true at a truncation: what
    follows is the file as an ``ingest`` of it reads it, from its line 1 (the watch ends the
    boot being read there and numbers the lines anew)."""

    CHECK = 4096
    exact_catch_up = True  # caught_up: the file's end as it was found, not a pause

    def __init__(self, path: str, on_note: Callable[[str], None] | None = None, poll: float = POLL_S,
                 ledger: Path | None = None):
        self.path, self.poll, self.ledger = path, poll, ledger
        self.on_note = on_note or (lambda _text: None)
        self._first: tuple[Path, os.stat_result] | None = None  # the file first opened, and its stat
        self._refused: tuple[int, int] | None = None  # the file at the name that was not followed
        self._fd: int | None = None
        self._fifo = False
        self._id: tuple[int, int] | None = None
        self.pos = 0
        self._head = b""  # the file's first bytes (up to CHECK), as read
        self._tail = b""  # the bytes just before pos (up to CHECK), as read
        self.lines = _Lines()
        self.caught_up = False
        self.new_run = False
        self.down: str | None = None  # a file that is not there is waited for, not down
        self._waiting_said = False

    def _open(self) -> bool:
        from ..errors import LedgerError

        try:
            # never blocks: a named pipe with no writer yet is opened at once (a blocking open
            # cannot be interrupted: Ctrl-C and SIGTERM would wait for a writer)
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            if not self._waiting_said:
                self._waiting_said = True
                self.on_note(f"{self.path}: does not exist yet; waiting for it")
            return False
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot be read ({exc.strerror or exc})") from None
        st = os.fstat(fd)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            os.close(fd)
            raise LedgerError(f"{self.path}: is a device, not a log file")
        if stat.S_ISDIR(st.st_mode):
            os.close(fd)
            raise LedgerError(f"{self.path}: is a folder, not a log file")
        if self._first is None:
            self._first = (_real(fd, self.path), st)
        self._take(fd, st)
        return True

    def _take(self, fd: int, st: os.stat_result) -> None:
        """Follow the open file ``fd`` from its start."""
        self._fd, self._fifo = fd, stat.S_ISFIFO(st.st_mode)
        self._id = (st.st_dev, st.st_ino)
        self._rewind()

    def _may_take(self, ident: tuple[int, int]) -> tuple[int, os.stat_result] | None:
        """The file that now has the log's name, opened, if it may be followed (``may_follow``,
        judged on the opened descriptor, not the name); else None, said once per file."""
        if ident == self._refused:
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None  # gone again, or not ours to open: the next look decides
        st = os.fstat(fd)
        real = _real(fd, self.path)
        assert self._first is not None
        if may_follow(self._first, (real, st), self.ledger) and (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            return fd, st
        os.close(fd)
        self._refused = (st.st_dev, st.st_ino)
        self.on_note(f"{self.path}: now names {real}, which some who may read {self._first[0]} or the ledger "
                     "may not: not followed; still reading the file first opened")
        return None

    def _rewind(self) -> None:
        """Read the open file from its start (past a hole there)."""
        assert self._fd is not None
        self.pos, self._head, self._tail = 0, b"", b""
        if not self._fifo:
            os.lseek(self._fd, 0, os.SEEK_SET)
        self._skip_hole()

    def _read(self) -> bytes | None:
        """The next block at ``pos`` (b"": nothing there now; None: the file is not the one
        read so far — truncated and written again — and is now read from its start)."""
        assert self._fd is not None
        at, tail = self.pos, self._tail
        try:
            data = os.read(self._fd, BLOCK)
        except BlockingIOError:
            return b""  # a pipe whose writer has written nothing yet
        if self._fifo or not data:
            return data
        if not self._same(at, tail):
            self._truncated()
            return None
        self.pos += len(data)
        if len(self._head) < self.CHECK and at == len(self._head):
            self._head += data[: self.CHECK - at]
        self._tail = (tail + data[-self.CHECK:])[-self.CHECK:]
        if data[-1] == 0:
            self._skip_hole()
        return data

    def _same(self, at: int, tail: bytes) -> bool:
        """Whether the file still holds, at its start and just before ``at``, the bytes read
        there before (looked at after the read: the block read is of the file so checked)."""
        assert self._fd is not None
        if self._head and os.pread(self._fd, len(self._head), 0) != self._head:
            return False
        return not tail or os.pread(self._fd, len(tail), at - len(tail)) == tail

    def _truncated(self) -> None:
        self.on_note(f"{self.path}: truncated; reading it again from its start")
        self.new_run = True
        self._rewind()

    def _skip_hole(self) -> None:
        """Past a sparse file's hole at ``pos`` without reading it (its NULs would be dropped)."""
        if self._fifo or not hasattr(os, "SEEK_DATA"):
            return
        assert self._fd is not None
        try:
            data_at = os.lseek(self._fd, self.pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                return  # the file system cannot tell: the hole is read, its NULs dropped
            data_at = os.fstat(self._fd).st_size  # only a hole from here to the end
        if data_at > self.pos:
            self.pos = os.lseek(self._fd, data_at, os.SEEK_SET)
            self._tail = b""  # NULs before pos: nothing to hold the file to there
        else:
            os.lseek(self._fd, self.pos, os.SEEK_SET)

    def read(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while True:
            if self._fd is None and not self._open():
                self.caught_up = True  # nothing there to catch up with
                if time.monotonic() >= deadline:
                    return b""
                time.sleep(self.poll)
                continue
            data = self._read()
            if data is None:
                return self.lines.rest()  # the old file's last line, finished; then the new run
            if data:
                lines = self.lines.take(data)
                if lines:
                    return lines
                if time.monotonic() >= deadline:
                    return b""  # a long run without a line (NULs, one huge line): the caller looks up
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
        assert self._fd is not None
        try:
            st: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            st = None  # renamed away, the new one not created yet: the old one may still grow
        if st is not None and (st.st_dev, st.st_ino) != self._id:
            data = self._read()  # the last lines written before the rename
            if data:
                return self.lines.take(data)
            new = self._may_take((st.st_dev, st.st_ino))
            if new is None:
                return None  # not followed: the file first opened is read on
            self.close()
            self._take(*new)
            self._refused = None
            self.on_note(f"{self.path}: rotated; reading the new file from its start")
            return self.lines.rest()
        if not self._fifo and os.fstat(self._fd).st_size < self.pos:
            self._truncated()
            return self.lines.rest()
        return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class StreamFollower:
    """Standard input (or any readable file descriptor): ends at end of file."""

    def __init__(self, fd: int = 0):
        self.fd = fd
        self.lines = _Lines()
        self.caught_up = False
        self.new_run = False
        self.down: str | None = None
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
            if time.monotonic() >= deadline:
                return b""  # a long run without a line: the caller looks up (a stop, a batch)

    def close(self) -> None:
        pass


RESTART_MAX_S = 30.0  # the longest wait between two looks at a source that is down (backing off)
STEADY_S = 10.0  # a command that ran this long was not failing: the back-off starts again at its first wait


class CommandFollower:
    """A command's output and errors (a container's or unit's log, followed).  When the command
    ends (a container stopped, ``podman logs`` lost it) it is started again — at once the first
    time, then after ``restart_s``, doubled each time up to ``RESTART_MAX_S`` while it keeps
    ending (said once per streak, not at every try); the lines it prints again — those logs are
    printed from their start — are skipped, so the stream goes on where it was.

    ``down`` is why the source is not there (None while it is): a subclass that can look
    (``ContainerFollower``) sets it, and the watch raises one alert when it turns up and one when
    it goes."""

    def __init__(self, argv: list[str], on_note: Callable[[str], None] | None = None, restart_s: float = 1.0,
                 transform: Callable[[list[bytes]], Iterable[bytes]] | None = None):
        self.argv, self.restart_s = argv, restart_s
        # the command's lines as log lines (a unit's journal entries, JSON, as text lines)
        self.transform = transform
        self.on_note = on_note or (lambda _text: None)
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines = _Lines()
        self.caught_up = False
        self.new_run = False
        self.down: str | None = None
        self.seen = 0  # lines handed out so far
        self._skip = 0  # lines of a restarted command that were read before
        self._handed = hashlib.blake2b(digest_size=16)  # every line handed out so far
        self._skipped = hashlib.blake2b(digest_size=16)  # the lines a restarted command printed again
        self._expect = b""  # what those must be: the digest of the lines handed out before it started
        self._next = 0.0  # when to look again (time.monotonic) while the command is not running
        self._wait = 0.0  # the back-off: the next wait after this one fails too
        self._started = 0.0
        self._streak_said = False
        self._force = False  # start the command at the next read without looking first

    def _start(self) -> None:
        from ..errors import LedgerError

        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT)
        except OSError as exc:
            raise LedgerError(f"{self.argv[0]}: cannot be run ({exc.strerror or exc})") from None
        self._started = time.monotonic()

    def _back_off(self) -> None:
        """Look again after the current wait; the wait doubles (up to ``RESTART_MAX_S``)."""
        self._next = time.monotonic() + self._wait
        self._wait = min(RESTART_MAX_S, max(self.restart_s, self._wait * 2))

    def _may_start(self) -> bool:
        """Whether the command may be started now (a subclass looks at the source first)."""
        return True

    def _ended(self, code: int) -> None:
        """The command ended (exit ``code``): when to start it again."""
        if time.monotonic() - self._started >= STEADY_S:
            self._wait, self._streak_said = 0.0, False  # it ran: not a streak of failures
        if not self._streak_said:
            self._streak_said = True
            self.on_note(f"{' '.join(self.argv)}: ended (exit {code}); starting it again "
                         f"(backing off to one try every {RESTART_MAX_S:g} s while it keeps ending)")
        self._back_off()

    def read(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is None:
                now = time.monotonic()
                if now < self._next:
                    if now >= deadline:
                        return b""
                    time.sleep(min(self._next, deadline) - now)
                    continue
                if not self._force and not self._may_start():
                    self.caught_up = True
                    continue  # _may_start set when to look again
                if self.new_run:
                    self._force = True  # started at the next read, without another look
                    return b""  # the watch starts its new run before the new lines come
                self._force = False
                self._start()
                self._skip, self._expect = self.seen, self._handed.digest()
                self._skipped = hashlib.blake2b(digest_size=16)
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
                rest = self._count(self._unfinished(self.lines.rest()))
                self._ended(code)
                if rest or self.new_run:
                    return rest
                continue
            lines = self._count(self.lines.take(data))
            if lines or self.new_run:
                return lines
            if time.monotonic() >= deadline:
                return b""  # a long run without a line: the caller looks up (a stop, a batch)

    def _unfinished(self, rest: bytes) -> bytes:
        """What to make of the command's last line when it ended without its newline: the line."""
        return rest

    def _count(self, lines: bytes) -> bytes:
        """Drop the lines a restarted command printed again — checked to be the very lines
        handed out before (a digest of each), else the source is read again from its start as a
        new run (``_diverged``); count the rest."""
        if not lines:
            return lines
        if self.transform is not None:
            lines = b"".join(self.transform(lines.splitlines(keepends=True)))
        if self._skip:
            parts = lines.split(b"\n")[:-1]
            dropped = min(self._skip, len(parts))
            self._skip -= dropped
            self._skipped.update(b"".join(p + b"\n" for p in parts[:dropped]))
            if not self._skip and self._skipped.digest() != self._expect:
                self._diverged()
                return b""
            lines = b"".join(p + b"\n" for p in parts[dropped:])
        self._handed.update(lines)
        self.seen += lines.count(b"\n")
        return lines

    def _diverged(self) -> None:
        """A restarted command printed other lines than the ones handed out (``podman logs
        --follow`` of a container that stops under load drops lines and prints pieces of others):
        what was read is not the log.  Read it again, from its start, as a new run."""
        self.on_note(f"{' '.join(self.argv)}: printed other lines than the ones read before; reading the log "
                     f"again from its start")
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        self.seen = self._skip = 0
        self._handed = hashlib.blake2b(digest_size=16)
        self.lines = _Lines()
        self.new_run = True
        self._force = True
        self._next = time.monotonic() + self.restart_s  # the runtime may still be writing it down

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


class ContainerFollower(CommandFollower):
    """A container's log, followed by the container's name across containers.  When ``logs
    --follow`` ends, the name is looked up again (``find()``: ``ledger.origins``'s inspect):

    * the same container, running: its log is read on (the lines read before skipped);
    * the same container, stopped, or none of that name (removed): ``down`` says why, said once
      on stderr, and the name is looked up again after 1 s, 2 s, 4 s … up to every 30 s;
    * another container of that name (``podman rm -f`` then ``podman run --name`` again: a
      redeploy): ``origin`` becomes it and ``new_run`` turns true — the watch ends the boot being
      read and reads the new container, from its first line, as a source of its own."""

    def __init__(self, origin: Any, find: Callable[[], Any], on_note: Callable[[str], None] | None = None,
                 restart_s: float = 1.0):
        super().__init__(origin.argv(follow=True), on_note, restart_s, transform=origin.text_lines)
        self.origin, self.find = origin, find
        self._looked = False
        self._read_through: str | None = None  # the stopped run (its start) being read to its end
        self._read_to: int | None = None  # the lines seen when that run's log was last read
        self._short = 0  # reads of that run's whole log that were shorter than what was read of it

    def _ended(self, code: int) -> None:
        if time.monotonic() - self._started >= STEADY_S:
            self._wait = 0.0  # it ran: the first look is at once again
        self._back_off()  # the first look at once, then 1 s, 2 s … while the command keeps ending

    def _diverged(self) -> None:
        super()._diverged()
        self._read_to, self._short = None, 0  # the new run's log is read to its end, as any

    def _unfinished(self, rest: bytes) -> bytes:
        # cut where the runtime had not written the rest yet (a record of a line still partial):
        # the next ``logs`` prints it whole
        return b""

    def _start(self) -> None:
        # a stopped container's log is printed whole and to its end by ``logs`` without
        # ``--follow`` (podman 4.3's ``logs --follow`` of a container that stopped, or that stops
        # while followed, may end early, drop lines and print pieces of lines as lines)
        self.argv = self.origin.argv(follow=self.origin.running)
        super()._start()

    def _may_start(self) -> bool:
        if not self._looked:
            self._looked = True  # at the start: just inspected by the caller
            return True
        return self._look()

    def _look(self) -> bool:
        """Inspect the name: whether to start ``logs --follow`` now (else ``down`` says why and
        when to look again is set)."""
        from ..errors import LedgerError

        try:
            found = self.find()
        except LedgerError:
            return self._is_down(f"container {self.origin.name} was removed")
        if found.ident != self.origin.ident:
            was = self.origin
            self.origin, self.argv, self.transform = found, found.argv(follow=True), found.text_lines
            self.seen = self._skip = 0
            self._handed = hashlib.blake2b(digest_size=16)
            self.lines = _Lines()
            self.new_run = True
            self._up(f"container {found.name} is a new container ({found.ident[:12]}, was {was.ident[:12]}): "
                     f"reading it from its start")
            return True
        self.origin = found
        if not found.running:
            how = f"exit code {found.exit_code}" if found.exit_code is not None else "not running"
            status = found.facts.get("status") or "stopped"
            self._is_down(f"container {found.name} ({found.ident[:12]}) {status} ({how})")
            # a run that stopped is read again, a back-off step later (the runtime may still be
            # writing its last lines down), until a read finds nothing new: ``logs --follow`` may
            # end before the run's last lines, and a run between two looks is read so too
            run = found.facts.get("started_at", "")
            if run != self._read_through:
                self._read_through, self._read_to, self._short = run, None, 0
                return False
            if self._skip:
                # the whole log of the stopped container is shorter than what was read of it
                # (``logs --follow`` printed pieces of lines as lines): twice, and it is not the log
                self._short += 1
                if self._short >= 2:
                    self._diverged()
                return True
            again = self._read_to is None or self.seen > self._read_to
            self._read_to = self.seen
            return again
        if self.down is not None:
            self._up(f"container {found.name} ({found.ident[:12]}) runs again: reading on")
        return True

    def _is_down(self, why: str) -> bool:
        if self.down is None:
            self.on_note(f"{why}; looking for it again after {self.restart_s:g} s, then less and less often "
                         f"(every {RESTART_MAX_S:g} s at most)")
        self.down = why
        self._back_off()
        return False

    def _up(self, said: str) -> None:
        self.on_note(said)
        self.down = None
        self._next = self._wait = 0.0
