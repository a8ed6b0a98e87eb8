"""Request-level checks shared by the HTML page scrapers' tests (lambda, modal, coreweave, ...).

``fetch_with(scraper, page_url, html, robots=...)`` runs the scraper's real ``fetch`` over an
``httpx.MockTransport`` that serves ``robots`` at ``/robots.txt`` (404 when ``None``) and ``html``
at ``page_url``, and returns the payload with every request the scraper sent.
"""

from __future__ import annotations

from typing import Any

import httpx

from scrapers.base import Scraper
from tests.scrapers.contract import run_fetch


def fetch_with(scraper: Scraper, page_url: str, html: str, robots: str | None = None) -> tuple[Any, list[httpx.Request]]:
    sent: list[httpx.Request] = []
    page = httpx.URL(page_url)

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            if robots is None:
                return httpx.Response(404, text="not found")
            return httpx.Response(200, text=robots, headers={"Content-Type": "text/plain"})
        if request.url.host == page.host and request.url.path == page.path:
            return httpx.Response(200, text=html, headers={"Content-Type": "text/html; charset=utf-8"})
        return httpx.Response(404, text=f"unexpected {request.url}")

    raw = run_fetch(scraper, httpx.MockTransport(handler))
    return raw, sent


def page_requests(sent: list[httpx.Request], page_url: str) -> list[httpx.Request]:
    """The requests for the page itself (robots.txt left out)."""
    page = httpx.URL(page_url)
    return [r for r in sent if r.url.host == page.host and r.url.path == page.path]
