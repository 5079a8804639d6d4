"""The ``ledger`` command (also installed as ``vllm-ledger``): wiring options to the library and
domain errors to exit codes.

Exit codes: 0 fine; 1 a finding (``check``: a latest boot that failed or crashed, a verdict off,
broken or over); 2 a usage or input error (a bad option, an unknown boot, an unreadable file or
ledger), printed as one line starting ``Error: ``.  What a command prints goes through
``ledger.render`` (one output contract: ``--format table|markdown|csv|json|jsonl``).

Nothing here parses logs, builds SQL or opens a database itself; see ``ledger.ingest``,
``ledger.queries``, ``ledger.diff`` and ``ledger.db``.
"""

from __future__ import annotations

import gc
import re
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .errors import LedgerError

if TYPE_CHECKING:
    from ledger.parsers.rules import RuleSet

    from .db.connect import Mode

DB_HELP = "Ledger file or SQLAlchemy URL (env LEDGER_DB; default ~/.local/share/ledger/ledger.db)."
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")


def _checked_commit(commit: str | None) -> str | None:
    """``--commit`` as stored (lower case), or one Error line: a hex sha of 7 to 64 digits."""
    if commit is not None and not _COMMIT.match(commit):
        raise LedgerError(f"--commit {commit}: expected a hex sha of 7 to 64 digits")
    return commit.lower() if commit else commit


def _check_image(image: str | None) -> None:
    if image and not _DIGEST.match(image):
        raise LedgerError(f"--image {image}: expected sha256: followed by 64 hex digits")


def _ruleset(grammars: tuple[str, ...]) -> RuleSet:
    """The built-in grammar with the packs in use (``--grammar``, ``$LEDGER_GRAMMARS``, the user
    dir); with none, the pack machinery (its TOML reader, `parse`) is not imported."""
    from ledger import parsers
    from ledger.parsers.packdirs import packs_in_use

    if not packs_in_use(grammars):
        return parsers.builtin_ruleset()
    from ledger.parsers.packs import discover, pack_rules

    return parsers.builtin_ruleset(pack_rules(discover(grammars)))


def db_option(f):
    # no envvar here: click would fill the subcommand's --db from $LEDGER_DB, and that would beat
    # the group's flag (``LEDGER_DB=a.db ledger --db b.db rm 1`` removed boot 1 from a.db)
    return click.option("--db", "db", metavar="PATH|URL", help=DB_HELP)(f)


def _db(db: str | None) -> str | None:
    """The subcommand's --db, else the group's (``ledger --db X history``); None leaves
    ``$LEDGER_DB``, else the default file, to ``ledger.db.location.resolve_url``."""
    if db:
        return db
    ctx = click.get_current_context(silent=True)
    return (ctx.find_root().params.get("db") or None) if ctx else None


def _say_upgraded(backup: Any) -> None:
    if backup is not None:
        from .render.ingest import upgraded

        click.echo(upgraded(backup), err=True)


@contextmanager
def _opened(db: str | None, mode: Mode):
    """The ledger, closed however the command ends.  A ledger that does not exist is an error:
    only ``ingest``, ``copy`` and ``db upgrade`` create one (a typo in --db must not leave an
    empty ledger behind)."""
    from .db.connect import connect

    ledger = connect(_db(db), mode=mode, create=False)
    _say_upgraded(ledger.backup)
    try:
        yield ledger
    finally:
        ledger.dispose()


def _reading(db: str | None):
    """The ledger for a command that only reads."""
    return _opened(db, "read")


def _writing(db: str | None):
    """The ledger for a command that changes it (``deploy set``, ``rm``: through ``ledger.writer()``)."""
    return _opened(db, "write")


FINDING = 1  # exit code: the command worked and found something wrong (check: off, broken, over)
ERROR = 2  # exit code: a usage or input error (click's own usage errors exit 2 as well)


class Failure(click.ClickException):
    """An error the user can act on: ``Error: <one line>`` on stderr, exit code 2."""

    exit_code = ERROR


class UsageFailure(click.UsageError):
    """A usage error said the way every other error is: one ``Error:`` line, then the hint to the
    command's ``--help`` (click's own form puts the usage synopsis and a blank line first)."""

    def show(self, file: Any = None) -> None:
        from .render.usage import usage_error

        has_help = self.ctx is not None and self.ctx.command.get_help_option(self.ctx) is not None
        click.echo(usage_error(self.format_message(), self.ctx.command_path if has_help and self.ctx else None),
                   file=file or sys.stderr)


class LedgerGroup(click.Group):
    """Turns LedgerError (and the parsers' errors, and a failing database) into one line and
    exit code 2; click's usage errors into one line and the ``--help`` hint."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _short(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _short(exc) from None
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own (a subcommand's --help exits): no database error to look for
        except Exception as exc:
            if isinstance(exc, _user_errors()):
                raise Failure(str(exc)) from None
            # a database that fails under us (read-only file, full disk, server gone): one line
            from .db.errors import describe_db_error, is_database_error

            if is_database_error(exc):
                raise Failure(describe_db_error(exc)) from None
            raise


def _short(exc: click.UsageError) -> click.UsageError:
    if isinstance(exc, UsageFailure):
        return exc
    return UsageFailure(exc.format_message(), exc.ctx)


def _user_errors() -> tuple[type[Exception], ...]:
    """LedgerError and the parsers' errors for bad input.  A parser error can only have been
    raised if its module was imported: looking in sys.modules spares every read command the
    parsers' import (most of a tenth of a second) just to name the classes."""
    types: list[type[Exception]] = [LedgerError]
    for module, name in (("ledger.parsers.packs", "PackError"), ("ledger.parsers.source", "SourceError")):
        loaded = sys.modules.get(module)
        if loaded is not None:
            types.append(getattr(loaded, name))
    return tuple(types)


def format_option(default: str = "table", formats: tuple[str, ...] | None = None):
    """``--format``: the same names on every command (``ledger.render.FORMATS``)."""
    from .render import FORMATS

    choices = formats or FORMATS
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help="Output format (JSON: see docs/output-contract.md).")


REDACTED = ("keys, tokens and passwords (args dumps, --api-key, URL userinfo and queries, bearer headers), "
            "home paths, private addresses and this host's name")


def redact_option(f):
    """``--no-redact``: what is meant to be pasted (note, diff, show, export, serve's pages) leaves
    out secrets, home paths and addresses by default (``ledger.render.redact``)."""
    return click.option("--no-redact", "no_redact", is_flag=True,
                        help=f"Keep {REDACTED} (redacted by default; the ledger keeps them as read).")(f)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the release and the scan engine this install runs (Hyperscan, or the
    pure-Python fallback where no Hyperscan wheel exists)."""
    if not value or ctx.resilient_parsing:
        return
    from ledger.parsers.fast.scanner import available_engines

    from .render.admin import version_line

    click.echo(version_line(__version__, available_engines()[0]))
    ctx.exit()


@click.group(name="ledger", cls=LedgerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and the scan engine, and exit.")
@db_option
def main(db: str | None) -> None:
    """A ledger of vLLM boots: ingest boot and runtime logs, query the history, diff deploys.

    \b
    Examples:
      ledger ingest --container vllm --label fp8-4slot --repo ~/deploy
      ledger ingest --unit vllm.service --since 2026-11-01
      ledger ingest boot.log --label fp8-4slot --repo ~/deploy
      ledger history --since 7d
      ledger show 3
      ledger diff fp8-4slot bf16-2slot --format markdown
      ledger check --format json
      ledger sql "SELECT name, value FROM fact WHERE boot_id = 3"
      ledger rm 12 --yes

    \b
    Every command that prints rows takes --format table|markdown|csv|json|jsonl.
    Exit codes: 0 fine, 1 a finding (check: off, broken, over), 2 an error.
    Also installed as vllm-ledger.
    """


# -- ingest -------------------------------------------------------------------------------------


@main.command()
@click.argument("logs", nargs=-1, metavar="[LOG...]")
@click.option("--container", metavar="NAME|ID",
              help="Read this container's whole log (docker or podman: logs --timestamps, inspect, events).")
@click.option("--runtime", type=click.Choice(["docker", "podman"]),
              help="The container runtime for --container (default: the first on PATH that knows the container).")
@click.option("--unit", metavar="NAME", help="Read this systemd unit's journal (journalctl -u NAME -o json).")
@click.option("--since", "journal_since", metavar="TIME", help="With --unit: journalctl's --since, passed as it is.")
@click.option("--until", "journal_until", metavar="TIME", help="With --unit: journalctl's --until, passed as it is.")
@click.option("--journal-file", "journal_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="With --unit: read these journal files (journalctl --file) instead of the system's journal.")
@click.option("--journal-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="With --unit: read the journal in this folder (journalctl --directory).")
@click.option("--commit", help="The deploy repo's commit for these boots (a hex sha of 7-64 digits).")
@click.option("--image", help="The container image digest (sha256:<64 hex>).")
@click.option("--label", help="A name for the deploy (used by diff and history --deploy).")
@click.option("--relabel", is_flag=True, help="Let --label rename a deploy that already has another label.")
@click.option("--repo", type=click.Path(file_okay=False), help="Read --commit (and dirty flag) from this git repo.")
@click.option("--at-boot-time", is_flag=True,
              help="With --repo: each boot gets the newest commit not newer than its start (dirty unknown).")
@click.option("--year", type=click.IntRange(1970, 2100),
              help="Year of the log's MM-DD timestamps (default: a year the log prints, else the file's mtime).")
@click.option("--grammar", "grammars", multiple=True, metavar="PACK",
              help="A grammar pack (TOML file, or the name of a bundled pack) for a fork's own lines. Repeatable.")
@click.option("--force", is_flag=True,
              help="Read a text that reads as prose quoting vLLM lines (a README, notes, a commit message) anyway.")
@click.option("--source-name", metavar="NAME",
              help="Store the boots' source under this name instead of the path (or <stdin>): one LOG only, "
                   "e.g. docker logs vllm 2>&1 | ledger ingest - --source-name vllm-host-a.")
@format_option(formats=("table", "json", "jsonl"))
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@db_option
def ingest(logs: tuple[str, ...], container: str | None, runtime: str | None, unit: str | None,
           journal_since: str | None, journal_until: str | None, journal_files: tuple[str, ...],
           journal_dir: str | None, commit: str | None, image: str | None, label: str | None, relabel: bool,
           repo: str | None, at_boot_time: bool, year: int | None, grammars: tuple[str, ...], force: bool,
           source_name: str | None, fmt: str, as_json: bool, db: str | None) -> None:
    """Read vLLM logs into the ledger: a container's, a systemd unit's, or files (plain, .gz,
    .zst, or - for stdin).

    Each boot in a log is stored once with every figure it prints; ingesting the same log
    again stores only what is new.  A container is read whole (every run of it: each restart
    is a boot of its own), with its image digest, name, id, restart count and OCI labels from
    the runtime; its boots' source is container:NAME@<short id>.  See docs/containers.md.

    \b
    Examples:
      ledger ingest --container vllm --label qwen-fp8
      ledger ingest --container vllm --runtime podman --repo ~/deploy
      ledger ingest --unit vllm.service --since "2026-11-01"
      ledger ingest --unit vllm.service --journal-dir /mnt/old/journal --repo ~/deploy --at-boot-time
      ledger ingest /var/log/vllm/boot.log --label qwen-fp8
      ledger ingest --repo ~/deploy fixtures/real/*.log
      ledger ingest --grammar radiance --label bf16-2slot boot.log
      ledger ingest boot.log --format json    # the stored boots as export objects
      ledger ingest --force notes.md          # a text that quotes vLLM lines in prose
    """
    if as_json:
        fmt = "json"
    origins = sum(1 for x in (container, unit) if x) + (1 if logs else 0)
    if origins == 0:
        raise LedgerError("nothing to read: give LOG..., --container NAME or --unit NAME")
    if origins > 1:
        raise LedgerError("give one of LOG..., --container NAME and --unit NAME")
    if not unit and (journal_since or journal_until or journal_files or journal_dir):
        raise LedgerError("--since, --until, --journal-file and --journal-dir go with --unit")
    if runtime and not container:
        raise LedgerError("--runtime goes with --container")
    if source_name is not None and (len(logs) != 1 or container or unit):
        raise LedgerError("--source-name names one LOG (a container's or unit's source is named after it)")
    if source_name is not None and (not source_name.strip() or len(source_name) > 400
                                    or not source_name.isprintable()):
        raise LedgerError("--source-name: give a printable name of at most 400 characters")
    if at_boot_time and not repo:
        raise LedgerError("--at-boot-time needs --repo DIR")
    if at_boot_time and commit:
        raise LedgerError("--at-boot-time takes each boot's commit from --repo; leave out --commit")
    commit = _checked_commit(commit)
    _check_image(image)
    rules = _ruleset(grammars)
    if container or unit:
        from .origins import container_origin, journal_origin, unit_origin

        if container:
            origin = container_origin(container, runtime)
        elif journal_files or journal_dir:
            origin = journal_origin(unit, list(journal_files), journal_dir, journal_since, journal_until)  # type: ignore[arg-type]
        else:
            origin = unit_origin(unit, journal_since, journal_until)  # type: ignore[arg-type]
        from .ingest import origin_log

        with origin_log(origin) as log:
            _ingest_all((), commit, image, label, repo, year, rules, fmt, db, None, relabel, at_boot_time,
                        origin, log)
        return
    # the first input starts now: the parser reads it while the ledger's modules load and the
    # ledger opens (they are what the imports below cost)
    from .ingest import start_parse

    started = start_parse(logs[0], rules, year, force, source_name) if logs[0] != "-" else None
    try:
        _ingest_all(logs, commit, image, label, repo, year, rules, fmt, db, started, relabel, at_boot_time,
                    force=force, source_name=source_name)
    finally:
        if started is not None:
            started.close()


def _ingest_all(logs: tuple[str, ...], commit: str | None, image: str | None, label: str | None,
                repo: str | None, year: int | None, rules: Any, fmt: str, db: str | None,
                started: Any, relabel: bool = False, at_boot_time: bool = False, origin: Any = None,
                log: Any = None, force: bool = False, source_name: str | None = None) -> None:
    from .db.connect import open_writer
    from .db.writes import DeployInfo, check_label, deploy_names
    from .ingest import at_boot_time as per_boot_commit
    from .ingest import ingest_file, ingest_origin, repo_state

    dirty = None
    if repo and at_boot_time:
        repo_state(repo)  # a repo git can read, before anything is stored
    elif repo:
        repo_commit, dirty = repo_state(repo)
        if commit and not repo_commit.startswith(commit):
            raise LedgerError(f"--commit {commit} disagrees with {repo} at {repo_commit[:12]}")
        commit = repo_commit
    info = DeployInfo(commit=commit, image=image, label=label, dirty=dirty, relabel=relabel)
    failed = 0
    from .render.ingest import boots_as_objects

    as_json = boots_as_objects(fmt)
    stored_ids: list[str] = []
    names: dict[int, str] = {}  # deploy id -> how the lines name it
    # the ingest writes with the database driver alone (no SQLAlchemy to load: ledger.db.connect)
    writer = open_writer(_db(db))
    _say_upgraded(writer.backup)
    try:
        check_label(writer, DeployInfo(commit, image or (origin.image if origin else None), label, dirty, relabel))
        # the modules and the open ledger live until exit: the collector need not walk them
        # again each time the parse's short-lived objects trigger a full collection
        gc.freeze()
        from ledger.parsers.source import printable

        from .render.ingest import announcer, echo_file, echo_no_commit, echo_origin_warnings
        from .render.progress import Progress

        for i, path in enumerate(logs or [None]):
            boot_time = per_boot_commit(repo, info) if repo and at_boot_time else None
            if origin is not None:
                shown = origin.source_name
                echo_origin_warnings(shown, origin.warnings)
                result = ingest_origin(writer, origin, log, info, rules, year=year,
                                       on_stored=None if as_json else _said(announcer(as_json, None), shown,
                                                                            writer, names),
                                       boot_time=boot_time)
                progress = None
            else:
                assert path is not None
                # a file name that is not UTF-8 prints (and is stored) escaped
                shown = source_name or ("<stdin>" if path == "-" else printable(path))
                progress = Progress(path) if sys.stderr.isatty() else None
                say = announcer(as_json, progress)
                result = ingest_file(writer, path, info, rules, year=year, progress=progress, force=force,
                                     name=source_name,
                                     on_stored=None if as_json else _said(say, shown, writer, names),
                                     started=started if i == 0 else None,
                                     per_boot=boot_time)
            if progress:
                progress.done()
            if boot_time is not None and boot_time.missed:
                echo_no_commit(shown, boot_time.repo, boot_time.missed)
            if not as_json and not result.error:  # read once per deploy, however many inputs name it
                unknown = [d for d in result.existing_deploys if d not in names]
                names.update(deploy_names(writer, unknown))
            where = [names[d] for d in result.existing_deploys if d in names]
            echo_file(result, shown, as_json, where)
            if result.error:
                failed += 1
                continue
            if as_json:
                stored_ids += [str(bid) for bid in result.ids]
    finally:
        writer.close()
    if as_json:
        from .queries import export
        from .render import echo
        from .render.ingest import stored_text

        objs = []
        if stored_ids:
            with _reading(db) as ledger:
                objs = export(ledger, stored_ids)
        echo(stored_text(objs, fmt))
    if failed:
        raise click.exceptions.Exit(ERROR)


def _said(say: Any, shown: str, writer: Any, names: dict[int, str]) -> Any:
    """Each boot is said as it is stored (committed), with its deploy: a stream may go on for
    days, and a file may hold a million boots (none of them is kept to be said at the end)."""
    from .db.writes import deploy_names
    from .ingest import stored_boot

    def said(bid: int, boot: Any, told: dict[str, Any]) -> None:
        deploy = told.get("deploy")
        if deploy is not None and deploy not in names:
            names.update(deploy_names(writer, [deploy]))
        say(stored_boot(bid, boot, shown, names.get(deploy) if deploy is not None else None,
                        told.get("superseded"), told.get("reference_moved")))

    return said


# -- reading ------------------------------------------------------------------------------------

def _columns_option(f):
    return click.option("--columns", metavar="COL,COL…",
                        help="Only these columns, in this order (any format).")(f)


def _pick_columns(wanted: str | None, default: list[str], every: list[str]) -> list[str]:
    if not wanted:
        return default
    cols = [c.strip() for c in wanted.split(",") if c.strip()]
    unknown = [c for c in cols if c not in every]
    if unknown:
        raise LedgerError(f"--columns {','.join(unknown)}: no such column (columns: {', '.join(every)})")
    return cols


@main.command()
@format_option()
@click.option("--deploy", help="Only this deploy (commit or digest prefix, or label).")
@click.option("--outcome", type=click.Choice(["ready", "failed", "crashed", "incomplete"]))
@click.option("--since", help="Only boots started at or after this: an ISO date or time, or a span back "
                              "from now (7d, 12h, 30m, 2w).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many rows.")
@click.option("--wide", is_flag=True, help="Every column (memory, each verdict, the source lines).")
@_columns_option
@db_option
def history(fmt: str, deploy: str | None, outcome: str | None, since: str | None, limit: int | None,
            wide: bool, columns: str | None, db: str | None) -> None:
    """One row per boot, newest first.

    The table shows id, start time (to the minute; '*' means vLLM printed no year and it was
    inferred), deploy, vLLM version, outcome, KV tokens, concurrency and the worst verdict
    ('-': not enough figures for one); --wide shows every column. csv, json and jsonl always
    carry every column.

    \b
    Examples:
      ledger history
      ledger history --since 7d --outcome failed
      ledger history --deploy qwen-fp8 --format markdown
      ledger history --columns boot,started_at,kv_tokens --format csv
    """
    from .queries import HISTORY_COLUMNS, HISTORY_COMPACT, Replay, iter_history
    from .render.history import default_columns, echo_history, no_boots, says_empty
    from .since import parse_since

    since_at = parse_since(since) if since else None
    cols = _pick_columns(columns, default_columns(fmt, wide, HISTORY_COMPACT, HISTORY_COLUMNS), HISTORY_COLUMNS)
    with _reading(db) as ledger:
        # printed as they are read, read again for each pass (memory flat at any size); a few
        # rows are read once and held (a table reads them twice: widths, then lines)
        rows = Replay(lambda: iter_history(ledger, deploy, outcome, since_at, limit))
        if says_empty(fmt) and not rows.any():
            filtered = bool(deploy or outcome or since)
            click.echo(no_boots(not filtered or _boot_count(ledger) == 0), err=True)
            return
        echo_history(rows, cols, fmt)


def _boot_count(ledger) -> int:
    from .queries import boot_count

    return boot_count(ledger)


@main.command()
@click.argument("boot", shell_complete=lambda ctx, param, incomplete: _complete_boots(ctx, incomplete))
@format_option()
@redact_option
@db_option
def show(boot: str, fmt: str, no_redact: bool, db: str | None) -> None:
    """Every fact of one boot with its line number and raw line, the shape, the failures.

    BOOT is a boot id, or a deploy (commit/digest prefix or label) for its latest boot.
    Secrets (keys, tokens, passwords), home paths and private addresses are redacted unless
    --no-redact.

    \b
    Examples:
      ledger show 3
      ledger show qwen-fp8 --format json
    """
    from .queries import show as show_boot
    from .render.show import echo_show

    with _reading(db) as ledger:
        obj = show_boot(ledger, boot)
    echo_show(obj, fmt, redact=not no_redact)


@main.command()
@click.argument("boots", nargs=-1, metavar="[BOOT...]",
                shell_complete=lambda ctx, param, incomplete: _complete_boots(ctx, incomplete))
@format_option("json", ("json", "jsonl", "csv"))
@redact_option
@db_option
def export(boots: tuple[str, ...], fmt: str, no_redact: bool, db: str | None) -> None:
    """Export boots (all, oldest first, or the ones named) as JSON, JSON lines or CSV facts.

    The JSON objects are a stable contract, documented in docs/output-contract.md.  Secrets
    (keys, tokens, passwords), home paths and private addresses are redacted unless --no-redact.

    \b
    Examples:
      ledger export > ledger.json
      ledger export 3 4 --format jsonl
      ledger export --format csv > facts.csv
    """
    from .queries import iter_export
    from .render import echo
    from .render.export import export_pieces

    # written as they are read: memory stays flat however many boots the ledger holds
    with _reading(db) as ledger:
        echo(export_pieces(iter_export(ledger, list(boots) or None), fmt, redact=not no_redact))


@main.command()
@click.argument("query")
@format_option()
@click.option("--timeout", type=click.FloatRange(min=0), default=120, show_default=True,
              help="Stop the query after this many seconds (from 0.001; 0: no limit).")
@db_option
def sql(query: str, fmt: str, timeout: float, db: str | None) -> None:
    """Run one read-only SQL query on the ledger and print the result.

    Tables: deploy, boot, shape, fact, failure, runtime_sample (see docs/guide.md, "SQL").

    \b
    Examples:
      ledger sql "SELECT boot_id, value FROM fact WHERE name = 'kv_cache_tokens'"
      ledger sql "SELECT outcome, count(*) FROM boot GROUP BY outcome" --format csv
    """
    from .db.readonly import check_timeout, run_sql
    from .render import rows_stream

    check_timeout(timeout)  # before the ledger is opened: a bad option is said first
    # rows go out as they come (a result of millions of rows is never held); Ctrl-C stops it
    with _reading(db) as ledger, run_sql(ledger, query, timeout) as result:
        for piece in rows_stream(result.rows, result.columns, fmt, flexible=result.columns):
            click.echo(piece, nl=False)
        click.echo()
        if note := result.note():
            click.echo(note, err=True)


@main.command()
@click.argument("a", shell_complete=lambda ctx, param, incomplete: _complete_boots(ctx, incomplete))
@click.argument("b", shell_complete=lambda ctx, param, incomplete: _complete_boots(ctx, incomplete))
@click.option("--all", "show_all", is_flag=True, help="Also list the rows that did not change.")
@format_option()
@redact_option
@db_option
def diff(a: str, b: str, show_all: bool, fmt: str, no_redact: bool, db: str | None) -> None:
    """Compare two boots, or two deploys' latest ready boots.

    A and B are boot ids, commit or digest prefixes, or labels; a deploy means its latest ready
    boot (D@latest: its latest boot, whatever its outcome; the diff says when a newer boot is
    passed over).  Beside the facts that changed: the derived rows (bytes per KV token, the KV
    pool, the capacity contract and its margin, the ceilings' margins, every verdict).  Shape
    keys printed on one side only are counted; --all lists them and the unchanged rows.
    Markdown is for pasting into a commit message: every format leaves out secrets (keys,
    tokens, passwords), home paths and private addresses unless --no-redact.

    \b
    Examples:
      ledger diff 3 4
      ledger diff fp8-4slot bf16-2slot --format markdown
      ledger diff radiance-fp8 radiance-bf16@latest
    """
    from .diff import diff as diff_boots
    from .render.diff import diff_text

    with _reading(db) as ledger:
        result = diff_boots(ledger, a, b, show_all)
    click.echo(diff_text(result, fmt, redact=not no_redact))


@main.command()
@click.argument("a", required=False, shell_complete=lambda ctx, param, incomplete: _complete_boots(ctx, incomplete))
@click.option("--against", "b", metavar="B", help="Compare with this boot or deploy (the boot before: B -> A).")
@click.option("--all", "show_all", is_flag=True, help="Also list shape keys printed on one side only, and unchanged ones.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "trailers", "json"]), default="text",
              show_default=True, help="text, markdown, git trailers, or the report object as JSON.")
@redact_option
@click.option("--max-decode-drop", default="3%", show_default=True, metavar="PCT",
              help="The decode drop against B beyond which the decode line says 'slower'.")
@click.option("--hook", is_flag=True, help="Print a prepare-commit-msg hook that appends the trailers for HEAD.")
@db_option
def note(a: str | None, b: str | None, show_all: bool, fmt: str, no_redact: bool, max_decode_drop: str,
         hook: bool, db: str | None) -> None:
    """The paragraph for a deploy commit's message, from the ledger.

    A (and B) are boot ids, commit or digest prefixes or labels; a deploy means its latest
    ready boot (D@latest: its latest boot; the note says when a newer boot did not come up).
    Prints what changed in the shape, bytes per KV token per rank, the KV pool, tokens and
    concurrency, the capacity contract and its margin, the ceilings, every verdict, decode
    against B, and the source lines; --format trailers prints git trailers (docs/notes.md).
    Secrets (keys, tokens, passwords, URL userinfo), home paths, private addresses and host
    names are redacted unless --no-redact.

    \b
    Examples:
      ledger note bf16-3x241664 --against fp8-4x262144
      ledger note qwen-bf16@ready --against qwen-fp8 --format markdown
      ledger note "$(git rev-parse HEAD)" --format trailers >> "$msg"
      ledger note --hook > .git/hooks/prepare-commit-msg && chmod +x .git/hooks/prepare-commit-msg
    """
    from .decode import parse_percent
    from .note import note as make_note
    from .render.note import HOOK, render_note

    if hook:
        click.echo(HOOK, nl=False)
        return
    if a is None:
        raise LedgerError("give the boot or deploy to note (or --hook)")
    with _reading(db) as ledger:
        result = make_note(ledger, a, b, show_all, parse_percent(max_decode_drop))
    click.echo(render_note(result, fmt, redact=not no_redact))


@main.command()
@click.argument("knob")
@click.option("--deploy", "deploys", multiple=True, metavar="D", help="The boots of this deploy (repeatable).")
@click.option("--group", metavar="BOOT", help="The boots of this boot's group (model, KV dtype, TP, block, release).")
@format_option()
@db_option
def sweep(knob: str, deploys: tuple[str, ...], group: str | None, fmt: str, db: str | None) -> None:
    """Boots of one comparable group ordered by the KNOB that varies, and the frontier.

    KNOB is a shape key: max_model_len, max_num_seqs, kv_cache_memory_bytes,
    gpu_memory_utilization, max_num_batched_tokens, or any other.  One row per boot: the value,
    outcome and failure@phase, KV tokens, concurrency, the contract margin, decode where it
    served; then the largest value that came up and did not crash, and the smallest that did
    not come up or crashed at runtime (a boot passed is no proof it serves).  The boots must be
    of one group (--group BOOT picks one).

    \b
    Examples:
      ledger sweep max_model_len --group bf16-3x241664-ready-util098
      ledger sweep max_num_seqs --deploy fp8-3x262144 --deploy fp8-4x262144 --format markdown
    """
    from .render.sweep import render_sweep
    from .sweep import sweep as run_sweep

    if deploys and group:
        raise LedgerError("give --deploy or --group, not both")
    with _reading(db) as ledger:
        result = run_sweep(ledger, knob, list(deploys) or None, group)
    click.echo(render_sweep(result, fmt))


# -- reconciliation -------------------------------------------------------------------------------


def _finite_arg(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A float option that is a number (click's FloatRange lets nan and inf through)."""
    import math

    if value is not None and not (math.isfinite(value) and value < 2**63):
        raise click.BadParameter(f"{value}: not a finite number")
    return value


def _bytes_arg(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from ledger.parsers.units import UnitError, human_bytes

    if value is None:
        return None
    try:
        return human_bytes(value)
    except UnitError:
        raise click.BadParameter(f"{value!r} is not a byte count (7.3e9, 6,100,000,000, 7.3G, 8GiB)") from None


@main.command()
@click.option("--like", "like", metavar="BOOT", help="Take the cost per token and the shape from this measured boot.")
@click.option("--config", "config", type=click.Path(dir_okay=False), help="A model's config.json: use the exact allocator.")
@click.option("--bytes-per-token", type=click.FloatRange(min=0, min_open=True), callback=_finite_arg,
              help="Use this cost per token.")
@click.option("--kv-bytes", callback=_bytes_arg, help="The KV budget per GPU: 7.3e9, 6,100,000,000, 7.3G, 8GiB.")
@click.option("--tokens", type=click.IntRange(min=1), help="Solve for the budget that holds this many tokens.")
@click.option("--max-num-seqs", type=click.IntRange(min=1), help="Sequences the pool must back (default: the boot's).")
@click.option("--max-model-len", type=click.IntRange(min=1), help="Tokens per request (default: the boot's).")
@click.option("--tensor-parallel-size", "tp", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--pipeline-parallel-size", "pp", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--block-size", type=click.IntRange(min=1), help="KV block size (default 16; hybrid: derived).")
@click.option("--kv-cache-dtype", default="auto", show_default=True, help="auto, bfloat16, fp8, ...")
@click.option("--engine-version", default="0.33.0", show_default=True, help="The vLLM release whose arithmetic to use.")
@click.option("--v0", is_flag=True, help="The V0 engine's arithmetic.")
@click.option("--mamba-page-bytes", type=click.IntRange(min=1), help="Hybrid models: one mamba layer's state page.")
@format_option(formats=("table", "json", "jsonl"))
@db_option
def predict(like: str | None, config: str | None, bytes_per_token: float | None, kv_bytes: int | None,
            tokens: int | None, max_num_seqs: int | None, max_model_len: int | None, tp: int, pp: int,
            block_size: int | None, kv_cache_dtype: str, engine_version: str, v0: bool,
            mamba_page_bytes: int | None, fmt: str, db: str | None) -> None:
    """Predict KV tokens for a budget, or the budget for a number of tokens.

    With --like BOOT the cost per token is that boot's measured budget / tokens (exact when the
    boot set --kv-cache-memory-bytes); with --config the exact allocator reproduces what the
    engine release would print. Prints tokens, concurrency at max_model_len and the margin
    against max_num_seqs x max_model_len (the capacity contract). With --like, a boot of its
    group at that shape that failed, or crashed at runtime, is named and makes the verdict
    'failed' or 'crashed': the arithmetic is no proof the shape comes up or serves.

    \b
    Examples:
      ledger predict --like bf16-3x241664 --kv-bytes 7.3e9 --max-num-seqs 2 --max-model-len 262144
      ledger predict --like fp8-4slot --tokens 786432
      ledger predict --config config.json --kv-bytes 6.51GiB --max-model-len 32768 --engine-version 0.11.0
    """
    from .allocator import AllocatorError, from_hf_config
    from .reconcile import predict_exact, predict_like

    if config and like:
        raise LedgerError("give --like or --config, not both")
    try:
        if config:
            if not max_model_len:
                raise LedgerError("--config needs --max-model-len")
            p = predict_exact(from_hf_config(config), kv_bytes, tokens, max_model_len, max_num_seqs,
                              kv_cache_dtype=kv_cache_dtype, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                              block_size=block_size, engine_version=engine_version, v0=v0,
                              mamba_page_bytes=mamba_page_bytes)
        elif like:
            with _reading(db) as ledger:
                p = predict_like(ledger, like, kv_bytes, tokens, max_num_seqs, max_model_len, bytes_per_token)
        else:
            p = predict_like(None, None, kv_bytes, tokens, max_num_seqs, max_model_len, bytes_per_token)  # type: ignore[arg-type]
    except AllocatorError as exc:
        raise LedgerError(str(exc)) from None
    from .render.predict import prediction_text

    click.echo(prediction_text(p.to_json(), fmt))


@main.command()
@click.argument("deploys", nargs=-1, metavar="[DEPLOY...]",
                shell_complete=lambda ctx, param, incomplete: _complete_deploys(ctx, incomplete))
@click.option("--against", "control", metavar="CONTROL",
              help="Also check decode: each deploy's latest ready boot against this control deploy's.")
@click.option("--max-decode-drop", default="3%", show_default=True, metavar="PCT",
              help="With --against: the decode drop beyond which the verdict is 'slower' (exit 1).")
@format_option()
@db_option
def check(deploys: tuple[str, ...], control: str | None, max_decode_drop: str, fmt: str, db: str | None) -> None:
    """Check the deploys' latest boots (all deploys if none named) against every view.

    Survival (how the boot ended: 'failed' before ready, 'crashed' after it, 'running' where its
    log ends), KV reconciliation (predicted vs measured tokens, within 0.1%), the KV formula
    (tokens from the model's own geometry, ledger model add; a group's first boot is checked by
    it), the capacity contract (tokens >= max_num_seqs x max_model_len) and the VRAM and host
    ceilings. Exits 1 if the boot failed or crashed, or any verdict is off, broken or over —
    usable in a deploy repo's CI; 'insufficient' and 'running' do not fail.
    A deploy that does not exist is an error (exit 2).  A group's KV reference is 'reference'
    (predicted from itself, so no test).  --against CONTROL adds decode: the median generation
    speed over intervals with running requests, against the control's, with the noise; 'slower'
    beyond --max-decode-drop exits 1.

    \b
    Examples:
      ledger check
      ledger check fp8-4slot bf16-2slot --format json
      ledger check bf16-2x262144 --against fp8-4x262144 --max-decode-drop 3%
    """
    from .decode import parse_percent
    from .reconcile import check_report
    from .render import echo
    from .render.check import check_text

    with _reading(db) as ledger:
        objs = check_report(ledger, list(deploys) or None, control,
                            parse_percent(max_decode_drop) if control else None)
    echo(check_text(objs, fmt))
    if any(o["failing"] for o in objs):
        raise click.exceptions.Exit(FINDING)


@main.group()
def deploy() -> None:
    """Deploys and what you record about them (card ceiling, host cap, reference boot)."""


def _deploy_arg(f):
    return click.argument("deploy_ref", metavar="DEPLOY",
                          shell_complete=lambda ctx, param, incomplete: _complete_deploys(ctx, incomplete))(f)


@deploy.command("set")
@_deploy_arg
@click.argument("assignments", nargs=-1, required=True, metavar="KEY=VALUE...")
@db_option
def deploy_set(deploy_ref: str, assignments: tuple[str, ...], db: str | None) -> None:
    """Record settings for a deploy: card_ceiling_bytes, host_cap_bytes, kv_reference_boot, model,
    tensor_parallel_size, speculative_method.

    A kv_reference_boot must be a boot of the same group (model, dtype, parallelism and engine
    release): a bf16 boot cannot predict an fp8 deploy's tokens. model names the model a deploy
    boots when its logs print none: the formula (ledger model add) predicts its boots from it.
    tensor_parallel_size and speculative_method (dflash, mtp, eagle3 …; ngram or none: no
    drafter) state what a log leaves unknown, for the formula; what the log prints comes first.

    \b
    Examples:
      ledger deploy set bf16-2slot card_ceiling_bytes=29120MiB host_cap_bytes=200GiB
      ledger deploy set fp8-3slot kv_reference_boot=12
      ledger deploy set glm-v model=zai-org/GLM-4.1V-9B-Thinking
      ledger deploy set dual4090 tensor_parallel_size=2 speculative_method=dflash
    """
    from .deploys import set_deploy
    from .render.deploys import settings_line

    with _writing(db) as ledger:
        name, current = set_deploy(ledger, deploy_ref, list(assignments))
    click.echo(settings_line(name, current))


@deploy.command("unset")
@_deploy_arg
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
@db_option
def deploy_unset(deploy_ref: str, keys: tuple[str, ...], db: str | None) -> None:
    """Remove settings of a deploy (a card ceiling, a host cap, a pinned reference boot).

    \b
    Example:
      ledger deploy unset fp8-3slot kv_reference_boot
    """
    from .deploys import unset_deploy
    from .render.deploys import settings_line

    with _writing(db) as ledger:
        name, current = unset_deploy(ledger, deploy_ref, list(keys))
    click.echo(settings_line(name, current))


@deploy.command("label")
@_deploy_arg
@click.argument("new_label", metavar="NEW")
@db_option
def deploy_label(deploy_ref: str, new_label: str, db: str | None) -> None:
    """Give a deploy a new label (the name history, diff and --deploy know it by).

    \b
    Example:
      ledger deploy label f532e03 qwen32-fp8
    """
    from .deploys import label_deploy
    from .render.deploys import label_line

    with _writing(db) as ledger:
        old, new = label_deploy(ledger, deploy_ref, new_label)
    click.echo(label_line(old, new))


@deploy.command("move")
@click.argument("refs", nargs=-1, required=True, metavar="BOOT... [DEPLOY]")
@click.option("--commit", help="Move to the deploy of this commit (a short sha finds it; created if the ledger has none).")
@click.option("--image", help="... and this image digest (sha256:<64 hex>).")
@click.option("--label", help="... labelled so (a new deploy), or checked against its label.")
@click.option("--relabel", is_flag=True, help="Let --label rename the deploy that --commit/--image name.")
@db_option
def deploy_move(refs: tuple[str, ...], commit: str | None, image: str | None, label: str | None, relabel: bool,
                db: str | None) -> None:
    """Give boots another deploy: fix a boot ingested with no identity, or with the wrong one.

    The last argument is the deploy (any name deploy list or history prints, deploy:N, a label,
    a commit or digest prefix) unless --commit / --image name it instead: the deploy whose
    commit begins with that sha (made if there is none).  All the boots move in one
    transaction, or none; their verdicts, group references and the web view follow them.  A
    deploy left with no boots can be removed: ledger deploy rm.

    \b
    Examples:
      ledger deploy move 7 8 deploy:3
      ledger deploy move 7 qwen-fp8
      ledger deploy move 7 8 --commit 4f1c2e9 --image sha256:7923b480... --label qwen-fp8
    """
    from .db.writes import DeployInfo
    from .deploys import move_to_deploy

    by_identity = commit is not None or image is not None
    _checked_commit(commit)
    _check_image(image)
    if (label or relabel) and not by_identity:
        raise LedgerError("--label and --relabel go with --commit/--image (to rename a deploy: ledger deploy label)")
    boots, target = (list(refs), None) if by_identity else (list(refs[:-1]), refs[-1])
    if not boots:
        raise LedgerError("give the boots to move and the deploy: ledger deploy move BOOT... DEPLOY")
    info = DeployInfo(commit.lower() if commit else None, image, label, None, relabel) if by_identity else None
    with _writing(db) as ledger:
        report = move_to_deploy(ledger, boots, target, info)
    from .render.deploys import moved_lines

    for line in moved_lines(report):
        click.echo(line)


@deploy.command("rm")
@_deploy_arg
@db_option
def deploy_rm(deploy_ref: str, db: str | None) -> None:
    """Remove a deploy that has no boots (one that deploy move left empty), with its settings.

    A deploy that still has boots is refused: move them (ledger deploy move) or remove them
    (ledger rm) first.

    \b
    Example:
      ledger deploy rm deploy:3
    """
    from .deploys import remove_deploy
    from .render.deploys import deploy_removed

    with _writing(db) as ledger:
        name = remove_deploy(ledger, deploy_ref)
    click.echo(deploy_removed(name))


@deploy.command("list")
@format_option()
@db_option
def deploy_list(fmt: str, db: str | None) -> None:
    """Every deploy with its boots and settings.

    \b
    Examples:
      ledger deploy list
      ledger deploy list --format json
    """
    from .deploys import list_deploys
    from .render.deploys import list_text

    with _reading(db) as ledger:
        rows = list_deploys(ledger)
    click.echo(list_text(rows, fmt))


@main.group()
def model() -> None:
    """Model geometries: what the formula predicts each boot's KV tokens from (ledger model add)."""


@model.command("add")
@click.argument("path", type=click.Path(exists=True), metavar="PATH")
@click.option("--as", "name", metavar="NAME", help="The name the logs print (model='NAME'); default: ORG/NAME "
              "for a Hugging Face cache snapshot, else the folder's absolute path.")
@format_option(formats=("table", "json", "jsonl"))
@db_option
def model_add(path: str, name: str | None, fmt: str, db: str | None) -> None:
    """Record a model's geometry from its config.json (PATH: the file, or a folder holding it).

    Layers, KV heads, head size, dtype and the hybrid layout are read from the config and kept
    under the name the logs print; every boot of that model is predicted again from it (the
    kv_formula view). Nothing is fetched: at ingest a model with no recorded geometry is looked
    up read-only in the local Hugging Face cache and in the model path the log printed.

    \b
    Examples:
      ledger model add ~/models/Qwen3-14B
      ledger model add fixtures/models/glm-4.1v-9b-thinking/config.json --as zai-org/GLM-4.1V-9B-Thinking
      ledger model add ./config.json --as /models/Qwen3.6-35B-A3B --format json
    """
    from .kvformula import add_model
    from .render import document
    from .render.formula import render_model_added

    with _writing(db) as ledger:
        obj = add_model(ledger, path, name)
    click.echo(document(obj, fmt, render_model_added))


@model.command("list")
@format_option()
@db_option
def model_list(fmt: str, db: str | None) -> None:
    """Every recorded model geometry: its layout and figures, where it came from, how many boots
    are predicted from it.

    \b
    Examples:
      ledger model list
      ledger model list --format json
    """
    from .kvformula import MODEL_COLUMNS, list_models
    from .render.formula import models_text

    with _reading(db) as ledger:
        rows = list_models(ledger)
    click.echo(models_text(rows, fmt, MODEL_COLUMNS))


@main.command()
@click.argument("boots", nargs=-1, required=True, metavar="BOOT...",
                shell_complete=lambda ctx, param, incomplete: _complete_boots(ctx, incomplete, ids_only=True))
@click.option("--yes", "-y", is_flag=True, help="Remove without asking (needed when stdin is not a terminal).")
@db_option
def rm(boots: tuple[str, ...], yes: bool, db: str | None) -> None:
    """Remove boots from the ledger, with their shape, facts, failures and runtime samples.

    BOOT is a boot id (as history shows it). All the boots go in one transaction, or none.
    Asks first on a terminal; elsewhere --yes is required.

    \b
    Examples:
      ledger rm 12
      ledger rm 12 13 --yes
    """
    from .deploys import describe_boots, remove_boots
    from .render import echo
    from .render.deploys import rm_done, rm_kept, rm_lines, rm_question

    with _writing(db) as ledger:
        found = describe_boots(ledger, list(boots))
        echo(rm_lines(found))
        if not yes:
            if not sys.stdin.isatty():
                raise LedgerError("rm: not on a terminal; give --yes to remove without asking")
            if not click.confirm(rm_question(found), default=False):
                click.echo(rm_kept())
                return
        n = remove_boots(ledger, [int(b) for b in boots])
    click.echo(rm_done(n))


# -- runtime ----------------------------------------------------------------------------------------


@main.command()
@click.argument("boot", shell_complete=lambda ctx, param, incomplete: _complete_boots(ctx, incomplete))
@format_option(formats=("table", "json", "jsonl"))
@db_option
def runtime(boot: str, fmt: str, db: str | None) -> None:
    """What a served boot did: decode t/s, KV usage, prefix hits, speculative acceptance,
    requests, uptime and how it ended.

    Decode throughput is taken over the stats intervals that had running requests.

    \b
    Examples:
      ledger runtime 7
      ledger runtime qwen-fp8 --format json
    """
    from .render.runtime import runtime_text
    from .runtime import runtime_report

    with _reading(db) as ledger:
        report = runtime_report(ledger, boot)
    click.echo(runtime_text(report, fmt))


# -- watch --------------------------------------------------------------------------------------


@main.command()
@click.argument("source", required=False, metavar="[SOURCE]")
@click.option("--container", metavar="NAME|ID", help="Follow this container's log (docker or podman logs -f).")
@click.option("--runtime", type=click.Choice(["docker", "podman"]),
              help="The container runtime for --container (default: the first on PATH that knows it).")
@click.option("--unit", metavar="NAME", help="Follow this systemd unit's journal (journalctl -u NAME -f).")
@click.option("--since", "journal_since", metavar="TIME",
              help="Alert on what the source already held from TIME on (default: only on what comes while "
                   "watched). With --unit: also read the journal from there (journalctl's --since, as it is).")
@click.option("--journal-file", "journal_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="With --unit: follow these journal files (journalctl --file) instead of the system's journal.")
@click.option("--journal-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="With --unit: follow the journal in this folder (journalctl --directory).")
@click.option("--commit", help="The deploy repo's commit for these boots.")
@click.option("--image", help="The container image digest (sha256:<64 hex>).")
@click.option("--label", help="A name for the deploy.")
@click.option("--repo", type=click.Path(file_okay=False), help="Read --commit (and dirty flag) from this git repo.")
@click.option("--year", type=click.IntRange(1970, 2100), help="Year of the log's MM-DD timestamps (default: this year).")
@click.option("--grammar", "grammars", multiple=True, metavar="PACK", help="A grammar pack for a fork's own lines.")
@click.option("--kv-usage-above", "kv_above", default="95%", show_default=True, metavar="PCT",
              help="Alert when GPU KV cache usage stays above this ...")
@click.option("--for", "kv_for", default="5m", show_default=True, metavar="DURATION",
              help="... for this long (log time).")
@click.option("--decode-drop", default="10%", show_default=True, metavar="PCT",
              help="Alert when the decode median over --decode-window falls this far below the deploy's previous boot.")
@click.option("--decode-window", default="10m", show_default=True, metavar="DURATION",
              help="The window of the decode median (log time).")
@click.option("--silent-for", default="10m", show_default=True, metavar="DURATION",
              help="Alert (hung) when no stats line comes for this long while requests were running.")
@click.option("--commit-every", default="5s", show_default=True, metavar="DURATION",
              help="Commit a running boot's samples at least this often while lines come ...")
@click.option("--commit-samples", default=500, show_default=True, type=click.IntRange(1, 1_000_000),
              help="... or as soon as this many are waiting.")
@click.option("--exec", "exec_cmd", metavar="CMD",
              help="Run CMD (a shell command) for each alert: its JSON on stdin, LEDGER_ALERT_* variables.")
@click.option("--webhook", metavar="URL", help="POST each alert to URL (retried with back-off, 4 tries).")
@click.option("--webhook-backoff", default="1s", show_default=True, metavar="DURATION",
              help="The wait before a failed POST's first retry, doubled before each next one.")
@click.option("--webhook-timeout", default="10s", show_default=True, metavar="DURATION",
              help="How long one try of a POST may take in all (connect, send, the answer).")
@click.option("--webhook-format", type=click.Choice(["json", "ntfy", "slack"]), default="json", show_default=True,
              help="json: the alert object; ntfy: its message as text with Title/Tags/Priority; slack: {\"text\": …}.")
@format_option(formats=("table", "jsonl"))
@db_option
def watch(source: str | None, container: str | None, runtime: str | None, unit: str | None,
          journal_since: str | None, journal_files: tuple[str, ...], journal_dir: str | None, commit: str | None, image: str | None, label: str | None, repo: str | None,
          year: int | None, grammars: tuple[str, ...], kv_above: str, kv_for: str, decode_drop: str,
          decode_window: str, silent_for: str, commit_every: str, commit_samples: int, exec_cmd: str | None,
          webhook: str | None, webhook_backoff: str, webhook_timeout: str, webhook_format: str, fmt: str,
          db: str | None) -> None:
    """Follow a live server's log into the ledger and say when something goes wrong.

    SOURCE is a log file (followed like tail -F: appends, rotation, truncation, a file that
    does not exist yet) or - for stdin; or --container NAME / --unit NAME.  Each boot is stored
    as soon as its start-up ends (ready or failed), its runtime samples every --commit-every
    or --commit-samples; a kill loses at most that last batch (nothing, for a file: a restart
    reads it again and stores nothing twice).  One line per alert on stdout (--format jsonl:
    one JSON object): boot_failed, boot_verdict, crashed, restart_loop, kv_usage,
    decode_drop, hung, recovered; each once per incident.  Ctrl-C stores what was read and
    exits 0.  See docs/watch.md.

    \b
    Examples:
      ledger watch --unit vllm --webhook https://ntfy.sh/my-vllm --webhook-format ntfy
      ledger watch /var/log/vllm/serve.log --label qwen-fp8 --format jsonl
      ledger watch --container vllm --exec 'notify-send "$LEDGER_ALERT_MESSAGE"'
      journalctl -u vllm -f | ledger watch - --kv-usage-above 90% --for 2m
    """
    from .db.connect import open_writer
    from .db.writes import DeployInfo
    from .render.watch import alert_line, note_text, summary_text
    from .watch import follower_for, parse_duration, parse_percent
    from .watch.alerts import Thresholds
    from .watch.session import Settings, Watch
    from .watch.sinks import Sinks, check_webhook_url

    if webhook is not None:
        check_webhook_url(webhook)
    commit = _checked_commit(commit)
    _check_image(image)
    thresholds = Thresholds(kv_above=parse_percent("--kv-usage-above", kv_above),
                            kv_for=parse_duration("--for", kv_for),
                            decode_drop=parse_percent("--decode-drop", decode_drop),
                            decode_window=parse_duration("--decode-window", decode_window),
                            silent_for=parse_duration("--silent-for", silent_for))
    every = parse_duration("--commit-every", commit_every)
    backoff = parse_duration("--webhook-backoff", webhook_backoff)
    post_timeout = parse_duration("--webhook-timeout", webhook_timeout)
    if post_timeout <= 0:
        raise LedgerError(f"--webhook-timeout {webhook_timeout}: expected a duration above 0, such as 10s")
    rules = _ruleset(grammars)

    def note(what: Any) -> None:
        click.echo(note_text(what), err=True)

    # the backlog is told from --since on: a unit's journal is read from there (journalctl's own
    # syntax), so all of it; another source is read whole and told from that log time on
    alert_since = None
    if journal_since is not None:
        from .since import parse_since

        alert_since = "" if unit else parse_since(journal_since)
    from .db.location import resolve_url, sqlite_file

    db_url = _db(db)
    follower, name, origin = follower_for(source, container, runtime, unit, journal_since if unit else None, note,
                                          journal_files, journal_dir, ledger=sqlite_file(resolve_url(db_url)))
    dirty = None
    if repo:
        from .ingest import repo_state

        repo_commit, dirty = repo_state(repo)
        if commit and not repo_commit.startswith(commit):
            raise LedgerError(f"--commit {commit} disagrees with {repo} at {repo_commit[:12]}")
        commit = repo_commit
    info = DeployInfo(commit=commit, image=image or (origin.image if origin is not None else None), label=label,
                      dirty=dirty, relabel=True)
    sinks = Sinks(exec_cmd, webhook, webhook_format, on_note=note, backoff=backoff, timeout=post_timeout)

    def emit(alert: Any) -> None:
        click.echo(alert_line(alert, fmt))
        sys.stdout.flush()

    settings = Settings(name, info, dict(origin.facts) if origin is not None else {}, thresholds, year,
                        commit_seconds=every, commit_samples=commit_samples, image_given=image is not None)
    try:
        summary = Watch(lambda: open_writer(db_url), follower, settings, rules, emit, note, sinks=sinks,
                        alert_since=alert_since).run()
    finally:
        sinks.close()
    click.echo(summary_text(summary), err=True)


@main.group()
def plot() -> None:
    """Charts in files, PNG or SVG by the suffix of -o (the charts of ledger serve's pages;
    needs matplotlib: pip install 'vllm-ledger[plot]', which the 'serve' extra includes)."""


def _write_chart(make, output: str, db: str | None) -> None:
    from pathlib import Path

    from .render.admin import wrote
    from .serve import charts

    with _reading(db) as ledger:
        fig = make(ledger)
    click.echo(wrote(charts.save(fig, Path(output))))


@plot.command("runtime")
@click.argument("boot")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="runtime.png", show_default=True)
@click.option("--engines", type=click.Choice(["summed", "split"]), default="summed", show_default=True,
              help="Add the data-parallel engines' figures up, or draw one line per engine.")
@db_option
def plot_runtime_cmd(boot: str, output: str, engines: str, db: str | None) -> None:
    """A boot's runtime against log time: decode and prompt throughput, KV usage, running and
    waiting requests, speculative acceptance; the crash marked. Long runs are resampled.

    \b
    Examples:
      ledger plot runtime 7 -o boot7.png
      ledger plot runtime qwen-fp8 --engines split -o engines.svg
    """
    from .serve import charts, data

    def make(ledger):
        frame, report = data.runtime_frame(ledger, boot)
        return charts.runtime_figure(frame, report, split=engines == "split")

    _write_chart(make, output, db)


@plot.command("history")
@click.option("--deploy", help="Only this deploy's boots.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="history.png", show_default=True)
@db_option
def plot_history_cmd(deploy: str | None, output: str, db: str | None) -> None:
    """KV tokens, concurrency, KV memory, weights and graph memory of every boot against its
    start time, coloured by outcome.

    \b
    Example:
      ledger plot history --deploy qwen-fp8 -o qwen.png
    """
    from .serve import charts, data

    def make(ledger):
        frame, title = data.history_frame(ledger, deploy)
        return charts.boots_figure(frame, title)

    _write_chart(make, output, db)


@plot.command("deploy")
@click.argument("deploy_ref", metavar="DEPLOY")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="deploy.png", show_default=True)
@db_option
def plot_deploy_cmd(deploy_ref: str, output: str, db: str | None) -> None:
    """One deploy's boots over time (the chart of its page in ledger serve).

    \b
    Example:
      ledger plot deploy fp8-4slot -o fp8.svg
    """
    from .serve import charts, data

    def make(ledger):
        frame, title = data.deploy_frame(ledger, deploy_ref)
        return charts.boots_figure(frame, title)

    _write_chart(make, output, db)


# -- serve ------------------------------------------------------------------------------------------


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (only this machine by default).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@redact_option
@db_option
def serve(host: str, port: int, no_redact: bool, db: str | None) -> None:
    """Serve the ledger, read-only, to a browser: deploys, a deploy's boots over time, a boot's
    evidence, verdicts and runtime charts, diffs; /api/... gives each page as JSON.

    Needs the 'serve' extra (pip install 'vllm-ledger[serve]'). Ctrl-C stops it.

    The diff and boot pages (and their JSON) leave out secrets (keys, tokens, passwords), home
    paths and private addresses unless --no-redact.

    \b
    Examples:
      ledger serve
      ledger --db postgresql+psycopg://ledger@db.lan/ledger serve --port 9000
    """
    from .serve import run

    run(_db(db), host, port, echo=click.echo, redact=not no_redact)


# -- grammar packs ----------------------------------------------------------------------------------


@main.group()
def grammar() -> None:
    """Grammar packs: a fork's own log lines, declared in a TOML file."""


@grammar.command("list")
@click.option("--grammar", "grammars_", multiple=True, metavar="PACK", help="Also list this pack (as ingest would).")
@format_option()
def grammar_list(grammars_: tuple[str, ...], fmt: str) -> None:
    """The grammars in use: the built-in vLLM grammar and every pack found.

    Packs load from --grammar, from the folder named by $LEDGER_GRAMMARS, and from
    ~/.config/ledger/grammars ($XDG_CONFIG_HOME/ledger/grammars).

    \b
    Example:
      LEDGER_GRAMMARS=~/packs ledger grammar list
    """
    from .grammar import bundled, grammars
    from .render import echo
    from .render.grammar import list_text

    echo(list_text(grammars(grammars_), bundled(), fmt))


@grammar.command("check")
@click.argument("pack")
@click.argument("logs", nargs=-1, metavar="[LOG...]")
@click.option("--unclaimed", "max_unclaimed", type=click.IntRange(min=0), default=40, show_default=True,
              help="Show at most this many unclaimed lines.")
@format_option()
def grammar_check(pack: str, logs: tuple[str, ...], max_unclaimed: int, fmt: str) -> None:
    """Validate a pack, run it over logs, and list the lines nobody reads yet.

    Prints, per rule, how many lines it matched and its first match; then the unclaimed
    lines: lines no rule (built-in or pack) matched that carry figures with units
    (GiB, MiB, slots, tokens, t/s, %) — what is left to write rules for.

    PACK "vllm" means the built-in grammar alone: a first look at an unknown log.

    \b
    Examples:
      ledger grammar check vllm boot.log
      ledger grammar check myfork.toml boot.log
      ledger grammar check radiance fixtures/radiance/*.log
    """
    from .grammar import check_pack
    from .render import echo
    from .render.grammar import check_text

    echo(check_text(check_pack(pack, list(logs)), fmt, max_unclaimed))


@main.command("copy")
@click.argument("src")
@click.argument("dst")
@format_option(formats=("table", "json", "jsonl"))
def copy_cmd(src: str, dst: str, fmt: str) -> None:
    """Copy every boot of the ledger SRC into the ledger DST (created and migrated if new).

    Boots already in DST (same content) are left alone, so copying again is harmless; deploys
    keep their settings. Use it to move a host's SQLite ledger into a shared PostgreSQL one.

    \b
    Example:
      ledger copy ~/.local/share/ledger/ledger.db postgresql+psycopg://ledger@db.lan/ledger
    """
    from .copy import copy_between
    from .render.admin import copy_text

    click.echo(copy_text(copy_between(src, dst), fmt))


# -- the database ---------------------------------------------------------------------------------


@main.group()
def db() -> None:
    """The ledger database itself: where it is, its schema revision, upgrades."""


@db.command("upgrade")
@db_option
def db_upgrade(db: str | None) -> None:
    """Apply pending migrations (SQLite ledgers are backed up first).

    \b
    Example:
      ledger db upgrade --db ~/ledgers/rig1.db
    """
    from .db.connect import upgrade
    from .render.admin import upgrade_text

    click.echo(upgrade_text(*upgrade(_db(db))))


@db.command("current")
@format_option(formats=("table", "json", "jsonl"))
@db_option
def db_current(fmt: str, db: str | None) -> None:
    """Print the ledger's location (URL) and schema revision.

    \b
    Examples:
      ledger db current
      ledger db current --format json
    """
    from .db.connect import current
    from .render.admin import current_text

    click.echo(current_text(current(_db(db)), fmt))


@db.command("datasette")
@db_option
@click.option("--database", metavar="NAME", help="The name Datasette gives the file (default: its stem, "
              "e.g. ledger for ledger.db).")
def db_datasette(db: str | None, database: str | None) -> None:
    """Print Datasette metadata for the ledger: a description and unit for every table, view and
    column, canned queries (broken contracts, OOMs by phase, KV tokens per deploy over time),
    the compact runtime_sample_row hidden behind the runtime_sample view.  Reads no ledger.

    \b
    Examples:
      ledger db datasette > metadata.json
      datasette "$(ledger db path)" -m metadata.json
      ledger --db demo.db db datasette > demo.json && datasette demo.db -m demo.json
    """
    from .datasette import metadata
    from .db.location import resolve_url, sqlite_file
    from .db.sqlite import head_columns
    from .render import json_text

    if database is None:
        path = sqlite_file(resolve_url(_db(db)))
        database = path.stem if path is not None else "ledger"
    click.echo(json_text(metadata(head_columns(), database)))


@db.command("path")
@db_option
def db_path(db: str | None) -> None:
    """Print the ledger's file, bare (for sqlite3, datasette, cp); an error for a ledger that
    is not a SQLite file.  Prints the path whether or not the file exists yet.

    \b
    Examples:
      sqlite3 "$(ledger db path)"
      cp "$(ledger db path)" backup.db
    """
    from .db.location import resolve_url, sqlite_file

    url = resolve_url(_db(db))
    path = sqlite_file(url)
    if path is None:
        raise LedgerError("the ledger is a database server, not a SQLite file: no path to print "
                          "(ledger db current shows its URL)")
    click.echo(str(path))


# -- completion ---------------------------------------------------------------------------------


def _complete_db(ctx: click.Context) -> str | None:
    root = ctx.find_root()
    return ctx.params.get("db") or root.params.get("db")


def _complete_boots(ctx: click.Context, incomplete: str, ids_only: bool = False) -> list[Any]:
    """Boot ids (and deploy labels) for shell completion; nothing if the ledger cannot be read."""
    from click.shell_completion import CompletionItem

    try:
        from .db.location import plain_sqlite_path, resolve_url
        from .db.sqlite import completions

        path = plain_sqlite_path(resolve_url(_complete_db(ctx)))
        if path is None or not path.exists():
            return []
        ids, labels = completions(path)
    except Exception:  # completion must never print a traceback into the shell
        return []
    items = [CompletionItem(str(i), help=h) for i, h in ids if str(i).startswith(incomplete)]
    if not ids_only:
        items += [CompletionItem(label) for label in labels if label.startswith(incomplete)]
    return items


def _complete_deploys(ctx: click.Context, incomplete: str) -> list[Any]:
    from click.shell_completion import CompletionItem

    try:
        from .db.location import plain_sqlite_path, resolve_url
        from .db.sqlite import completions

        path = plain_sqlite_path(resolve_url(_complete_db(ctx)))
        if path is None or not path.exists():
            return []
        _ids, labels = completions(path)
    except Exception:
        return []
    return [CompletionItem(label) for label in labels if label.startswith(incomplete)]


if __name__ == "__main__":  # pragma: no cover
    main()
