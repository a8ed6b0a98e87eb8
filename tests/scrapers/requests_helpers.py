"""Request-level checks shared by the JSON API scrapers' tests (runpod, vastai, ...).

``json_fetch(scraper, body)`` runs the scraper's real ``fetch`` over an ``httpx.MockTransport``
that answers every request with ``body`` as JSON, and returns the payload with the requests sent.
"""

from __future__ import annotations

from typing import Any

import httpx

from scrapers.base import Scraper
from tests.scrapers.contract import run_fetch


def json_fetch(scraper: Scraper, body: Any) -> tuple[Any, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=body)

    raw = run_fetch(scraper, httpx.MockTransport(handler))
    return raw, sent


def assert_optional_key_sent_as_bearer(scraper_cls: type[Scraper], env_name: str, key: str, body: Any) -> None:
    """With ``env_name`` set to ``key``, the first request carries ``Authorization: Bearer <key>``."""
    _, sent = json_fetch(scraper_cls(env={env_name: key}), body)
    assert sent[0].headers["authorization"] == f"Bearer {key}"


def assert_only_optional_credential(scraper_cls: type[Scraper], env_name: str) -> None:
    """The scraper runs without credentials; ``env_name`` is its one optional credential."""
    scraper = scraper_cls(env={})
    scraper.check_credentials()
    assert scraper.credentials == () and scraper.optional_credentials == (env_name,)
