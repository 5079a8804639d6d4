"""``ledger serve``: a read-only web view of the ledger, and the charts ``ledger plot`` writes.

* ``data``   — every read of the ledger these views make (the only module here that touches it)
* ``charts`` — the charts, drawn once for both the pages (SVG) and ``ledger plot`` (PNG/SVG)
* ``app``    — the Starlette application: pages, their JSON twins, static files

Starlette, uvicorn, Jinja2 and matplotlib come with the ``serve`` extra and are imported only
by ``ledger serve`` and ``ledger plot``.
"""

from __future__ import annotations

from ..errors import LedgerError

NEEDS = "ledger serve needs its extra: pip install 'vllm-ledger[serve]'"


def run(db: str | None, host: str, port: int, echo=print, redact: bool = True) -> None:
    """Open the ledger read-only and serve it until Ctrl-C (or SIGTERM)."""
    try:
        import uvicorn

        from .app import LOOPBACK_NAMES, create_app
    except ImportError as exc:
        raise LedgerError(f"{NEEDS} ({exc.name} is missing)") from None
    from ..db.connect import open_read_only

    ledger = open_read_only(db)
    try:
        loopback = host in LOOPBACK_NAMES
        app = create_app(ledger, allowed_hosts=LOOPBACK_NAMES if loopback else None, redact=redact)
        shown = f"[{host}]" if ":" in host else host
        echo(f"ledger: serving the ledger read-only at http://{shown}:{port}/ (Ctrl-C stops)")
        if not loopback:
            echo(f"ledger: warning: anyone who can reach {host}:{port} can read this ledger")
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                lifespan="off", server_header=False)
        try:
            # uvicorn finishes the requests in flight on Ctrl-C / SIGTERM, then raises the signal
            # again for the default handler: that KeyboardInterrupt is the normal way out
            uvicorn.Server(config).run()
        except KeyboardInterrupt:
            pass
        echo("ledger: stopped")
    finally:
        ledger.dispose()
