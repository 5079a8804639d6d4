"""Grammar packs: a fork's own log lines declared in a TOML file, not in code.

A pack is one TOML file (the format is a contract, documented in docs/guide.md)::

    name = "myfork"
    description = "what log this reads"

    [[rule]]
    pattern = "expert arena: {expert_arena_slots:n} slots"   # `parse` syntax, on the message part
    samples = ["expert arena: 6,499 slots"]                  # must match when the pack loads

Each named field becomes a fact of that name (or a shape key with ``shape = true``, or a
figure of a failure with ``failure = "kind"``).  ``units`` says what unit a field is printed in;
memory is stored in bytes like every built-in fact.  Pack rules are the same ``FactRule``,
``ShapeRule`` and ``FailureRule`` objects as the built-in vLLM grammar's, run by the same engine.

Everything invalid is refused at load time with the file, the rule and what is wrong — and so
is what would let a pack break every ingest: a field named like a built-in fact (unless the rule
lists it in ``builtin_facts``), more than ``MAX_TEXT_FIELDS`` untyped fields, a pattern that
backtracks on near misses of its own samples (``_probe_cost``), a TOML nesting bomb.  A pack's
line never starts or splits a boot (``boots.BootAssembler``).
"""

from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import units
from .lines import parse_line
from .packdirs import folders
from .rules import FactRule, FailureRule, Fields, Rule, RuleSet, ShapeRule, sample_problem
from .source import Source, excerpt_header_end
from .units import PACK_UNITS
from .vllm import BUILTIN_RULES
from .vocabulary import FACTS, is_snake_case_name

if TYPE_CHECKING:  # tomllib and parse load with the first pack: an ingest without one pays neither
    import parse as parselib

PACK_KEYS = {"name", "description", "rule"}
RULE_KEYS = {"pattern", "samples", "units", "anchor", "rank_from_prefix", "failure", "shape", "builtin_facts"}
# a field that matches any text ({name}: ".+?") costs a factor of the line's length when a line
# holding the anchor does not match; more than this many make a near miss take seconds
MAX_TEXT_FIELDS = 2
# what matching a rule may cost on a near miss of its own samples (probed at load), in CPU
# seconds of the probing thread: wall time would count what else the machine runs, and refuse a
# good pack on a busy machine (a 3 ms probe took 286 ms of wall time with six test workers on
# two cores)
MAX_PROBE_SECONDS = 0.25
# a pack is a few KiB of TOML (the bundled one: 3 KiB); a larger file is not read
MAX_PACK_BYTES = 1024 * 1024
BUNDLED_DIR = Path(__file__).resolve().parent / "packs"


class PackError(ValueError):
    """A pack that cannot be loaded; the message names the file, the rule and the problem."""


@dataclass
class Pack:
    name: str
    description: str
    path: Path
    origin: str  # "--grammar", "LEDGER_GRAMMARS", "user config", "bundled"
    rules: list[Rule] = field(default_factory=list)


def _fields(compiled: parselib.Parser) -> list[str]:
    return list(compiled.named_fields)


def longest_literal(pattern: str) -> str:
    """The longest run of literal text in a `parse` pattern (braces doubled are literal)."""
    text = pattern.replace("{{", "\0").replace("}}", "\1")
    pieces = re.split(r"\{[^{}]*\}", text)
    best = max(pieces, key=len) if pieces else ""
    return best.replace("\0", "{").replace("\1", "}")


def _rule_error(path: Path, index: int, msg: str) -> PackError:
    return PackError(f"{path}: rule {index}: {msg}")


def load_pack(path: str | Path, origin: str = "--grammar") -> Pack:
    import tomllib

    path = Path(path)
    raw = _read_pack(path)
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PackError(f"{path}: not valid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise PackError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # arrays or tables nested thousands deep: no pack is
        raise PackError(f"{path}: not a grammar pack: nested too deep") from None
    unknown = sorted(set(doc) - PACK_KEYS)
    if unknown:
        raise PackError(f"{path}: unknown key {unknown[0]!r} (a pack has: name, description, [[rule]])")
    name = doc.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", name or ""):
        raise PackError(f"{path}: 'name' must be a lower-case name such as \"myfork\"")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise PackError(f"{path}: 'description' must be text")
    rules_doc = doc.get("rule")
    if not isinstance(rules_doc, list) or not rules_doc:
        raise PackError(f"{path}: no [[rule]] tables")
    pack = Pack(name, description, path, origin)
    for index, r in enumerate(rules_doc, start=1):
        pack.rules.append(_load_rule(path, name, index, r))
    return pack


def _read_pack(path: Path) -> bytes:
    """A pack file's bytes, at most ``MAX_PACK_BYTES``: a device (``/dev/zero``), a named pipe
    or a file larger than any pack is refused before it is read, as a log that is a device is."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise PackError(f"{path}: is a directory, not a grammar pack")
        if not stat.S_ISREG(st.st_mode):  # /dev/zero, /dev/urandom, a FIFO: endless, or no pack
            raise PackError(f"{path}: is a device, not a grammar pack (a pack is a TOML file)")
        if st.st_size > MAX_PACK_BYTES:
            raise PackError(f"{path}: {st.st_size:,} bytes is too large for a grammar pack "
                            f"(at most {MAX_PACK_BYTES // 2**20} MiB)")
        with open(path, "rb") as f:
            raw = f.read(MAX_PACK_BYTES + 1)  # a file that grew after the stat is cut here
    except FileNotFoundError:
        raise PackError(f"{path}: no such grammar pack") from None
    except OSError as exc:
        raise PackError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_PACK_BYTES:
        raise PackError(f"{path}: too large for a grammar pack (at most {MAX_PACK_BYTES // 2**20} MiB)")
    return raw


def _load_rule(path: Path, pack: str, index: int, r: Any) -> Rule:
    if not isinstance(r, dict):
        raise _rule_error(path, index, "must be a table")
    unknown = sorted(set(r) - RULE_KEYS)
    if unknown:
        raise _rule_error(path, index, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(RULE_KEYS))})")
    pattern = r.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        raise _rule_error(path, index, "'pattern' is required and must be text")
    import parse as parselib

    try:
        compiled = parselib.compile(pattern, case_sensitive=True)
    except (ValueError, KeyError, re.error, NotImplementedError) as exc:
        raise _rule_error(path, index, f"pattern {pattern!r} does not compile: {exc}") from None
    names = _fields(compiled)
    if compiled.fixed_fields:
        raise _rule_error(path, index, f"pattern {pattern!r} has unnamed fields; name every field")
    failure = r.get("failure")
    shape = r.get("shape", False)
    if failure is not None and (not isinstance(failure, str) or not is_snake_case_name(failure)):
        raise _rule_error(path, index, f"'failure' must be a snake_case failure kind, not {failure!r}")
    if not isinstance(shape, bool):
        raise _rule_error(path, index, "'shape' must be true or false")
    if shape and failure:
        raise _rule_error(path, index, "a rule is either 'shape' or 'failure', not both")
    if not names and not failure:
        raise _rule_error(path, index, f"pattern {pattern!r} has no named field, so it yields nothing")
    for n in names:
        if not is_snake_case_name(n):
            raise _rule_error(path, index, f"field {n!r} is not a snake_case name (e.g. expert_arena_slots)")
    builtin = r.get("builtin_facts", [])
    if not isinstance(builtin, list) or not all(isinstance(b, str) and b in FACTS for b in builtin):
        raise _rule_error(path, index, "'builtin_facts' lists built-in fact names the rule reads, "
                                       "such as [\"kv_cache_tokens\"]")
    if not shape and not failure:
        for n in names:
            if n in FACTS and n not in builtin:
                raise _rule_error(path, index, f"field {n!r} is a built-in fact (ledger reads it from vLLM's own "
                                               f"line); name it otherwise, or say the rule reads it: "
                                               f"builtin_facts = [\"{n}\"]")
    text_fields = re.findall(r"\{(\w+)\}", pattern.replace("{{", "").replace("}}", ""))  # no type: ".+?"
    if len(text_fields) > MAX_TEXT_FIELDS:
        raise _rule_error(path, index, f"pattern {pattern!r} has {len(text_fields)} fields that match any text "
                                       f"({', '.join(text_fields)}); at most {MAX_TEXT_FIELDS}: give the others "
                                       f"a type ({{x:d}}, {{x:g}}, {{x:w}}, {{x:S}})")
    unit_map = r.get("units", {})
    if not isinstance(unit_map, dict):
        raise _rule_error(path, index, "'units' must be a table such as { pool_bytes = \"MiB\" }")
    for fname, unit in unit_map.items():
        if fname not in names:
            raise _rule_error(path, index, f"units names {fname!r}, which is not a field of the pattern")
        if unit not in PACK_UNITS:
            raise _rule_error(path, index, f"unit {unit!r} of {fname!r} is not one of {', '.join(PACK_UNITS)}")
        if unit in units.BYTE_UNITS and not fname.endswith("_bytes"):
            raise _rule_error(path, index, f"{fname!r} is printed in {unit}, so its name must end in _bytes "
                                           f"(memory is stored in bytes)")
    rank_from_prefix = r.get("rank_from_prefix", True)
    if not isinstance(rank_from_prefix, bool):
        raise _rule_error(path, index, "'rank_from_prefix' must be true or false")
    anchor = r.get("anchor")
    if anchor is None:
        anchor = longest_literal(pattern)
        if not anchor.strip():
            raise _rule_error(path, index, f"pattern {pattern!r} has no literal text to anchor on; give 'anchor'")
    elif not isinstance(anchor, str):
        raise _rule_error(path, index, f"'anchor' must be a string (text every line of the rule holds), not {anchor!r}")
    elif not anchor.strip():
        # the anchor given is what is wrong: a blank anchor is in nearly every line
        what = "empty" if not anchor else "only whitespace"
        literal = longest_literal(pattern)
        such = f", such as {literal!r}" if literal.strip() else ""
        raise _rule_error(path, index, f"anchor {anchor!r} is {what}; give text every line of the rule holds{such}")
    samples = r.get("samples")
    if not isinstance(samples, list) or not samples or not all(isinstance(s, str) for s in samples):
        raise _rule_error(path, index, "'samples' must list at least one line the rule matches")
    fields: Fields = {n: (n, unit_map.get(n)) for n in names}
    common: dict[str, Any] = {
        "name": f"{pack}:{index}", "anchor": anchor, "pattern": pattern, "syntax": "parse",
        "rank_from_prefix": rank_from_prefix, "pack": pack, "samples": tuple(samples),
    }
    rule: Rule
    if shape:
        rule = ShapeRule(fields=fields, **common)
    elif failure:
        rule = FailureRule(failure=failure, fields=fields, **common)
    else:
        rule = FactRule(fields=fields, **common)
    rule.compile()
    for sample in samples:  # the built-in rules' samples go through the same check (vllm.py)
        problem = sample_problem(rule, sample)
        if problem is not None:
            raise _rule_error(path, index, problem)
    _probe_cost(path, index, rule, samples)
    return rule


def _probe_cost(path: Path, index: int, rule: Rule, samples: list[str]) -> None:
    """Refuse a rule whose matching backtracks badly: its pattern is timed on near misses of
    its own samples (the sample cut short or run on, and the anchor, alone or where the sample
    has it, followed by up to 2 KiB of words; the sample with every field's text made longer
    and longer, ``_grown_fields``), the lines that cost a backtracking pattern the most."""
    for sample in samples:
        message = parse_line(0, sample).message
        at = message.find(rule.anchor)
        head = message[: at + len(rule.anchor)] if at >= 0 else message
        # longer and longer: a pattern whose cost grows with the cube of the line is caught on
        # a short probe, before a long one would take seconds
        probes = [message[:-1], message + " x" * 16,
                  *(p + " ab" * n for n in (50, 150, 300, 700) for p in (rule.anchor, head))]
        for probe in probes:
            spent = _timed(rule, probe)
            if spent > MAX_PROBE_SECONDS:
                raise _rule_error(path, index, f"pattern {rule.pattern!r} backtracks: {spent * 1000:.0f} ms on a "
                                               f"line that nearly matches its sample (at most "
                                               f"{MAX_PROBE_SECONDS * 1000:.0f} ms); give its fields types")
        # the sample with each field's text run on (12 digits of twelve {d} fields: one
        # split; 40 digits: 10^10 splits to try before a near miss fails), longer and longer
        for grown in _grown_fields(rule, message):
            for probe in grown:
                spent = _timed(rule, probe)
                if spent > MAX_PROBE_SECONDS:
                    raise _rule_error(path, index, f"pattern {rule.pattern!r} backtracks: {spent * 1000:.0f} ms on "
                                                   f"its sample with longer figures (at most "
                                                   f"{MAX_PROBE_SECONDS * 1000:.0f} ms); put literal text between "
                                                   f"its fields")


def _timed(rule: Rule, probe: str) -> float:
    import time

    started = time.thread_time()  # this thread's CPU: see MAX_PROBE_SECONDS
    rule.search(probe)
    return time.thread_time() - started


# how much longer each field's text is made, step by step: a cost exponential in the length is
# caught a few steps past the sample, before one probe takes seconds
_GROWTH = (1, 2, 3, 4, 6, 8, 11, 14, 18, 23, 28)


def _grown_fields(rule: Rule, message: str) -> list[list[str]]:
    """Near misses of a sample, step by step: each field's matched text run on (its last
    character repeated), the line then cut short, run on into text no field reads, or cut after
    its last field."""
    found = rule.search(message)
    spans = sorted(getattr(found, "spans", {}).values()) if found is not None else []
    spans = [(a, b) for a, b in spans if b > a]
    steps = []
    for k in _GROWTH:
        parts, last, end = [], 0, 0
        for _start, b in spans:
            parts.append(message[last:b] + message[b - 1] * k)
            last = b
            end = sum(map(len, parts))
        grown = "".join(parts) + message[last:]
        steps.append([grown[:-1], grown + "#", grown[:end] + "#"])
    return steps if spans else []


# -- finding packs (the folders: packdirs) ------------------------------------------------------------


def bundled(name: str) -> Path | None:
    p = BUNDLED_DIR / f"{name}.toml"
    return p if p.is_file() else None


def resolve(spec: str) -> Path:
    """A pack path, or the name of a pack bundled with ledger (``radiance``)."""
    p = Path(spec)
    if p.exists() or spec.endswith(".toml") or "/" in spec:
        return p
    b = bundled(spec)
    if b is None:
        raise PackError(f"{spec}: no such grammar pack file, and no bundled pack of that name")
    return b


def discover(explicit: list[str] | tuple[str, ...] = ()) -> list[Pack]:
    """Packs in use: the ``--grammar`` ones, then ``$LEDGER_GRAMMARS``, then the user dir."""
    packs: list[Pack] = []
    for spec in explicit:
        path = resolve(spec)
        packs.append(load_pack(path, "bundled" if path.parent == BUNDLED_DIR else "--grammar"))
    for folder, origin in folders():
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            packs.append(load_pack(path, origin))
    seen: dict[str, Pack] = {}
    unique: list[Pack] = []
    for p in packs:
        if p.name in seen:
            if seen[p.name].path.resolve() == p.path.resolve():
                continue
            raise PackError(f"{p.path}: pack name {p.name!r} is already used by {seen[p.name].path}")
        seen[p.name] = p
        unique.append(p)
    return unique


def pack_rules(packs: list[Pack]) -> list[Rule]:
    return [r for p in packs for r in p.rules]


# -- checking a pack against logs --------------------------------------------------------------------

# a figure with a unit a person would want in the ledger
FIGURE_WITH_UNIT = re.compile(r"\d[\d,]*(?:\.\d+)?\s?(?:GiB|MiB|KiB|GB|MB|slots|tokens|t/s|%)")


@dataclass
class RuleHits:
    rule: Rule
    count: int = 0
    first: tuple[str, int, dict[str, Any]] | None = None  # (log, line, values)


@dataclass
class CheckReport:
    pack: Pack
    hits: list[RuleHits]
    unclaimed: list[tuple[str, int, str]]  # (log, line number, raw line)
    lines: int = 0


def _next_lines(lines: list[str], i: int) -> list[str]:
    return lines[i + 1:i + 4]


def check(pack: Pack, logs: list[str], others: list[Rule] | None = None,
          unread: re.Pattern[str] = FIGURE_WITH_UNIT) -> CheckReport:
    """Run ``pack`` (with the built-in grammar and ``others``) over ``logs``: per rule how many
    lines matched and the first match, and the lines nobody claimed whose message ``unread``
    finds something in (by default: a figure with a unit).  A record wrapped over several lines
    claims its continuation lines too."""
    ruleset = RuleSet(list(BUILTIN_RULES) + list(others or []) + pack.rules)
    hits = {id(r): RuleHits(r) for r in pack.rules}
    report = CheckReport(pack, list(hits.values()), [])

    for log in logs:
        number = 0
        header = None
        for chunk in Source(log).blocks():
            block = chunk.decode("utf-8", errors="replace")
            if header is None:
                header = excerpt_header_end(block)
            lines = block.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            claimed_to = 0  # the last line a wrapped record read
            for i, raw in enumerate(lines):
                number += 1
                if number <= header:
                    continue
                line = parse_line(number, raw)
                following = functools.partial(_next_lines, lines, i)
                events = ruleset.match_line(line, following) if ruleset.rules_for(raw) else []
                if ruleset.count_line(raw):
                    continue  # counted (access and request lines), so claimed
                for ev in events:
                    claimed_to = max(claimed_to, number + ev.text.count("\n"))
                    h = hits.get(id(ev.rule))
                    if h is None:
                        continue
                    h.count += 1
                    if h.first is None:
                        values = {k: getattr(v, "printed", v) for k, v in ev.data.items()}
                        h.first = (log, number, values)
                if not events and number > claimed_to and unread.search(line.message):
                    report.unclaimed.append((log, number, raw.rstrip("\r")))
        report.lines += number
    return report
