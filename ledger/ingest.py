"""Logs into the ledger: parse each file with ``parsers``, store each boot whole (a group of a
file's boots per transaction), and report what happened per file (one bad file does not stop
the others)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger import parsers
from ledger.parsers.rules import RuleSet

from .errors import LedgerError

if TYPE_CHECKING:  # the writer loads only once a file has started: see start_parse
    from .db.writer import Writer
    from .db.writes import DeployInfo
    from .origins import Origin


@dataclass
class FileResult:
    """What one input gave: counts and the deploys its boots went to, nothing per boot (a file
    may hold a million boots: each is told to ``on_stored`` as it is stored)."""

    path: str
    sha256: str = ""
    stored: int = 0  # boots stored
    existing: int = 0  # boots of this file already in the ledger
    repeated: int = 0  # boots identical to one before them in this file (stored once)
    error: str | None = None
    long_lines: int = 0  # lines past parsers.source.MAX_LINE, read only up to it
    warnings: list[str] = field(default_factory=list)  # the reading's own (trailing garbage)
    deploys: list[int] = field(default_factory=list)  # the deploys of the boots stored, each once
    existing_deploys: list[int] = field(default_factory=list)  # the deploys of the boots already there
    ids: IdRuns = field(default_factory=lambda: IdRuns())  # the ids of the boots stored


class IdRuns:
    """Ids as runs of consecutive ones: the boots one ingest stores take consecutive ids (but
    where another writer's come between), so a million of them are one run."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []  # [first, last]

    def add(self, n: int) -> None:
        if self.runs and self.runs[-1][1] + 1 == n:
            self.runs[-1][1] = n
        else:
            self.runs.append([n, n])

    def __iter__(self) -> Iterator[int]:
        for first, last in self.runs:
            yield from range(first, last + 1)

    def __len__(self) -> int:
        return sum(last - first + 1 for first, last in self.runs)


def stored_boot(bid: int, boot: parsers.Boot, path: str, deploy: str | None = None,
                supersedes: list[int] | None = None, reference_moved: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """What ``ledger ingest`` says of a boot it stored: id, outcome, engine, the headline figures
    (the boot's summary of each: None when not printed), failures, where in the input, the
    deploy it went to (``deploy:N (name)``), the shorter versions of it it replaced, and the
    boot whose place as its group's KV reference it took (``writes.reference_moved``)."""
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
            "path": path, "first_line": boot.first_line, "last_line": boot.last_line,
            "deploy": deploy, "supersedes": list(supersedes or []), "reference_moved": reference_moved}


def start_parse(path: str, rules: RuleSet | None = None, year: int | None = None,
                force: bool = False, name: str | None = None) -> parsers.Parse | None:
    """Start reading ``path`` now (the parser goes on while the caller opens the ledger); None
    when it cannot start — ``ingest_file`` then meets and reports the problem itself.
    ``force``: read a text that reads as prose quoting vLLM lines too; ``name``: the source's
    stored name instead of its path."""
    from .db.staging import STORED_ROWS

    try:
        return parsers.start(path, rules, year, force=force, name=name, store=STORED_ROWS)
    except (parsers.SourceError, OSError):
        return None


# per boot: its deploy (--at-boot-time: the commit of its time) and its boot_origin rows
PerBoot = Callable[[parsers.Boot], tuple["DeployInfo", dict[str, str]]]
# told of each boot stored, once it is committed: its id, the boot, and what store_boot told
# of it (its "deploy", the shorter versions it "superseded")
OnStored = Callable[[int, parsers.Boot, dict[str, Any]], None]

# Boots of a file are committed in groups: a commit syncs the disk (5-9 ms here), more than a
# small boot's rows cost, so a file of a million boots took hours one commit each.  A group
# closes at this many boots, this many rows held (facts, failures, samples in memory), or this
# many seconds after its first boot, whichever comes first; a stream (stdin) commits each boot
# as it ends, for it may pause for days.  A killed ingest loses at most the open group: whole
# boots, stored by the next run.
GROUP_BOOTS = 500
GROUP_ROWS = 20_000
GROUP_SECONDS = 1.0


def ingest_file(writer: Writer, path: str, info: DeployInfo, rules: RuleSet | None = None,
                year: int | None = None, on_stored: OnStored | None = None,
                progress: Callable[[int], None] | None = None, started: parsers.Parse | None = None,
                per_boot: PerBoot | None = None, name: str | None = None,
                run_starts: Sequence[int] = (), force: bool = False) -> FileResult:
    """Parse and store one input.  Boots are written as soon as they are complete (from a
    stream: while the stream goes on), whole, a group of them per transaction (``GROUP_BOOTS``);
    runtime samples are spooled and nothing is kept per boot, so memory stays flat whatever the
    input's size and however many boots it holds.  ``on_stored`` is told each boot stored, once
    it is committed.  ``started``: the input's Parse from ``start_parse``; ``per_boot``: each
    boot's deploy and origin rows instead of ``info``; ``name``: the source's stored name
    instead of ``path``; ``run_starts``: see ``parsers.start``."""
    import time

    from .db.staging import STORED_ROWS, SampleSpool, Staging
    from .db.writes import Pending, set_source_sha256, store_boots

    result = FileResult(path)
    staging = Staging(writer)
    spools: dict[int, SampleSpool] = {}
    group: list[Pending] = []
    weight, opened = 0, 0.0
    stream = path == "-"

    def sink(boot: parsers.Boot, samples: list[parsers.RuntimeSample]) -> None:
        spool = spools.get(id(boot))
        if spool is None:
            spool = spools[id(boot)] = SampleSpool(staging)
        spool.add(samples)

    unhashed = IdRuns()  # boots stored before the input's sha256 was known: set_source_sha256

    def commit() -> None:
        nonlocal weight
        if source.sha256:  # read to its end by now (a small file's boots commit after it): stored with it
            for p in group:
                p.sha256 = p.sha256 or source.sha256
        try:
            store_boots(writer, group)
        finally:
            for p in group:
                if p.spool is not None:
                    p.spool.close()
        done = list(group)
        group.clear()
        weight = 0
        for p in done:
            told = p.told
            if p.id is None:
                result.existing += 1
                same_as = told.get("same_as")
                if same_as is not None and same_as[0] == source.display and same_as[1] < p.boot.index:
                    result.repeated += 1  # the same lines earlier in this input
                if "deploy" in told and told["deploy"] not in result.existing_deploys:
                    result.existing_deploys.append(told["deploy"])
                continue
            result.stored += 1
            result.ids.add(p.id)
            if not p.sha256:
                unhashed.add(p.id)
            if told["deploy"] not in result.deploys:
                result.deploys.append(told["deploy"])
            if on_stored:
                on_stored(p.id, p.boot, told)

    def on_boot(boot: parsers.Boot) -> None:
        nonlocal weight, opened
        spool = spools.pop(id(boot), None)
        boot_info, origin = per_boot(boot) if per_boot else (info, {})
        if not group:
            opened = time.monotonic()
        group.append(Pending(boot, source.display, source.sha256 or None, boot_info, spool, origin))
        weight += 1 + len(boot.facts) + len(boot.failures) + len(boot.runtime) + (spool.held if spool else 0)
        if stream or len(group) >= GROUP_BOOTS or weight >= GROUP_ROWS or time.monotonic() - opened >= GROUP_SECONDS:
            commit()

    try:
        try:
            parse = started or parsers.start(path, rules, year, name=name, run_starts=run_starts, force=force,
                                             store=STORED_ROWS)
        except parsers.SourceError as exc:
            result.error = str(exc)
            return result
        source = parse.source
        try:
            # the progress is told the input's own bytes read (compressed, for .gz/.zst), which
            # is what a percent of the file's size counts
            parse.run(on_boot=on_boot, runtime_sink=sink,
                      progress=(lambda _text_bytes: progress(source.consumed)) if progress else None)
        except parsers.SourceError:
            if group:
                commit()  # the whole boots read before the input's fault (a truncated .gz)
            raise
        finally:
            result.long_lines, result.warnings = source.long_lines, source.warnings
        if group:
            commit()
    except parsers.SourceError as exc:
        result.error = str(exc)
        return result
    finally:
        for p in group:  # not committed (an error): their staged samples go
            if p.spool is not None:
                p.spool.close()
        staging.close()
    result.sha256 = source.sha256
    set_source_sha256(writer, unhashed.runs, source.sha256)  # none left: no transaction
    return result


@contextmanager
def origin_log(origin: Origin) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """A container's or a unit's whole log (``ledger.origins.write_log``) in a temporary file,
    read before the ledger is opened (a runtime that fails leaves no ledger behind): the
    file's path and where each run after the first begins (line, run index)."""
    import tempfile

    from .origins import write_log

    with tempfile.NamedTemporaryFile(prefix="ledger-origin-", suffix=".log") as f:
        starts = write_log(origin, f)
        f.flush()
        yield f.name, starts


def ingest_origin(writer: Writer, origin: Origin, log: tuple[str, list[tuple[int, int]]], info: DeployInfo,
                  rules: RuleSet | None = None, year: int | None = None,
                  on_stored: OnStored | None = None,
                  boot_time: AtBootTime | None = None) -> FileResult:
    """Store a container's or a unit's log (``origin_log``) as one input named
    ``origin.source_name``: each run of the container (each invocation of the unit) is a boot
    of its own; every boot carries the origin's facts and its run's number (``boot_origin``);
    the deploy's image is the container's unless ``info`` names one.  ``boot_time``: each
    boot's commit is the deploy repo's at its start (``AtBootTime``)."""
    from .db.writes import DeployInfo

    path, starts = log
    lines = [line for line, _ in starts]
    base = DeployInfo(info.commit, info.image or origin.image, info.label, info.dirty, info.relabel)

    def per_boot(boot: parsers.Boot) -> tuple[DeployInfo, dict[str, str]]:
        k = bisect.bisect_right(lines, boot.first_line)  # the run starts at or before the boot
        facts = {**origin.facts, "run": str(starts[k - 1][1] + 1 if k else 1)}
        if boot_time is None:
            return base, facts
        return DeployInfo(boot_time.commit(boot), base.image, base.label, None, base.relabel), facts

    return ingest_file(writer, path, info, rules, year, on_stored, per_boot=per_boot,
                       name=origin.source_name, run_starts=lines)


class AtBootTime:
    """``--repo DIR --at-boot-time``: each boot's commit is the one of its start (``commit_at``),
    dirty unknown; ``missed`` keeps the boots git found none for (their lines and start), for
    the ingest to say (they are stored with no commit)."""

    def __init__(self, repo: str, info: DeployInfo):
        self.repo, self.info = repo, info
        self.missed: list[tuple[int, int, str | None]] = []

    def commit(self, boot: parsers.Boot) -> str | None:
        found = commit_at(self.repo, boot.started_at)
        if found is None:
            self.missed.append((boot.first_line, boot.last_line, boot.started_at))
        return found

    def __call__(self, boot: parsers.Boot) -> tuple[DeployInfo, dict[str, str]]:
        """``per_boot`` for files."""
        from .db.writes import DeployInfo

        info = self.info
        return DeployInfo(self.commit(boot), info.image, info.label, None, info.relabel), {}


def at_boot_time(repo: str, info: DeployInfo) -> AtBootTime:
    """``per_boot`` for ``--repo DIR --at-boot-time`` (``AtBootTime``)."""
    return AtBootTime(repo, info)


def commit_at(repo: str, started_at: str | None) -> str | None:
    """The deploy repo's commit checked out when a boot started, as far as git can tell: the
    newest commit of HEAD's history whose commit time is not after the boot's start (the log's
    clock, taken as UTC).  An approximation: git does not record what was checked out when, and
    whether the tree was dirty is unknown.  None for a boot without a start time, or one
    older than every commit."""
    if not started_at:
        return None
    out = _git(repo, "rev-list", "-1", f"--before={started_at} +0000", "HEAD")
    return out or None


def _git(repo: str, *args: str) -> str:
    import subprocess  # only with --repo: a plain ingest does not load it

    try:
        out = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True)
    except FileNotFoundError:
        raise LedgerError("--repo needs git, and git is not installed") from None
    except subprocess.CalledProcessError as exc:
        msg = (exc.stderr or "").strip().splitlines()
        raise LedgerError(f"{repo}: not a git repository ({msg[0] if msg else 'git failed'})") from None
    return out.stdout.strip()


def repo_state(repo: str) -> tuple[str, bool]:
    """The deploy repo's HEAD commit and whether its work tree has uncommitted changes."""
    commit = _git(repo, "rev-parse", "HEAD")
    dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no"))
    return commit, dirty
