"""Running a ``ledger`` command as a user who is not root, for real: permissions cannot be tested
as root (root reads and writes anything).  As root (CI), the command runs in a forked child
that drops to the user ``ledgertest`` (created here with ``useradd`` if missing; ``.ci/run``
creates it too); as anyone else, in a forked child as that user.  The child imports what the
commands use before it drops its rights, and the new ledger's schema: the interpreter and the
package may live where the user cannot read (pyenv under /root, a clone in a private folder)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

USER = "ledgertest"
OTHER_USER = "ledgertest2"  # a second user, for what one user's command leaves another (root only)
_PRELOAD = [
    "ledger.cli", "ledger.db.connect", "ledger.db.readonly", "ledger.db.migrate", "ledger.db.writes",
    "ledger.db.staging", "ledger.db.models", "ledger.ingest", "ledger.queries",
    "ledger.reconcile", "ledger.deploys", "ledger.verdicts", "ledger.render.show", "ledger.copy", "ledger.render", "ledger.render.table",
    "ledger.render.terminal", "ledger.render.check", "ledger.since", "ledger.diff", "ledger.runtime",
    "ledger.parsers", "ledger.parsers.packs", "ledger.parsers.pipeline", "ledger.parsers.fast.child",
    "ledger.parsers.fast.scanner", "ledger.parsers.fast.counters", "hyperscan", "tabulate", "sqlparse", "sqlalchemy", "sqlalchemy.orm", "sqlalchemy.pool", "sqlalchemy.dialects.sqlite",
    "sqlalchemy.dialects.sqlite.pysqlite", "sqlalchemy.sql.default_comparator", "alembic", "alembic.command",
    "alembic.config", "alembic.script", "alembic.runtime.migration", "sqlite3", "zstandard", "gzip", "zlib",
    "tempfile", "shutil", "csv", "json", "logging", "uuid", "datetime", "decimal", "numpy", "_strptime", "fcntl",
]


def user_ids(user: str = USER) -> tuple[int, int] | None:
    """(uid, gid) to drop to as root; None when the tests already run as a non-root user."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        subprocess.run(["useradd", "-m", user], check=True, capture_output=True)
        pw = pwd.getpwnam(user)
    return pw.pw_uid, pw.pw_gid


@contextmanager
def shared_folder():
    """A folder the user can reach and write in (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="ledger-perm-", dir="/tmp"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(path)


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_as_user(*args: str, user: str = USER) -> Result:
    """``ledger ARGS`` as the non-root user (``user``, when the suite runs as root); its exit
    code and output."""
    ids = user_ids(user)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            sys.stdout = open(1, "w", closefd=False, encoding="utf-8", errors="backslashreplace")
            sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="backslashreplace")
            import importlib
            import pkgutil

            import ledger

            # every module of the package, not a list kept by hand: a module added later (a
            # report's renderer) is loaded while the code can still be read
            package = [m.name for m in pkgutil.walk_packages(ledger.__path__, "ledger.")
                       if not m.name.endswith("__main__") and ".migrations.versions." not in m.name]
            for name in [*_PRELOAD, *package]:
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 - an optional extra (serve, plot) not installed: not needed here
                    pass
            # the package's own data too: a new ledger's schema is read from a file beside the
            # code, which may also sit where the user cannot read (a clone in a private folder)
            from ledger.db import sqlite as ledger_sqlite

            template = ledger_sqlite.sqlite_template()
            ledger_sqlite.sqlite_template = lambda: template
            if ids is not None:
                os.setgroups([])
                os.setgid(ids[1])
                os.setuid(ids[0])
                os.environ["HOME"] = pwd.getpwuid(ids[0]).pw_dir
            os.environ.pop("LEDGER_DB", None)
            from ledger.cli import main

            try:
                main(list(args), prog_name="ledger")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(out_w)
    os.close(err_w)
    chunks: dict[int, bytes] = {}

    def drain(fd: int) -> None:
        with os.fdopen(fd, "rb") as f:
            chunks[fd] = f.read()

    reader = threading.Thread(target=drain, args=(err_r,))
    reader.start()
    drain(out_r)
    reader.join()
    _, status = os.waitpid(pid, 0)
    return Result(os.waitstatus_to_exitcode(status), chunks[out_r].decode(errors="replace"),
                  chunks[err_r].decode(errors="replace"))
