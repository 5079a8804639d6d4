"""Logs into the ledger: parse each file with ``parsers``, store each boot in its own
transaction, and report what happened per file (one bad file does not stop the others)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

import parsers
from parsers.rules import RuleSet

from .errors import LedgerError
from .store import DeployInfo, Ledger, store_boot


@dataclass
class FileResult:
    path: str
    sha256: str = ""
    stored: list[tuple[int, parsers.Boot]] = field(default_factory=list)
    existing: int = 0  # boots of this file already in the ledger
    error: str | None = None


def ingest_file(ledger: Ledger, path: str, info: DeployInfo, rules: RuleSet | None = None,
                year: int | None = None) -> FileResult:
    result = FileResult(path)
    source = parsers.Source(path)
    try:
        parsed = parsers.parse_source(source, rules, year or parsers._default_year(path))
    except parsers.SourceError as exc:
        result.error = str(exc)
        return result
    result.sha256 = source.sha256
    for boot in parsed.boots:
        bid = store_boot(ledger, boot, source.display, source.sha256, info)
        if bid is None:
            result.existing += 1
        else:
            result.stored.append((bid, boot))
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
