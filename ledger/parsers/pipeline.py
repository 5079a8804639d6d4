"""The parse pipeline: one source's bytes -> the item stream (``parsers.items``) -> boots.

``start(path)`` begins at once: a large plain file is scanned by a forked child and counted by
grep on the other core while the caller does slow work of its own (opens the ledger); ``run()``
then feeds the item stream to a ``BootAssembler`` and hands out each boot as it is finished.
``parse_file`` / ``parse_text`` / ``parse_source`` do both in one go.  How the source is scanned
is set by one ``ScanOptions``; the result is the same whichever way (tests hold every way to the
slow reference that reads every line through every rule).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .boots import Boot, BootAssembler
from .fast.options import DEFAULT, ScanOptions
from .fast.runs import gather_runs, line_hits
from .fast.scanner import Hit, scanner_for
from .items import Counts, CountTotals, End, Header, Item, LineHit, RuntimeRun, Store
from .lines import VLLM_LINE_SEARCH, Line
from .rules import Event, Kind, Rule, RuleSet, RuntimeSample
from .source import Source, SourceError, excerpt_header_end, looks_binary
from .vllm import BUILTIN_RULES, vllm_own_wording

if TYPE_CHECKING:  # a large plain file's helpers: loaded only for one (a boot log is read without them)
    from .fast.child import ChildScan
    from .fast.counters import GrepCounts, RangeCounter

_BUILTIN: RuleSet | None = None


def builtin_ruleset(extra: Iterable[Rule] = ()) -> RuleSet:
    """The upstream vLLM grammar, plus any pack rules."""
    global _BUILTIN
    extra = list(extra)
    if not extra:
        if _BUILTIN is None:
            _BUILTIN = RuleSet(BUILTIN_RULES)
        return _BUILTIN
    return RuleSet(list(BUILTIN_RULES) + extra)


@dataclass
class ParseResult:
    source: Source
    boots: list[Boot]  # every boot, when no ``on_boot`` was given (else handed out, not kept)
    total_lines: int


_VLLM_LINE_BYTES = re.compile(VLLM_LINE_SEARCH.encode("utf-8"))
_HEAD_BYTES = 65536


class Parse:
    """One source's parse in two steps: constructing it starts the helpers a large plain file gets
    (a forked scanning child, grep counters), so the caller can do slow work of its own while the
    file is being read; ``run()`` does the rest and returns the result.  A Parse that is never
    run must be closed."""

    def __init__(self, source: Source, rules: RuleSet | None = None, year: int | None = None,
                 options: ScanOptions = DEFAULT, not_after: str | None = None,
                 run_starts: Sequence[int] = (), force: bool = False, store: Store | None = None):
        self.source, self.year, self.options = source, year, options
        # the runtime sink's stored rows, worked out with the runs (a run cut at a restart is
        # cut by its samples: those stay whole then)
        self.store = None if run_starts else store
        self.run_starts = run_starts  # lines at which a run of the process begins (BootAssembler)
        self.force = force  # read a file that reads as prose (``prose_error``) anyway
        self.not_after = not_after  # see BootAssembler: an inferred year stays before this time
        self.rules = rules = rules or builtin_ruleset()
        self.header_lines = 0  # an excerpt header ("# ..." up to "# ---") is not log text
        self.header_counts: dict[str, int] = {}  # counted lines inside it
        self.vllm = False  # whether any line carried vLLM's header, a process prefix or a vllm frame
        self.worded = False  # whether any line carried one of vLLM's own wordings (message-only text)
        self.total_lines = 0
        self.progress: Callable[[int], None] | None = None
        self._head_seen = False
        self._stat = os.stat(source.path) if source.plain_file else None  # to see it change while read
        engine = options.engine
        if engine is None and self._stat is not None and self._stat.st_size < options.small_file_bytes:
            engine = "python"  # a boot log: building a faster engine costs more than its scan saves
        self.scanner = scanner_for(rules, engine)
        large = self._stat is not None and self._stat.st_size >= options.large_file_bytes
        self._in_child = options.fork and large and hasattr(os, "fork") and usable_cores() >= options.fork_min_cores
        if self._in_child:  # the excerpt header must be known before the child's first hit arrives
            with open(source.path, "rb") as f:
                self._inspect_head(f.read(_HEAD_BYTES))
        # counts come from grep for a plain file; the Python counter otherwise (pipes, .gz, .zst)
        self.counts_after_scan = bool(options.grep and large and rules.count_anchors and _grep())
        self.child: ChildScan | None = None
        if self._in_child:  # first: the scan is what the ingest waits for
            from .fast.child import ChildScan

            self.child = ChildScan(self._scan, finish=lambda: (self.vllm, source.sha256, source.size, source.long_lines),
                                   position=lambda: source.size, path=source.path, refine=self._runs,
                                   refines=options.child_refines)
        self.grep: GrepCounts | None = None
        self._ranges: RangeCounter | None = None  # counts boot by boot, once a second boot began
        try:
            if self.counts_after_scan:
                from .fast.counters import GrepCounts

                self.grep = GrepCounts(source.path, rules.count_anchors)
        except BaseException:
            self.close()  # no child left behind
            raise

    # -- the item stream --------------------------------------------------------------------------
    def _scan(self) -> Iterator[Hit | Counts | End]:
        return self.scanner.scan(self._blocks(), count=not self.counts_after_scan,
                                 numpy_min_block=self.options.numpy_min_block)

    def _runs(self, hits: Iterable[Hit | RuntimeRun | Counts | End]) -> Iterator[Hit | RuntimeRun | Counts | End]:
        return gather_runs(hits, self.rules, self.scanner.anchor_texts, self.options.run_limit, self.store)

    def _blocks(self) -> Iterator[bytes]:
        source = self.source
        for block in source.blocks(self.options.block_size):
            if not self._head_seen:
                self._inspect_head(block[:_HEAD_BYTES])
            if not self.vllm and _VLLM_LINE_BYTES.search(block):
                self.vllm = True
            if self.progress and not self._in_child:
                self.progress(source.size)
            yield block

    def _inspect_head(self, head: bytes) -> None:
        """Refuse a binary input; find an excerpt header (and the counted lines inside it)."""
        self._head_seen = True
        text = head.decode("utf-8", errors="replace")
        if looks_binary(text):
            raise SourceError(f"{self.source.display}: is a binary file, not a log")
        self.header_lines = excerpt_header_end(text)
        if self.header_lines:
            self.header_counts = self.rules.count_line("\n".join(text.split("\n")[: self.header_lines]))

    def items(self) -> Iterator[Item]:
        """The source's item stream, ``Header`` first and ``End`` last (``End`` only for a
        readable vLLM log: otherwise SourceError).  The counted lines come after ``End``, in a
        ``CountTotals``, when ``counts_after_scan``.

        Prose is not a log: until a line shows the text is one (``log_or_quote``: a line behind
        vLLM's prefix or header, a runtime record, a vLLM wording that is not a quotation), the
        items are held back; a text whose every line with a vLLM wording quotes it is refused
        at its end (``prose_error``), before any boot of it is handed on."""
        if self.force:
            yield from self._items()
            return
        held: list[Item] | None = []
        quotes = 0
        for item in self._items():
            if held is None:
                yield item
                continue
            if isinstance(item, LineHit) and item.events:
                verdict = log_or_quote(item.line, item.events)
                quotes += verdict == "quote"
            if isinstance(item, RuntimeRun) or len(held) >= _HOLD_LIMIT \
                    or (isinstance(item, LineHit) and item.events and verdict == "log"):
                yield from held
                held = None
                yield item
                continue
            if isinstance(item, End) and quotes:
                raise SourceError(prose_error(self.source.display, quotes))
            held.append(item)
        if held:
            yield from held

    def _items(self) -> Iterator[Item]:
        if self.child is not None:
            self.child.progress = self.progress
            hits: Iterator[Hit | RuntimeRun | Counts | End] = self._runs(self.child)
        else:
            hits = self._runs(self._scan())
        header = -1
        for item in line_hits(hits, self.rules, self.scanner.anchor_texts):
            if header < 0:  # the first block has been read: the excerpt header is known
                header = self.header_lines
                yield Header(header, {} if self.counts_after_scan else self.header_counts)
            match item:
                case LineHit(line=line) if line.number <= header:
                    continue  # the excerpt header is not log
                case LineHit(events=events) if events and not (self.worded or self.vllm):
                    self.worded = any(map(vllm_own_wording, events))  # message-only text
                case End(total_lines):
                    self._check_readable()
                    self.total_lines = total_lines
            yield item

    def _check_readable(self) -> None:
        source = self.source
        if self.child is not None:
            self.vllm, source.sha256, source.size, source.long_lines = self.child.result
        if source.size == 0:
            raise SourceError(f"{source.display}: is empty")
        if not (self.vllm or self.worded):
            raise SourceError(f"{source.display}: no vLLM log lines found")

    def _count_totals(self, assembler: BootAssembler) -> CountTotals:
        """The counted lines of the boots held, after the scan: grep's, for a file of one boot;
        else by byte range."""
        self._check_unchanged()
        totals = self.grep.totals() if self.grep is not None and self._ranges is None else None
        if totals is not None and assembler.count == 1:
            header = self.header_counts
            return CountTotals([{k: totals.get(k, 0) - header.get(k, 0) for k in ("access", "request")}])
        if self._ranges is None:
            from .fast.counters import recount

            return CountTotals(recount(self.source.path, self.rules.count_anchors,
                                       [b.first_offset for b in assembler.held[1:]], self.header_lines,
                                       self.options.block_size))
        held = assembler.held
        return CountTotals([self._ranges.upto(end) for end in [*(b.first_offset for b in held[1:]), None]])

    def _range_counts(self, assembler: BootAssembler) -> CountTotals:
        """The counted lines of the boots held while the scan goes on, each its byte range up to
        the next boot's start: a file of many boots is stored as it is read, not held to its
        end (grep's whole-file counts are of no use to it: grep stops)."""
        if self._ranges is None:
            if self.grep is not None:
                self.grep.stop()
            from .fast.counters import RangeCounter

            self._ranges = RangeCounter(self.source.path, self.rules.count_anchors, self.header_lines,
                                        self.options.block_size)
        self._check_unchanged(final=False)
        current = assembler.current
        assert current is not None
        held = assembler.held
        return CountTotals([self._ranges.upto(end) for end in [*(b.first_offset for b in held[1:]),
                                                               current.first_offset]])

    def _check_unchanged(self, final: bool = True) -> None:
        """The line counts come from a second reader (grep, or the byte-range recount) when the
        scan did not count: a file that was truncated or rewritten meanwhile would give its boots
        another version's counts.  Such a file is refused, to be read again: nothing of it
        stored, or of a file of many boots, the boots counted before the change (whole, each
        counted in the version it was read in).  ``final``: the scan is over (it has read the
        whole file)."""
        before = self._stat
        if before is None:
            return
        try:
            now: os.stat_result | None = os.stat(self.source.path)
        except OSError:
            now = None
        if (now is None or (now.st_size, now.st_mtime_ns, now.st_ino) != (before.st_size, before.st_mtime_ns, before.st_ino)
                or (final and self.source.size != before.st_size)):
            stored = "only the boots before the change were stored" if self._ranges else "nothing of it was stored"
            raise SourceError(f"{self.source.display}: changed while it was read (truncated, rewritten or "
                              f"grown); {stored}: ingest it again")

    # -- running --------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the helpers of a Parse that will not run (or did not finish)."""
        if self.child is not None:
            self.child.close()
        if self.grep is not None:
            self.grep.stop()

    def run(self, on_boot: Callable[[Boot], None] | None = None,
            runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None = None,
            progress: Callable[[int], None] | None = None) -> ParseResult:
        """``on_boot(boot)`` is called as each boot is finished (streaming: the boots are not
        kept); without it the result holds every boot.  ``runtime_sink(boot, samples)``
        receives runtime samples (a list at a time, in line order) instead of the boot keeping
        them: of a Parse given a ``store``, some as the store's tuples (``items.Store``)."""
        if self.store is not None and runtime_sink is None:
            self.close()
            raise ValueError("a Parse given a store hands its samples to a runtime sink")
        try:
            self.progress = progress
            assembler = BootAssembler(self.year, runtime_sink, counts_after_scan=self.counts_after_scan,
                                      not_after=self.not_after, run_starts=self.run_starts)
            kept: list[Boot] = []
            hand = on_boot or kept.append
            for item in self.items():
                for boot in assembler.consume(item):
                    hand(boot)
                if assembler.held and assembler.current is not None:  # a second boot began
                    for boot in assembler.consume(self._range_counts(assembler)):
                        hand(boot)
            if assembler.held:
                for boot in assembler.consume(self._count_totals(assembler)):
                    hand(boot)
            return ParseResult(self.source, kept, self.total_lines)
        finally:
            self.close()


# quotation marks that open a quote in prose ("'GPU KV cache size: …" in a commit message)
_OPENING_QUOTES = ("'", '"', "\u201c", "\u2018")
# a markdown table's row ("| oom | `torch.OutOfMemoryError: …` | lower … |"): its cells are a
# document's, whatever they hold, in backticks or not; no vLLM process prints a line between pipes
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*\r?$")
_HOLD_LIMIT = 4096  # items held back at most: a text this far along with vLLM lines is a log


def _quoted_at(raw: str, at: int, message: str) -> bool:
    """Whether the text at ``raw[at]`` is inside a quotation: between backticks on the line, after
    an odd number of double quotes or an unclosed typographic quote, or in a line whose text
    opens with a quotation mark."""
    before = raw[:at]
    return ("`" in before and "`" in raw[at:]) or before.count('"') % 2 == 1 \
        or before.rfind("\u201c") > before.rfind("\u201d") or message[:1] in _OPENING_QUOTES


def log_or_quote(line: Line, events: list[Event]) -> str:
    """What a line with events tells of its text: "log" — vLLM's process prefix or header not
    inside a quotation, a runtime record, or one of vLLM's own wordings (``vllm_own_wording``)
    outside any quotation; "quote" — vLLM's own wordings, every one quoted (markdown's `…` in a
    paragraph, a list item, a table cell; a commit message's "…" or '…'), or a markdown table's
    row that holds one (or vLLM's prefix), in backticks or not, as prose quotes log lines; "" —
    neither (another program's wording, a traceback frame, a progress line)."""
    raw = line.raw
    if _TABLE_ROW.match(raw):
        quoted = line.has_prefix or any(vllm_own_wording(ev) or ev.kind == Kind.runtime for ev in events)
        return "quote" if quoted else ""
    if line.has_prefix:
        lead = raw.find(line.message) if line.message else len(raw)
        if "`" not in raw[: lead if lead >= 0 else len(raw)]:
            return "log"  # the line opens with vLLM's prefix or header, not a quotation of one
    own = [ev for ev in events if vllm_own_wording(ev) or ev.kind == Kind.runtime]
    if not own:
        return ""
    for ev in own:
        at = raw.find(ev.rule.anchor)
        if at < 0 or not _quoted_at(raw, at, line.message):
            return "log"
    return "quote"


def prose_error(display: str, quotes: int) -> str:
    lines = "line" if quotes == 1 else "lines"
    return f"{display}: reads as prose quoting {quotes} vLLM {lines}, not a log; `--force` to read it anyway"


def _grep() -> str | None:
    """grep's path (``fast.counters.GREP``), asked only for a large file."""
    from .fast.counters import GREP

    return GREP


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under `taskset`), else the
    machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - no affinity on this platform
        return os.cpu_count() or 1


def written_at(path: str) -> _dt.datetime:
    """When the log was last written: the file's modification time, else now (stdin)."""
    try:
        if path != "-":
            return _dt.datetime.fromtimestamp(os.stat(path).st_mtime)
    except OSError:
        pass
    return _dt.datetime.now()


def default_year(path: str) -> int:
    """The year vLLM's MM-DD timestamps lack: the file's modification year, else this year."""
    return written_at(path).year


def start(path: str, rules: RuleSet | None = None, year: int | None = None,
          options: ScanOptions = DEFAULT, name: str | None = None, run_starts: Sequence[int] = (),
          force: bool = False, store: Store | None = None) -> Parse:
    """Start parsing ``path`` (plain, .gz or .zst; '-' for stdin) now; ``run()`` the result.
    ``year``: the year of vLLM's MM-DD timestamps (default: the year the file was last written,
    one earlier for a boot whose month and day would fall after that moment).  ``name``: the
    source's name instead of its path; ``run_starts``: the lines at which the process was
    started again (a restarted container), each the first line of a boot of its own.
    ``force``: read a text that reads as prose quoting vLLM lines too; ``store``: how the
    runtime sink ``run`` is given stores a sample (``items.Store``), worked out as the records
    are read (in the scanning child, when it reads them)."""
    if year:
        return Parse(Source(path, name), rules, year, options, run_starts=run_starts, force=force, store=store)
    written = written_at(path)
    return Parse(Source(path, name), rules, written.year, options,
                 not_after=written.strftime("%Y-%m-%d %H:%M:%S"), run_starts=run_starts, force=force, store=store)


def parse_source(source: Source, rules: RuleSet | None = None, default_year: int | None = None,
                 on_boot: Callable[[Boot], None] | None = None,
                 runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None = None,
                 progress: Callable[[int], None] | None = None, options: ScanOptions = DEFAULT) -> ParseResult:
    """Scan a source (``Parse`` in one go)."""
    return Parse(source, rules, default_year, options).run(on_boot, runtime_sink, progress)


def parse_file(path: str, rules: RuleSet | None = None, year: int | None = None,
               force: bool = False) -> list[Boot]:
    """Parse one log file (plain, .gz or .zst; '-' for stdin) into boots."""
    return start(path, rules, year, force=force).run().boots


def parse_text(text: str, rules: RuleSet | None = None, year: int | None = None) -> list[Boot]:
    """Parse log text already in memory (tests, notebooks)."""
    import tempfile

    # Source reads bytes; a spooled temp file keeps one code path for text and files
    with tempfile.NamedTemporaryFile("wb", suffix=".log", delete=False) as f:
        f.write(text.encode("utf-8"))
        name = f.name
    try:
        return parse_source(Source(name), rules, year or _dt.date.today().year).boots
    finally:
        os.unlink(name)
