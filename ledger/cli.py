"""The ``ledger`` command: wiring options to the library and domain errors to exit codes.

Nothing here parses logs, builds SQL or opens a database itself; see ``ledger.ingest``,
``ledger.queries``, ``ledger.diff`` and ``ledger.db``.
"""

from __future__ import annotations

import gc
import re
import sys
from contextlib import contextmanager
from typing import Any

import click

from . import __version__
from .errors import LedgerError
from .output import dumps

DB_HELP = "Ledger file or SQLAlchemy URL (env LEDGER_DB; default ~/.local/share/ledger/ledger.db)."
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def db_option(f):
    return click.option("--db", "db", envvar="LEDGER_DB", metavar="PATH|URL", help=DB_HELP)(f)


def _db(db: str | None) -> str | None:
    """The subcommand's --db, else the group's (``ledger --db X history``), else env/default."""
    if db:
        return db
    ctx = click.get_current_context(silent=True)
    return ctx.find_root().params.get("db") if ctx else None


def _open(db: str | None, mode: str):
    from .db.connect import connect

    ledger = connect(_db(db), mode=mode)
    _say_upgraded(ledger.backup)
    return ledger


def _say_upgraded(backup: Any) -> None:
    if backup is not None:
        click.echo(f"ledger: upgraded the schema; backup of the old ledger at {backup}", err=True)


@contextmanager
def _opened(db: str | None, mode: str):
    ledger = _open(db, mode)
    try:
        yield ledger
    finally:
        ledger.dispose()


def _reading(db: str | None):
    """The ledger for a command that only reads, closed however the command ends."""
    return _opened(db, "read")


def _writing(db: str | None):
    """The ledger for a command that writes (through ``ledger.writer()``)."""
    return _opened(db, "write")


class LedgerGroup(click.Group):
    """Turns LedgerError into a one-line message and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        from parsers.packs import PackError
        from parsers.source import SourceError

        try:
            return super().invoke(ctx)
        except (LedgerError, PackError, SourceError) as exc:
            raise click.ClickException(str(exc)) from None
        except Exception as exc:
            # a database that fails under us (read-only file, full disk, server gone): one line
            from .db.errors import describe_db_error, is_database_error

            if is_database_error(exc):
                raise click.ClickException(describe_db_error(exc)) from None
            raise


@click.group(cls=LedgerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ledger")
@db_option
def main(db: str | None) -> None:
    """A ledger of vLLM boots: ingest boot and runtime logs, query the history, diff deploys.

    \b
    Examples:
      ledger ingest boot.log --label fp8-4slot --repo ~/deploy
      ledger history
      ledger show 3
      ledger diff fp8-4slot bf16-2slot --format markdown
      ledger sql "SELECT name, value FROM fact WHERE boot_id = 3"
    """


# -- ingest -------------------------------------------------------------------------------------


@main.command()
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option("--commit", help="The deploy repo's commit for these boots.")
@click.option("--image", help="The container image digest (sha256:<64 hex>).")
@click.option("--label", help="A name for the deploy (used by diff and history --deploy).")
@click.option("--repo", type=click.Path(file_okay=False), help="Read --commit (and dirty flag) from this git repo.")
@click.option("--year", type=click.IntRange(1970, 2100),
              help="Year of the log's MM-DD timestamps (default: a year the log prints, else the file's mtime).")
@click.option("--grammar", "grammars", multiple=True, metavar="PACK",
              help="A grammar pack (TOML file, or the name of a bundled pack) for a fork's own lines. Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the stored boots as export objects.")
@db_option
def ingest(logs: tuple[str, ...], commit: str | None, image: str | None, label: str | None,
           repo: str | None, year: int | None, grammars: tuple[str, ...], as_json: bool, db: str | None) -> None:
    """Read vLLM logs (plain, .gz, .zst, or - for stdin) into the ledger.

    Each boot in a log is stored once with every figure it prints; ingesting the same file
    content again stores nothing.

    \b
    Examples:
      ledger ingest /var/log/vllm/boot.log --label qwen-fp8
      docker logs vllm 2>&1 | ledger ingest - --image sha256:7923b480...
      ledger ingest --repo ~/deploy fixtures/real/*.log
      ledger ingest --grammar radiance --label bf16-2slot boot.log
    """
    import parsers
    from parsers.packs import discover, pack_rules

    if image and not _DIGEST.match(image):
        raise LedgerError(f"--image {image}: expected sha256: followed by 64 hex digits")
    rules = parsers.builtin_ruleset(pack_rules(discover(grammars)))
    # the first input starts now: a large file is scanned on the other core while the ledger's
    # modules load and the ledger opens (they are what the imports below cost)
    from .ingest import start_parse

    started = start_parse(logs[0], rules, year) if logs[0] != "-" else None
    try:
        _ingest_all(logs, commit, image, label, repo, year, rules, as_json, db, started)
    finally:
        if started is not None:
            started.close()


def _ingest_all(logs: tuple[str, ...], commit: str | None, image: str | None, label: str | None,
                repo: str | None, year: int | None, rules: Any, as_json: bool, db: str | None,
                started: Any) -> None:
    from .db.connect import open_writer
    from .db.writes import DeployInfo
    from .ingest import ingest_file, repo_state

    dirty = None
    if repo:
        repo_commit, dirty = repo_state(repo)
        if commit and not repo_commit.startswith(commit):
            raise LedgerError(f"--commit {commit} disagrees with {repo} at {repo_commit[:12]}")
        commit = repo_commit
    info = DeployInfo(commit=commit, image=image, label=label, dirty=dirty)
    failed = 0
    stored_ids: list[str] = []
    # the ingest writes with the database driver alone (no SQLAlchemy to load: ledger.db.connect)
    writer = open_writer(_db(db))
    _say_upgraded(writer.backup)
    try:
        # the modules and the open ledger live until exit: the collector need not walk them
        # again each time the parse's short-lived objects trigger a full collection
        gc.freeze()
        from parsers.source import printable

        for i, path in enumerate(logs):
            shown = printable(path)  # a file name that is not UTF-8 prints (and is stored) escaped
            progress = _Progress(path) if sys.stderr.isatty() else None
            result = ingest_file(writer, path, info, rules, year=year, progress=progress,
                                 on_stored=_streamed(path, as_json) if path == "-" else None,
                                 started=started if i == 0 else None)
            if progress:
                progress.done()
            for warning in result.warnings:
                click.echo(f"warning: {shown}: {warning}", err=True)
            if result.long_lines:
                click.echo(f"warning: {shown}: {result.long_lines} line{'s' if result.long_lines != 1 else ''} "
                           f"longer than 1 MiB (not vLLM records): only their first MiB was read", err=True)
            if result.error:
                failed += 1
                click.echo(f"error: {result.error}", err=True)
                continue
            for bid, boot in result.stored:
                stored_ids.append(str(bid))
                if not as_json and path != "-":
                    click.echo(_boot_line(bid, boot, shown))
            if result.repeated and not as_json:
                click.echo(f"{shown}: {result.repeated} boot{'s' if result.repeated != 1 else ''} identical to one "
                           f"before in the same input (same lines, same counts): stored once")
            if result.existing and not result.stored and not as_json:
                click.echo(f"{shown}: already in the ledger ({result.existing} boot"
                           f"{'s' if result.existing != 1 else ''}, sha256 {result.sha256[:12]}); nothing stored")
    finally:
        writer.close()
    if as_json:
        from .queries import export

        with _reading(db) as ledger:
            click.echo(dumps(export(ledger, stored_ids) if stored_ids else [], indent=2))
    if failed:
        raise click.exceptions.Exit(1)


class _Progress:
    """A progress line on a terminal (stderr), shown once an input has taken a second."""

    def __init__(self, path: str):
        import os
        import time

        self.path, self.start, self.shown = path, time.monotonic(), False
        self.total = os.path.getsize(path) if path != "-" and os.path.isfile(path) else None

    def __call__(self, done: int) -> None:
        import time

        from parsers.source import printable

        if time.monotonic() - self.start < 1.0:
            return
        self.shown = True
        mb = done / 1e6
        if self.total:
            click.echo(f"\r{printable(self.path)}: {done / self.total:4.0%} of {self.total / 1e6:,.0f} MB", nl=False, err=True)
        else:
            click.echo(f"\r{printable(self.path)}: {mb:,.0f} MB read", nl=False, err=True)

    def done(self) -> None:
        if self.shown:
            click.echo("\r\033[K", nl=False, err=True)


def _streamed(path: str, as_json: bool):
    """From stdin, say each boot as it is stored: the stream may go on for days."""
    def say(bid: int, boot) -> None:
        if not as_json:
            click.echo(_boot_line(bid, boot, path))

    return say


def _boot_line(bid: int, boot, path: str) -> str:
    from parsers.units import format_bytes
    from parsers.vocabulary import F

    parts = [f"boot {bid}", f"{boot.outcome:<10}"]
    parts.append(f"vLLM {boot.engine_version}" if boot.engine_version else "vLLM ?")
    tokens = boot.summary(F.kv_cache_tokens)
    if tokens:
        parts.append(f"kv {int(tokens.value):,} tokens")
    conc = boot.summary(F.max_concurrency)
    if conc:
        parts.append(f"{conc.value:.2f}x")
    mem = boot.summary(F.kv_cache_reserved_bytes) or boot.summary(F.available_kv_cache_bytes)
    if mem:
        parts.append(f"kv memory {format_bytes(mem.value)}")
    weights = boot.summary(F.model_weights_bytes)
    if weights:
        parts.append(f"weights {format_bytes(weights.value)}")
    if boot.failures:
        parts.append("failure " + ", ".join(f"{f.kind}@{f.phase}" for f in boot.failures))
    parts.append(f"({path}:{boot.first_line}-{boot.last_line})")
    return "  ".join(parts)


# -- reading ------------------------------------------------------------------------------------

FORMAT = click.Choice(["table", "csv", "json", "markdown"])


@main.command()
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
@click.option("--deploy", help="Only this deploy (commit or digest prefix, or label).")
@click.option("--outcome", type=click.Choice(["ready", "failed", "crashed", "incomplete"]))
@click.option("--since", help="Only boots started at or after this time (YYYY-MM-DD[ HH:MM:SS]).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many rows.")
@db_option
def history(fmt: str, deploy: str | None, outcome: str | None, since: str | None, limit: int | None,
            db: str | None) -> None:
    """One row per boot, newest first.

    A '*' after the start time means vLLM printed no year and it was inferred.

    \b
    Examples:
      ledger history
      ledger history --deploy qwen-fp8 --outcome failed --format markdown
    """
    from .output import render
    from .queries import HISTORY_COLUMNS, humanize_history
    from .queries import history as history_rows

    with _reading(db) as ledger:
        rows = history_rows(ledger, deploy, outcome, since, limit)
    if fmt in ("table", "markdown"):
        rows = humanize_history(rows)
    if not rows and fmt == "table":
        click.echo("no boots in the ledger yet (try: ledger ingest LOG)")
        return
    click.echo(render(rows, HISTORY_COLUMNS, fmt, align_right=("kv_tokens", "concurrency", "kv_memory", "weights")))


@main.command()
@click.argument("boot")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
def show(boot: str, fmt: str, db: str | None) -> None:
    """Every fact of one boot with its line number and raw line, the shape, the failures.

    BOOT is a boot id, or a deploy (commit/digest prefix or label) for its latest boot.

    \b
    Examples:
      ledger show 3
      ledger show qwen-fp8 --format json
    """
    from .queries import show as show_boot
    from .showing import render_show

    with _reading(db) as ledger:
        obj = show_boot(ledger, boot)
    click.echo(dumps(obj, indent=2) if fmt == "json" else render_show(obj))


@main.command()
@click.argument("boots", nargs=-1, metavar="[BOOT...]")
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "csv"]), default="json", show_default=True)
@db_option
def export(boots: tuple[str, ...], fmt: str, db: str | None) -> None:
    """Export boots (all, oldest first, or the ones named) as JSON, JSON lines or CSV facts.

    The JSON objects are a stable contract, documented in the README.

    \b
    Examples:
      ledger export > ledger.json
      ledger export 3 4 --format jsonl
      ledger export --format csv > facts.csv
    """
    from .output import render
    from .queries import export as export_objs

    with _reading(db) as ledger:
        objs = export_objs(ledger, list(boots) or None)
    if fmt == "json":
        click.echo(dumps(objs, indent=2))
    elif fmt == "jsonl":
        for o in objs:
            click.echo(dumps(o))
    else:
        rows = [{"boot": o["boot"], "outcome": o["outcome"], "commit": o["deploy"]["commit"],
                 "image_digest": o["deploy"]["image_digest"], "label": o["deploy"]["label"],
                 "engine_version": o["engine"]["version"], **f} for o in objs for f in o["facts"]]
        cols = ["boot", "outcome", "commit", "image_digest", "label", "engine_version", "name", "value",
                "unit", "precision", "rank", "process", "pack", "line", "text"]
        click.echo(render(rows, cols, "csv"))


@main.command()
@click.argument("query")
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0), default=120, show_default=True,
              help="Stop the query after this many seconds (0: no limit).")
@db_option
def sql(query: str, fmt: str, timeout: float, db: str | None) -> None:
    """Run one read-only SQL query on the ledger and print the result.

    Tables: deploy, boot, shape, fact, failure, runtime_sample (see the README).

    \b
    Examples:
      ledger sql "SELECT boot_id, value FROM fact WHERE name = 'kv_cache_tokens'"
      ledger sql "SELECT outcome, count(*) FROM boot GROUP BY outcome" --format csv
    """
    from .db.readonly import run_sql
    from .output import render_stream

    # rows go out as they come (a result of millions of rows is never held); Ctrl-C stops it
    with _reading(db) as ledger, run_sql(ledger, query, timeout) as result:
        for piece in render_stream(result.rows, result.columns, fmt):
            click.echo(piece, nl=False)
        click.echo()


@main.command()
@click.argument("a")
@click.argument("b")
@click.option("--all", "show_all", is_flag=True, help="Also list the rows that did not change.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table",
              show_default=True)
@db_option
def diff(a: str, b: str, show_all: bool, fmt: str, db: str | None) -> None:
    """Compare two boots, or two deploys' latest boots.

    A and B are boot ids, commit or digest prefixes, or labels.  Markdown is for pasting into a
    commit message.

    \b
    Examples:
      ledger diff 3 4
      ledger diff fp8-4slot bf16-2slot --format markdown
    """
    from .diff import diff as diff_boots
    from .diff import render_diff

    with _reading(db) as ledger:
        result = diff_boots(ledger, a, b, show_all)
    click.echo(render_diff(result, fmt))


# -- reconciliation -------------------------------------------------------------------------------


def _finite_arg(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A float option that is a number (click's FloatRange lets nan and inf through)."""
    import math

    if value is not None and not (math.isfinite(value) and value < 2**63):
        raise click.BadParameter(f"{value}: not a finite number")
    return value


def _bytes_arg(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from parsers.units import UnitError, human_bytes

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
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
def predict(like: str | None, config: str | None, bytes_per_token: float | None, kv_bytes: int | None,
            tokens: int | None, max_num_seqs: int | None, max_model_len: int | None, tp: int, pp: int,
            block_size: int | None, kv_cache_dtype: str, engine_version: str, v0: bool,
            mamba_page_bytes: int | None, fmt: str, db: str | None) -> None:
    """Predict KV tokens for a budget, or the budget for a number of tokens.

    With --like BOOT the cost per token is that boot's measured budget / tokens (exact when the
    boot set --kv-cache-memory-bytes); with --config the exact allocator reproduces what the
    engine release would print. Prints tokens, concurrency at max_model_len and the margin
    against max_num_seqs x max_model_len (the capacity contract).

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
    if fmt == "json":
        click.echo(dumps(p.to_json(), indent=2))
        return
    from parsers.units import format_bytes

    out = [f"cost         {p.bytes_per_token:,.2f} B/token ({p.cost_from})" if p.bytes_per_token else "",
           f"budget       {p.budget_bytes:,.0f} B ({format_bytes(p.budget_bytes)})",
           f"tokens       {p.tokens:,}" + (f" in {p.num_blocks:,} blocks" if p.num_blocks is not None else "")]
    if p.concurrency is not None:
        out.append(f"concurrency  {p.concurrency:.2f}x at {p.max_model_len:,} tokens per request")
    if p.contract_tokens is not None:
        mb = "" if p.margin_bytes is None else f" ({p.margin_bytes:,.0f} B)"
        out.append(f"contract     {p.max_num_seqs} x {p.max_model_len:,} = {p.contract_tokens:,} tokens: "
                   f"margin {p.margin_tokens:+,} tokens{mb} — {p.verdict}")
    out += [f"note         {n}" for n in p.notes]
    click.echo("\n".join(line for line in out if line))


@main.command()
@click.argument("deploys", nargs=-1, metavar="[DEPLOY...]")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
def check(deploys: tuple[str, ...], fmt: str, db: str | None) -> None:
    """Check the deploys' latest boots (all deploys if none named) against every view.

    KV reconciliation (predicted vs measured tokens, within 0.1%), the capacity contract
    (tokens >= max_num_seqs x max_model_len) and the VRAM and host ceilings. Exits 1 if any
    verdict is off, broken or over — usable in a deploy repo's CI; 'insufficient' does not fail.

    \b
    Examples:
      ledger check
      ledger check fp8-4slot bf16-2slot --format json
    """
    from .reconcile import check as run_check

    with _reading(db) as ledger:
        results = run_check(ledger, list(deploys) or None)
    if fmt == "json":
        click.echo(dumps([{"deploy": r.deploy, "boot": r.boot, "outcome": r.outcome,
                                "checks": [line.__dict__ for line in r.lines]} for r in results], indent=2))
    else:
        if not results:
            click.echo("no boots to check")
        for r in results:
            click.echo(f"{r.deploy}: boot {r.boot} ({r.outcome})")
            for line in r.lines:
                click.echo(f"  {line.what:<18} {line.verdict:<12} {line.detail}")
    if any(r.failing for r in results):
        raise click.exceptions.Exit(1)


@main.group()
def deploy() -> None:
    """Deploys and what you record about them (card ceiling, host cap, reference boot)."""


@deploy.command("set")
@click.argument("deploy_ref", metavar="DEPLOY")
@click.argument("assignments", nargs=-1, required=True, metavar="KEY=VALUE...")
@db_option
def deploy_set(deploy_ref: str, assignments: tuple[str, ...], db: str | None) -> None:
    """Record settings for a deploy: card_ceiling_bytes, host_cap_bytes, kv_reference_boot.

    \b
    Examples:
      ledger deploy set bf16-2slot card_ceiling_bytes=29120MiB host_cap_bytes=200GiB
      ledger deploy set fp8-3slot kv_reference_boot=12
    """
    from .reconcile import set_deploy

    with _writing(db) as ledger:
        name, current = set_deploy(ledger, deploy_ref, list(assignments))
    click.echo(f"{name}: " + ", ".join(f"{k}={v}" for k, v in sorted(current.items())))


@deploy.command("list")
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
@db_option
def deploy_list(fmt: str, db: str | None) -> None:
    """Every deploy with its boots and settings.

    \b
    Example:
      ledger deploy list
    """
    from .output import render
    from .reconcile import list_deploys

    with _reading(db) as ledger:
        rows = list_deploys(ledger)
    click.echo(render(rows, ["deploy", "name", "boots", "settings"] if fmt == "table" else None, fmt))


# -- runtime ----------------------------------------------------------------------------------------


@main.command()
@click.argument("boot")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
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
    from .runtime import render_runtime, runtime_report

    with _reading(db) as ledger:
        report = runtime_report(ledger, boot)
    click.echo(dumps(report, indent=2) if fmt == "json" else render_runtime(report))


@main.group()
def plot() -> None:
    """PNG charts (needs the 'plot' extra: pip install 'vllm-ledger[plot]')."""


@plot.command("runtime")
@click.argument("boot")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="runtime.png", show_default=True)
@db_option
def plot_runtime_cmd(boot: str, output: str, db: str | None) -> None:
    """A boot's runtime series: throughput, KV usage, running and waiting requests.

    \b
    Example:
      ledger plot runtime 7 -o boot7.png
    """
    from pathlib import Path

    from .runtime import plot_runtime

    with _reading(db) as ledger:
        out = plot_runtime(ledger, boot, Path(output))
    click.echo(f"wrote {out}")


@plot.command("history")
@click.option("--deploy", help="Only this deploy's boots.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="history.png", show_default=True)
@db_option
def plot_history_cmd(deploy: str | None, output: str, db: str | None) -> None:
    """KV tokens, concurrency and median decode t/s across boots.

    \b
    Example:
      ledger plot history --deploy qwen-fp8 -o qwen.png
    """
    from pathlib import Path

    from .runtime import plot_history

    with _reading(db) as ledger:
        out = plot_history(ledger, deploy, Path(output))
    click.echo(f"wrote {out}")


# -- grammar packs ----------------------------------------------------------------------------------


@main.group()
def grammar() -> None:
    """Grammar packs: a fork's own log lines, declared in a TOML file."""


@grammar.command("list")
@click.option("--grammar", "grammars", multiple=True, metavar="PACK", help="Also list this pack (as ingest would).")
def grammar_list(grammars: tuple[str, ...]) -> None:
    """The grammars in use: the built-in vLLM grammar and every pack found.

    Packs load from --grammar, from the folder named by $LEDGER_GRAMMARS, and from
    ~/.config/ledger/grammars ($XDG_CONFIG_HOME/ledger/grammars).

    \b
    Example:
      LEDGER_GRAMMARS=~/packs ledger grammar list
    """
    from parsers.packs import BUNDLED_DIR, discover
    from parsers.vllm import BUILTIN_RULES

    from .output import render

    rows = [{"pack": "vllm", "rules": len(BUILTIN_RULES), "from": "built-in", "path": "",
             "description": "upstream vLLM 0.2.7-0.33"}]
    for p in discover(grammars):
        rows.append({"pack": p.name, "rules": len(p.rules), "from": p.origin, "path": str(p.path),
                     "description": p.description})
    click.echo(render(rows, ["pack", "rules", "from", "path", "description"]))
    bundled = sorted(x.stem for x in BUNDLED_DIR.glob("*.toml"))
    if bundled:
        click.echo(f"\nbundled packs (use with --grammar NAME): {', '.join(bundled)}")


@grammar.command("check")
@click.argument("pack")
@click.argument("logs", nargs=-1, metavar="[LOG...]")
@click.option("--unclaimed", "max_unclaimed", type=click.IntRange(min=0), default=40, show_default=True,
              help="Show at most this many unclaimed lines.")
def grammar_check(pack: str, logs: tuple[str, ...], max_unclaimed: int) -> None:
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
    from pathlib import Path

    from parsers.packs import Pack, check, load_pack, resolve

    from .output import render

    if pack == "vllm":  # the built-in grammar alone: what does it leave unread?
        p = Pack("vllm", "built-in", Path("(built-in)"), "built-in")
        click.echo("the built-in vLLM grammar alone (no pack)")
    else:
        p = load_pack(resolve(pack))
        click.echo(f"pack {p.name} ({p.path}): {len(p.rules)} rules, every sample matches")
    if not logs:
        return
    report = check(p, list(logs))
    click.echo(f"{report.lines} lines read from {len(logs)} log{'s' if len(logs) != 1 else ''}")
    rows = []
    for i, h in enumerate(report.hits, start=1):
        first = ""
        if h.first:
            log, line, values = h.first
            first = f"{log}:{line}  " + ", ".join(f"{k}={v}" for k, v in values.items())
        rows.append({"rule": i, "anchor": repr(h.rule.anchor), "matched": h.count, "first match": first})
    if rows:
        click.echo("\n" + render(rows, ["rule", "anchor", "matched", "first match"]))
    unmatched = [i for i, h in enumerate(report.hits, start=1) if h.count == 0]
    if unmatched:
        click.echo(f"\nrules that matched nothing: {', '.join(map(str, unmatched))}")
    click.echo(f"\nunclaimed lines with figures: {len(report.unclaimed)}")
    for log, number, raw in report.unclaimed[:max_unclaimed]:
        click.echo(f"  {log}:{number}: {raw.strip()[:200]}")
    if len(report.unclaimed) > max_unclaimed:
        click.echo(f"  … {len(report.unclaimed) - max_unclaimed} more (--unclaimed N shows more)")


@main.command("copy")
@click.argument("src")
@click.argument("dst")
def copy_cmd(src: str, dst: str) -> None:
    """Copy every boot of the ledger SRC into the ledger DST (created and migrated if new).

    Boots already in DST (same content) are left alone, so copying again is harmless; deploys
    keep their settings. Use it to move a host's SQLite ledger into a shared PostgreSQL one.

    \b
    Example:
      ledger copy ~/.local/share/ledger/ledger.db postgresql+psycopg://ledger@db.lan/ledger
    """
    from .copy import copy_ledger
    from .db.connect import connect, open_writer

    a = connect(src, mode="read", create=False)
    try:
        b = open_writer(dst)
        try:
            result = copy_ledger(a, b)
        finally:
            b.close()
    finally:
        a.dispose()
    from .db.location import shown_url

    click.echo(f"copied {result.copied} boot{'s' if result.copied != 1 else ''} from {shown_url(src)} to {shown_url(dst)}"
               + (f"; {result.present} already there" if result.present else ""))


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

    before, after, backup = upgrade(_db(db))
    if before == after:
        click.echo(f"already at {after}")
    else:
        click.echo(f"upgraded {before or '(empty)'} -> {after}")
    if backup:
        click.echo(f"backup: {backup}")


@db.command("current")
@db_option
def db_current(db: str | None) -> None:
    """Print the ledger's location and schema revision.

    \b
    Example:
      ledger db current
    """
    from .db.columns import HEAD_REVISION
    from .db.connect import connect
    from .db.migrate import current_revision

    ledger = connect(_db(db), mode="read", migrate=False, create=False)
    try:
        rev = current_revision(ledger.engine)
    finally:
        ledger.dispose()
    status = "head" if rev == HEAD_REVISION else f"head is {HEAD_REVISION}"
    click.echo(f"{ledger.shown}\n{rev or '(no schema)'} ({status})")


if __name__ == "__main__":  # pragma: no cover
    main()
