"""The FastAPI application: JSON API (``/api``), dashboard pages, ``/healthz``, ``/metrics``.

``create_app(settings, engine=None)`` builds it; ``gpu-tracker serve`` runs it with uvicorn.
Works with no internet: plotly.js is served from the installed ``plotly`` package at
``/static/plotly.min.js`` (cached, gzip), the pages load nothing from elsewhere (a
Content-Security-Policy of ``'self'`` enforces it), and FastAPI's CDN-based ``/docs`` is off
(``/openapi.json`` documents the API).
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import re
import time
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.engine import Engine
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware

from db import reads
from db.engine import make_engine
from db.migrate import init_db
from tracker import __version__
from tracker.config.settings import Settings, load_settings
from tracker.errors import ConfigError
from tracker.reads.schemas import HealthOut
from tracker.web import api, metrics, pages
from tracker.web.context import WebContext
from tracker.web.security import Security, SecurityMiddleware, security_for

log = logging.getLogger("tracker.web")
STATIC_DIR = Path(__file__).parent / "static"
PLOTLY_CACHE_SECONDS = 7 * 86400
#: /healthz asks the database at most this often.
HEALTH_TTL_S = 1.0
_CLI_FLAG = re.compile(r"^--([a-z][a-z-]*):")


def _is_html_route(path: str) -> bool:
    return not (path.startswith("/api") or path in ("/metrics", "/healthz", "/openapi.json"))


def _message(exc: Exception) -> str:
    # analysis errors name CLI flags ("--since: ..."); over HTTP they are query parameters
    return _CLI_FLAG.sub(r"\1:", str(exc))


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p not in ("query", "path", "body")]
        parts.append(f"{'.'.join(loc) or 'request'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


@cache
def _plotly() -> tuple[bytes, bytes, str]:
    """(plain, gzipped, version) of the plotly.js bundled with the plotly package."""
    import plotly.offline

    source = plotly.offline.get_plotlyjs().encode("utf-8")
    return source, gzip.compress(source, compresslevel=6), plotly.offline.get_plotlyjs_version()


def _damaged(engine: Engine) -> bool:
    """Whether a SQLite store fails its integrity quick check as the server starts. Readers
    only read the pages a question needs, so damage elsewhere would go unnoticed while every
    answer looks normal: it is found once here (a WARNING, and /healthz answers 503), by
    ``gpu-tracker db check``, and by the collector, which refuses to write to such a store."""
    if engine.url.get_backend_name() != "sqlite":
        return False
    from db.integrity import check_store

    try:
        result = check_store(engine, quick=True)
    except Exception:  # noqa: BLE001 - an unreadable store is reported by /healthz's own ping
        return False
    if not result.ok:
        log.warning("the store failed its integrity quick check (%s); answers may be wrong: run `gpu-tracker db "
                    "check`", result.problems[0][:200] if result.problems else "problem")
    return not result.ok


def _error_response(request: Request, status: int, message: str) -> Response:
    if _is_html_route(request.url.path):
        return pages.render(request, "error.html", status_code=status, title=f"Error {status}", message=message)
    return JSONResponse({"detail": message}, status_code=status)


def create_app(settings: Settings | None = None, engine: Engine | None = None,
               security: Security | None = None) -> FastAPI:
    """The application for ``settings`` (default: ``load_settings()``) on ``engine`` (default:
    the configured database, tables created if missing), guarded by ``security`` (default: what
    ``web.host``, ``web.allowed_hosts`` and ``$GPU_TRACKER_API_TOKEN`` ask for; see
    ``tracker.web.security``)."""
    settings = settings or load_settings()
    security = security or security_for(settings)
    if engine is None:
        engine = make_engine(settings.database)
        init_db(engine)
    app = FastAPI(
        title="gpu-price-tracker",
        version=__version__,
        description="Hourly GPU cloud prices: latest offers, catalog, cost per TFLOP, history, trends, "
                    "provider health. Read-only.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.web = WebContext.create(settings, engine)
    app.state.metrics = metrics.registry_for(app.state.web)

    @app.middleware("http")
    async def no_nul_characters(request: Request, call_next: Any) -> Response:
        """A NUL character in the path or a query value is a 400 here: PostgreSQL refuses one in
        any text parameter, which would otherwise surface as a 500 from whichever read took it."""
        query = unquote_plus(request.scope.get("query_string", b"").decode("latin-1"))
        if "\x00" in request.scope.get("path", "") or "\x00" in query:
            return _error_response(request, 400, "the request holds a NUL character")
        response: Response = await call_next(request)
        return response

    app.add_middleware(GZipMiddleware, minimum_size=1024)
    app.add_middleware(SecurityMiddleware, security=security)  # outermost: refused requests cost nothing

    @app.exception_handler(ConfigError)
    async def bad_filter(request: Request, exc: ConfigError) -> Response:
        return _error_response(request, getattr(exc, "http_status", 400), _message(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        return _error_response(request, 400, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = exc.detail if isinstance(exc.detail, str) else "error"
        if exc.status_code == 404 and _is_html_route(request.url.path):
            message = f"Nothing here: {request.url.path}"
        response = _error_response(request, exc.status_code, message)
        for k, v in (exc.headers or {}).items():
            response.headers[k] = v
        return response

    app.include_router(api.router)

    health: dict[str, Any] = {"at": -HEALTH_TTL_S, "error": None, "damaged": _damaged(engine)}
    ping_lock = asyncio.Lock()

    def ping() -> str | None:
        try:
            with app.state.web.reader() as reader:
                reads.ping(reader)
        except Exception as exc:  # noqa: BLE001 - any database trouble is "unhealthy"
            return type(exc).__name__
        return None

    @app.get("/healthz", response_model=HealthOut, tags=["ops"], responses={503: {"model": HealthOut}})
    async def healthz() -> Response:
        """Liveness and database reachability (never shows the database URL).

        The database is asked at most once per second, off the event loop; checks in between share
        that answer, so a probe storm costs the store nothing."""
        if time.monotonic() - health["at"] >= HEALTH_TTL_S:
            async with ping_lock:
                if time.monotonic() - health["at"] >= HEALTH_TTL_S:
                    health["error"] = await anyio.to_thread.run_sync(ping)
                    health["at"] = time.monotonic()
        if health["error"] is not None:
            body = HealthOut(status="error", version=__version__, database=f"unreachable ({health['error']})")
            return JSONResponse(body.model_dump(), status_code=503)
        if health["damaged"]:
            body = HealthOut(status="error", version=__version__,
                             database="damaged: it failed its integrity quick check at start (run gpu-tracker db check)")
            return JSONResponse(body.model_dump(), status_code=503)
        return JSONResponse(HealthOut(status="ok", version=__version__, database="ok").model_dump())

    @app.get("/metrics", response_class=PlainTextResponse, tags=["ops"],
             responses={200: {"content": {"text/plain": {}},
                              "description": "Prometheus text format (OpenMetrics when the Accept header asks)."}})
    def prometheus(request: Request) -> Response:
        """Per-provider offers, status, last success, interval, failures, scrape duration; cheapest price
        per GPU and lowest per GPU, provider and kind."""
        body, content_type = metrics.render(request.app.state.metrics, request.headers.get("accept"))
        return Response(body, headers={"Content-Type": content_type})

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js(request: Request) -> Response:
        plain, gz, version = _plotly()
        etag = f'"plotly-{version}"'
        headers = {"ETag": etag, "Cache-Control": f"public, max-age={PLOTLY_CACHE_SECONDS}", "Vary": "Accept-Encoding"}
        if etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        if "gzip" in request.headers.get("accept-encoding", ""):
            return Response(gz, media_type="application/javascript", headers={**headers, "Content-Encoding": "gzip"})
        return Response(plain, media_type="application/javascript", headers=headers)

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.include_router(pages.router)
    return app


__all__ = ["create_app"]
