"""``ledger deploy list / set / unset / label`` and ``ledger rm`` (``ledger.deploys``' objects)
in words."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

LIST_WIDE = ["deploy", "name", "commit", "image", "label", "boots", "settings"]
LIST_COMPACT = ["deploy", "name", "boots", "settings"]


def list_text(rows: list[dict[str, Any]], fmt: str) -> str:
    """Every deploy: for people its boots and settings; csv and JSON every column."""
    from . import rows_text
    from .settings import settings_text

    def human(r: dict[str, Any]) -> dict[str, Any]:
        return {**r, "settings": settings_text(r["settings"])}

    cols = LIST_COMPACT if fmt in ("table", "markdown") else LIST_WIDE
    return rows_text(rows, cols, fmt, human=human, flexible=("name", "settings"))


def settings_line(name: str, settings: dict[str, Any]) -> str:
    """A deploy's settings after ``deploy set`` or ``deploy unset`` (bytes as vLLM prints them,
    with the exact count)."""
    from .settings import settings_text

    return f"{name}: {settings_text(settings, 'no settings')}"


def label_line(before: str, after: str) -> str:
    return f"{before} -> {after}"


def _boots(n: int) -> str:
    return f"{n} boot{'s' if n != 1 else ''}"


def rm_lines(found: list[dict[str, Any]]) -> Iterator[str]:
    """What ``ledger rm`` is about to remove, a line per boot."""
    for b in found:
        yield f"boot {b['boot']}  {b['outcome']}  {b['deploy']}  {b['source']}"


def rm_question(found: list[dict[str, Any]]) -> str:
    return f"remove {_boots(len(found))}?"


def rm_kept() -> str:
    return "nothing removed"


def rm_done(n: int) -> str:
    return f"removed {_boots(n)}"


def deploy_removed(name: str) -> str:
    return f"{name}: removed"


def moved_lines(report: dict[str, Any]) -> Iterator[str]:
    """``ledger deploy move``: a line per deploy the boots left, ``boots 7, 8: a -> b``."""
    for moved in report["from"]:
        ids = ", ".join(map(str, moved["boots"]))
        yield f"boot{'s' if len(moved['boots']) != 1 else ''} {ids}: {moved['deploy']} -> {report['deploy']}"
