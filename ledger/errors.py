"""Errors a user can cause: each carries a message fit to print on one line."""


class LedgerError(Exception):
    """Bad input, a bad ledger location, an unknown boot: the CLI prints it and exits 1."""
