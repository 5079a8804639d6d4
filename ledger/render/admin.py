"""The ledger's own reports: ``ledger copy``, ``ledger db current``, ``ledger db upgrade``, the
files ``ledger plot`` wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .values import document


def copy_text(obj: dict[str, Any], fmt: str) -> str:
    def human(o: dict[str, Any]) -> str:
        return (f"copied {o['copied']} boot{'s' if o['copied'] != 1 else ''} from {o['src']} to {o['dst']}"
                + (f"; {o['present']} already there" if o["present"] else ""))

    return document(obj, fmt, human)


def current_text(obj: dict[str, Any], fmt: str) -> str:
    def human(o: dict[str, Any]) -> str:
        status = "head" if o["at_head"] else f"head is {o['head']}"
        return f"{o['url']}\n{o['revision'] or '(no schema)'} ({status})"

    return document(obj, fmt, human)


def upgrade_text(before: str | None, after: str, backup: Any) -> str:
    out = [f"already at {after}" if before == after else f"upgraded {before or '(empty)'} -> {after}"]
    if backup:
        out.append(f"backup: {backup}")
    return "\n".join(out)


def wrote(path: Path) -> str:
    return f"wrote {path}"


def version_line(version: str, engine: str) -> str:
    """``ledger --version``: the release and the scan engine (Hyperscan, or a fallback where no
    Hyperscan wheel exists)."""
    note = "" if engine == "hyperscan" else ", no Hyperscan wheel installed"
    return f"ledger, version {version} (scan engine: {engine}{note})"
