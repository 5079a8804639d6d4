"""Drafts the built-in rules' samples (``ledger/parsers/vllm_samples.py``): for each rule of the
built-in grammar without one, the plainest real line of ``fixtures/real`` it reads (the
excerpts' ``# …`` headers left out), else a line the reference (docs/vllm-log-lines.md) quotes
as vLLM prints it, else one of tests/test_vllm_wordings.py's lines in vLLM's exact format, with
the figures the rule yields from it.  Rules that keep a sample keep it.
The draft is a proposal: check each figure against its line before keeping it.

    python tests/rule_samples.py            # lists the rules without a sample, and a draft for each
    python tests/rule_samples.py --write    # rewrites ledger/parsers/vllm_samples.py with the drafts
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ledger.parsers.lines import parse_line  # noqa: E402
from ledger.parsers.rules import Kind, Rule, Sample, plain  # noqa: E402
from ledger.parsers.source import excerpt_header_end  # noqa: E402

TARGET = ROOT / "ledger" / "parsers" / "vllm_samples.py"


def _fixture_lines() -> list[tuple[str, str]]:
    out = []
    for log in sorted((ROOT / "fixtures" / "real").glob("*.log")):
        text = log.read_bytes().decode("utf-8", errors="replace")
        skip = excerpt_header_end(text[:65536])
        for number, raw in enumerate(text.split("\n"), 1):
            if number > skip and raw.strip():
                out.append((f"fixtures/real/{log.name}:{number}", raw.rstrip("\r")))
    return out


def _reference_lines() -> list[tuple[str, str]]:
    """Lines the reference quotes in backticks or code blocks, with the section they sit in."""
    out, section = [], "ref"
    for raw in (ROOT / "docs" / "vllm-log-lines.md").read_text().split("\n"):
        head = re.match(r"#+\s+(\d+(?:\.\d+)*)", raw)
        if head:
            section = f"docs/vllm-log-lines.md §{head.group(1)}"
        for quoted in re.findall(r"`([^`]{8,})`", raw):
            # a line as vLLM prints it, not the format string it is printed from
            if not re.search(r"%[-\d.(]*[sdfrx]|\{\w*[}:!]|…|^[\"']|^f\"|^\w+Error\(", quoted):
                out.append((section, quoted))
    return out


def _wording_lines() -> list[tuple[str, str]]:
    """The lines tests/test_vllm_wordings.py writes in vLLM's exact format (for a wording no real
    fixture and no quote of the reference holds)."""
    import ast

    path = ROOT / "tests" / "test_vllm_wordings.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for raw in node.value.split("\n"):
                if len(raw) >= 12:
                    out.append((f"tests/test_vllm_wordings.py:{node.lineno} (vLLM's format)", raw))
    return out


def _reads(rule: Rule, raw: str) -> dict[str, Any] | None:
    if rule.anchor not in raw:
        return None
    if rule.kind is Kind.counted:
        return {}
    line = parse_line(0, raw)
    events = rule.events(line, line.message, raw)
    return plain(events[0].data) if events else None


def _plainness(raw: str) -> tuple[int, int]:
    """Lines in vLLM's own shape first (its header, nothing wrapped around it, no escapes), then
    the shortest."""
    line = parse_line(0, raw)
    own = line.level is not None and line.source_file is not None and raw.lstrip().startswith(("(", "INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL"))
    odd = any(c in raw for c in ("\x1b", "^[", "\ufffd", " | "))
    return (0 if own and not odd else 1, len(raw))


def draft(rule: Rule, *sources: list[tuple[str, str]]) -> Sample | None:
    for lines in sources:
        found = [(_plainness(raw), where, raw, data) for where, raw in lines
                 if (data := _reads(rule, raw)) is not None]
        if found:
            _n, where, raw, data = min(found, key=lambda f: f[0])
            return Sample(raw, None if rule.kind is Kind.counted else data, where)
    return None


HEAD = '''"""The built-in rules' samples: for every rule of ``ledger.parsers.vllm``, a line it must read —
a real line of ``fixtures/real`` (file and line number) or one the reference
(docs/vllm-log-lines.md) quotes as vLLM prints it — and the figures it must yield from that
line (facts, failure figures, shape keys, runtime series by name, each as its stored value; a
marker, a traceback hint or a counted line yields none).  ``vllm`` attaches them to its rules
and checks every one when it is imported, with the check a grammar pack's samples pass when the
pack loads (``rules.sample_problem``): a rule that stops reading its line, or reads another
figure from it, fails at import.  A new rule needs its sample here (``python
tests/rule_samples.py`` drafts one from the fixtures).
"""

from __future__ import annotations

from .rules import Sample

# tests/rule_samples.py sets this while it drafts: the grammar then loads with rules unsampled
DRAFTING = False

# rule name -> its samples
SAMPLES: dict[str, tuple[Sample, ...]] = {
'''


def render(samples: dict[str, tuple[Sample, ...]], order: list[str]) -> str:
    out = [HEAD]
    for name in order:
        if name not in samples:
            continue
        out.append(f"    {name!r}: (\n")
        for s in samples[name]:
            out.append(f"        Sample({s.line!r},\n               {s.yields!r},\n               {s.source!r}),\n")
        out.append("    ),\n")
    out.append("}\n")
    return "".join(out)


def main() -> None:
    from ledger.parsers import vllm_samples

    vllm_samples.DRAFTING = True  # the grammar loads with rules still to sample
    from ledger.parsers.vllm import BUILTIN_RULES

    sources = _fixture_lines(), _reference_lines(), _wording_lines()
    samples = dict(vllm_samples.SAMPLES)
    missing = []
    for rule in BUILTIN_RULES:
        if rule.name in samples:
            continue
        s = draft(rule, *sources)
        if s is None:
            missing.append(rule)
        else:
            samples[rule.name] = (s,)
            print(f"{rule.name}: {s.source}: {s.line[:120]!r} -> {s.yields!r}")
    for rule in missing:
        print(f"{rule.name}: no line found (anchor {rule.anchor!r}): write one from the reference")
    if "--write" in sys.argv:
        TARGET.write_text(render(samples, [r.name for r in BUILTIN_RULES]))


if __name__ == "__main__":
    main()
