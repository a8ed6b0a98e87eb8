"""The scrapers' HTTP client: retries, Retry-After, error messages without secrets, downloads."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from scrapers.http import USER_AGENT, Http, redact_url
from tracker.errors import FetchError


def run(handler: Any, call: Any, retries: int = 3) -> tuple[Any, list[float]]:
    sleeps: list[float] = []

    async def fake_sleep(s: float) -> None:
        sleeps.append(s)

    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await call(Http(client, provider="demo", retries=retries, backoff_s=0.5, sleep=fake_sleep))

    return asyncio.run(go()), sleeps


def test_retries_5xx_with_backoff_then_succeeds() -> None:
    answers = iter([httpx.Response(502), httpx.Response(503), httpx.Response(200, json={"ok": True})])
    result, sleeps = run(lambda req: next(answers), lambda h: h.get_json("https://x.test/a"))
    assert result == {"ok": True}
    assert sleeps == [0.5, 1.0]


def test_honours_retry_after_on_429() -> None:
    answers = iter([httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200, json=[1])])
    result, sleeps = run(lambda req: next(answers), lambda h: h.get_json("https://x.test/a"))
    assert result == [1] and sleeps == [7.0]


def test_honours_azure_retail_prices_retry_header() -> None:
    answers = iter([httpx.Response(429, headers={"x-ms-ratelimit-retailprices-retry-after": "3"}), httpx.Response(200, json=[])])
    _, sleeps = run(lambda req: next(answers), lambda h: h.get_json("https://prices.azure.com/api/retail/prices"))
    assert sleeps == [3.0]


def test_gives_up_with_a_fetch_error_that_hides_the_query() -> None:
    with pytest.raises(FetchError) as info:
        run(lambda req: httpx.Response(500), lambda h: h.get_json("https://x.test/skus?key=SECRET123"), retries=2)
    message = str(info.value)
    assert message == "demo: GET https://x.test/skus -> HTTP 500 after 3 attempts"
    assert "SECRET123" not in message


def test_client_errors_are_not_retried() -> None:
    calls: list[int] = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(403)

    with pytest.raises(FetchError, match="HTTP 403"):
        run(handler, lambda h: h.get_json("https://x.test/a"))
    assert len(calls) == 1


def test_connect_errors_are_retried_then_reported() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("boom", request=req)

    with pytest.raises(FetchError, match="failed after 4 attempts: ConnectError"):
        run(handler, lambda h: h.get_json("https://x.test/a"))


def test_sends_a_real_user_agent_and_caller_headers() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, text="<html></html>")

    run(handler, lambda h: h.get_text("https://x.test/p", headers={"Authorization": "Bearer t"}))
    assert seen[0].headers["User-Agent"] == USER_AGENT and "Mozilla/5.0" in USER_AGENT
    assert seen[0].headers["Authorization"] == "Bearer t"


def test_non_json_body_is_a_fetch_error() -> None:
    with pytest.raises(FetchError, match="did not return JSON"):
        run(lambda req: httpx.Response(200, text="<html>"), lambda h: h.get_json("https://x.test/a"))


def test_download_streams_to_a_file() -> None:
    body = b"x" * (3 << 20)
    path, _ = run(lambda req: httpx.Response(200, content=body), lambda h: h.download("https://x.test/big.json"))
    try:
        assert Path(path).read_bytes() == body
    finally:
        Path(path).unlink()


def test_robots_txt_is_respected() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nDisallow: /private\n")
        return httpx.Response(200)

    allowed, _ = run(handler, lambda h: h.robots_allowed("https://x.test/pricing"))
    denied, _ = run(handler, lambda h: h.robots_allowed("https://x.test/private/prices"))
    assert allowed is True and denied is False


def test_redact_url() -> None:
    assert redact_url("https://u:p@api.x.test:8443/v1/skus?key=abc#f") == "https://api.x.test:8443/v1/skus"


def test_get_page_refuses_what_robots_txt_disallows() -> None:
    from tracker.errors import RobotsDisallowed

    fetched: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        fetched.append(req.url.path)
        if req.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nDisallow: /pricing\n")
        return httpx.Response(200, text="<html>prices</html>")

    with pytest.raises(RobotsDisallowed, match=r"^demo: robots.txt of x.test disallows fetching https://x.test/pricing$"):
        run(handler, lambda h: h.get_page("https://x.test/pricing?utm=1"))
    assert fetched == ["/robots.txt"]
    page, _ = run(handler, lambda h: h.get_page("https://x.test/products"))
    assert page == "<html>prices</html>"
