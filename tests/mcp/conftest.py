"""MCP tests: the server spawned as `python -m tracker mcp --db URL` and driven by the SDK's own
client over stdio (``mcp.client.stdio``), on stores filled through the real replay path."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

# The replayed store (module-scoped) and the API on it, as the web tests build them.
from tests.web.conftest import client, secret_env, store  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
#: Seconds one whole client session may take (spawn, handshake, every call).
SESSION_TIMEOUT_S = 120


def server_params(db_url: str, config: Path) -> StdioServerParameters:
    """The command an MCP client configures; an empty config file keeps the user's own out."""
    return StdioServerParameters(command=sys.executable, args=["-m", "tracker", "--config", str(config), "--db", db_url,
                                                             "mcp"], cwd=str(ROOT))


def with_client(db_url: str, config: Path, body: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run ``body`` against one live server process and return what it returns."""

    async def main() -> Any:
        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with Client(server_params(db_url, config)) as session:
                return await body(session)

    return anyio.run(main)


async def call_all(session: Client, calls: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """``{key: (tool, arguments)}`` -> ``{key: CallToolResult}``, plus the tool list under ``"_tools"``."""
    out: dict[str, Any] = {"_tools": (await session.list_tools()).tools}
    for key, (tool, args) in calls.items():
        out[key] = await session.call_tool(tool, args)
    return out
