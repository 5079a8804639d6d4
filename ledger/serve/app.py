"""The web application of ``ledger serve``: pages and their JSON twins, read-only.

``PAGES`` is the table of pages (path, data function, template): one handler per page answers
its HTML and its ``/api`` JSON from one object, the library's — the object the CLI prints
(``/api/boot/N`` is ``ledger show N --format json``, ``/api/check`` is ``ledger check
--format json``); what only the HTML needs (charts, links) is the page's context.

Starlette routes (GET only: any other method is answered 405), Jinja2 templates with
autoescaping (a log line is untrusted text and is shown as text), the charts as inline SVG
(``ledger.serve.charts``), the stylesheet and the one small script served from the package.  A
Content-Security-Policy lets the pages load nothing from anywhere but this server.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ledger.parsers.vocabulary import Verdict

from .. import queries
from ..db.connect import Ledger
from ..errors import LedgerError
from ..render.names import release
from ..render.settings import setting_text
from ..render.table import figures_text, human
from ..verdicts import FAILING
from . import charts, data

HERE = Path(__file__).resolve().parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
ORDER = {Verdict.off: 0, Verdict.broken: 0, Verdict.over: 0, Verdict.slower: 0, Verdict.ok: 1,
         Verdict.reference: 2, Verdict.insufficient: 2, Verdict.unsupported: 2}


def _precision(value: float | None, unit: str) -> str:
    """A fact's printed precision: bytes in vLLM's units (``±5.12 MiB``, not ``±5.36871e+06``)."""
    from ledger.parsers.units import format_bytes

    if value is None:
        return "—"
    if unit == "bytes" and abs(value) >= 1024:
        return f"±{format_bytes(value)}"
    return f"±{value:g}"


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["human"] = lambda v, unit="": "—" if v is None else human(v, unit, show_unit=bool(unit))
    env.filters["short"] = _short
    env.filters["pct"] = lambda v: "—" if v is None else f"{v:.1f} %"
    env.filters["duration"] = lambda v: "—" if v is None else str(dt.timedelta(seconds=int(v)))
    env.filters["figures"] = figures_text
    env.filters["setting"] = lambda pair: setting_text(*pair)
    env.filters["release"] = release
    env.filters["when"] = _when
    env.filters["js"] = lambda v: v if isinstance(v, str) else json.dumps(v, sort_keys=True)
    env.filters["derived"] = _derived
    env.filters["precision"] = _precision
    env.globals["FAILING"] = FAILING
    return env


LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]


# a boot that ledger watch is still reading: its page reloads this often (a plain refresh: no
# script, nothing from elsewhere), which redraws its charts with the batches stored since
LIVE_REFRESH_S = 10


@dataclass(frozen=True)
class Page:
    """One page, Datasette's way: its path, the library function that gives its object (the
    object the CLI prints, and what its ``/api`` twin answers), the template that shows it
    (None: JSON only), and what the HTML alone adds to the object (charts, links), if anything.
    ``params`` are the query parameters the object is made from, ``view`` those only the HTML
    reads (both are the context's), ``needs`` those the JSON cannot do without."""

    name: str
    path: str | None
    api: str
    data: Callable[..., Any]
    template: str | None = None
    context: Callable[..., dict[str, Any]] | None = None
    params: tuple[str, ...] = ()
    view: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    # a reference that names nothing is said above the page's form, which keeps what was typed
    # (a 404 still): the HTML only, the JSON answers 404 with the error
    keeps_form: bool = False
    # a page meant to be pasted (a diff, a boot's evidence): its object is redacted
    # (ledger.render.redact) unless the server was started with --no-redact
    pasted: bool = False


def _deploy_context(ledger: Ledger, obj: dict[str, Any], ref: str) -> dict[str, Any]:
    chart = ""
    if obj["boots"]:
        frame, title = data.deploy_frame(ledger, ref, obj)
        chart = charts.svg(charts.boots_figure(frame, title, link=lambda b: f"/boot/{b}"))
    swept = data.deploy_sweep(ledger, obj["deploy"]["id"])
    sweep_chart = charts.svg(charts.sweep_figure(swept, link=lambda b: f"/boot/{b}")) if swept else ""
    return {"d": obj, "chart": Markup(chart), "sweep_chart": Markup(sweep_chart)}


def _boot_context(ledger: Ledger, obj: dict[str, Any], ref: str, engines: str = "") -> dict[str, Any]:
    b = data.boot_page(ledger, obj)
    split = engines == "split"
    chart = ""
    if b["runtime"]["engine_stats"]:
        frame, report = data.runtime_frame(ledger, b["boot"], b["runtime_report"])
        chart = charts.svg(charts.runtime_figure(frame, report, split))
    return {"b": b, "chart": Markup(chart), "split": split, "live_refresh": LIVE_REFRESH_S}


def _runtime(ledger: Ledger, ref: str, engines: str = "") -> dict[str, Any]:
    """A boot's runtime report and its chart's series."""
    frame, report = data.runtime_frame(ledger, ref)
    series, xlabel, how = charts.runtime_series(frame, engines == "split")
    return {"report": report, "x": xlabel, "aggregation": how,
            "series": {col: {name: [[_x(i), None if v != v else v] for i, v in s.items()]
                             for name, s in parts.items()} for col, parts in series.items()}}


def _diff(ledger: Ledger, a: str = "", b: str = "", all: str = "") -> dict[str, Any] | None:
    return data.diff(ledger, a, b, all == "1") if a and b else None


def _markdown(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The diff page's object with the markdown ``ledger diff --format markdown`` prints of it
    (of the redacted object, when it is)."""
    from ..render.diff import render_diff

    return None if obj is None else {**obj, "markdown": render_diff(obj, "markdown")}


def _diff_context(ledger: Ledger, obj: dict[str, Any] | None, a: str = "", b: str = "", all: str = ""
                  ) -> dict[str, Any]:
    return {"r": obj, "a": a, "b": b, "show_all": all == "1", "boots": queries.diff_choices(ledger),
            "deploys": data.deploy_names(ledger)}


def _check(ledger: Ledger) -> list[dict[str, Any]]:
    from ..reconcile import check_report

    return check_report(ledger)


PAGES = [
    Page("deploys", "/", "/api/deploys", lambda ledger: queries.deploy_overview(ledger), "deploys.html",
         lambda ledger, obj: {"rows": obj}),
    Page("deploy", "/deploy/{ref}", "/api/deploy/{ref}", queries.deploy_detail, "deploy.html", _deploy_context),
    Page("boot", "/boot/{ref}", "/api/boot/{ref}", queries.show, "boot.html", _boot_context, view=("engines",),
         pasted=True),
    Page("runtime", None, "/api/boot/{ref}/runtime", _runtime, params=("engines",)),
    Page("diff", "/diff", "/api/diff", _diff, "diff.html", _diff_context, params=("a", "b", "all"),
         needs=("a", "b"), keeps_form=True, pasted=True),
    Page("check", "/check", "/api/check", _check, "check.html", lambda ledger, obj: {"results": obj}),
]


def create_app(ledger: Ledger, allowed_hosts: list[str] | None = None, redact: bool = True) -> ReadOnly:
    """The application; ``allowed_hosts`` are the Host headers answered (a server on loopback
    answers only loopback names, so a web page cannot reach it by DNS rebinding); the pages
    meant to be pasted are redacted unless ``redact`` is False (``serve --no-redact``)."""
    from ..render.redact import redactor

    env = _environment()
    cache = data.Cache(ledger)
    redacted = redactor(redact)

    def made(page: Page, args: dict[str, str]) -> Any:
        obj = page.data(ledger, **args)
        if not page.pasted:
            return obj
        obj = redacted(obj)
        return _markdown(obj) if page.name == "diff" else obj

    def html(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        text = env.get_template(template).render(ledger_url=ledger.shown, **context)
        return HTMLResponse(text, status_code=status)

    def handler(page: Page) -> Callable[[Request], Any]:
        """The page's one handler: its object, from the library (kept while the ledger does not
        change), answered as JSON on its /api path and through its template elsewhere."""
        async def answer(request: Request) -> Response:
            args = dict(request.path_params)
            args.update({k: request.query_params.get(k, "").strip() for k in page.params})
            key = (page.name, tuple(sorted(args.items())))
            shown = {**args, **{k: request.query_params.get(k, "").strip() for k in page.view}}
            as_json = request.url.path.startswith("/api/")
            if as_json and any(not args.get(k) for k in page.needs):
                return JSONResponse({"error": f"give {' and '.join(k + '=' for k in page.needs)} "
                                              "(boot ids, or deploys)"}, status_code=400)
            # database reads and matplotlib block: run them off the event loop
            try:
                obj = await run_in_threadpool(cache.get, key, lambda: made(page, args))
            except LedgerError as exc:
                if as_json or not page.keeps_form or page.context is None or page.template is None:
                    raise
                form = page.context
                extra = await run_in_threadpool(lambda: form(ledger, None, **shown))
                return html(page.template, status=404, problem=str(exc), **extra)
            if as_json or page.template is None:
                return JSONResponse(data.jsonable(obj))
            extra = {}
            if page.context is not None:
                context = page.context
                extra = await run_in_threadpool(cache.get, ("html", page.name, tuple(sorted(shown.items()))),
                                                lambda: context(ledger, obj, **shown))
            return html(page.template, **extra)

        return answer

    async def not_found(request: Request, exc: Exception) -> Response:
        message = str(exc) if isinstance(exc, LedgerError) else "no such page"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status_code=404)
        return html("error.html", status=404, message=message)

    async def server_error(request: Request, exc: Exception) -> Response:
        message = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status_code=500)
        return html("error.html", status=500, message=f"the ledger could not be read: {message}")

    routes: list[Any] = []
    for page in PAGES:
        answer = handler(page)
        routes += [Route(path, answer, methods=["GET"]) for path in (page.path, page.api) if path]
    routes.append(Mount("/static", StaticFiles(directory=HERE / "static"), name="static"))
    app = Starlette(routes=routes, exception_handlers={LedgerError: not_found, 404: not_found,
                                                       Exception: server_error},
                    middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or ["*"])])
    return ReadOnly(app)


class ReadOnly:
    """ASGI wrapper: any method but GET and HEAD is refused with 405 before routing (static
    files included: nothing here writes), and every response carries the security headers."""

    HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", b"no-referrer")]

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            response = Response("ledger serve is read-only\n", status_code=405, headers={"Allow": "GET, HEAD"})
            await response(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _derived(row: dict[str, Any], side: str) -> str:
    """One side of a diff's derived row, as ``ledger diff`` prints it."""
    from ..render.diff import derived_text

    return derived_text(row, side)


def _when(iso_time: str | None, year_inferred: bool | None = False) -> str:
    """An output-contract time (ISO 8601) as the terminal shows it: to the minute, ``*`` where
    the year was inferred, ``—`` where the log printed none."""
    if not iso_time:
        return "—"
    return iso_time[:16].replace("T", " ") + ("*" if year_inferred else "")


def _short(value: Any, unit: str = "") -> str:
    """A figure in a narrow column: bytes in GiB/MiB alone (the exact count is in the cell's
    title), other numbers with thousands separators."""
    if value is None:
        return "—"
    if unit == "bytes":
        from ledger.parsers.units import format_bytes

        return format_bytes(value)
    return human(value, "")


def _x(value: Any) -> Any:
    return value.isoformat(sep=" ") if hasattr(value, "isoformat") else value
