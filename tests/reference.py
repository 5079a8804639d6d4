"""The slow, obvious way to parse a log: every line through the line model and every rule.

The block scanner (either engine, grep counting or not) must give exactly what this gives."""

from __future__ import annotations

from pathlib import Path

import parsers
from parsers import _excerpt_header_end
from parsers.boots import BootAssembler
from parsers.lines import parse_line


def reference_boots(path: Path, rules: parsers.RuleSet, year: int) -> list[parsers.Boot]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    header = _excerpt_header_end(text[:65536])
    asm = BootAssembler(first_line=header + 1, default_year=year)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        if number <= header:
            continue
        asm.add_counts(rules.count_line(raw))
        if not rules.rules_for(raw):
            continue
        line = parse_line(number, raw)

        def following(number: int = number) -> list[str]:
            return [x.rstrip("\r") for x in lines[number:number + 3]]

        asm.feed(line, rules.match_line(line, following))
    boots = asm.finish(len(lines))
    if not boots:
        asm._new(header + 1)
        boots = asm.finish(max(len(lines), header + 1))
    return boots
