"""Logs into the ledger: parse each file with ``parsers``, store each boot in its own
transaction, and report what happened per file (one bad file does not stop the others)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger import parsers
from ledger.parsers.rules import RuleSet

from .errors import LedgerError

if TYPE_CHECKING:  # the writer loads only once a file has started: see start_parse
    from .db.writer import Writer
    from .db.writes import DeployInfo


@dataclass
class FileResult:
    path: str
    sha256: str = ""
    stored: list[tuple[int, parsers.Boot]] = field(default_factory=list)
    existing: int = 0  # boots of this file already in the ledger
    repeated: int = 0  # boots identical to one before them in this file (stored once)
    error: str | None = None
    long_lines: int = 0  # lines past parsers.source.MAX_LINE, read only up to it
    warnings: list[str] = field(default_factory=list)  # the reading's own (trailing garbage)


def stored_boot(bid: int, boot: parsers.Boot, path: str) -> dict[str, Any]:
    """What ``ledger ingest`` says of a boot it stored: id, outcome, engine, the headline figures
    (the boot's summary of each: None when not printed), failures, where in the input."""
    from ledger.parsers.vocabulary import FactName

    def figure(*names: FactName) -> float | None:
        for name in names:
            found = boot.summary(name)
            if found:
                return found.value
        return None

    return {"boot": bid, "outcome": boot.outcome, "engine_version": boot.engine_version,
            "kv_cache_tokens": figure(FactName.kv_cache_tokens), "max_concurrency": figure(FactName.max_concurrency),
            "kv_memory_bytes": figure(FactName.kv_cache_reserved_bytes, FactName.available_kv_cache_bytes),
            "model_weights_bytes": figure(FactName.model_weights_bytes),
            "failures": [{"kind": f.kind, "phase": f.phase} for f in boot.failures],
            "path": path, "first_line": boot.first_line, "last_line": boot.last_line}


def start_parse(path: str, rules: RuleSet | None = None, year: int | None = None,
                force: bool = False) -> parsers.Parse | None:
    """Start reading ``path`` now (the parser goes on while the caller opens the ledger); None
    when it cannot start — ``ingest_file`` then meets and reports the problem itself.
    ``force``: read a text that reads as prose quoting vLLM lines too."""
    try:
        return parsers.start(path, rules, year, force=force)
    except (parsers.SourceError, OSError):
        return None


def ingest_file(writer: Writer, path: str, info: DeployInfo, rules: RuleSet | None = None,
                year: int | None = None, on_stored: Callable[[int, parsers.Boot], None] | None = None,
                progress: Callable[[int], None] | None = None, started: parsers.Parse | None = None,
                force: bool = False) -> FileResult:
    """Parse and store one input.  Each boot is written in its own transaction as soon as it is
    complete (from a stream: while the stream goes on); runtime samples are spooled, so memory
    stays flat whatever the input's size.  ``started``: the input's Parse from ``start_parse``."""
    from .db.staging import SampleSpool, Staging
    from .db.writes import set_source_sha256, store_boot

    result = FileResult(path)
    staging = Staging(writer)
    spools: dict[int, SampleSpool] = {}

    def sink(boot: parsers.Boot, samples: list[parsers.RuntimeSample]) -> None:
        spool = spools.get(id(boot))
        if spool is None:
            spool = spools[id(boot)] = SampleSpool(staging)
        spool.add(samples)

    seen: set[str] = set()

    def on_boot(boot: parsers.Boot) -> None:
        if boot.content_sha256 in seen:
            result.repeated += 1
        seen.add(boot.content_sha256)
        spool = spools.pop(id(boot), None)
        try:
            bid = store_boot(writer, boot, source.display, source.sha256 or None, info, spool)
        finally:
            if spool is not None:
                spool.close()
        if bid is None:
            result.existing += 1
        else:
            result.stored.append((bid, boot))
            if on_stored:
                on_stored(bid, boot)

    try:
        try:
            parse = started or parsers.start(path, rules, year, force=force)
        except parsers.SourceError as exc:
            result.error = str(exc)
            return result
        source = parse.source
        try:
            # the progress is told the input's own bytes read (compressed, for .gz/.zst), which
            # is what a percent of the file's size counts
            parse.run(on_boot=on_boot, runtime_sink=sink,
                      progress=(lambda _text_bytes: progress(source.consumed)) if progress else None)
        finally:
            result.long_lines, result.warnings = source.long_lines, source.warnings
    except parsers.SourceError as exc:
        result.error = str(exc)
        return result
    finally:
        staging.close()
    result.sha256 = source.sha256
    set_source_sha256(writer, [bid for bid, _ in result.stored], source.sha256)
    return result


def repo_state(repo: str) -> tuple[str, bool]:
    """The deploy repo's HEAD commit and whether its work tree has uncommitted changes."""
    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True)
        except FileNotFoundError:
            raise LedgerError("--repo needs git, and git is not installed") from None
        except subprocess.CalledProcessError as exc:
            msg = (exc.stderr or "").strip().splitlines()
            raise LedgerError(f"{repo}: not a git repository ({msg[0] if msg else 'git failed'})") from None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return commit, dirty
