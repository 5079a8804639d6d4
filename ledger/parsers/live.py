"""A stream parsed as it arrives (``ledger watch``): ``LiveParse.feed`` takes whole lines a chunk
at a time and returns the boots they finished; ``peek`` gives the boot still being read as it
would be stored if the stream ended now.

The same scanner, runs, line model, rules and ``BootAssembler`` as a file's ``Parse`` — fed a
chunk at a time instead of a whole file, with line numbers and byte offsets carried over from
chunk to chunk — so a stream read live gives the boots an ``ingest`` of the same bytes gives
(the tests hold one to the other).  What differs from ``Parse``: nothing is forked (a stream is
read as it comes), the counted lines are counted here, and the stream is never refused as a
whole: ``is_vllm`` tells whether it has shown a vLLM line yet.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable

from .boots import Boot, BootAssembler
from .fast.options import DEFAULT, ScanOptions
from .fast.runs import gather_runs, line_hits
from .fast.scanner import Hit, scanner_for
from .items import Counts, End, Header, LineHit, RuntimeRun
from .lines import VLLM_LINE_SEARCH
from .pipeline import builtin_ruleset
from .rules import RuleSet, RuntimeSample
from .vllm import vllm_own_wording

_VLLM_LINE_BYTES = re.compile(VLLM_LINE_SEARCH.encode("utf-8"))
_HEADER_LINES = 200  # as source.excerpt_header_end: a header is closed within this many lines


def header_lines(head: bytes, final: bool = False) -> int | None:
    """The lines of a leading excerpt header ('# key: value' lines closed by '# ---') in the
    stream's first bytes: 0 for none, None while it cannot be told yet (more lines needed;
    ``final``: the stream ended, so what is there decides)."""
    if len(head) < 2 and not final:
        return None
    if not head.startswith(b"# "):
        return 0
    lines = head.split(b"\n")
    complete = lines if final else lines[:-1]
    for n, raw in enumerate(complete[:_HEADER_LINES], start=1):
        text = raw.rstrip(b"\r")
        if text == b"# ---":
            return n
        if not text.startswith(b"#"):
            return 0
    return 0 if final or len(complete) >= _HEADER_LINES else None


class LiveParse:
    """One stream's parse, a chunk of whole lines at a time.  ``runtime_sink(boot, samples)``
    receives the runtime samples as they are read (in line order)."""

    def __init__(self, rules: RuleSet | None = None, year: int | None = None,
                 runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None = None,
                 options: ScanOptions = DEFAULT):
        self.rules = rules or builtin_ruleset()
        self.options = options
        self.scanner = scanner_for(self.rules, options.engine)
        self.fixed_year = year
        # vLLM prints no year: without --year it is the current one, and (as for a file, whose
        # modification time bounds it) a boot is not put after now: a day's slack for clocks
        self.assembler = BootAssembler(year or _dt.date.today().year, runtime_sink, not_after=self._not_after())
        self.lines = 0  # lines read so far (the stream's line numbers go on from here)
        self.offset = 0  # bytes read so far
        self.header: int | None = None  # lines of an excerpt header, once known
        self._head = b""
        self.vllm = False  # a line with vLLM's header, a process prefix or a vllm frame was read
        self.worded = False  # a line carried one of vLLM's own wordings (message-only text)

    @property
    def is_vllm(self) -> bool:
        """Whether the stream has shown itself a vLLM log (what ``Parse`` requires of a file)."""
        return self.vllm or self.worded

    def _not_after(self) -> str | None:
        if self.fixed_year:
            return None
        return (_dt.datetime.now() + _dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")

    def feed(self, chunk: bytes) -> list[Boot]:
        """Read ``chunk`` (whole lines: it ends with a newline); the boots it finished."""
        if not chunk:
            return []
        if self.header is None:
            self._head += chunk
            n = header_lines(self._head)
            if n is None:
                return []
            chunk, self._head = self._head, b""
            self._start(n, chunk)
        return self._scan(chunk)

    def end(self) -> list[Boot]:
        """The stream is over: the boot being read is finished too.  Nothing for a stream that
        never showed a vLLM line (a file of it would be refused)."""
        finished: list[Boot] = []
        if self.header is None:
            head, self._head = self._head, b""
            if not head:
                return []
            self._start(header_lines(head, final=True) or 0, head)
            finished = self._scan(head if head.endswith(b"\n") else head + b"\n")
        if not self.is_vllm:
            return []
        self.assembler.not_after = self._not_after()
        return finished + self.assembler.consume(End(self.lines))

    def peek(self) -> Boot | None:
        """The boot being read, finished and sealed as if the stream ended here (the parse goes
        on untouched); None before the first boot."""
        self.assembler.not_after = self._not_after()
        return self.assembler.peek(self.lines)

    @property
    def current(self) -> Boot | None:
        """The boot being read (not finished), if any."""
        return self.assembler.current

    def _start(self, header: int, head: bytes) -> None:
        self.header = header
        counts: dict[str, int] = {}
        if header:
            text = head.decode("utf-8", errors="replace")
            counts = self.rules.count_line("\n".join(text.split("\n")[:header]))
        self.assembler.consume(Header(header, counts))

    def _scan(self, chunk: bytes) -> list[Boot]:
        base, offset = self.lines, self.offset
        hits: list[Hit | RuntimeRun | Counts | End] = []
        for scanned in self.scanner.scan([chunk], numpy_min_block=self.options.numpy_min_block):
            if type(scanned) is Hit:
                hits.append(scanned._replace(number=scanned.number + base, offset=scanned.offset + offset))
            elif isinstance(scanned, Counts):
                hits.append(scanned)  # the counted lines after the chunk's last event line
            elif isinstance(scanned, End):
                self.lines = base + scanned.total_lines
        self.offset += len(chunk)
        if not self.vllm and _VLLM_LINE_BYTES.search(chunk):
            self.vllm = True
        if not self.fixed_year:
            self.assembler.not_after = self._not_after()
        finished: list[Boot] = []
        header = self.header or 0
        anchors = self.scanner.anchor_texts
        for item in line_hits(gather_runs(hits, self.rules, anchors, self.options.run_limit), self.rules, anchors):
            if isinstance(item, LineHit):
                if item.line.number <= header:
                    continue  # the excerpt header is not log
                if item.events and not self.is_vllm:
                    self.worded = any(map(vllm_own_wording, item.events))
            finished.extend(self.assembler.consume(item))
        return finished
