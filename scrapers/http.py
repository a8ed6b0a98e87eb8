"""The HTTP client scrapers get: httpx with timeouts, a real User-Agent and polite retries.

Scrapers never build their own client. ``Http`` wraps an ``httpx.AsyncClient`` (whose
transport may be a real network, an ``httpx.MockTransport`` in tests, or the replay
transport) and retries connect/read errors, 5xx and 429 with exponential backoff, honouring
``Retry-After``. Error messages show the method, host and path only: query strings and
headers may carry API keys and never reach a log or a ``scrape_run`` row.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import tempfile
import time
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

import httpx

from tracker import __version__
from tracker.errors import FetchError, RobotsDisallowed

USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    f"Chrome/131.0 Safari/537.36 gpu-price-tracker/{__version__}"
)
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0


def redact_url(url: str | httpx.URL) -> str:
    """``scheme://host/path`` without query or credentials: safe for logs and errors."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


#: Where servers say how long to wait: the standard header, and Azure Retail Prices' own.
RETRY_AFTER_HEADERS = ("Retry-After", "x-ms-ratelimit-retailprices-retry-after")


def _retry_after_seconds(response: httpx.Response) -> float | None:
    value = next((response.headers[h] for h in RETRY_AFTER_HEADERS if h in response.headers), None)
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


class Http:
    """Retrying JSON/text helpers over one ``httpx.AsyncClient``.

    ``sleep`` is injectable so tests of the backoff do not wait for real.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        provider: str = "",
        retries: int = 3,
        backoff_s: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.provider = provider
        self.retries = retries
        self.backoff_s = backoff_s
        self._sleep = sleep
        self._robots: dict[str, RobotFileParser | None] = {}

    def _fail(self, message: str) -> FetchError:
        return FetchError(f"{self.provider}: {message}" if self.provider else message)

    async def request(self, method: str, url: str, *, accept: Collection[int] = (), **kwargs: Any) -> httpx.Response:
        """Send with retries; return a 2xx response (or one whose status is in ``accept``) or raise ``FetchError``."""
        headers = {"User-Agent": USER_AGENT, **(kwargs.pop("headers", None) or {})}
        where = f"{method} {redact_url(url)}"
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                response = await self.client.request(method, url, headers=headers, **kwargs)
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise self._fail(f"{where} failed after {attempts} attempts: {type(exc).__name__}") from None
                await self._sleep(self.backoff_s * 2 ** (attempt - 1))
                continue
            if response.status_code in RETRY_STATUSES and attempt < attempts:
                delay = _retry_after_seconds(response)
                if delay is None:
                    delay = self.backoff_s * 2 ** (attempt - 1)
                await response.aclose()
                await self._sleep(min(delay, MAX_RETRY_AFTER_S))
                continue
            if response.is_error and response.status_code not in accept:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                raise self._fail(f"{where} -> HTTP {response.status_code}{tries}")
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    async def get_json(self, url: str, **kwargs: Any) -> Any:
        return self._json(await self.request("GET", url, **kwargs))

    async def get_json_or_none(self, url: str, **kwargs: Any) -> Any | None:
        """JSON body, or ``None`` when the server answers 404: for documents that exist only for
        some keys (AWS publishes a price list only for locations that sell the service)."""
        response = await self.request("GET", url, accept=(404,), **kwargs)
        if response.status_code == 404:
            await response.aclose()
            return None
        return self._json(response)

    async def post_json(self, url: str, **kwargs: Any) -> Any:
        return self._json(await self.request("POST", url, **kwargs))

    async def get_text(self, url: str, **kwargs: Any) -> str:
        return (await self.request("GET", url, **kwargs)).text

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._fail(f"{response.request.method} {redact_url(response.request.url)} did not return JSON") from None

    async def download(self, url: str, directory: str | Path | None = None, **kwargs: Any) -> Path:
        """Stream a (possibly huge) body to a temporary file and return its path.

        For payloads such as AWS offer files that must never be held in memory whole.
        The caller owns the file and deletes it when done.
        """
        where = f"GET {redact_url(url)}"
        headers = {"User-Agent": USER_AGENT, **(kwargs.pop("headers", None) or {})}
        for attempt in range(1, self.retries + 2):
            fd = tempfile.NamedTemporaryFile(prefix="gpu-tracker-", suffix=".download", dir=directory, delete=False)
            path = Path(fd.name)
            try:
                async with self.client.stream("GET", url, headers=headers, **kwargs) as response:
                    if response.status_code in RETRY_STATUSES and attempt <= self.retries:
                        fd.close()
                        path.unlink(missing_ok=True)
                        await self._sleep(min(_retry_after_seconds(response) or self.backoff_s * 2 ** (attempt - 1), MAX_RETRY_AFTER_S))
                        continue
                    if response.is_error:
                        raise self._fail(f"{where} -> HTTP {response.status_code}")
                    with fd:
                        async for chunk in response.aiter_bytes(1 << 20):
                            fd.write(chunk)
                return path
            except httpx.TransportError as exc:
                fd.close()
                path.unlink(missing_ok=True)
                if attempt > self.retries:
                    raise self._fail(f"{where} failed after {attempt} attempts: {type(exc).__name__}") from None
                await self._sleep(self.backoff_s * 2 ** (attempt - 1))
            except BaseException:
                fd.close()
                path.unlink(missing_ok=True)
                raise
        raise self._fail(f"{where} kept failing")

    async def get_page(self, url: str, **kwargs: Any) -> str:
        """A public web page, fetched once, if its site's robots.txt lets our User-Agent in;
        otherwise ``RobotsDisallowed`` (the provider's run is skipped, not failed)."""
        if not await self.robots_allowed(url):
            host = urlsplit(url).hostname or url
            raise RobotsDisallowed(f"{self.provider}: robots.txt of {host} disallows fetching {redact_url(url)}")
        return await self.get_text(url, **kwargs)

    async def robots_allowed(self, url: str) -> bool:
        """Whether robots.txt of ``url``'s site allows our User-Agent to fetch its path.

        A missing or unreadable robots.txt allows everything (the usual convention).
        """
        parts = urlsplit(url)
        site = f"{parts.scheme}://{parts.netloc}"
        if site not in self._robots:
            parser: RobotFileParser | None = None
            try:
                response = await self.client.get(f"{site}/robots.txt", headers={"User-Agent": USER_AGENT})
                if response.status_code == 200:
                    parser = RobotFileParser()
                    parser.parse(response.text.splitlines())
            except httpx.TransportError:
                parser = None
            self._robots[site] = parser
        parser = self._robots[site]
        return True if parser is None else parser.can_fetch(USER_AGENT, url)
