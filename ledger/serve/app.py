"""The web application of ``ledger serve``: pages and their JSON twins, read-only.

Starlette routes (GET only: any other method is answered 405), Jinja2 templates with
autoescaping (a log line is untrusted text and is shown as text), the charts as inline SVG
(``ledger.serve.charts``), the stylesheet and the one small script served from the package.  A
Content-Security-Policy lets the pages load nothing from anywhere but this server.
"""

from __future__ import annotations

import datetime as dt
import json
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

from ..db.connect import Ledger
from ..errors import LedgerError
from ..render.names import release
from ..render.settings import setting_text
from ..render.table import figures_text, human
from . import charts, data

HERE = Path(__file__).resolve().parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
ORDER = {"off": 0, "broken": 0, "over": 0, "ok": 1, "reference": 2, "insufficient": 2}


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
    env.globals["FAILING"] = data.FAILING
    return env


LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]


# a boot that ledger watch is still reading: its page reloads this often (a plain refresh: no
# script, nothing from elsewhere), which redraws its charts with the batches stored since
LIVE_REFRESH_S = 10


def create_app(ledger: Ledger, allowed_hosts: list[str] | None = None) -> ReadOnly:
    """The application; ``allowed_hosts`` are the Host headers answered (a server on loopback
    answers only loopback names, so a web page cannot reach it by DNS rebinding)."""
    env = _environment()
    cache = data.Cache(ledger)

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(ledger_url=ledger.shown, **context)
        return HTMLResponse(html, status_code=status)

    async def call(fn: Any, *args: Any) -> Any:
        # database reads and matplotlib block: run them off the event loop; what they build is
        # kept while the ledger does not change
        return await run_in_threadpool(cache.get, (fn.__name__, *args), lambda: fn(*args))

    def _deploys() -> list[dict[str, Any]]:
        return data.deploys(ledger)

    async def deploys_page(request: Request) -> Response:
        return page("deploys.html", rows=await call(_deploys))

    async def deploys_json(request: Request) -> Response:
        return JSONResponse(data.jsonable(await call(_deploys)))

    def _deploy_obj(ref: str) -> dict[str, Any]:
        return data.deploy(ledger, ref)

    def _deploy(ref: str) -> tuple[dict[str, Any], str, str]:
        obj = cache.get(("_deploy_obj", ref), lambda: _deploy_obj(ref))
        chart = ""
        if obj["boots"]:
            frame, title = data.deploy_frame(ledger, ref, obj)
            chart = charts.svg(charts.boots_figure(frame, title, link=lambda b: f"/boot/{b}"))
        return obj, chart, _sweep_chart(obj["deploy"]["id"])

    def _sweep_chart(deploy_id: int) -> str:
        swept = data.deploy_sweep(ledger, deploy_id)
        if swept is None:
            return ""
        return charts.svg(charts.sweep_figure(swept, link=lambda b: f"/boot/{b}"))

    async def deploy_page(request: Request) -> Response:
        obj, chart, sweep_chart = await call(_deploy, request.path_params["ref"])
        return page("deploy.html", d=obj, chart=Markup(chart), sweep_chart=Markup(sweep_chart))

    async def deploy_json(request: Request) -> Response:
        return JSONResponse(data.jsonable(await call(_deploy_obj, request.path_params["ref"])))

    def _boot_obj(ref: str) -> dict[str, Any]:
        return data.boot(ledger, ref)

    def _boot(ref: str, split: bool) -> tuple[dict[str, Any], str]:
        obj = cache.get(("_boot_obj", ref), lambda: _boot_obj(ref))
        chart = ""
        if obj["runtime"]["engine_stats"]:
            frame, report = data.runtime_frame(ledger, obj["boot"], obj["runtime_report"])
            chart = charts.svg(charts.runtime_figure(frame, report, split))
        return obj, chart

    async def boot_page(request: Request) -> Response:
        split = request.query_params.get("engines") == "split"
        obj, chart = await call(_boot, request.path_params["ref"], split)
        return page("boot.html", b=obj, chart=Markup(chart), split=split, live_refresh=LIVE_REFRESH_S)

    async def boot_json(request: Request) -> Response:
        return JSONResponse(data.jsonable(await call(_boot_obj, request.path_params["ref"])))

    def _runtime(ref: str, split: bool) -> dict[str, Any]:
        frame, report = data.runtime_frame(ledger, ref)
        series, xlabel, how = charts.runtime_series(frame, split)
        return {"report": report, "x": xlabel, "aggregation": how,
                "series": {col: {name: [[_x(i), None if v != v else v] for i, v in s.items()]
                                 for name, s in parts.items()} for col, parts in series.items()}}

    async def runtime_json(request: Request) -> Response:
        split = request.query_params.get("engines") == "split"
        return JSONResponse(data.jsonable(await call(_runtime, request.path_params["ref"], split)))

    def _choices() -> list[dict[str, Any]]:
        return data.choices(ledger)

    def _deploy_names() -> list[str]:
        return data.deploy_names(ledger)

    def _diff(a: str, b: str, show_all: bool) -> dict[str, Any] | None:
        return data.diff(ledger, a, b, show_all) if a and b else None

    async def diff_page(request: Request) -> Response:
        a, b = request.query_params.get("a", "").strip(), request.query_params.get("b", "").strip()
        show_all = request.query_params.get("all") == "1"
        try:
            result, problem = await call(_diff, a, b, show_all), None
        except LedgerError as exc:  # a reference that names nothing: say so above the form, keep it
            result, problem = None, str(exc)
        boots = await call(_choices)
        deploys = await call(_deploy_names)
        return page("diff.html", status=404 if problem else 200, r=result, a=a, b=b, show_all=show_all,
                    boots=boots, deploys=deploys, problem=problem)

    async def diff_json(request: Request) -> Response:
        a, b = request.query_params.get("a", "").strip(), request.query_params.get("b", "").strip()
        if not (a and b):
            return JSONResponse({"error": "give a= and b= (boot ids, or deploys)"}, status_code=400)
        return JSONResponse(data.jsonable(await call(_diff, a, b, request.query_params.get("all") == "1")))

    async def not_found(request: Request, exc: Exception) -> Response:
        message = str(exc) if isinstance(exc, LedgerError) else "no such page"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status_code=404)
        return page("error.html", status=404, message=message)

    async def server_error(request: Request, exc: Exception) -> Response:
        message = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status_code=500)
        return page("error.html", status=500, message=f"the ledger could not be read: {message}")

    routes = [
        Route("/", deploys_page, methods=["GET"]),
        Route("/deploy/{ref}", deploy_page, methods=["GET"]),
        Route("/boot/{ref}", boot_page, methods=["GET"]),
        Route("/diff", diff_page, methods=["GET"]),
        Route("/api/deploys", deploys_json, methods=["GET"]),
        Route("/api/deploy/{ref}", deploy_json, methods=["GET"]),
        Route("/api/boot/{ref}", boot_json, methods=["GET"]),
        Route("/api/boot/{ref}/runtime", runtime_json, methods=["GET"]),
        Route("/api/diff", diff_json, methods=["GET"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
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
    from ..diff import derived_text

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
