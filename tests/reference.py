"""The slow, obvious way to parse a log: every line through the line model and every rule.

The block scanner (either engine, grep counting or not) must give exactly what this gives."""

from __future__ import annotations

from pathlib import Path

from ledger import parsers
from ledger.parsers.boots import BootAssembler
from ledger.parsers.items import Counts, End, Header, LineHit
from ledger.parsers.lines import parse_line
from ledger.parsers.source import excerpt_header_end


def reference_boots(path: Path, rules: parsers.RuleSet, year: int) -> list[parsers.Boot]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    header = excerpt_header_end(text[:65536])
    asm = BootAssembler(default_year=year)
    boots = asm.consume(Header(header, {}))
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        if number <= header:
            continue
        counts = rules.count_line(raw)
        if not rules.rules_for(raw):
            boots += asm.consume(Counts(counts))
            continue
        line = parse_line(number, raw)

        def following(number: int = number) -> list[str]:
            return lines[number:number + 3]

        boots += asm.consume(LineHit(line, rules.match_line(line, following), counts))
    return boots + asm.consume(End(len(lines)))  # the assembler hands each boot out once, keeping none
