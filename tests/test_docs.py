"""What the code cites is in the repository: the vLLM line reference and the fact vocabulary are
copied into docs/, and no module, test or doc points at a path outside the repo."""

from __future__ import annotations

import os
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


# -- generated sections ----------------------------------------------------------------------------


def test_the_cli_reference_is_every_commands_help():
    """docs/cli.md is ``--help`` of every command: a new option or command that was not
    regenerated (``python tests/generated_docs.py --write``) fails here."""
    from generated_docs import cli_reference, current

    assert current("docs/cli.md", "cli-reference") == cli_reference()


def test_the_cli_reference_names_every_command():
    from generated_docs import cli_reference

    text = cli_reference()
    for command in ("ingest", "history", "show", "check", "deploy set", "grammar check", "db current", "plot runtime"):
        assert f"## `ledger {command}`" in text


def test_the_fact_list_is_the_vocabulary():
    """The guide's fact list is generated from the vocabulary: a new fact that was not
    regenerated fails here."""
    from generated_docs import current, fact_list

    assert current("docs/guide.md", "facts") == fact_list()


def test_the_fact_list_has_a_row_per_fact():
    from generated_docs import fact_list

    from ledger.parsers.vocabulary import FactName

    rows = [line for line in fact_list().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [str(name) for name in FactName]


# -- the README ------------------------------------------------------------------------------------


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_the_readme_quick_start_prints_what_it_shows(quick_start_run):
    """Run as written, the quick start's last command prints what its console block shows: an
    ``ok``, a ``broken`` and the seed's 13,838.52 B/token among them."""
    import quickstart

    command, output = quickstart.shown()
    assert quickstart.lines()[-1] == ".venv/bin/" + command
    _, done = quick_start_run
    assert [r.returncode for r in done[:-1]] == [0] * (len(done) - 1) and all(r.stderr == "" for r in done)
    assert done[-1].returncode == 1  # check: a verdict is broken
    assert done[-1].stdout == output
    assert " ok " in output and " broken " in output and "13,838.52 B/token" in output


def test_the_readme_tour_runs_as_written(tmp_path):
    """The five commands of the README's tour, run by bash from the repository's folder, with
    ``.venv/bin/ledger`` as this interpreter's ``ledger`` and the tour's ledger in a
    temporary folder.  ``check`` exits 1: the 5-slot deploy's boot crashed at runtime."""
    import shlex
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text()
    tour = readme[readme.index("## Commands"):]
    block = tour[tour.index("```bash\n") + len("```bash\n"):tour.index("```", tour.index("```bash\n") + 8)]
    lines = block.strip().splitlines()
    assert len(lines) == 5 and all(".venv/bin/ledger" in line and "--db tour.db" in line for line in lines)
    ledger = f"{shlex.quote(sys.executable)} -m ledger"
    db = shlex.quote(str(tmp_path / "tour.db"))
    outputs = []
    for line in lines:
        command = line.replace(".venv/bin/ledger", ledger).replace("tour.db", db)
        # wide enough that nothing is fitted or wrapped, whatever the suite's terminal
        env = {**os.environ, "COLUMNS": "10000"}
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, check=False, env=env)
        assert done.returncode == (1 if " check " in line else 0) and done.stderr == "", (line, done.stderr)
        outputs.append(done.stdout)
    assert outputs[0].count("\nboot ") + outputs[0].startswith("boot ") == 4
    assert "**B** boot 4 `fp8-5x262144-runtime-oom`" in outputs[2]
    assert "fp8-5x262144-runtime-oom: boot 4 (crashed)\n  survival           crashed      passed every boot gate" in outputs[3]
    shown = readme[readme.index("$ ledger predict"):]
    assert outputs[4] == shown[shown.index("\n") + 1:shown.index("```")]
