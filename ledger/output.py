"""Moved to ``ledger.render`` (kept so code written against the old name still imports)."""

from .render.table import figures_text, human, render  # noqa: F401
