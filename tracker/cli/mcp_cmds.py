"""``gpu-tracker mcp``: the Model Context Protocol server on stdio (``tracker.mcp``), imported
only when the command runs."""

from __future__ import annotations

import typer

from tracker.cli import app
from tracker.cli.common import state


@app.command()
def mcp(ctx: typer.Context) -> None:
    """Serve the store to an AI assistant over the Model Context Protocol (stdio), read-only.

    Tools: prices, history, trends, value, tco, recommend, alert_backtest, provider_health. The database is opened
    so that it refuses writes; nothing is scraped. Point your MCP client at
    `gpu-tracker --db URL mcp`.
    """
    from tracker.mcp.server import serve

    st = state(ctx)
    serve(st.settings, st.database_url)
