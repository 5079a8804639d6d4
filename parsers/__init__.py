"""Pure log parsing for ledger: vLLM log text in, ``Boot`` records out.

No database, no pandas, no click: ``parsers.parse_file(path) -> list[Boot]`` works alone.

    >>> import parsers
    >>> boots = parsers.parse_file("boot.log")
    >>> boots[0].summary("kv_cache_tokens").value
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .boots import Boot, BootAssembler, Failure, Fact, RuntimeSample, ShapeValue
from .lines import VLLM_LINE_SEARCH, Line, parse_line
from .rules import Event, Rule, RuleSet
from .source import Source, SourceError, looks_binary
from .vllm import BUILTIN_RULES

__all__ = [
    "Boot", "Fact", "Failure", "RuntimeSample", "ShapeValue", "Line", "Rule", "RuleSet",
    "Source", "SourceError", "ParseResult", "parse_file", "parse_text", "parse_source",
    "builtin_ruleset", "parse_line",
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


def parse_source(source: Source, rules: RuleSet | None = None, default_year: int | None = None,
                 on_boot=None) -> ParseResult:
    """Scan a source; ``on_boot(boot)`` is called as each boot completes (streaming)."""
    rules = rules or builtin_ruleset()
    header_end = 0
    seen_vllm = False
    first = True
    boots_done: list[Boot] = []

    def blocks() -> Iterator[str]:
        nonlocal header_end, seen_vllm, first
        for block in source.blocks():
            if first:
                first = False
                if looks_binary(block[:65536]):
                    raise SourceError(f"{source.display}: is a binary file, not a log")
                header_end = _excerpt_header_end(block)
            if not seen_vllm and VLLM_LINE_SEARCH.search(block):
                seen_vllm = True
            yield block

    assembler: BootAssembler | None = None
    total = 0
    for line, events, number in rules.scan(blocks()):
        if line is None:
            total = number
            break
        if assembler is None:
            assembler = BootAssembler(first_line=header_end + 1, default_year=default_year)
        if line.number <= header_end:
            continue
        for boot in assembler.feed(line, events):
            boots_done.append(boot)
            if on_boot:
                on_boot(boot)
    if source.size == 0:
        raise SourceError(f"{source.display}: is empty")
    boots: list[Boot] = []
    if assembler is not None:
        done = {id(b) for b in boots_done}
        tail = [b for b in assembler.finish(total) if id(b) not in done]
        for boot in tail:
            if on_boot:
                on_boot(boot)
        boots = assembler.boots
    if not seen_vllm:
        raise SourceError(f"{source.display}: no vLLM log lines found")
    if not boots:
        # vLLM lines but not one figure or marker: an honest, empty boot
        boots = [Boot(index=0, first_line=header_end + 1, last_line=max(total, header_end + 1))]
        if on_boot:
            on_boot(boots[0])
    return ParseResult(source, boots, total, header_end, seen_vllm)


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
    import io
    import tempfile

    # Source reads bytes; a spooled temp file keeps one code path for text and files
    with tempfile.NamedTemporaryFile("wb", suffix=".log", delete=False) as f:
        f.write(text.encode("utf-8"))
        name = f.name
    try:
        return parse_source(Source(name), rules, year or _dt.date.today().year).boots
    finally:
        os.unlink(name)
