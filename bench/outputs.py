"""Every command's output, in every format, on the fixture ledgers, written to a folder: run it
before and after a change to what prints, then ``diff -r`` the two folders (the change must not
alter a byte of what a user or a script reads).

    python bench/outputs.py /tmp/outputs-before     # on the old code (--work DIR: see below)
    python bench/outputs.py /tmp/outputs-after      # on the new code
    diff -r /tmp/outputs-before /tmp/outputs-after

Run from the repository's folder: the fixtures are ingested by their relative paths, so the
stored source paths (and so the outputs) do not depend on where the checkout is.  The
commands run in this process (click's runner: not a terminal, so no colour and no pager),
with the terminal width unset (a pipe) and at 80 and 200 columns; ledgers are built in
``/tmp/ledger-outputs-work`` or ``--work DIR`` (a fixed place: ``db current`` prints its path,
so compare two runs made with the same one; the folder is emptied first).  Each output
file holds the exit code, stdout and stderr of one command.  Nothing here is timed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from ledger.cli import main

WORK = Path("/tmp/ledger-outputs-work")
FORMATS = ("table", "markdown", "csv", "json", "jsonl")
WIDTHS = (None, 80, 200)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", name).strip("_")[:120]


class Outputs:
    def __init__(self, out: Path):
        self.out = out
        self.runner = CliRunner()
        self.count = 0

    def run(self, name: str, *args: str, width: int | None = None, input: str | None = None) -> str:
        env = {"COLUMNS": str(width) if width else None, "NO_COLOR": None, "LEDGER_DB": None,
               "LEDGER_GRAMMARS": None}
        r = self.runner.invoke(main, list(args), input=input, env=env, catch_exceptions=True)
        text = f"$ ledger {' '.join(args)}\nexit {r.exit_code}\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}"
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            text += f"--- exception\n{type(r.exception).__name__}: {r.exception}\n"
        text = re.sub(r"\.\d{8}-\d{6}\.bak", ".<time>.bak", text)  # a backup is named by the clock
        text = text.replace(str(Path.cwd()), "<checkout>")  # a bundled pack's path
        path = self.out / f"{_safe(name)}.txt"
        if path.exists():
            raise SystemExit(f"two outputs named {path.name}")
        path.write_text(text)
        self.count += 1
        return r.stdout

    def each_format(self, name: str, *args: str, formats: tuple[str, ...] = FORMATS) -> None:
        for fmt in formats:
            for width in WIDTHS if fmt == "table" else (None,):
                suffix = f"-w{width}" if width else ""
                self.run(f"{name}-{fmt}{suffix}", *args, "--format", fmt, width=width)


def real_logs() -> list[str]:
    return sorted(str(p) for p in Path("fixtures/real").glob("*.log"))


def build(o: Outputs, db: str, fmt: str, tag: str) -> None:
    """The fixture ledger: every real fixture, the reconcile and radiance boots (labelled, as
    the README's quick start does), the synthetic journald log."""
    o.run(f"{tag}-ingest-real-{fmt}", "ingest", *real_logs(), "--db", db, "--format", fmt)
    for log in sorted(Path("fixtures/reconcile").glob("*.log")):
        o.run(f"{tag}-ingest-{log.stem}-{fmt}", "ingest", str(log), "--label", log.stem, "--db", db, "--format", fmt)
    for log in sorted(Path("fixtures/radiance").glob("*.log")):
        o.run(f"{tag}-ingest-{log.stem}-{fmt}", "ingest", str(log), "--grammar", "radiance", "--label",
              "radiance-" + log.stem, "--db", db, "--format", fmt)
    for log in sorted(Path("fixtures/synthetic").glob("*.log")):
        o.run(f"{tag}-ingest-{log.stem}-{fmt}", "ingest", str(log), "--commit", "f532e03", "--db", db,
              "--format", fmt)
    # again: nothing stored, said so
    o.run(f"{tag}-ingest-again-{fmt}", "ingest", *real_logs()[:3], "--db", db, "--format", fmt)


def boots_of(o: Outputs, db: str) -> list[str]:
    r = o.runner.invoke(main, ["sql", "SELECT id FROM boot ORDER BY id", "--format", "csv", "--db", db])
    return r.stdout.split()[1:]


def commands(o: Outputs, db: str) -> None:
    o.each_format("history", "history", "--db", db)
    o.each_format("history-wide", "history", "--wide", "--db", db)
    o.each_format("history-limit", "history", "--limit", "4", "--outcome", "ready", "--db", db)
    o.each_format("history-deploy", "history", "--deploy", "fp8-4x262144-ready", "--db", db)
    o.each_format("history-since", "history", "--since", "2026-01-01", "--db", db)
    o.each_format("history-cols", "history", "--columns", "boot,outcome,kv_tokens", "--db", db)
    o.run("history-none", "history", "--deploy", "nothing-like-this", "--db", db)
    o.each_format("export", "export", "--db", db, formats=("json", "jsonl", "csv"))
    o.each_format("export-some", "export", "3", "5", "--db", db, formats=("json", "jsonl", "csv"))
    o.each_format("sql", "sql", "SELECT id, outcome, engine_version, started_at FROM boot ORDER BY id", "--db", db)
    o.each_format("sql-facts", "sql", "SELECT boot_id, name, value, unit FROM fact ORDER BY id", "--db", db)
    boots = boots_of(o, db)
    for b in boots:
        o.each_format(f"show-{b}", "show", b, "--db", db)
        o.each_format(f"runtime-{b}", "runtime", b, "--db", db, formats=("table", "json", "jsonl"))
    for a, b in zip(boots, boots[1:], strict=False):
        o.each_format(f"diff-{a}-{b}", "diff", a, b, "--db", db)
    o.each_format("diff-all", "diff", boots[0], boots[-1], "--all", "--db", db)
    o.each_format("diff-deploys", "diff", "fp8-4x262144-ready", "bf16-3x241664-ready", "--db", db)
    o.each_format("diff-radiance", "diff", "radiance-fp8-3x200k-ready", "radiance-bf16-2x200k-ready", "--db", db)
    o.run("show-unknown", "show", "99999", "--db", db)
    o.each_format("check", "check", "--db", db)
    o.each_format("check-some", "check", "fp8-4x262144-ready", "radiance-bf16-2x200k-ready", "--db", db)
    o.each_format("deploy-list", "deploy", "list", "--db", db)
    for name, args in [
        ("like-kv", ["--like", "bf16-3x241664-ready", "--kv-bytes", "7.3e9", "--max-num-seqs", "2",
                     "--max-model-len", "262144"]),
        ("like-tokens", ["--like", "fp8-4x262144-ready", "--tokens", "786432"]),
        ("like-floor", ["--like", "fp8-4x262144-ready"]),
        ("given", ["--bytes-per-token", "13839", "--kv-bytes", "8GiB"]),
        ("no-cost", ["--like", "1", "--kv-bytes", "1G"]),
    ]:
        o.each_format(f"predict-{name}", "predict", *args, "--db", db, formats=("table", "json", "jsonl"))
    o.each_format("grammar-list", "grammar", "list")
    o.each_format("grammar-check-vllm", "grammar", "check", "vllm", *real_logs()[:6])
    o.each_format("grammar-check-radiance", "grammar", "check", "radiance",
                  *sorted(str(p) for p in Path("fixtures/radiance").glob("*.log")))
    o.each_format("grammar-check-nologs", "grammar", "check", "radiance")
    o.each_format("db-current", "db", "current", "--db", db, formats=("table", "json", "jsonl"))


def writes(o: Outputs, db: str) -> None:
    o.run("deploy-set", "deploy", "set", "fp8-4x262144-ready", "card_ceiling_bytes=29120MiB",
          "host_cap_bytes=200GiB", "--db", db)
    o.run("deploy-set-ref", "deploy", "set", "fp8-3x262144-ready", "kv_reference_boot=" + boots_of(o, db)[-5],
          "--db", db)
    o.run("deploy-set-bad", "deploy", "set", "fp8-4x262144-ready", "nonsense=1", "--db", db)
    o.run("deploy-set-ceiling", "deploy", "set", "radiance-bf16-2x200k-ready", "card_ceiling_bytes=29120MiB",
          "host_cap_bytes=200GiB", "--db", db)
    o.run("deploy-unset", "deploy", "unset", "fp8-4x262144-ready", "host_cap_bytes", "--db", db)
    o.run("deploy-unset-all", "deploy", "unset", "fp8-3x262144-ready", "kv_reference_boot", "--db", db)
    o.run("deploy-label", "deploy", "label", "f532e03", "journald-box", "--db", db)


def serve(o: Outputs, db: str) -> None:
    """``ledger serve``'s JSON (its pages' HTML carries charts whose ids are matplotlib's)."""
    try:
        from ledger.serve.app import create_app
    except ImportError:  # no serve extra
        return
    from ledger.db.connect import open_read_only

    ledger = open_read_only(db)
    try:
        app = create_app(ledger)
        boots = boots_of(o, db)
        paths = ["/api/check", "/api/deploys", "/api/deploy/1", "/api/deploy/fp8-4x262144-ready", "/api/diff",
                 f"/api/diff?a={boots[0]}&b={boots[-1]}", f"/api/diff?a={boots[1]}&b={boots[2]}&all=1"]
        for b in boots:
            paths += [f"/api/boot/{b}", f"/api/boot/{b}/runtime"]
        for path in paths:
            status, body = _get(app, path)
            (o.out / f"serve{_safe(path)}.txt").write_text(f"GET {path}\n{status}\n{body}\n")
            o.count += 1
    finally:
        ledger.dispose()


def _get(app, target: str) -> tuple[int, str]:
    """One GET through the ASGI application, in this process (no server, no client library)."""
    import asyncio

    path, _, query = target.partition("?")
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
             "root_path": "", "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 80)}
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body.decode()


def main_(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir()
    o = Outputs(out)
    for fmt in ("table", "json", "jsonl"):
        build(o, str(WORK / f"built-{fmt}.db"), fmt, "build")
    db = str(WORK / "built-table.db")
    writes(o, db)
    commands(o, db)
    serve(o, db)
    o.run("copy", "copy", db, str(WORK / "copy.db"))
    o.run("copy-again-json", "copy", db, str(WORK / "copy.db"), "--format", "json")
    o.run("copy-jsonl", "copy", db, str(WORK / "copy2.db"), "--format", "jsonl")
    o.run("rm", "rm", "2", "3", "--yes", "--db", str(WORK / "copy.db"))
    o.run("rm-no", "rm", "4", "--db", str(WORK / "copy.db"), input="n\n")
    o.run("rm-unknown", "rm", "99999", "--yes", "--db", str(WORK / "copy.db"))
    o.run("db-upgrade", "db", "upgrade", "--db", str(WORK / "copy2.db"))
    # the old ledger fixture, upgraded, read back
    old = WORK / "old.db"
    shutil.copy("fixtures/ledgers/schema-0001-real-boots.db", old)
    o.run("old-upgrade", "db", "upgrade", "--db", str(old))
    o.each_format("old-history", "history", "--db", str(old))
    o.each_format("old-check", "check", "--db", str(old))
    o.each_format("old-show-1", "show", "1", "--db", str(old))
    print(f"{o.count} outputs in {out}")


if __name__ == "__main__":
    os.environ.pop("LEDGER_DB", None)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the folder the outputs go to (emptied first)")
    ap.add_argument("--work", type=Path, default=WORK, help=f"where the ledgers are built (default {WORK})")
    args = ap.parse_args()
    WORK = args.work.absolute()
    main_(args.out)
