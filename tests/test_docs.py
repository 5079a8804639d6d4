"""What the code cites is in the repository: the vLLM line reference and the fact vocabulary are
copied into docs/, and no module, test or doc points at a path outside the repo."""

from __future__ import annotations

import re

from conftest import ROOT

_CITING = [*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), ROOT / "pyproject.toml",
           *(path for folder in ("ledger", "tests", "bench")
             for pattern in ("*.py", "*.toml", "*.md") for path in (ROOT / folder).rglob(pattern))]
# the notes the project started from live beside the repository, not in it
_OUTSIDE = re.compile(r"\.\./shared\b|\bshared/(?:reference|facts|design|corpus|seeds)")
_DOCS_CITED = re.compile(r"\bdocs/[\w.-]+\.md\b")


def _texts() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in _CITING
            if path != ROOT / "tests" / "test_docs.py"}


def test_no_file_cites_a_path_outside_the_repository():
    cites = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}"
             for name, text in _texts().items() for m in _OUTSIDE.finditer(text)]
    assert cites == []


def test_every_docs_file_the_code_cites_exists():
    cited = {m.group() for text in _texts().values() for m in _DOCS_CITED.finditer(text)}
    assert {"docs/facts.md", "docs/vllm-log-lines.md", "docs/architecture.md"} <= cited
    assert sorted(path for path in cited if not (ROOT / path).exists()) == []
