"""``python -m ledger`` is the ``ledger`` command."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="ledger")
