"""Errors a user can cause: each carries a message fit to print on one line."""


class LedgerError(Exception):
    """Bad input, a bad ledger location, an unknown boot: the CLI prints it and exits 1."""


def shown(ref: str, most: int = 60) -> str:
    """``ref`` as an error may echo it: cut to ``most`` characters, saying how long it was (a
    5,000-digit id must not become a 5,000-character error line)."""
    return ref if len(ref) <= most else f"{ref[:most]}… ({len(ref):,} characters)"
