"""Where grammar packs are looked for (``packs.discover``: ``--grammar``, ``$LEDGER_GRAMMARS``,
the user's config folder), told without loading the pack machinery: an ingest that uses no pack
does not import ``packs`` (its TOML reader, `parse`, its checks)."""

from __future__ import annotations

import os
from pathlib import Path

ENV_DIR = "LEDGER_GRAMMARS"


def user_dir() -> Path:
    """``$XDG_CONFIG_HOME/ledger/grammars`` (``~/.config/ledger/grammars``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "ledger" / "grammars"


def folders() -> list[tuple[Path, str]]:
    """The folders packs are found in, with the origin a pack from each is told by:
    ``$LEDGER_GRAMMARS`` (when set), then the user dir."""
    env = os.environ.get(ENV_DIR)
    return [*([(Path(env), ENV_DIR)] if env else []), (user_dir(), "user config")]


def packs_in_use(explicit: list[str] | tuple[str, ...] = ()) -> bool:
    """Whether ``packs.discover(explicit)`` has anything to load: packs named, or a ``*.toml``
    in one of the ``folders``.  False: it would find none."""
    return bool(explicit) or any(folder.is_dir() and any(folder.glob("*.toml")) for folder, _ in folders())
