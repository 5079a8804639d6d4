"""Pure log parsing for ledger: vLLM log text in, ``Boot`` records out.

No database, no pandas, no click: ``parsers.parse_file(path) -> list[Boot]`` works alone.

    >>> import parsers
    >>> boots = parsers.parse_file("boot.log")
    >>> boots[0].summary("kv_cache_tokens").value
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .boots import Boot, BootAssembler, Fact, Failure, ShapeValue
from .lines import VLLM_LINE_SEARCH, Line, parse_line
from .rules import Event, Rule, RuleSet, RuntimeRun, RuntimeSample
from .scan import ChildScan
from .source import Source, SourceError, looks_binary
from .vllm import BUILTIN_RULES

__all__ = [
    "Boot", "Event", "Fact", "Failure", "RuntimeSample", "ShapeValue", "Line", "Rule", "RuleSet",
    "Source", "SourceError", "ParseResult", "parse_file", "parse_text", "parse_source",
    "builtin_ruleset", "parse_line", "Parse",
]

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
    boots: list[Boot]
    total_lines: int
    header_lines: int  # an excerpt header ("# ..." up to "# ---") that is not log text
    vllm_lines: bool  # whether any line carried vLLM's header
    unclaimed: list[Line] = field(default_factory=list)


def _excerpt_header_end(first_block: str) -> int:
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


_VLLM_LINE_BYTES = re.compile(VLLM_LINE_SEARCH.pattern.encode("utf-8"))


class _ExternalCounts:
    """``grep -c -F`` per count anchor, run alongside the scan on the other core.

    grep counts lines holding the anchor in the whole file; that is each boot's count when the
    file holds one boot, and otherwise the boots are recounted by byte range (``recount``)."""

    def __init__(self, path: str, count_anchors: dict[str, str]):
        import subprocess

        env = dict(os.environ, LC_ALL="C")
        self.procs = [
            (kind, subprocess.Popen([*_NICE, _GREP, "-a", "-c", "-F", "-e", anchor, "--", path], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    preexec_fn=_grep_memory_cap))
            for anchor, kind in count_anchors.items()
        ]

    def stop(self) -> None:
        for _, proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout:
                proc.stdout.close()

    def totals(self) -> dict[str, int] | None:
        out: dict[str, int] = {}
        ok = True
        for kind, proc in self.procs:
            data, _ = proc.communicate()
            if proc.returncode not in (0, 1):  # 1: no line matched, which is a count of 0
                ok = False
                continue
            try:
                out[kind] = out.get(kind, 0) + int(data.strip() or 0)
            except ValueError:
                ok = False
        return out if ok else None


# grep holds a whole line in memory (a 200 MB line: 390 MB); past this it fails, and the lines
# are counted in Python instead (``totals`` is None), whose reading caps a line (source.MAX_LINE)
_GREP_MEMORY = 64 * 1024 * 1024


def _grep_memory_cap() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (_GREP_MEMORY, _GREP_MEMORY))


# From this size a plain file is counted by grep and scanned in a forked child, each on a core of
# its own; below it, starting them costs more than they save.
LARGE_FILE_BYTES = 8 * 1024 * 1024


def _grep() -> str | None:
    import shutil

    return None if os.environ.get("LEDGER_NO_GREP") else shutil.which("grep")


_GREP = _grep()
# the counters run at a lower priority: they finish well before the scan and should not slow it
_NICE = ["nice", "-n", "10"] if _GREP and __import__("shutil").which("nice") else []


def _recount(source: Source, rules: RuleSet, boots: list[Boot], header_end: int) -> None:
    """Count lines per boot by byte range (the pure-Python counter, one more pass)."""
    from .scan import count_lines

    anchors = {a.encode("utf-8"): k for a, k in rules.count_anchors.items()}
    bounds = [b.first_offset for b in boots[1:]] + [None]
    for b in boots:
        b.access_lines = b.request_lines = 0
    i = 0
    offset = 0
    line = 0
    for block in Source(source.path).blocks():
        end_offset = offset + len(block)
        pos = 0
        if line < header_end:  # skip the excerpt header: it is not log
            for _ in range(header_end - line):
                nl = block.find(b"\n", pos)
                if nl < 0:
                    break
                pos = nl + 1
            line = header_end
        while pos < len(block):
            limit = bounds[i]
            stop = len(block) if limit is None or limit >= end_offset else max(pos, limit - offset)
            counts = {k: count_lines(block, a, pos, stop) for a, k in anchors.items()}
            BootAssembler._credit(boots[i], counts)
            pos = stop
            if limit is not None and limit < end_offset and pos >= limit - offset:
                i += 1
        offset = end_offset


def _inspect_head(head: bytes, rules: RuleSet, display: str, state: dict) -> None:
    """Refuse a binary input; find an excerpt header (and the counted lines inside it)."""
    text = head.decode("utf-8", errors="replace")
    if looks_binary(text):
        raise SourceError(f"{display}: is a binary file, not a log")
    state["header"] = _excerpt_header_end(text)
    if state["header"]:
        state["header_counts"] = rules.count_line("\n".join(text.split("\n")[: state["header"]]))


_HEAD_BYTES = 65536


class Parse:
    """One source's parse in two steps: constructing it starts the helpers a large plain file gets
    (a forked scanning child, grep counters), so the caller can do slow work of its own — open
    the ledger — while the file is being read; ``run()`` does the rest and returns the result.

    ``grep`` and ``fork`` allow those helpers (tests turn them off to show they change nothing).
    A Parse that is never run must be closed."""

    def __init__(self, source: Source, rules: RuleSet | None = None, default_year: int | None = None,
                 grep: bool = True, fork: bool = True):
        self.source, self.default_year = source, default_year
        self.rules = rules = rules or builtin_ruleset()
        self.state = state = {"header": 0, "vllm": False, "first": True, "header_counts": {}}
        self._stat = os.stat(source.path) if source.plain_file else None  # to see it change while read
        large = self._stat is not None and self._stat.st_size >= LARGE_FILE_BYTES
        self.in_child = fork and large and hasattr(os, "fork")
        if self.in_child:  # the excerpt header must be known before the child's first hit arrives
            with open(source.path, "rb") as f:
                _inspect_head(f.read(_HEAD_BYTES), rules, source.display, state)
            state["first"] = False
        self.progress: Callable[[int], None] | None = None
        # counts come from grep for a plain file; the Python counter otherwise (pipes, .gz, .zst)
        use_grep = bool(grep and large and rules.count_anchors and _GREP)
        self.counting_here = not use_grep
        self.child: ChildScan | None = None
        if self.in_child:  # first: the scan is what the ingest waits for
            self.child = ChildScan(lambda: rules.scanner().scan(self._blocks(), count=self.counting_here),
                                   finish=lambda: (state["vllm"], source.sha256, source.size, source.long_lines),
                                   position=lambda: source.size, path=source.path, refine=rules.runs)
        self.external = None
        try:
            self.external = _ExternalCounts(source.path, rules.count_anchors) if use_grep else None
        except BaseException:
            self.close()  # no child left behind
            raise

    def _blocks(self) -> Iterator[bytes]:
        state, source = self.state, self.source
        for block in source.blocks():
            if state["first"]:
                state["first"] = False
                _inspect_head(block[:_HEAD_BYTES], self.rules, source.display, state)
            if not state["vllm"] and _VLLM_LINE_BYTES.search(block):
                state["vllm"] = True
            if self.progress and not self.in_child:
                self.progress(source.size)
            yield block

    def _check_unchanged(self) -> None:
        """The line counts come from a second reader (grep) when the scan did not count: a file
        that was truncated or rewritten meanwhile would give its boots another version's counts.
        Such a file is refused (nothing of it stored), to be read again."""
        before = self._stat
        if before is None:
            return
        try:
            now = os.stat(self.source.path)
        except OSError:
            now = None
        if (now is None or (now.st_size, now.st_mtime_ns, now.st_ino) != (before.st_size, before.st_mtime_ns, before.st_ino)
                or self.source.size != before.st_size):
            raise SourceError(f"{self.source.display}: changed while it was read (truncated, rewritten or "
                              f"grown); nothing of it was stored: ingest it again")

    def close(self) -> None:
        """Stop the helpers of a Parse that will not run (or did not finish)."""
        if self.child is not None:
            self.child.close()
        if self.external is not None:
            self.external.stop()

    def run(self, on_boot: Callable[[Boot], None] | None = None,
            runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None = None,
            progress: Callable[[int], None] | None = None) -> ParseResult:
        """``on_boot(boot)`` is called as each boot completes (streaming); ``runtime_sink(boot,
        samples)`` receives runtime samples (a list at a time, in line order) instead of the boot
        keeping them."""
        try:
            return self._run(on_boot, runtime_sink, progress)
        finally:
            self.close()

    def _run(self, on_boot: Callable[[Boot], None] | None,
             runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None,
             progress: Callable[[int], None] | None) -> ParseResult:
        source, rules, state, counting_here = self.source, self.rules, self.state, self.counting_here
        self.progress = progress
        emit = on_boot if counting_here else None  # with grep's counts, boots leave once counted
        assembler = BootAssembler(first_line=1, default_year=self.default_year, runtime_sink=runtime_sink)
        assembler.defer_counts = not counting_here
        total = 0
        header_set = False
        if self.child is not None:
            self.child.progress = progress
            items = rules.read_hits(rules.runs(self.child))
        else:
            items = rules.scan(self._blocks(), count=counting_here)
        for item in items:
            if isinstance(item, int):
                total = item
                break
            if isinstance(item, dict):  # counts after the last event line: the last boot's
                assembler.add_counts(item)
                continue
            if not header_set:
                assembler.first_line = state["header"] + 1
                header_set = True
                if counting_here and state["header_counts"]:
                    assembler.add_counts({k: -n for k, n in state["header_counts"].items()})
            if type(item) is RuntimeRun:
                if counting_here:
                    assembler.add_counts(item.counts)
                closed = assembler.feed_run(item)
                if counting_here:
                    assembler.add_counts(item.within)
            else:
                line, events, counts = item
                if line.number <= state["header"]:
                    continue
                if counting_here:
                    assembler.add_counts(counts)
                closed = assembler.feed(line, events)
            if closed and emit:
                for boot in closed:
                    emit(boot)
        if self.child is not None:
            state["vllm"], source.sha256, source.size, source.long_lines = self.child.result
        if source.size == 0:
            raise SourceError(f"{source.display}: is empty")
        if not state["vllm"]:
            raise SourceError(f"{source.display}: no vLLM log lines found")
        assembler.first_line = state["header"] + 1
        already = len(assembler.boots) - (1 if assembler.current is not None else 0)
        boots = assembler.finish(total)
        if not boots:
            # vLLM lines but not one figure or marker: an honest, empty boot
            assembler._new(state["header"] + 1)
            boots = assembler.finish(max(total, state["header"] + 1))
            already = 0
        if not counting_here:
            self._check_unchanged()
            totals = self.external.totals() if self.external is not None else None
            if totals is not None and len(boots) == 1:
                header = state["header_counts"]
                boots[0].access_lines = totals.get("access", 0) - header.get("access", 0)
                boots[0].request_lines = totals.get("request", 0) - header.get("request", 0)
            else:
                _recount(source, rules, boots, state["header"])
            for boot in boots:
                boot.seal_counts()
            if on_boot:
                for boot in boots:
                    on_boot(boot)
        elif on_boot:
            for boot in boots[already:]:
                on_boot(boot)
        return ParseResult(source, boots, total, state["header"], state["vllm"])


def parse_source(source: Source, rules: RuleSet | None = None, default_year: int | None = None,
                 on_boot: Callable[[Boot], None] | None = None,
                 runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None = None,
                 progress: Callable[[int], None] | None = None, grep: bool = True,
                 fork: bool = True) -> ParseResult:
    """Scan a source (``Parse`` in one go)."""
    return Parse(source, rules, default_year, grep, fork).run(on_boot, runtime_sink, progress)


def _default_year(path: str) -> int:
    """The year vLLM's MM-DD timestamps lack: the file's modification year, else this year."""
    try:
        if path != "-":
            return _dt.datetime.fromtimestamp(os.stat(path).st_mtime).year
    except OSError:
        pass
    return _dt.date.today().year


def parse_file(path: str, rules: RuleSet | None = None, year: int | None = None) -> list[Boot]:
    """Parse one log file (plain, .gz or .zst; '-' for stdin) into boots."""
    return parse_source(Source(path), rules, year or _default_year(path)).boots


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
