"""Fan-out: every provider of a cycle runs at once by default, and all their clients share one
TLS context built once (not one per provider on the event loop)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Engine

from scrapers.http import shared_ssl_context
from scrapers.registry import all_scrapers
from tests.fakes import make_fake, offers_payload
from tracker.config.settings import Settings
from tracker.pipeline import collect as collect_mod

H100 = {"sku": "h100x1", "gpu": "H100 SXM", "count": 1, "price": 2.50}


def test_default_concurrency_covers_every_registered_provider() -> None:
    assert Settings().http.concurrency >= len(all_scrapers())


def test_every_client_of_a_cycle_shares_one_tls_context(sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = httpx.AsyncClient

    def spy(*args: Any, **kwargs: Any) -> httpx.AsyncClient:
        seen.append(kwargs.get("verify"))
        return real(*args, **kwargs)

    monkeypatch.setattr(collect_mod.httpx, "AsyncClient", spy)
    fakes = [make_fake(f"tls{k}") for k in range(3)]

    in_flight = {"now": 0, "most": 0}

    async def slow(request: httpx.Request) -> httpx.Response:
        in_flight["now"] += 1
        in_flight["most"] = max(in_flight["most"], in_flight["now"])
        await asyncio.sleep(0.2)
        in_flight["now"] -= 1
        return httpx.Response(200, json=offers_payload(H100))

    results = collect_mod.collect(sqlite_engine, Settings(http={"retries": 0}), classes=fakes,
                                  transport_factory=lambda _name: httpx.MockTransport(slow))
    assert all(r.ok for r in results), [(r.provider, r.error_message) for r in results]
    assert len(seen) == 3 and all(v is shared_ssl_context() for v in seen)
    assert in_flight["most"] == 3  # the three providers waited at the same time
