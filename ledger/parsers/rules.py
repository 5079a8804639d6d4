"""The rule engine: anchor literal + pattern -> events.  Built-in vLLM rules (``vllm.py``) and
grammar-pack rules (``packs.py``) are the same kinds of object and run through the same
``RuleSet``.

A rule is one of a few small specs, by what it yields: ``FactRule`` (figures that become facts),
``ShapeRule`` (the deploy's shape), ``MetaRule`` (engine identity), ``MarkerRule`` (start-up and
progress markers), ``HintRule`` (traceback frames that tell a phase), ``FailureRule``,
``RuntimeRule`` (stats records) and ``CountRule`` (lines that are only counted).

A rule never sees a line that does not contain its anchor: the scan (``parsers.fast``) finds
candidate lines with all anchors at once over large text blocks, and only those lines are turned
into ``Line`` objects and handed to patterns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal, NamedTuple

from . import units
from .lines import PLAIN_GROUPS, PLAIN_SHAPE, Line, parse_line, plain_candidate
from .vocabulary import FACTS, RUNTIME_KIND_SERIES, Phase


class Kind(StrEnum):
    """What an event is about; the boot assembler dispatches on this."""

    fact = "fact"
    shape = "shape"
    failure = "failure"
    runtime = "runtime"
    marker = "marker"
    hint = "hint"
    meta = "meta"
    counted = "count"  # (not "count": that would hide str.count)


class Marker(StrEnum):
    """How far a boot has got: its start-up lines, its progress, and that it is up."""

    start_banner = "start:banner"
    start_args = "start:args"
    start_engine = "start:engine"
    progress_load = "progress:load"
    progress_loaded = "progress:loaded"
    progress_profiled = "progress:profiled"
    progress_kv = "progress:kv"
    progress_capture = "progress:capture"
    ready = "ready"
    serving = "serving"  # a line that tells requests were being served
    traceback = "traceback"  # a traceback's header or one of its frames
    stop = "stop"  # a stop that was asked for (SIGTERM, Ctrl-C): the server shutting itself down


class Counter(StrEnum):
    """The lines a boot counts instead of reading."""

    access = "access"
    request = "request"


SIZE = "size"  # a field unit meaning "the value carries its own unit": '50.00 MiB'

#: ``fields`` of a rule: pattern group -> (fact name, shape key or failure figure; printed unit)
Fields = dict[str, tuple[str, str | None]]
#: code that reads a matched record: (match, line, record) -> event data, or None for no event
Extractor = Callable[[Any, Line, str], dict[str, Any] | None]


@dataclass(slots=True)
class Event:
    kind: Kind
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
           values: Mapping[str, Any]) -> RuntimeSample:
        """The sample of a record whose figures are named (an extractor's ``values``)."""
        return cls(kind, line, timestamp, engine, tuple(map(values.get, RUNTIME_KIND_SERIES[kind])))

    @property
    def values(self) -> dict[str, Any]:
        """The figures the line printed, by series name."""
        return _by_name(self.kind, self.figures)


def _by_name(kind: str, figures: tuple[Any, ...]) -> dict[str, Any]:
    return {name: v for name, v in zip(RUNTIME_KIND_SERIES[kind], figures, strict=False) if v is not None}


Convert = Callable[[tuple[str, ...]], tuple[int | None, tuple[Any, ...]]]
# a raw line's groups (PLAIN_SHAPE's, then the FastShape's) and its number -> (process, pid, sample)
ReadLine = Callable[[tuple[str, ...], int], tuple[str | None, int | None, "RuntimeSample"]]


def _figure_code(kind: str, groups: Mapping[str, int], figures: Mapping[str, Callable[[str], Any]],
                 offset: int) -> tuple[str, str, dict[str, Any]]:
    """The engine's and the figures' expressions over ``g`` (the groups, the shape's first at
    ``offset``) and the converters they call, for a FastShape."""
    series = RUNTIME_KIND_SERIES[kind]
    unknown = sorted(set(figures) - set(series))
    if unknown:
        raise ValueError(f"{kind} has no series {unknown[0]!r}")
    missing = sorted(set(figures) - set(groups))
    if missing:
        raise ValueError(f"the pattern has no group named {missing[0]!r}")
    names = {f"read_{i}": figures[name] for i, name in enumerate(series) if name in figures}
    parts = [f"read_{i}(g[{groups[name] - 1 + offset}])" if name in figures else "None" for i, name in enumerate(series)]
    engine = f"int(g[{groups['engine'] - 1 + offset}])" if "engine" in groups else "None"
    return engine, f"({', '.join(parts)},)", {"int": int, **names}


def _converter(kind: str, groups: Mapping[str, int], figures: Mapping[str, Callable[[str], Any]]) -> Convert:
    """``groups -> (engine, figures in the kind's series order)`` for a FastShape.

    The function is generated once from the declaration, so reading a record costs what a
    hand-written one does (a served log has millions): each figure is its named group's text
    through its converter, a series the shape does not print is None."""
    engine, figures_code, names = _figure_code(kind, groups, figures, 0)
    convert: Convert = eval(f"lambda g: ({engine}, {figures_code})", names)  # noqa: S307
    return convert


def _line_reader(kind: str, groups: Mapping[str, int], figures: Mapping[str, Callable[[str], Any]]) -> ReadLine:
    """``(groups, line number) -> (process, pid, sample)`` for a raw line matched by
    PLAIN_SHAPE followed by a FastShape's pattern: what ``_converter`` reads, with the line's
    process, pid and timestamp, in one generated call (no slicing of the groups, the sample
    made without NamedTuple's __new__: one is made per record of a served log)."""
    engine, figures_code, names = _figure_code(kind, groups, figures, PLAIN_GROUPS)
    # PLAIN_SHAPE's groups: process, pid, level, timestamp, file
    read: ReadLine = eval(f"lambda g, n: (g[0], None if g[1] is None else int(g[1]), "  # noqa: S307
                          f"new((kind, n, g[3], {engine}, {figures_code})))",
                          {**names, "kind": kind, "new": functools.partial(tuple.__new__, RuntimeSample)})
    return read


class LazyPattern:
    """A regex compiled the first time it is used: what an extractor reads out of a rare line
    (an OOM's figures, a failure's) need not be compiled by every ingest's start-up, where the
    built-in grammar's module-level patterns took 15 ms.  ``search`` and ``match`` as a
    compiled pattern's."""

    __slots__ = ("_rx", "pattern")

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._rx: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        rx = self._rx
        if rx is None:
            rx = self._rx = re.compile(self.pattern)
        return rx

    def search(self, string: str) -> re.Match[str] | None:
        return self.compiled().search(string)

    def match(self, string: str) -> re.Match[str] | None:
        return self.compiled().match(string)


@dataclass(frozen=True)
class FastShape:
    """The one exact shape of a runtime record that a served log holds by the million: a regex for
    the whole message whose groups are named after the series they print (and ``engine``), and
    how each figure is read (``figures``: series name -> converter).  A record in any other shape
    takes the rule's general extractor; tests hold both to the same result."""

    kind: str  # the runtime sample kind ("engine_stats", "spec_decode")
    pattern: str
    figures: Mapping[str, Callable[[str], Any]]
    convert: Convert = field(init=False, repr=False, compare=False)
    read_line: ReadLine = field(init=False, repr=False, compare=False)  # the same, of a whole plain line

    def __post_init__(self) -> None:
        groups = re.compile(self.pattern).groupindex
        object.__setattr__(self, "convert", _converter(self.kind, groups, self.figures))
        object.__setattr__(self, "read_line", _line_reader(self.kind, groups, self.figures))

    def data(self, groups: tuple[str, ...]) -> dict[str, Any]:
        """The event data the general extractor gives for the record."""
        engine, figures = self.convert(groups)
        return {"kind": self.kind, "engine": engine, "values": _by_name(self.kind, figures)}


@dataclass(frozen=True)
class Sample:
    """A line a rule must read, and what it must yield from it: the event's figures by name
    (facts, failure figures, shape keys, runtime series), each as its stored value (``plain``);
    None checks only that the rule reads the line (a grammar pack's samples).  ``source`` says
    where the line is from: a real fixture and line number, or the reference's section."""

    line: str
    yields: Mapping[str, Any] | None = None
    source: str = ""


def plain(value: Any) -> Any:
    """Event data as a sample states it: a printed figure (a ``Quantity``, a shape value) as
    its value, containers item by item."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, StrEnum):  # a vocabulary name: its stored text
        return str(value)
    if not isinstance(value, (str, int, float, bool)) and hasattr(value, "value"):
        return plain(value.value)
    return value


def sample_problem(rule: Rule, sample: str | Sample) -> str | None:
    """What is wrong with one of a rule's samples (None: it reads as stated) — the one check of
    a grammar pack's samples when it loads and of the built-in rules' when they are imported."""
    text, want = (sample, None) if isinstance(sample, str) else (sample.line, sample.yields)
    if rule.anchor not in text:
        return f"sample {text!r} does not contain the anchor {rule.anchor!r}"
    if rule.kind is Kind.counted:  # counted by its anchor, never matched
        return None
    line = parse_line(0, text)
    events = rule.events(line, line.message, text)
    if not events:
        return f"sample {text!r} does not match pattern {rule.pattern!r}"
    if want is not None:
        got = plain(events[0].data)
        if got != plain(want):
            return f"sample {text!r} yields {got!r}, not {plain(want)!r}"
    return None


@dataclass(kw_only=True, eq=False)
class Rule:
    """What every rule has: a name, the anchor literal a line must hold, and an optional pattern
    (``syntax``: a regex, or a `parse` format as grammar packs write them).  A rule without a
    pattern fires on its anchor alone."""

    kind: ClassVar[Kind]
    name: str
    anchor: str
    pattern: str | None = None
    syntax: Literal["regex", "parse"] = "regex"
    wraps: bool = False  # the record may go on in unprefixed terminal-wrapped lines
    rank_from_prefix: bool = True
    pack: str | None = None
    samples: tuple[str | Sample, ...] = ()  # lines it must read (a pack's: checked at load; the built-in
    # rules': ``vllm_samples``, checked when ``vllm`` is imported)
    _compiled: Any = field(default=None, init=False, repr=False)
    _ready: bool = field(default=False, init=False, repr=False)

    def compile(self) -> None:
        if self.pattern is None:
            self._compiled = None
        elif self.syntax == "parse":
            import parse as parselib  # only grammar packs write `parse` formats: not loaded without one

            self._compiled = parselib.compile(self.pattern, case_sensitive=True)
        else:
            self._compiled = re.compile(self.pattern)
        self._ready = True

    def search(self, message: str) -> Any:
        if not self._ready:
            self.compile()
        if self._compiled is None:
            return True  # anchor-only rule
        if self.syntax == "parse":
            # a whole-message match first: `parse` fields are lazy, so searching
            # "mode {m}" in "mode precise" would stop at "p"
            return self._compiled.parse(message) or self._compiled.search(message)
        return self._compiled.search(message)

    def events(self, line: Line, record: str, text: str) -> list[Event]:
        m = self.search(record)
        if not m:
            return []
        try:
            data = self.read(m, line, record)
        except (ValueError, OverflowError):
            # a figure out of range or no number (units.UnitError is a ValueError) that an
            # extractor did not read figure by figure: the line is not read, never guessed at,
            # and the boot and the files after it are (issue 38)
            return []
        if data is None:
            return []
        return [Event(self.kind, line, text, data, self)]

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        """The event data of a matched record; None: no event after all."""
        return {}


def _field_values(fields: Fields, m: Any, record: str,
                  bare: Callable[[str], Any] | None = None) -> dict[str, Any] | None:
    """Each field's printed figure in its unit (``bare`` reads one printed without a unit);
    None when the rule has fields and not one of them could be read."""
    values: dict[str, Any] = {}
    for group, (name, unit) in fields.items():
        printed = _printed(m, group, record)
        if printed is None:
            continue
        if bare is not None and unit is None:
            values[name] = bare(printed)
            continue
        try:
            q = units.size(printed) if unit == SIZE else units.quantity(printed, unit)
        except units.UnitError:
            continue  # a damaged figure is not guessed at
        values[name] = q
    if not values and fields:
        return None
    return values


def signed_figures(values: dict[str, Any] | None) -> dict[str, Any] | None:
    """``values`` without a figure printed below zero whose name cannot be (every vocabulary
    name but those ``FactSpec.signed`` marks): such a figure is not read — never read as its
    digits without the "-" — and the others stay.  None when nothing is left."""
    if not values:
        return values
    kept = {name: q for name, q in values.items()
            if not (isinstance(q, units.Quantity) and q.value < 0 and name in FACTS and not FACTS[name].signed)}
    return kept or None


@dataclass(kw_only=True, eq=False)
class FactRule(Rule):
    """Figures that become facts: ``fields`` maps a pattern group to (fact name, printed unit)."""

    kind: ClassVar[Kind] = Kind.fact
    fields: Fields = field(default_factory=dict)

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        return signed_figures(_field_values(self.fields, m, record))


@dataclass(kw_only=True, eq=False)
class ShapeRule(Rule):
    """The deploy's shape: ``fields`` (group -> shape key) or ``extract`` for a whole dump."""

    kind: ClassVar[Kind] = Kind.shape
    fields: Fields = field(default_factory=dict)
    extract: Extractor | None = None

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        if self.extract is not None:
            return self.extract(m, line, record)
        return _field_values(self.fields, m, record, bare=_shape_value)


@dataclass(kw_only=True, eq=False)
class MetaRule(Rule):
    """The engine's identity (version, commit, image digests), read by ``extract``."""

    kind: ClassVar[Kind] = Kind.meta
    extract: Extractor

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        return self.extract(m, line, record)


@dataclass(kw_only=True, eq=False)
class MarkerRule(Rule):
    """A line that marks a boot's start-up, progress or being up."""

    kind: ClassVar[Kind] = Kind.marker
    marker: Marker
    implies_up: bool = False  # the text tells the engine had been serving


@dataclass(kw_only=True, eq=False)
class HintRule(Rule):
    """A traceback frame that tells which start-up phase an exception came from."""

    kind: ClassVar[Kind] = Kind.hint
    phase: Phase


# A source line a traceback echoes above the exception: "raise ValueError(", or the string
# literal continuing it ('f"To serve at least one request …"'); facts.md: a failure's line is
# the one that states it.
_ECHOED_SOURCE = re.compile(r"""(?:raise\s|f?["'])""")


@dataclass(kw_only=True, eq=False)
class FailureRule(Rule):
    """A failure of kind ``failure``; its figures come from ``extract`` or from ``fields``."""

    kind: ClassVar[Kind] = Kind.failure
    failure: str  # a FailureKind, or a grammar pack's own kind
    phase: Phase | None = None  # a phase the text itself tells
    implies_up: bool = False  # the text tells the engine had been serving
    # the kind instead when the traceback's frames show the engine had been serving (a wording
    # printed for start-up and busy-loop exceptions alike)
    runtime_kind: str | None = None
    # read only where no other failure rule reads the line (the generic "SomethingError: …" of
    # facts.md's "exception", which a known wording on the same line names better)
    fallback: bool = False
    fields: Fields = field(default_factory=dict)
    extract: Extractor | None = None

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        if _ECHOED_SOURCE.match(record):
            return None  # a traceback's echo of the raising source line: not where it is stated
        if self.extract is not None:
            return self.extract(m, line, record)
        return _field_values(self.fields, m, record) or {}


@dataclass(kw_only=True, eq=False)
class RuntimeRule(Rule):
    """A runtime record (stats interval, spec decode), read by ``extract`` — or, in its one
    common exact shape, by ``fast`` in one match."""

    kind: ClassVar[Kind] = Kind.runtime
    extract: Extractor
    fast: FastShape | None = None
    _fast: Any = field(default=None, init=False, repr=False)  # FastShape.pattern, compiled
    _fast_line: Any = field(default=None, init=False, repr=False)  # PLAIN_SHAPE + it, compiled

    def compile(self) -> None:
        super().compile()
        if self.fast is not None:
            # ASCII: a figure's \d is 0-9 only (int() reads "٣" as 3; no log prints it), as on the
            # raw line, which is read only when it is ASCII
            self._fast = re.compile(self.fast.pattern, re.ASCII)
            self._fast_line = re.compile(PLAIN_SHAPE + self.fast.pattern, re.ASCII)

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        return self.extract(m, line, record)

    def events(self, line: Line, record: str, text: str) -> list[Event]:
        data = self.fast_data(record)
        if data is not None:
            return [Event(self.kind, line, text, data, self)]
        return super().events(line, record, text)

    def fast_data(self, record: str) -> dict[str, Any] | None:
        """The event data of a record in the rule's FastShape; None for any other record."""
        if self.fast is None:
            return None
        if not self._ready:
            self.compile()
        m = self._fast.fullmatch(record)
        return None if m is None else self.fast.data(m.groups())

    def fast_runtime(self, number: int, raw: bytes) -> tuple[str | None, int | None, RuntimeSample] | None:
        """(process, pid, sample) of a raw line in vLLM's plain shape holding a record in the
        rule's FastShape, read in one match — what ``parse_line`` and ``events`` give for it;
        None for any other line."""
        groups = self.fast_groups(raw)
        return None if groups is None else self.fast.read_line(groups, number)  # type: ignore[union-attr]

    def fast_groups(self, raw: bytes) -> tuple[Any, ...] | None:
        """The groups of a raw line in vLLM's plain shape holding a record in the rule's
        FastShape (PLAIN_SHAPE's, then the shape's: what ``FastShape.read_line`` reads); None
        for any other line."""
        if self.fast is None or not plain_candidate(raw):
            return None
        if not self._ready:
            self.compile()
        m = self._fast_line.fullmatch(raw.decode("ascii"))
        return None if m is None else m.groups()


@dataclass(kw_only=True, eq=False)
class CountRule(Rule):
    """Lines holding the anchor are counted as ``counter`` lines, never matched."""

    kind: ClassVar[Kind] = Kind.counted
    counter: Counter


def _printed(m: Any, group: str, record: str) -> str | None:
    """The text a pattern group matched, for both `re` and `parse` results."""
    if isinstance(m, re.Match):
        text: str | None = m.group(group)
        return text
    span = m.spans.get(group)
    if span is None:
        return None
    return record[span[0] : span[1]]


def _shape_value(printed: str) -> Any:
    try:
        return units.parse_number(printed)
    except units.UnitError:
        return printed


# A physical line after a message-only record that starts a record of its own, not its continuation.
_NEW_RECORD = re.compile(r"(?:Traceback |File |[\w.]+(?:Error|Exception|Exit)\b)")


def _join_wrapped(line: Line, following: list[str]) -> tuple[str, str]:
    """The record of a line cut by a terminal (mid-word, at a fixed width) or by hand, with its
    continuation lines (no prefix, wrappers peeled), and the evidence: the physical lines.

    A terminal's continuation goes on while each line ends cut too; a message-only record (no
    prefix, no header: a quote, a reporter's paste) may have been wrapped by hand at any word,
    so it goes on to the first blank line or the first line that starts a record of its own."""
    bare = line.process is None and line.level is None
    parts: list[str] = []
    raws: list[str] = []
    for nxt in following:
        cont = parse_line(0, nxt)
        if not cont.message or cont.has_prefix or (bare and _NEW_RECORD.match(cont.message)):
            break
        parts.append(cont.message)
        raws.append(nxt)
        if not bare and not _cut(cont.message):
            break
    if not parts:
        return line.message, line.raw
    return line.message + "".join(parts), "\n".join([line.raw, *raws])


def _cut(message: str) -> bool:
    """Whether a record's line ends where a terminal or a hand cut it: in a word, a number, after
    a comma or an opening parenthesis (a complete record ends in ".", "%", ")" or the like).
    One character looked at: this runs on every stats line off the fast path."""
    return bool(message) and (message[-1].isalnum() or message[-1] in "_,(")


class RuleSet:
    """A set of rules by anchor: which rules a line's anchors call for, and their events.

    Event rules (all but ``CountRule``) see the lines that hold their anchor; count rules are
    counted, not matched: every line holding the anchor counts once for its ``counter``.
    """

    def __init__(self, rules: Iterable[Rule]):
        rules = list(rules)
        self.rules = [r for r in rules if not isinstance(r, CountRule)]
        self.count_rules = [r for r in rules if isinstance(r, CountRule)]
        # no rule compiles here: each does when a line first needs it (most never do in a served
        # log, and start-up is on the clock)
        self.anchors: dict[str, list[Rule]] = {}
        for rule in self.rules:
            self.anchors.setdefault(rule.anchor, []).append(rule)
        self.count_anchors: dict[str, str] = {r.anchor: r.counter for r in self.count_rules}
        self.order = {id(r): i for i, r in enumerate(self.rules)}

    @functools.cached_property
    def _anchor_index(self) -> tuple[re.Pattern[str], dict[str, list[Rule]]]:
        """``rules_for``'s regex of every anchor and what each anchor calls for — built on first
        use: the scanners find anchors themselves, and the one alternation of some 170 anchors
        took 15 ms of every ingest's start-up."""
        ordered = sorted(self.anchors, key=len, reverse=True)
        # zero-width lookahead finds anchors that overlap or start inside one another
        line_re = re.compile("(?=(" + "|".join(re.escape(a) for a in ordered) + "))")
        # rules to try when anchor X is found: X's own, and those whose anchor is inside X
        closure: dict[str, list[Rule]] = {}
        for a in ordered:
            closure[a] = [r for b in ordered if b in a for r in self.anchors[b]]
        return line_re, closure

    @property
    def all_anchors(self) -> list[str]:
        return list(self.anchors) + list(self.count_anchors)

    def rules_for(self, raw: str) -> list[Rule]:
        found: dict[int, Rule] = {}
        line_re, closure = self._anchor_index
        for m in line_re.finditer(raw):
            for rule in closure[m.group(1)]:
                found.setdefault(id(rule), rule)
        return [r for r in self.rules if id(r) in found]

    def count_line(self, text: str) -> dict[str, int]:
        """Lines of ``text`` holding each count anchor, by counter (as ``grep -c`` counts them)."""
        counts: dict[str, int] = {}
        lines = text.split("\n")
        for anchor, counter in self.count_anchors.items():
            n = sum(1 for line in lines if anchor in line)
            if n:
                counts[counter] = counts.get(counter, 0) + n
        return counts

    def match_line(self, line: Line, following: Callable[[], list[str]] | None = None,
                   rules: list[Rule] | None = None) -> list[Event]:
        """Run every rule whose anchor the line holds (or the ``rules`` a scanner found for it);
        ``following`` gives the next physical lines (as in the input, a "\\r" kept: they become
        evidence) for records that may be wrapped."""
        events: list[Event] = []
        for rule in self.rules_for(line.raw) if rules is None else rules:
            record, text = line.message, line.raw
            # a stats record off the fast path (wrapped lines) may be hard-wrapped too; the fast
            # path reads only whole records in their one shape, so it is not slowed by this
            if (rule.wraps or isinstance(rule, RuntimeRule)) and following is not None and _cut(line.message):
                record, text = _join_wrapped(line, following())
            events.extend(rule.events(line, record, text))
        return events
