"""``gpu-tracker serve``: the JSON API and the web dashboard (uvicorn)."""

from __future__ import annotations

from typing import Annotated

import typer

from tracker.cli import app
from tracker.cli.common import console, state


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option("--host", help="Interface to listen on (default: web.host in the config, 127.0.0.1). Anything but loopback needs $GPU_TRACKER_API_TOKEN.")] = None,
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="TCP port (default: web.port in the config, 8000).")] = None,
    allowed_host: Annotated[list[str] | None, typer.Option("--allowed-host", help="Another Host header name to answer to (repeatable; adds to web.allowed_hosts).")] = None,
) -> None:
    """Serve the dashboard and the JSON API (/api/prices, /api/history, /metrics, ...) over HTTP.

    Read-only: shows what `scrape` and `run` stored. Works offline (plotly.js is served locally).

    With $GPU_TRACKER_API_TOKEN set every request needs 'Authorization: Bearer <token>' (a browser
    may log in with the token as the password); binding anywhere but loopback requires it.

    API schema at /openapi.json, Prometheus metrics at /metrics, health at /healthz.
    """
    import uvicorn

    from tracker.web.app import create_app
    from tracker.web.security import security_for

    st = state(ctx)
    settings = st.settings
    bind_host = host or settings.web.host
    bind_port = port or settings.web.port
    security = security_for(settings, bind_host, extra_hosts=allowed_host or ())
    application = create_app(settings, st.engine, security)
    shown = f"[{bind_host}]" if ":" in bind_host else bind_host
    guard = "API token required" if security.token else "no API token (loopback only)"
    console.print(f"serving the dashboard on http://{shown}:{bind_port}/ ({guard}; Ctrl+C to stop)", highlight=False)
    uvicorn.run(application, host=bind_host, port=bind_port, log_level="debug" if st.debug else "info",
                access_log=st.debug, proxy_headers=True)
