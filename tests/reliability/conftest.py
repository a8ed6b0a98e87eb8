"""A misbehaving HTTP server on 127.0.0.1 and a transport that sends every provider's requests to it.

The collector runs unchanged: scrapers still ask for ``https://<provider host>/<path>`` and the
``Http`` client checks those URLs (domains, https, redirects); only below it, ``LocalTransport``
sends the request over a real socket to ``http://127.0.0.1:<port>/<host>/<path>``. The server
answers from the bundled recordings, except for hosts given a fault: then the fault writes the
answer itself (wrong status, slow or huge body, gzip bomb, redirect, ...).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tracker.pipeline.replay import BUNDLED_RECORDINGS, Recording, load_manifest

Fault = Callable[["Handler", "Asked"], None]


@dataclass(frozen=True)
class Asked:
    """One request as the scraper made it (the original https URL)."""

    method: str
    url: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""


class Handler(BaseHTTPRequestHandler):
    server: FaultServer  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return None

    def _handle(self) -> None:
        host, _, rest = self.path.lstrip("/").partition("/")
        length = int(self.headers.get("Content-Length") or 0)
        asked = Asked(self.command, f"https://{host}/{rest}", self.rfile.read(length) if length else b"",
                      {k.lower(): v for k, v in self.headers.items()})
        self.server.asked.append(asked)
        fault = self.server.faults.get(host)
        try:
            if fault is not None:
                fault(self, asked)
            else:
                self.replay(asked)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what a limit is for

    do_GET = do_POST = _handle

    def replay(self, asked: Asked) -> None:
        """Answer from the bundled recordings; 404 when nothing matches."""
        request = httpx.Request(asked.method, asked.url, content=asked.body)
        rec = next((r for r in self.server.recordings if r.matches(request)), None)
        if rec is None:
            self.send_body(404, b"no recording", "text/plain")
            return
        self.send_body(rec.status, rec.file.read_bytes(), rec.content_type, rec.headers)

    def send_body(self, status: int, body: bytes, content_type: str = "application/json",
                  headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, recordings: list[Recording]) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.recordings = recordings
        self.faults: dict[str, Fault] = {}
        self.asked: list[Asked] = []

    @property
    def port(self) -> int:
        return int(self.server_address[1])


def recorded_file(provider: str, name: str) -> bytes:
    return (BUNDLED_RECORDINGS / provider / name).read_bytes()


#: One TLS context for every transport (the server is plain http; building a context per
#: transport costs a tenth of a second for nothing).
_TLS = ssl.create_default_context()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalTransport(httpx.AsyncBaseTransport):
    """Real sockets to the fault server; ``refused`` hosts go to a closed port instead."""

    port: int
    refused: frozenset[str] = frozenset()
    inner: httpx.AsyncHTTPTransport = field(default_factory=lambda: httpx.AsyncHTTPTransport(verify=_TLS))
    dead_port: int = field(default_factory=closed_port)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        port = self.dead_port if host in self.refused else self.port
        local = request.url.copy_with(scheme="http", host="127.0.0.1", port=port,
                                      raw_path=f"/{host}".encode() + request.url.raw_path)
        forwarded = httpx.Request(request.method, local, headers=request.headers, stream=request.stream,
                                  extensions=request.extensions)
        return await self.inner.handle_async_request(forwarded)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    recordings = [r for d in sorted(Path(BUNDLED_RECORDINGS).iterdir()) if (d / "manifest.json").is_file()
                  for r in load_manifest(d)]
    server = FaultServer(recordings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
