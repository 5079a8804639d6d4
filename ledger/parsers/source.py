"""Reading log bytes: plain files, .gz, .zst and stdin, in large blocks cut at line ends.

Decoding is lenient (invalid UTF-8 becomes U+FFFD) so a damaged file still yields every intact
line.  Nothing here knows about vLLM; ``blocks()`` only hands out text that ends at a newline,
without NULs (a hole of NULs in a log is no text; the sha256 and size are the input's own).
Also here: what is not log in a log file (a binary file; an excerpt's leading header).
"""

from __future__ import annotations

import hashlib
import io
import os
import queue
import stat
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

BLOCK_SIZE = 8 * 1024 * 1024
# a line is kept up to this long (the longest vLLM line, an engine config dump, is a few KiB);
# past it only its start is read (``Source.long_lines`` counts such lines)
MAX_LINE = 1024 * 1024
_HASH_QUEUE = 3  # blocks waiting for the hashing thread (bounds memory)
_GZIP_MAGIC = b"\x1f\x8b"
_COMPRESSED_READ = 1 << 16  # compressed bytes read at a time
# compressed bytes fed to zstd at a time: its densest block (RLE) is 4 bytes for 128 KiB, so a
# piece is at most 8 MiB out
_ZSTD_PIECE = 256
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _compression(head: bytes) -> str | None:
    """"gzip", "zstd" or None, from a file's first bytes."""
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    if head.startswith(_ZSTD_MAGIC):
        return "zstd"
    return None


class SourceError(Exception):
    """A log that cannot be read; the message names the file and what is wrong."""


@dataclass
class Source:
    """One input: where it came from, and (after reading) its sha256 and size."""

    path: str
    name: str | None = None  # how to print and store it instead of its path (a temporary copy of a container's log)
    sha256: str = ""
    size: int = 0  # bytes of log text read (decompressed)
    consumed: int = 0  # bytes of the input itself read (compressed, for .gz/.zst): what a percent of its size counts
    long_lines: int = 0  # lines longer than MAX_LINE, read only up to it
    warnings: list[str] = field(default_factory=list)  # said once the input is read (trailing garbage)
    _hasher: hashlib._Hash = field(default_factory=hashlib.sha256, repr=False)

    @property
    def plain_file(self) -> bool:
        """A regular, uncompressed file: external tools (grep) can read it directly."""
        if self.path == "-" or not os.path.isfile(self.path):
            return False
        try:
            with open(self.path, "rb") as f:
                return _compression(f.read(4)) is None
        except OSError:
            return False

    @property
    def display(self) -> str:
        """The input's name as it is printed and stored (``printable``)."""
        if self.name is not None:
            return printable(self.name)
        return "<stdin>" if self.path == "-" else printable(self.path)

    def blocks(self, block_size: int = BLOCK_SIZE) -> Iterator[bytes]:
        """Yield byte blocks, each ending with a newline (except maybe the last).

        From a pipe (stdin) it yields what has arrived, so a followed log is read as it grows."""
        raw = self._open()
        # a damaged gzip or zstd stream too (zstandard is loaded, by _open, only for zstd input)
        damaged: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error, *_zstd_errors())
        position = self._position(raw)
        read = getattr(raw, "read1", None) if self.path == "-" else None
        read = read or raw.read
        # sha256 runs in a thread: hashlib lets go of the GIL on large buffers, so the hash
        # costs the second core, not the scan's time
        pending: queue.Queue[bytes | None] = queue.Queue(_HASH_QUEUE)
        hasher = threading.Thread(target=self._hash, args=(pending,), daemon=True)
        hasher.start()
        carry = b""
        skipping = False  # within the rest of an over-long line
        # a plain file is read again from the last line end, so a block costs one slice instead
        # of being glued to the previous block's tail (two more copies of every byte)
        seek = isinstance(raw, io.BufferedReader) and self.path != "-"
        try:
            while True:
                chunk = read(block_size)
                if not chunk:
                    break
                if seek and not carry and not skipping:
                    cut = chunk.rfind(b"\n")
                    if cut >= 0:
                        if cut < len(chunk) - 1 and len(chunk) == block_size:
                            raw.seek(cut + 1 - len(chunk), 1)
                            chunk = chunk[: cut + 1]
                        pending.put(chunk)
                        self.size += len(chunk)
                        self.consumed = position()
                        if b"\0" in chunk:  # memchr: the one look at every byte this costs
                            chunk = drop_nuls(chunk)
                        if chunk:
                            yield chunk
                        continue
                pending.put(chunk)
                self.size += len(chunk)
                self.consumed = position()
                if b"\0" in chunk:
                    # a hole of NULs (logrotate's copytruncate, a crash-zeroed tail) holds no line:
                    # it is dropped before lines are cut, so the line after it is read whole
                    chunk = drop_nuls(chunk)
                    if not chunk:
                        continue
                if skipping:
                    cut = chunk.find(b"\n")
                    if cut < 0:
                        continue
                    skipping = False
                    chunk = chunk[cut + 1 :]
                    if not chunk:
                        continue
                if carry:
                    chunk = carry + chunk
                cut = chunk.rfind(b"\n")
                if cut < 0:
                    if len(chunk) > MAX_LINE:
                        # no vLLM record is this long: keep its start as a line, drop the rest
                        # up to the next newline, so time stays linear and memory flat
                        yield line_start(chunk)
                        self.long_lines += 1
                        carry, skipping = b"", True
                        continue
                    carry = chunk
                    continue
                if cut == len(chunk) - 1:
                    carry = b""
                    yield chunk
                else:
                    carry = chunk[cut + 1 :]
                    yield chunk[: cut + 1]
            if carry:
                yield carry
        except damaged as exc:
            raise SourceError(f"{self.display}: cannot read: {exc}") from None
        finally:
            pending.put(None)
            hasher.join()
            self.sha256 = self._hasher.hexdigest()
            if raw is not sys.stdin.buffer:
                raw.close()

    def _position(self, raw: BinaryIO) -> Callable[[], int]:
        """How far into the input itself reading has got: the compressed file's offset under a
        .gz or .zst reader, else the bytes handed out (a pipe cannot tell)."""
        inner = self._compressed
        if inner is not None and inner is not sys.stdin.buffer:
            def offset() -> int:
                try:
                    return inner.tell()
                except (OSError, ValueError):
                    return self.size
            return offset
        if inner is None and self.path != "-" and isinstance(raw, io.BufferedReader):
            return raw.tell
        return lambda: self.size

    def _hash(self, pending: queue.Queue[bytes | None]) -> None:
        while (chunk := pending.get()) is not None:
            self._hasher.update(chunk)

    def _open(self) -> BinaryIO:
        self._compressed: BinaryIO | None = None
        if self.path == "-":
            # compressed input is recognised by its magic bytes, on a pipe too
            stdin = sys.stdin.buffer
            head = stdin.peek(4)[:4] if hasattr(stdin, "peek") else b""
            return self._decompressed(stdin, _compression(head), "<stdin>")
        path, shown = self.path, self.display
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise SourceError(f"{shown}: no such file") from None
        except OSError as exc:
            raise SourceError(f"{shown}: cannot read: {exc.strerror}") from None
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(f"{shown}: is a directory, not a log file")
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            # /dev/zero, /dev/urandom, a disk: endless or not a log (a named pipe is read, and
            # so is stdin: "-")
            raise SourceError(f"{shown}: is a device, not a log file")
        try:
            f = open(path, "rb")
        except PermissionError:
            raise SourceError(f"{shown}: permission denied") from None
        except OSError as exc:
            raise SourceError(f"{shown}: cannot read: {exc.strerror}") from None
        return self._decompressed(f, _compression(f.peek(4)[:4] if hasattr(f, "peek") else b""), shown)

    def _decompressed(self, f: BinaryIO, kind: str | None, name: str) -> BinaryIO:
        """``f`` itself, or a reader that decompresses it member by member (``kind``: "gzip",
        "zstd" or None; ``_Members``)."""
        if kind is None:
            return f
        self._compressed = f
        closefd = f is not sys.stdin.buffer
        if kind == "gzip":
            return cast(BinaryIO, _Members(f, "gzip", lambda: zlib.decompressobj(wbits=31), _GZIP_MAGIC,
                                           self.warnings, closefd))
        try:
            import zstandard
        except ImportError:  # pragma: no cover - zstandard is a dependency
            f.close()
            raise SourceError(f"{name}: is zstd-compressed; install 'zstandard'") from None
        return cast(BinaryIO, _Members(f, "zstd", lambda: zstandard.ZstdDecompressor().decompressobj(), _ZSTD_MAGIC,
                                       self.warnings, closefd))


class _Members(io.RawIOBase):
    """A gzip or zstd file decompressed member by member (frame by frame), the way ``gzip -d``
    and ``zstd -d`` read it: members one after the other; input that ends inside a member is an
    error (EOFError: a truncated file is refused, not stored as a shorter log); bytes after the
    last whole member that do not start another are trailing garbage: a warning, and what
    decoded is kept.  (Python's GzipFile refuses trailing garbage outright, and zstandard's
    stream reader ends quietly inside a truncated frame.)"""

    def __init__(self, raw: BinaryIO, kind: str, member: Callable[[], Any], magic: bytes, warnings: list[str],
                 closefd: bool = True):
        self.raw, self.kind, self.member, self.magic, self.warnings = raw, kind, member, magic, warnings
        self.closefd = closefd  # stdin is left open
        # what has arrived (a pipe: a followed log is decompressed as it grows), else a read
        self._read_some: Callable[[int], bytes] = getattr(raw, "read1", None) or raw.read
        self.dec = member()
        self.started = False  # the current member has had input
        self.done = False
        self._input = memoryview(b"")  # compressed bytes read and not yet fed
        self._spill = memoryview(b"")  # decompressed bytes past what the last read() asked for

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """At most ``size`` decompressed bytes (64 KiB when no size is given): the output is
        bounded, not the input, so a bomb (2 MB of gzip that is 2 GiB of NULs) is read a block
        at a time like the plain file it stands for."""
        want = size if size > 0 else 1 << 16
        out, have = [], 0
        if self._spill:
            out.append(bytes(self._spill[:want]))
            self._spill = self._spill[want:]
            have = len(out[0])
        while have < want and not self.done:
            if not self._input:
                data = self._read_some(_COMPRESSED_READ)
                if not data:
                    if self.started and not self.dec.eof:
                        raise EOFError(f"{self.kind} stream ends inside a member: the file is truncated")
                    self.done = True
                    break
                self._input = memoryview(data)
            piece = self._feed(want - have)
            if len(piece) > want - have:  # zstd's output is bounded by what is fed, not asked
                self._spill = memoryview(piece)[want - have:]
                piece = piece[: want - have]
            if piece:
                out.append(piece)
                have += len(piece)
            if have and not self._input:  # what has arrived is out: a followed pipe is not waited on
                break
        return b"".join(out)

    def readinto(self, b: Any) -> int:  # pragma: no cover - io.RawIOBase's protocol; read() is used
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def _feed(self, limit: int) -> bytes:
        """Feed the decompressor from the input read so far: at most ``limit`` bytes out for
        gzip (zlib's max_length), at most ``_ZSTD_PIECE`` bytes in for zstd (whose
        decompressobj has no output limit: a piece is at most 8 MiB out)."""
        data = self._input
        if not self.started:  # a member begins here, or what follows the last one
            if len(data) < len(self.magic):
                data = memoryview(bytes(data) + self.raw.read(len(self.magic) - len(data)))
            if bytes(data[: len(self.magic)]) != self.magic:
                if bytes(data).strip(b"\x00") or self.raw.read(1 << 16).strip(b"\x00"):
                    self.warnings.append(f"decompression OK, trailing garbage ignored ({self.kind})")
                self.done = True  # zero padding after the last member is no news
                self._input = memoryview(b"")
                return b""
            self.started = True
        try:
            if self.kind == "gzip":
                out: bytes = self.dec.decompress(data, limit)
                rest = self.dec.unused_data if self.dec.eof else self.dec.unconsumed_tail
            else:
                out = self.dec.decompress(data[:_ZSTD_PIECE])
                rest = (self.dec.unused_data + bytes(data[_ZSTD_PIECE:])) if self.dec.eof else data[_ZSTD_PIECE:]
        except zlib.error:
            raise
        except Exception as exc:  # zstandard's ZstdError: said as its stream reader says it
            detail = str(exc).removeprefix("zstd decompressor error: ")
            raise OSError(f"{self.kind} decompress error: {detail}") from None
        self._input = memoryview(rest)
        if self.dec.eof:  # the next member (frame) starts in what is left
            self.dec, self.started = self.member(), False
        return out

    def close(self) -> None:
        if self.closefd:
            self.raw.close()
        super().close()


def drop_nuls(data: bytes) -> bytes:
    """``data`` without its NULs.  A few go with ``replace``; a hole (megabytes of them: bytes'
    replace and translate cost a tenth of a second per MiB of NULs) with one numpy mask."""
    if data.count(b"\0") < 4096:
        return data.replace(b"\0", b"")
    import numpy

    array = numpy.frombuffer(data, dtype=numpy.uint8)
    return bytes(array[array != 0].tobytes())


def line_start(data: bytes) -> bytes:
    """The first ``MAX_LINE`` bytes of an over-long line, cut at a space (a figure is never cut
    in two: "9.7" of "9.74" would be read), with a newline."""
    head = data[:MAX_LINE]
    space = head.rfind(b" ")
    return (head[:space] if space > 0 else head) + b"\n"


def full_temp_folder() -> str | None:
    """The temporary folder (``$TMPDIR``) if it is (nearly) full, else None: what to name when
    a write failed for want of space (the scan's spool and the runtime samples' staging live
    there, not next to the ledger)."""
    import shutil
    import tempfile

    folder = tempfile.gettempdir()
    try:
        return folder if shutil.disk_usage(folder).free < 4 * 1024 * 1024 else None
    except OSError:
        return None


def printable(path: str) -> str:
    """A file name as text that can be printed and stored: a name that is not UTF-8 (Python
    holds its bytes as surrogates) shows them as ``\\xff`` escapes instead of failing to encode."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def _zstd_errors() -> tuple[type[Exception], ...]:
    """zstandard's error for a damaged stream (not an OSError), once zstandard is in use."""
    zstandard = sys.modules.get("zstandard")
    return (zstandard.ZstdError,) if zstandard is not None else ()


def excerpt_header_end(first_block: str) -> int:
    """Lines of a leading excerpt header: '# key: value' lines closed by a '# ---' line.

    The real fixtures carry one (where the excerpt came from); it is documentation, not log,
    so no rule may read a figure out of it.
    """
    if not first_block.startswith("# "):
        return 0
    for n, raw in enumerate(first_block.split("\n", 200)[:200], start=1):
        text = raw.rstrip("\r")
        if text == "# ---":
            return n
        if not text.startswith("#"):
            return 0
    return 0


def looks_binary(sample: str) -> bool:
    """True when a decoded sample is mostly not text (control bytes, replacement chars).  NULs
    do not count: a run of them is a hole in a text file (``blocks`` drops them), not binary."""
    sample = sample.replace("\0", "")
    if not sample:
        return False
    bad = sum(1 for ch in sample if (ch < " " and ch not in "\t\n\r\x1b\x0c") or ch == "\ufffd")
    return bad > max(8, len(sample) // 10)
