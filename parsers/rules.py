"""The rule engine: anchor literal + pattern -> events.  Built-in vLLM rules and grammar-pack
rules are the same kind of object and run through the same ``RuleSet``.

A rule never sees a line that does not contain its anchor: ``RuleSet.scan`` finds candidate
lines with one alternation of all anchors over large text blocks, and only those lines are
turned into ``Line`` objects and handed to patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import parse as parselib

from . import units
from .lines import Line, parse_line

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
    rule: "Rule"


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
    _compiled: Any = field(default=None, repr=False)

    def compile(self) -> None:
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

    def events(self, line: Line, record: str, text: str) -> list[Event]:
        m = self.search(record)
        if not m:
            return []
        if self.extract is not None:
            data = self.extract(m, line, record)
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


class RuleSet:
    """A set of rules with their combined anchor scanner."""

    def __init__(self, rules: Iterable[Rule]):
        self.rules = list(rules)
        for rule in self.rules:
            rule.compile()
        self.anchors: dict[str, list[Rule]] = {}
        for rule in self.rules:
            self.anchors.setdefault(rule.anchor, []).append(rule)
        ordered = sorted(self.anchors, key=len, reverse=True)
        self._block_re = re.compile("|".join(re.escape(a) for a in ordered))
        # zero-width lookahead finds anchors that overlap or start inside one another
        self._line_re = re.compile("(?=(" + "|".join(re.escape(a) for a in ordered) + "))")
        # rules to try when anchor X is found: X's own, and those whose anchor is inside X
        self._closure: dict[str, list[Rule]] = {}
        for a in ordered:
            self._closure[a] = [r for b in ordered if b in a for r in self.anchors[b]]

    def rules_for(self, raw: str) -> list[Rule]:
        found: dict[int, Rule] = {}
        for m in self._line_re.finditer(raw):
            for rule in self._closure[m.group(1)]:
                found.setdefault(id(rule), rule)
        return [r for r in self.rules if id(r) in found]

    def match_line(self, line: Line, following: Callable[[], list[str]] | None = None) -> list[Event]:
        """Run every rule whose anchor the line holds; ``following`` gives the next physical
        lines for rules whose records may be terminal-wrapped."""
        events: list[Event] = []
        for rule in self.rules_for(line.raw):
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

    def scan(self, blocks: Iterable[str]) -> Iterator[tuple[Line | None, list[Event], int]]:
        """Yield ``(line, events, lines_so_far)`` for each line that holds an anchor.

        Lines without anchors are counted (``newline`` counts per block) but never built.
        A final ``(None, [], total_lines)`` reports the line count.
        """
        base = 0  # lines before the current block
        for block in blocks:
            pos_line = 0  # lines counted from block start up to `pos`
            pos = 0
            last_start = -1
            for m in self._block_re.finditer(block):
                start = block.rfind("\n", 0, m.start()) + 1
                if start == last_start:
                    continue
                last_start = start
                pos_line += block.count("\n", pos, start)
                pos = start
                end = block.find("\n", start)
                if end < 0:
                    end = len(block)
                number = base + pos_line + 1
                line = parse_line(number, block[start:end])

                def following(end: int = end) -> list[str]:
                    out, p = [], end + 1
                    for _ in range(3):
                        if p >= len(block):
                            break
                        q = block.find("\n", p)
                        q = len(block) if q < 0 else q
                        out.append(block[p:q].rstrip("\r"))
                        p = q + 1
                    return out

                events = self.match_line(line, following)
                yield line, events, number
            base += block.count("\n")
            if block and not block.endswith("\n"):
                base += 1
        yield None, [], base


def iter_lines(text: str) -> Iterator[Line]:
    """Every physical line of a text as a Line (used by tools that look at all lines)."""
    for number, raw in enumerate(text.splitlines(), start=1):
        yield parse_line(number, raw)
