"""Pure log parsing for ledger: vLLM log text in, ``Boot`` records out.

No database, no pandas, no click: ``parsers.parse_file(path) -> list[Boot]`` works alone
(from the repository's folder, on one of its real fixtures):

    >>> from ledger import parsers
    >>> boots = parsers.parse_file("fixtures/real/018_v1-0.8.5-compose-qwen3-tp2-capture-crash.log")
    >>> [(boot.outcome, boot.first_line, boot.last_line) for boot in boots]
    [(<Outcome.failed: 'failed'>, 11, 19)]
    >>> boots[0].summary("kv_cache_tokens").value
    198784
    >>> [f"{failure.kind}@{failure.phase}" for failure in boots[0].failures]
    ['worker_died@graph_capture']

This module only names the public API; each name loads its module on first use, so
``import ledger.parsers.units`` (say) loads nothing else.  The modules, from bytes to boots:
``source`` (reading) -> ``fast`` (finding lines; ``ScanOptions``) -> ``lines`` (the line model)
-> ``rules`` + ``vllm`` + ``packs`` (the grammar) -> ``items`` (the stream) -> ``boots`` (the
assembler) -> ``pipeline`` (all of it for one source).  ``vocabulary`` and ``units`` name and
convert what is stored.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Boot": "boots", "BootAssembler": "boots", "Fact": "boots", "Failure": "boots", "ShapeValue": "boots",
    "Line": "lines", "parse_line": "lines",
    "Event": "rules", "Rule": "rules", "RuleSet": "rules", "RuntimeSample": "rules",
    "Source": "source", "SourceError": "source",
    "ScanOptions": "fast.options",
    "Parse": "pipeline", "ParseResult": "pipeline", "builtin_ruleset": "pipeline", "default_year": "pipeline",
    "parse_file": "pipeline", "parse_source": "pipeline", "parse_text": "pipeline", "start": "pipeline",
}
__all__ = [
    "Boot", "BootAssembler", "Event", "Fact", "Failure", "Line", "Parse", "ParseResult", "Rule", "RuleSet",
    "RuntimeSample", "ScanOptions", "ShapeValue", "Source", "SourceError", "builtin_ruleset", "default_year",
    "parse_file", "parse_line", "parse_source", "parse_text", "start",
]

if TYPE_CHECKING:
    from .boots import Boot, BootAssembler, Fact, Failure, ShapeValue
    from .fast.options import ScanOptions
    from .lines import Line, parse_line
    from .pipeline import (
        Parse,
        ParseResult,
        builtin_ruleset,
        default_year,
        parse_file,
        parse_source,
        parse_text,
        start,
    )
    from .rules import Event, Rule, RuleSet, RuntimeSample
    from .source import Source, SourceError


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ledger.parsers' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next look-up is a plain one
    return value
