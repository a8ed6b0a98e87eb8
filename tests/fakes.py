"""Small test-only scrapers that speak a tiny JSON format, for pipeline and store tests.

They are deliberately not real providers: the pipeline's behaviour (isolation, quarantine,
intervals) is what is under test, and real payloads are covered by tests/scrapers/.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

import httpx

from scrapers.base import Http, ScrapedOffer, Scraper, require

FAKE_URL = "https://prices.example.test/v1/offers"


class FakeScraper(Scraper):
    """GETs FAKE_URL/<name> and parses {"offers": [{"sku", "gpu", "count", "price", ...}]} (``free``: GPUs free now)."""

    name: ClassVar[str] = "fake"
    display_name: ClassVar[str] = "Fake Cloud"
    endpoint: ClassVar[str] = f"GET {FAKE_URL}"

    async def fetch(self, http: Http) -> Any:
        headers = {}
        for env in self.credentials:
            headers["Authorization"] = f"Bearer {self.credential(env)}"
        return await http.get_json(f"{FAKE_URL}/{self.name}", headers=headers)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        rows = require(raw, "offers", provider=self.name, kind=list)
        return [
            self.offer(
                sku=require(r, "sku", provider=self.name), gpu_raw=require(r, "gpu", provider=self.name),
                gpu_count=r.get("count", 1), price_per_hour=r.get("price"), kind=r.get("kind", "on_demand"),
                region=r.get("region", "r1"), currency=r.get("currency", "USD"),
                available=r.get("available", None if r.get("free") is None else r["free"] > 0),
                available_count=r.get("free"),
            )
            for r in rows
        ]


def make_fake(name: str, credentials: tuple[str, ...] = ()) -> type[FakeScraper]:
    return type(f"Fake_{name}", (FakeScraper,), {"name": name, "display_name": name.title(), "credentials": credentials})


def offers_payload(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"offers": list(rows)}


def routing_transport(routes: dict[str, Callable[[httpx.Request], httpx.Response] | Any]) -> Callable[[str], httpx.AsyncBaseTransport]:
    """A transport factory: provider name -> MockTransport answering with ``routes[name]``.

    A route is a handler, or a JSON-able payload answered with 200.
    """

    def factory(provider: str) -> httpx.AsyncBaseTransport:
        route = routes[provider]
        if callable(route):
            return httpx.MockTransport(route)
        body = json.dumps(route).encode()
        return httpx.MockTransport(lambda req: httpx.Response(200, content=body, headers={"Content-Type": "application/json"}))

    return factory
