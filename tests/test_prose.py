"""Prose is not a log (issue 22): a text whose every line with one of vLLM's own wordings quotes
it — in backticks (a markdown paragraph, list item or table cell; a whole prefixed log line
quoted in a document), in double quotes, or after a quotation mark that opens the line (a commit
message) — is refused with one line; `--force` reads it.  Both sides on real text: the project's
own documents and the seed commit messages are refused, every real fixture (message-only pastes
and bare tracebacks included) is still read."""

from __future__ import annotations

import pytest
from conftest import REAL, ROOT
from dbutil import rows

from ledger import parsers

# the documents that quote vLLM's lines (the README's long sections live in docs/guide.md)
PROSE = [ROOT / "docs" / "guide.md", ROOT / "docs" / "facts.md", ROOT / "docs" / "architecture.md"]
SEED = ROOT / "fixtures" / "prose" / "seed-003-commit-message.txt"
RUNBOOK = ROOT / "fixtures" / "prose" / "runbook-tables-quoting-vllm-failure-lines.md"
QUOTED = "reads as prose quoting"


def parse(path, force=False):
    return parsers.parse_file(str(path), year=2026, force=force)


@pytest.mark.parametrize("log", sorted(REAL.glob("*.log")), ids=lambda p: p.name[:3])
def test_every_real_fixture_still_reads_as_a_log(log):
    assert parse(log)


@pytest.mark.parametrize("prefix", ["201", "202", "203", "204", "401", "418"])
def test_message_only_pastes_and_bare_tracebacks_are_read(prefix):
    (log,) = REAL.glob(f"{prefix}_*.log")
    (boot,) = parse(log)
    assert boot.failures or boot.facts


@pytest.mark.parametrize("doc", PROSE, ids=lambda p: p.name)
def test_the_projects_documents_are_refused_as_prose(doc):
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} \\d+ vLLM lines?, not a log; `--force` to read it anyway"):
        parse(doc)


def test_the_readme_is_refused_too():
    """The README quotes no vLLM line any more (its tour and its links): it is no log either way."""
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} \\d+ vLLM lines?, not a log|no vLLM log lines found"):
        parse(ROOT / "README.md")


def test_a_commit_message_quoting_a_vllm_line_is_refused_as_prose():
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} 1 vLLM line, not a log"):
        parse(SEED)


def test_force_reads_the_commit_message_anyway():
    (boot,) = parse(SEED, force=True)
    assert boot.summary("kv_cache_tokens").value == 1350182


def test_a_commit_message_without_a_vllm_wording_is_no_vllm_log():
    with pytest.raises(parsers.SourceError, match="no vLLM log lines found"):
        parse(ROOT / "fixtures" / "prose" / "seed-000-commit-message.txt")


def test_force_reads_a_document_anyway():
    assert parse(ROOT / "docs" / "facts.md", force=True)


def test_a_wording_in_backticks_in_a_paragraph_is_a_quotation(tmp_path):
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n\nThe worker printed `Available KV cache memory: 22.5 GiB` and then stopped.\n")
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} 1 vLLM line"):
        parse(doc)


def test_the_same_wording_pasted_bare_is_a_log(tmp_path):
    doc = tmp_path / "paste.log"
    doc.write_text("The worker printed:\n\nAvailable KV cache memory: 22.5 GiB\n")
    (boot,) = parse(doc)
    assert boot.summary("available_kv_cache_bytes").value == round(22.5 * 2**30)


def test_a_whole_log_line_quoted_in_backticks_is_a_quotation(tmp_path):
    doc = tmp_path / "notes.md"
    doc.write_text("* `(Worker_TP0 pid=147) INFO 05-14 00:04:17 [gpu_worker.py:460] Available KV cache memory: "
                   "15.72 GiB` from the issue\n")
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} 1 vLLM line"):
        parse(doc)


def test_a_log_line_in_a_documents_code_block_makes_it_a_log(tmp_path):
    doc = tmp_path / "issue.md"
    doc.write_text("It fails with `No available memory for the cache blocks`:\n\n```\n"
                   "(EngineCore_DP0 pid=1) ERROR 12-10 03:24:48 [core.py:708] EngineCore failed to start.\n```\n")
    (boot,) = parse(doc)
    assert [f.kind for f in boot.failures] == ["no_kv_memory", "engine_init_failed"]


def test_a_markdown_runbook_whose_tables_quote_failure_lines_is_refused_as_prose():
    """Its tables name each failure by the line vLLM prints, some cells in backticks, some not
    (read as a log, it was one crashed boot of nine failures)."""
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} 8 vLLM lines, not a log"):
        parse(RUNBOOK)


def test_a_wording_in_a_markdown_table_cell_without_backticks_is_a_quotation(tmp_path):
    doc = tmp_path / "kinds.md"
    doc.write_text("| kind | line |\n|---|---|\n| engine_dead | EngineDeadError: EngineCore encountered an issue. |\n")
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} 1 vLLM line"):
        parse(doc)


def test_a_whole_log_line_in_a_markdown_table_cell_is_a_quotation(tmp_path):
    doc = tmp_path / "kinds.md"
    doc.write_text("| line | phase |\n|---|---|\n| (EngineCore_DP0 pid=1) ERROR 12-10 03:24:48 [core.py:708] "
                   "EngineCore failed to start. | start-up |\n")
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} 1 vLLM line"):
        parse(doc)


def test_a_wording_in_double_quotes_is_a_quotation(tmp_path):
    doc = tmp_path / "commit.txt"
    doc.write_text('grammar: timeouts ("RPC call to sample_tokens timed out") end a boot\n')
    with pytest.raises(parsers.SourceError, match=f"{QUOTED} 1 vLLM line"):
        parse(doc)


def test_ingest_refuses_prose_in_one_line_exit_2_and_stores_nothing(db, cli):
    guide = ROOT / "docs" / "guide.md"  # what the README quoted of vLLM's lines is here now
    r = cli("ingest", str(guide))
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert line.startswith(f"Error: {guide}: {QUOTED} ") and line.endswith("`--force` to read it anyway")
    assert rows(db, "SELECT count(*) FROM boot") == [(0,)]


def test_ingest_force_stores_prose(db, cli):
    r = cli("ingest", "--force", str(ROOT / "docs" / "facts.md"))
    assert r.exit_code == 0
    assert rows(db, "SELECT count(*) FROM boot") != [(0,)]
