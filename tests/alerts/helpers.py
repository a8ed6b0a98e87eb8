"""Test helpers: a real HTTP receiver on 127.0.0.1 and a market driven through the real pipeline.

``Market.cycle(p1=[offers], p2=500)`` runs one collection with fake scrapers (answered by
``httpx.MockTransport``: fetch -> parse -> normalise -> validate -> store, quarantine included)
and then the scheduler's hook ``after_collect``, exactly as in production.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from db.models import AlertEvent, Outbox
from tests.fakes import make_fake, offers_payload, routing_transport
from tracker.alerts import AlertCycle, after_collect
from tracker.cli import app
from tracker.config.settings import Settings
from tracker.errors import TrackerError
from tracker.pipeline.collect import RunResult, collect


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A local HTTP server recording every POST; answers with ``codes`` in turn, then 200."""

    server: ThreadingHTTPServer
    requests: list[Received] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    #: ``Location`` sent with a 3xx answer (a redirect the sender must not follow).
    location: str = ""

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, scheme: str, path: str = "hook") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/{path}"

    def bodies(self) -> list[Any]:
        return [r.json() for r in self.requests]


@dataclass
class _Handle:
    receiver: Receiver | None = None


def start_receiver() -> Iterator[Receiver]:
    handle = _Handle()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            assert handle.receiver is not None
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            handle.receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            code = handle.receiver.codes.pop(0) if handle.receiver.codes else 200
            payload = b'{"ok": true}' if code < 300 else b'{"error": "try later"}'
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            if 300 <= code < 400 and handle.receiver.location:
                self.send_header("Location", handle.receiver.location)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    handle.receiver = Receiver(server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handle.receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def h100(sku: str, price: float, **extra: Any) -> dict[str, Any]:
    return {"sku": sku, "gpu": "H100 SXM", "count": 1, "price": price, **extra}


def fast_settings(*rules: dict[str, Any], **kwargs: Any) -> Settings:
    """Quick HTTP settings; the test receiver on 127.0.0.1 is allowed by name, as an operator would."""
    kwargs.setdefault("delivery", {"allow_hosts": ["127.0.0.1"]})
    return Settings(http={"timeout_s": 2, "retries": 1, "backoff_s": 0}, alerts=list(rules), **kwargs)


def failing(request: httpx.Request) -> httpx.Response:
    return httpx.Response(500, text="upstream trouble")


class Market:
    """Collections with fake providers through the real pipeline, then ``after_collect``."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine, self.settings = engine, settings

    def collect(self, **providers: list[dict[str, Any]] | int) -> list[RunResult]:
        routes: dict[str, Any] = {}
        for name, offers in providers.items():
            routes[name] = failing if offers == 500 else offers_payload(*offers)  # type: ignore[misc]
        classes = [make_fake(name) for name in providers]
        return collect(self.engine, self.settings, classes=classes, transport_factory=routing_transport(routes), environ={})

    def cycle(self, now: datetime | None = None, environ: dict[str, str] | None = None,
              **providers: list[dict[str, Any]] | int) -> AlertCycle:
        results = self.collect(**providers)
        cycle = after_collect(self.engine, self.settings, results, now=now, environ=environ)
        assert cycle.error is None, cycle.error
        return cycle


def events(engine: Engine, rule: str | None = None) -> list[AlertEvent]:
    with Session(engine) as s:
        stmt = select(AlertEvent).order_by(col(AlertEvent.id))
        if rule:
            stmt = stmt.where(AlertEvent.rule == rule)
        return list(s.exec(stmt).all())


def outbox(engine: Engine) -> list[Outbox]:
    with Session(engine) as s:
        return list(s.exec(select(Outbox).order_by(col(Outbox.id))).all())


def cli(db: str, config: Path, *args: str) -> tuple[int, str]:
    """Run ``gpu-tracker --db DB --config CONFIG ARGS``; our errors come back as ``main()``
    shows them: exit code 2 and the one-line message."""
    result = CliRunner().invoke(app, ["--db", db, "--config", str(config), *args])
    if isinstance(result.exception, TrackerError):
        return 2, result.output + str(result.exception)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output
