"""The rule engine: anchor literal + pattern -> events.  Built-in vLLM rules and grammar-pack
rules are the same kind of object and run through the same ``RuleSet``.

A rule never sees a line that does not contain its anchor: ``RuleSet.scan`` finds candidate
lines with one alternation of all anchors over large text blocks, and only those lines are
turned into ``Line`` objects and handed to patterns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import parse as parselib

from . import units
from .lines import PLAIN_GROUPS, PLAIN_SHAPE, Line, fast_line, parse_line, plain_candidate
from .scan import Hit
from .vocabulary import RUNTIME_KIND_SERIES

# What an event is about; the boot assembler dispatches on this.
FACT, SHAPE, FAILURE, RUNTIME, MARKER, HINT, META, COUNT = (
    "fact", "shape", "failure", "runtime", "marker", "hint", "meta", "count",
)
SIZE = "size"  # a field unit meaning "the value carries its own unit": '50.00 MiB'


@dataclass(slots=True)
class Event:
    kind: str
    line: Line
    text: str  # the evidence: the physical line(s) the event was read from
    data: dict[str, Any]
    rule: Rule


class RuntimeSample(NamedTuple):
    """One stats interval or spec-decode report of a boot.  ``figures`` holds one value per
    series of the kind (``RUNTIME_KIND_SERIES``), None for a series the line does not print: a
    tuple, which a served log's millions of samples carry to the database as they are."""

    kind: str  # "engine_stats" | "spec_decode"
    line: int
    timestamp: str | None
    engine: int | None
    figures: tuple[Any, ...]

    @classmethod
    def of(cls, kind: str, line: int, timestamp: str | None, engine: int | None,
           values: dict[str, Any]) -> RuntimeSample:
        """The sample of a record whose figures are named (an extractor's ``values``)."""
        return cls(kind, line, timestamp, engine, tuple(map(values.get, RUNTIME_KIND_SERIES[kind])))

    @property
    def values(self) -> dict[str, Any]:
        """The figures the line printed, by series name."""
        return _by_name(self.kind, self.figures)


def _by_name(kind: str, figures: tuple[Any, ...]) -> dict[str, Any]:
    return {name: v for name, v in zip(RUNTIME_KIND_SERIES[kind], figures) if v is not None}


@dataclass(frozen=True)
class FastShape:
    """The one exact shape of a runtime record that a served log holds by the million: a regex for
    the whole message with one group per figure, and ``convert(groups) -> (engine, figures)``.  A
    record in any other shape takes the rule's general extractor; tests hold both to the same
    result."""

    kind: str  # the runtime sample kind ("engine_stats", "spec_decode")
    pattern: str
    convert: Callable[[tuple[str, ...]], tuple[int | None, tuple[Any, ...]]]

    def data(self, groups: tuple[str, ...]) -> dict[str, Any]:
        """The event data the general extractor gives for the record."""
        engine, figures = self.convert(groups)
        return {"kind": self.kind, "engine": engine, "values": _by_name(self.kind, figures)}


# A run ends after this many records, so a run in flight never holds much memory.
RUN_LIMIT = 1024


@dataclass(slots=True)
class RuntimeRun:
    """Consecutive lines holding nothing but a runtime record read in one match, from one process
    (the bulk of a served log), fed to the assembler at once (``BootAssembler.feed_run``): what
    reading each through the line model and the rules would give, without a Line or an Event."""

    number: int  # the first record's line
    offset: int | None  # and its byte offset
    process: str | None
    pid: int | None
    lines: list[bytes]  # every record's line
    samples: list[RuntimeSample]
    counts: dict[str, int]  # count-anchor occurrences before the first record
    within: dict[str, int]  # and between its records

    def __reduce__(self) -> tuple[Any, ...]:
        # samples travel (from the scanning child) as plain tuples: a named tuple pickles by
        # calling its class, several times slower
        return _rebuild_run, (self.number, self.offset, self.process, self.pid, self.lines,
                              list(map(tuple, self.samples)), self.counts, self.within)


def _rebuild_run(number: int, offset: int | None, process: str | None, pid: int | None, lines: list[bytes],
                 samples: list[tuple[Any, ...]], counts: dict[str, int], within: dict[str, int]) -> RuntimeRun:
    return RuntimeRun(number, offset, process, pid, lines, list(map(_as_sample, samples)), counts, within)


_as_sample = functools.partial(tuple.__new__, RuntimeSample)


@dataclass
class Rule:
    """One grammar rule.

    ``fields`` maps a pattern group to ``(name, unit)``: a fact name (FACT rules), a shape key
    (SHAPE), or a failure figure (FAILURE).  ``extract`` replaces ``fields`` for lines that need
    code (dict reprs, key: value lists); it returns the event data or None for no match.
    """

    name: str
    anchor: str
    emits: str
    pattern: str | None = None
    syntax: str = "regex"  # or "parse"
    fields: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    extract: Callable[[re.Match[str] | Any, Line, str], dict[str, Any] | None] | None = None
    failure: str | None = None  # FAILURE rules: the kind
    phase: str | None = None  # FAILURE: a phase the text itself tells; HINT: the phase hinted
    marker: str | None = None  # MARKER rules: "start:banner", "progress:load", "ready", ...
    implies_up: bool = False  # the text tells the engine had been serving
    wraps: bool = False  # the record may go on in unprefixed terminal-wrapped lines
    rank_from_prefix: bool = True
    pack: str | None = None
    samples: tuple[str, ...] = ()
    fast: FastShape | None = None
    _compiled: Any = field(default=None, repr=False)
    _fast: Any = field(default=None, repr=False)  # FastShape.pattern, compiled
    _fast_line: Any = field(default=None, repr=False)  # PLAIN_SHAPE + FastShape.pattern, compiled

    def compile(self) -> None:
        if self.fast is not None:
            self._fast = re.compile(self.fast.pattern)
            self._fast_line = re.compile(PLAIN_SHAPE + self.fast.pattern)
        if self.pattern is None:
            self._compiled = None
        elif self.syntax == "parse":
            self._compiled = parselib.compile(self.pattern, case_sensitive=True)
        else:
            self._compiled = re.compile(self.pattern)

    def search(self, message: str) -> Any:
        if self._compiled is None:
            self.compile()
            if self._compiled is None:
                return True  # anchor-only rule
        if self.syntax == "parse":
            # a whole-message match first: `parse` fields are lazy, so searching
            # "mode {m}" in "mode precise" would stop at "p"
            return self._compiled.parse(message) or self._compiled.search(message)
        return self._compiled.search(message)

    def fast_data(self, record: str) -> dict[str, Any] | None:
        """The event data of a record in the rule's FastShape; None for any other record."""
        if self.fast is None:
            return None
        if self._fast is None:
            self.compile()
        m = self._fast.fullmatch(record)
        return None if m is None else self.fast.data(m.groups())

    def fast_runtime(self, number: int, raw: bytes) -> tuple[str | None, int | None, RuntimeSample] | None:
        """(process, pid, sample) of a raw line in vLLM's plain shape holding a record in the
        rule's FastShape, read in one match — what ``parse_line`` and ``events`` give for it;
        None for any other line."""
        if self.fast is None or not plain_candidate(raw):
            return None
        if self._fast_line is None:
            self.compile()
        m = self._fast_line.fullmatch(raw.decode("ascii"))
        if m is None:
            return None
        groups = m.groups()
        process, pid, _level, timestamp, _file = groups[:PLAIN_GROUPS]
        engine, figures = self.fast.convert(groups[PLAIN_GROUPS:])
        return process, pid if pid is None else int(pid), RuntimeSample(self.fast.kind, number, timestamp, engine, figures)

    def events(self, line: Line, record: str, text: str) -> list[Event]:
        data = self.fast_data(record)
        if data is not None:
            return [Event(self.emits, line, text, data, self)]
        m = self.search(record)
        if not m:
            return []
        if self.extract is not None:
            try:
                data = self.extract(m, line, record)
            except units.UnitError:
                return []  # a figure out of range: the line is not read, never guessed at
            if data is None:
                return []
        else:
            data = self._field_values(m, record)
            if data is None:
                return []
        return [Event(self.emits, line, text, data, self)]

    def _field_values(self, m: Any, record: str) -> dict[str, Any] | None:
        values: dict[str, Any] = {}
        for group, (name, unit) in self.fields.items():
            printed = _printed(m, group, record)
            if printed is None:
                continue
            if self.emits == SHAPE and unit is None:
                values[name] = _shape_value(printed)
                continue
            try:
                q = units.size(printed) if unit == SIZE else units.quantity(printed, unit)
            except units.UnitError:
                continue  # a damaged figure is not guessed at
            values[name] = q
        if not values and self.fields:
            return None
        return values


def _printed(m: Any, group: str, record: str) -> str | None:
    """The text a pattern group matched, for both `re` and `parse` results."""
    if isinstance(m, re.Match):
        return m.group(group)
    span = m.spans.get(group)
    if span is None:
        return None
    return record[span[0] : span[1]]


def _shape_value(printed: str) -> Any:
    try:
        return units.parse_number(printed)
    except units.UnitError:
        return printed


_CUT_END = re.compile(r"[\w,(]$")
ScanItem = tuple[Line, list[Event], dict[str, int]] | RuntimeRun | dict[str, int] | int


class RuleSet:
    """A set of rules with their anchor scanner.

    Event rules (everything but COUNT) see the lines that hold their anchor; COUNT rules are
    anchor-only and are counted, not matched: their ``marker`` names the counter ("access",
    "request") and every occurrence of the anchor counts once.
    """

    def __init__(self, rules: Iterable[Rule], engine: str | None = None):
        self.rules = [r for r in rules if r.emits != COUNT]
        self.count_rules = [r for r in rules if r.emits == COUNT]
        # no rule compiles here: each does when a line first needs it (most never do in a served
        # log, and start-up is on the clock)
        self.anchors: dict[str, list[Rule]] = {}
        for rule in self.rules:
            self.anchors.setdefault(rule.anchor, []).append(rule)
        self.count_anchors = {r.anchor: r.marker or r.name for r in self.count_rules}
        ordered = sorted(self.anchors, key=len, reverse=True)
        # zero-width lookahead finds anchors that overlap or start inside one another
        self._line_re = re.compile("(?=(" + "|".join(re.escape(a) for a in ordered) + "))")
        # rules to try when anchor X is found: X's own, and those whose anchor is inside X
        self._closure: dict[str, list[Rule]] = {}
        for a in ordered:
            self._closure[a] = [r for b in ordered if b in a for r in self.anchors[b]]
        self.engine = engine
        self._scanner = None

    @property
    def all_anchors(self) -> list[str]:
        return list(self.anchors) + list(self.count_anchors)

    def scanner(self):
        from .scan import LineScanner

        if self._scanner is None:
            self._scanner = LineScanner(self.anchors, self.count_anchors, self.engine)
        return self._scanner

    def rules_for(self, raw: str) -> list[Rule]:
        found: dict[int, Rule] = {}
        for m in self._line_re.finditer(raw):
            for rule in self._closure[m.group(1)]:
                found.setdefault(id(rule), rule)
        return [r for r in self.rules if id(r) in found]

    def count_line(self, text: str) -> dict[str, int]:
        """Lines of ``text`` holding each count anchor, by kind (as ``grep -c`` counts them)."""
        counts: dict[str, int] = {}
        lines = text.split("\n")
        for anchor, kind in self.count_anchors.items():
            n = sum(1 for line in lines if anchor in line)
            if n:
                counts[kind] = counts.get(kind, 0) + n
        return counts

    def match_line(self, line: Line, following: Callable[[], list[str]] | None = None,
                   rules: list[Rule] | None = None) -> list[Event]:
        """Run every rule whose anchor the line holds (or the ``rules`` a scanner found for it);
        ``following`` gives the next physical lines for records that may be terminal-wrapped."""
        events: list[Event] = []
        for rule in self.rules_for(line.raw) if rules is None else rules:
            record, text = line.message, line.raw
            if rule.wraps and following is not None and _CUT_END.search(line.message):
                extra = []
                for nxt in following():
                    if not nxt.strip() or parse_line(0, nxt).has_prefix:
                        break
                    extra.append(nxt)
                    if not _CUT_END.search(nxt.rstrip()):
                        break
                if extra:
                    record = line.message + "".join(e.strip() for e in extra)
                    text = "\n".join([line.raw] + extra)
            events.extend(rule.events(line, record, text))
        return events

    def scan(self, blocks: Iterable[bytes], count: bool = True) -> Iterator[ScanItem]:
        """Yield ``(line, events, counts)`` for each line that holds an event anchor — counts
        are the count-anchor occurrences since the previous such line — then the counts after
        the last one (a dict) and the total line count (an int).  Consecutive lines that hold
        a runtime record in its fast shape come as one ``RuntimeRun``."""
        return self.read_hits(self.runs(self.scanner().scan(blocks, count)))

    def runs(self, hits: Iterable[Any]) -> Iterator[Any]:
        """``LineScanner.scan``'s items with consecutive fast runtime records gathered into
        ``RuntimeRun``s; other items pass through, runs already gathered too (the scanning child
        gathers some itself: ``ChildScan``'s ``refine``)."""
        texts = self.scanner().anchor_texts
        # an anchor only one rule keys on, and that rule has a FastShape: a line holding it alone
        # and in the plain shape is read in one match
        shortcut = [rules[0] if len(rules) == 1 and rules[0].fast is not None and not rules[0].wraps
                    else None for rules in (self.anchors[a] for a in texts)]
        run: RuntimeRun | None = None
        for hit in hits:
            record = None
            if type(hit) is Hit and len(hit.anchors) == 1:
                (anchor,) = hit.anchors
                rule = shortcut[anchor]
                if rule is not None:
                    record = rule.fast_runtime(hit.number, hit.raw)
            if record is None:
                if run is not None:
                    yield run
                    run = None
                yield hit
                continue
            process, pid, sample = record
            if run is not None and (process != run.process or pid != run.pid or len(run.samples) >= RUN_LIMIT):
                yield run
                run = None
            if run is None:
                run = RuntimeRun(sample.line, hit.offset, process, pid, [hit.raw], [sample], hit.counts, {})
                continue
            run.lines.append(hit.raw)
            run.samples.append(sample)
            if hit.counts:
                within = run.within
                for kind, n in hit.counts.items():
                    within[kind] = within.get(kind, 0) + n
        if run is not None:
            yield run

    def read_hits(self, hits: Iterable[Any]) -> Iterator[ScanItem]:
        """``scan`` for hits found elsewhere (``runs`` over ``LineScanner.scan``, here or in a child)."""
        by_anchor = [self.anchors[a] for a in self.scanner().anchor_texts]
        order = {id(r): i for i, r in enumerate(self.rules)}
        for hit in hits:
            if isinstance(hit, (dict, int, RuntimeRun)):  # a run; the tail counts, then the total
                yield hit
                continue
            # most lines of a served log are in vLLM's plain shape: read without the general model
            line = fast_line(hit.number, hit.raw) or parse_line(hit.number, hit.raw.decode("utf-8", errors="replace"))
            line.offset = hit.offset

            def lazy(hit: Any = hit) -> list[str]:
                return [f.decode("utf-8", errors="replace").rstrip("\r") for f in hit.following()]

            if len(hit.anchors) == 1:
                rules = by_anchor[next(iter(hit.anchors))]
            else:
                rules = sorted({id(r): r for i in hit.anchors for r in by_anchor[i]}.values(),
                               key=lambda r: order[id(r)])
            yield line, self.match_line(line, lazy, rules), hit.counts
