"""Request-level checks shared by the HTML page scrapers' tests (lambda, modal, coreweave, ...).

``fetch_with(scraper, page_url, html, robots=..., sent=...)`` runs the scraper's real ``fetch`` over
an ``httpx.MockTransport`` that serves ``robots`` at ``/robots.txt`` (404 when ``None``) and ``html``
at ``page_url``, and returns the payload with every request the scraper sent (also appended to
``sent`` when given, so a test can look at them after ``fetch`` raised).

``assert_fetches_page_once`` and ``assert_refused_by_robots`` are the two request tests every
page scraper has: one GET of the page with the browser User-Agent after reading robots.txt, and
a ``RobotsDisallowed`` (a skipped run) without fetching the page when robots.txt disallows it.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from scrapers.base import Scraper
from scrapers.http import USER_AGENT
from tests.scrapers.contract import run_fetch
from tracker.errors import RobotsDisallowed

ROBOTS_PATH = "/robots.txt"


def fetch_with(
    scraper: Scraper,
    page_url: str,
    html: str,
    robots: str | None = None,
    sent: list[httpx.Request] | None = None,
) -> tuple[Any, list[httpx.Request]]:
    sent = [] if sent is None else sent
    page = httpx.URL(page_url)

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == ROBOTS_PATH:
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


def assert_fetches_page_once(scraper: Scraper, page_url: str, html: str, robots: str | None = None) -> Any:
    """``fetch`` reads robots.txt, then sends exactly one request besides it: ``GET page_url`` with
    the browser User-Agent. Returns the payload."""
    raw, sent = fetch_with(scraper, page_url, html, robots=robots)
    pages = [r for r in sent if r.url.path != ROBOTS_PATH]
    assert len(pages) == 1
    assert (pages[0].method, str(pages[0].url)) == ("GET", page_url)
    assert pages[0].headers["User-Agent"] == USER_AGENT
    assert pages[0].headers["User-Agent"].startswith("Mozilla/5.0")
    assert any(r.url.path == ROBOTS_PATH for r in sent)
    return raw


def assert_refused_by_robots(scraper: Scraper, page_url: str, html: str, robots: str) -> None:
    """With ``robots`` disallowing the page, ``fetch`` raises ``RobotsDisallowed`` naming the provider
    and robots.txt, having requested nothing but robots.txt."""
    sent: list[httpx.Request] = []
    with pytest.raises(RobotsDisallowed, match=rf"{re.escape(scraper.name)}: robots\.txt .*disallows"):
        fetch_with(scraper, page_url, html, robots=robots, sent=sent)
    assert sent
    assert all(r.url.path == ROBOTS_PATH for r in sent)
