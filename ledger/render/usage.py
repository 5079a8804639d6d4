"""A usage error in words: one ``Error:`` line, as every other error, and the hint to the
command's ``--help`` (click's own form puts the usage synopsis and a blank line first)."""

from __future__ import annotations


def usage_error(message: str, command_path: str | None) -> str:
    hint = f"\nTry '{command_path} --help' for help." if command_path else ""
    return f"Error: {message}{hint}"
