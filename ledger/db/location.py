"""Where the ledger is: ``--db``, else ``$LEDGER_DB``, else ``default_path()``; a plain path is
a SQLite file, anything with ``://`` an SQLAlchemy URL.  No SQLAlchemy is imported here."""

from __future__ import annotations

import os
import re
from pathlib import Path

ENV_VAR = "LEDGER_DB"


def default_path() -> Path:
    """``$XDG_DATA_HOME/ledger/ledger.db`` (``~/.local/share/ledger/ledger.db``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "ledger" / "ledger.db"


def resolve_url(db: str | None) -> str:
    """The SQLAlchemy URL for ``--db`` / ``$LEDGER_DB`` / the default file."""
    db = db or os.environ.get(ENV_VAR) or str(default_path())
    if "://" in db:
        return db
    return "sqlite:///" + os.path.abspath(os.path.expanduser(db))


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (any driver, any query options); None for an in-memory
    database or another database."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+")[0] != "sqlite" or not rest.startswith("/"):
        return None  # not SQLite, or "sqlite://" (in memory)
    database = rest[1:].partition("?")[0]
    if not database or database == ":memory:":
        return None
    return Path(database)


def plain_sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///path`` URL with nothing else in it (no driver, no query
    options) — what ``resolve_url`` makes of a plain path, and what the sqlite3 module can open
    as it is; None for any other URL."""
    if not url.startswith("sqlite:///") or "?" in url:
        return None
    return sqlite_file(url)


# the password runs from the first ':' after the user name to an '@' (SQLAlchemy's grammar stops
# at the first '@'; this hides up to the last one, so an unescaped '@' in a password is hidden too)
_PASSWORD = re.compile(r"^(?P<head>[\w+]+://[^:/@]*):(?P<password>.*)@")
# libpq takes a password in the query string too (``?password=…``, ``&sslpassword=…``, the
# client key's passphrase): its value runs to the next option
_QUERY_PASSWORD = re.compile(r"(?P<key>[?&](?:ssl)?password=)[^&#]*", re.IGNORECASE)


def shown_url(url: str) -> str:
    """``url`` as it may be printed: the password replaced by ``***`` (SQLAlchemy's
    ``URL.render_as_string(hide_password=True)``, without importing SQLAlchemy), and so is a
    ``password`` or ``sslpassword`` in the query string.  Every message, output line and log
    that names a ledger uses this, never the URL itself."""
    return _QUERY_PASSWORD.sub(r"\g<key>***", _PASSWORD.sub(r"\g<head>:***@", url, count=1))
