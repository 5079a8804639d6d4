"""The README's quick start as written: its bash lines (but the install) run by bash from the
repository's folder, with ``.venv/bin/ledger`` as this interpreter's ``ledger`` and ``demo.db`` as
the ledger given (a file or a URL), at 100 columns as the README shows them."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def section() -> str:
    readme = README.read_text()
    return readme[readme.index("## Quick start"):readme.index("## Commands")]


def lines() -> list[str]:
    """The ledger commands of the quick start's bash block, in order."""
    quick = section()
    start = quick.index("```bash\n") + len("```bash\n")
    block = quick[start:quick.index("```", start)]
    return [line for line in block.strip().splitlines() if not line.startswith("python3 -m venv")]


def shown() -> tuple[str, str]:
    """The command the quick start's console block shows, and what it prints there."""
    quick = section()
    start = quick.index("```console\n") + len("```console\n")
    block = quick[start:quick.index("```", start)]
    command, _, output = block.partition("\n")
    return command.removeprefix("$ "), output


def run(line: str, db: str) -> subprocess.CompletedProcess:
    ledger = f"{shlex.quote(sys.executable)} -m ledger"
    command = line.replace(".venv/bin/ledger", ledger).replace("demo.db", shlex.quote(db))
    env = {**os.environ, "COLUMNS": "100"}
    for name in ("LEDGER_DB", "LEDGER_GRAMMARS"):
        env.pop(name, None)
    return subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, check=False, env=env)


def fill(db: str) -> list[subprocess.CompletedProcess]:
    """Every line run into ``db``; what each printed."""
    return [run(line, db) for line in lines()]
