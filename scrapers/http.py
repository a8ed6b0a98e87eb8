"""The HTTP client scrapers get: httpx with timeouts, a real User-Agent, polite retries and limits.

Scrapers never build their own client. ``Http`` wraps an ``httpx.AsyncClient`` (whose
transport may be a real network, an ``httpx.MockTransport`` in tests, or the replay
transport) and retries connect/read errors, 5xx and 429 with exponential backoff, honouring
``Retry-After`` (seconds or an HTTP date; anything else means the default backoff). Error
messages show the method, host and path only: query strings and headers may carry API keys and
never reach a log or a ``scrape_run`` row.

What a hostile or broken server can do is bounded:

* **Body size.** Every body is read as a stream and decoded here (gzip and deflate by a
  decompressor that never makes more than a chunk at a time), so a 2 GiB answer or a gzip bomb
  stops at ``max_body_bytes`` of *decoded* bytes with a ``FetchError`` naming the provider, the
  URL and the limit. Downloads to disk have their own, larger ``max_download_bytes``.
* **Where requests go.** With ``hosts`` set (the collector passes the scraper's own), every
  request, every redirect and every link taken from a payload (``same_origin``) must be https to
  one of those exact hosts; a redirect never goes from https to http. A request to another host
  is refused before it is sent, so an ``Authorization`` header can never reach it. Hosts are
  exact, never "the domain and its subdomains": on shared hosting (``*.s3.amazonaws.com``,
  ``storage.googleapis.com/<bucket>``) a sibling of the provider's host is anyone's.
"""

from __future__ import annotations

import math
import threading
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapers._lazy import lazy_module
from tracker import __version__
from tracker.errors import FetchError, RobotsDisallowed

if TYPE_CHECKING:
    import asyncio
    import email.utils as email_utils
    import ssl
    import tempfile
    from urllib import robotparser

    import httpx
else:  # loaded when a scraper first fetches: listing or reading scrapers needs none of them
    asyncio, ssl, tempfile, httpx = (lazy_module(m) for m in ("asyncio", "ssl", "tempfile", "httpx"))
    email_utils, robotparser = lazy_module("email.utils"), lazy_module("urllib.robotparser")

USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    f"Chrome/131.0 Safari/537.36 gpu-price-tracker/{__version__}"
)
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0
MAX_REDIRECTS = 5
#: Decoded bytes a response body may have unless the provider says otherwise (real price lists are a few MB).
DEFAULT_MAX_BODY_BYTES = 32 << 20
#: Decoded bytes a download to disk may have unless the provider says otherwise.
DEFAULT_MAX_DOWNLOAD_BYTES = 1 << 30
#: robots.txt files are small; a bigger one is treated as unreadable (allow all).
MAX_ROBOTS_BYTES = 512 << 10
#: Largest piece read or decompressed at once, so memory stays near the limit even for a gzip bomb.
CHUNK_BYTES = 1 << 20
#: Content codings decoded here with a bounded decompressor; we ask for no others.
ACCEPT_ENCODING = "gzip, deflate"


_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """The one TLS context every provider's client uses (httpx's defaults: certifi's CAs).

    Building a context loads the CA bundle (tens of milliseconds of CPU); built per provider,
    on the event loop, that stalls every other provider's requests once per client."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx.create_ssl_context()
        return _ssl_context


def redact_url(url: str | httpx.URL) -> str:
    """``scheme://host/path`` without query or credentials: safe for logs and errors."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def format_bytes(n: int) -> str:
    """``33554432`` -> ``"32 MiB"``: limits in error messages, readable."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def on_hosts(host: str, hosts: Collection[str]) -> bool:
    """Whether ``host`` is exactly one of ``hosts`` (case and a trailing dot aside)."""
    return host.lower().rstrip(".") in hosts


#: Where servers say how long to wait: the standard header, and Azure Retail Prices' own.
RETRY_AFTER_HEADERS = ("Retry-After", "x-ms-ratelimit-retailprices-retry-after")


def _retry_after_seconds(response: httpx.Response) -> float | None:
    """Seconds the server asks us to wait, or ``None`` (use the default backoff) when absent or junk."""
    value = next((response.headers[h] for h in RETRY_AFTER_HEADERS if h in response.headers), None)
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email_utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if parsed is None:  # pragma: no cover - older Pythons returned None instead of raising
            return None
        seconds = parsed.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


async def _decoded_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body of a streamed response, decoded, in pieces of at most ``CHUNK_BYTES``.

    gzip and deflate are inflated here with ``max_length`` so one small compressed chunk
    cannot expand into gigabytes at once; other codings (which we do not ask for) go through
    httpx's own decoders, still in pieces the caller counts.
    """
    coding = response.headers.get("content-encoding", "").strip().lower()
    if response.is_stream_consumed or coding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        # an in-memory response (mock and replay transports) is decoded already
        async for chunk in response.aiter_bytes(CHUNK_BYTES):
            yield chunk
        return
    if coding in ("", "identity"):
        async for chunk in response.aiter_raw(CHUNK_BYTES):
            yield chunk
        return
    raw_deflate_tried = coding != "deflate"
    inflater = zlib.decompressobj(zlib.MAX_WBITS | (16 if coding != "deflate" else 0))
    async for chunk in response.aiter_raw(CHUNK_BYTES):
        data = chunk
        while data and not inflater.eof:
            try:
                piece = inflater.decompress(data, CHUNK_BYTES)
            except zlib.error:
                if raw_deflate_tried:
                    raise FetchError(f"{coding} body is corrupt") from None
                # "deflate" is sometimes sent without the zlib header
                raw_deflate_tried = True
                inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                piece = inflater.decompress(data, CHUNK_BYTES)
            raw_deflate_tried = True
            if piece:
                yield piece
            data = inflater.unconsumed_tail
    rest = inflater.flush()
    if rest:
        yield rest


#: Digits beyond which a JSON integer cannot be a price, count or id: read as a float (inf when
#: huge) so parsers see a number they can reject, instead of an int no float can hold.
MAX_JSON_INT_DIGITS = 40


def _json_int(text: str) -> int | float:
    return int(text) if len(text) <= MAX_JSON_INT_DIGITS else float(text)


class Http:
    """Retrying JSON/text helpers over one ``httpx.AsyncClient``, with size and host limits.

    ``sleep`` is injectable so tests of the backoff do not wait for real. ``hosts`` empty
    means "any host" (tests, ad-hoc use); the collector always passes the scraper's hosts.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        provider: str = "",
        retries: int = 3,
        backoff_s: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_download_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES,
        hosts: Collection[str] = (),
    ) -> None:
        self.client = client
        self.provider = provider
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_body_bytes = max_body_bytes
        self.max_download_bytes = max_download_bytes
        self.hosts = tuple(h.lower().strip(".") for h in hosts)
        self._sleep = sleep or asyncio.sleep
        self._robots: dict[str, robotparser.RobotFileParser | None] = {}
        #: The provider's memory budget for bodies being read at once (see ``_reserve``): one
        #: body limit. The oldest body always proceeds, so at most budget + one body limit is
        #: being read at once: eight concurrent 120 MiB AWS answers take 256 MiB, not 1 GiB.
        self.body_budget_bytes = max_body_bytes
        self._in_flight = 0
        self.peak_in_flight = 0
        self._readers: list[int] = []  # tickets of the bodies being read, oldest first
        self._ticket = 0
        self._budget_changed: asyncio.Condition | None = None

    def _fail(self, message: str) -> FetchError:
        return FetchError(f"{self.provider}: {message}" if self.provider else message)

    # --- where requests may go -------------------------------------------------------------

    def check_url(self, url: str | httpx.URL) -> None:
        """Refuse (``FetchError``) a URL off the provider's hosts or not https, before sending."""
        if not self.hosts:
            return
        parsed = httpx.URL(str(url))
        if parsed.scheme != "https":
            raise self._fail(f"refusing {redact_url(parsed)}: only https is allowed")
        if not on_hosts(parsed.host, self.hosts):
            raise self._fail(
                f"refusing {redact_url(parsed)}: {parsed.host} is not one of the provider's hosts ({', '.join(self.hosts)})"
            )

    def _check_redirect(self, source: httpx.URL, target: httpx.URL) -> None:
        if source.scheme == "https" and target.scheme != "https":
            raise self._fail(f"refusing the redirect from {redact_url(source)} to {redact_url(target)}: https -> http")
        if not self.hosts and target.host != source.host:
            raise self._fail(f"refusing the redirect from {redact_url(source)} to another host ({target.host})")
        self.check_url(target)

    def same_origin(self, link: Any, origin: str | httpx.URL) -> str:
        """A link read from a payload (a next page), made absolute; ``FetchError`` unless it stays
        on ``origin``'s scheme, host and port. Scrapers call it before following any such link."""
        base = httpx.URL(str(origin))
        if not isinstance(link, str) or not link.strip():
            raise self._fail(f"a next-page link from {redact_url(base)} is not a URL")
        try:
            target = base.join(link.strip())
        except httpx.InvalidURL:
            raise self._fail(f"a next-page link from {redact_url(base)} is not a valid URL") from None
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
            raise self._fail(
                f"refusing a next-page link to {redact_url(target)}: it leaves {base.scheme}://{base.host}"
            )
        return str(target)

    async def _open(self, method: str, url: str, headers: dict[str, str], follow: bool, kwargs: dict[str, Any]) -> httpx.Response:
        """Send and return the streamed response, following redirects only where allowed."""
        self.check_url(url)
        request = self.client.build_request(method, url, headers=headers, **kwargs)
        for _ in range(MAX_REDIRECTS + 1):
            response = await self.client.send(request, stream=True, follow_redirects=False)
            if not follow or response.next_request is None:
                return response
            await response.aclose()
            self._check_redirect(request.url, response.next_request.url)
            request = response.next_request
        raise self._fail(f"{method} {redact_url(url)}: more than {MAX_REDIRECTS} redirects")

    # --- reading bodies within limits -------------------------------------------------------

    def _too_big(self, where: str, limit: int, setting: str) -> FetchError:
        name = self.provider or "<provider>"
        return self._fail(
            f"{where}: the body is larger than {format_bytes(limit)}, the limit for this provider "
            f"(providers.{name}.{setting})"
        )

    async def _reserve(self, ticket: int, n: int) -> None:
        """Count ``n`` more bytes against the provider's budget, waiting while concurrent bodies
        hold it. The oldest body being read never waits (so the bodies always finish, one at a
        time at worst); a waiting body reads nothing more from its socket meanwhile."""
        if self._budget_changed is None:
            self._budget_changed = asyncio.Condition()
        async with self._budget_changed:
            await self._budget_changed.wait_for(
                lambda: self._readers[0] == ticket or self._in_flight + n <= self.body_budget_bytes)
            self._in_flight += n
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)

    async def _release(self, ticket: int, n: int) -> None:
        self._readers.remove(ticket)
        self._in_flight -= n
        if self._budget_changed is not None:
            async with self._budget_changed:
                self._budget_changed.notify_all()

    async def _read(self, response: httpx.Response, where: str, limit: int) -> httpx.Response:
        """Read a streamed response into memory, decoded, stopping past ``limit`` bytes; the
        bodies of one provider read at once share its budget (``_reserve``).

        Returns an ordinary (already decoded) response; closes the stream whatever happens.
        """
        self._ticket += 1
        ticket = self._ticket
        self._readers.append(ticket)
        body = bytearray()
        try:
            declared = response.headers.get("content-length", "")
            if "content-encoding" not in response.headers and declared.isdigit() and int(declared) > limit:
                raise self._too_big(where, limit, "max_body_mb")
            try:
                async for piece in _decoded_chunks(response):
                    await self._reserve(ticket, len(piece))
                    body += piece
                    if len(body) > limit:
                        raise self._too_big(where, limit, "max_body_mb")
            except FetchError as exc:
                if str(exc).startswith(self.provider or "\0"):
                    raise
                raise self._fail(f"{where}: {exc}") from None
        finally:
            await self._release(ticket, len(body))
            await response.aclose()
        headers = [
            (k, v) for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(response.status_code, headers=headers, content=bytes(body), request=response.request)

    def _headers(self, kwargs: dict[str, Any]) -> dict[str, str]:
        return {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **(kwargs.pop("headers", None) or {})}

    async def _backoff(self, attempt: int, response: httpx.Response | None = None) -> None:
        delay = _retry_after_seconds(response) if response is not None else None
        if delay is None:
            delay = self.backoff_s * 2 ** (attempt - 1)
        await self._sleep(min(delay, MAX_RETRY_AFTER_S))

    # --- requests ---------------------------------------------------------------------------

    async def request(self, method: str, url: str, *, accept: Collection[int] = (), **kwargs: Any) -> httpx.Response:
        """Send with retries; return a 2xx response (or one whose status is in ``accept``) or raise ``FetchError``.

        The returned response is fully read and decoded, at most ``max_body_bytes`` long.
        """
        headers = self._headers(kwargs)
        follow = bool(kwargs.pop("follow_redirects", True))
        where = f"{method} {redact_url(url)}"
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                response = await self._open(method, url, headers, follow, kwargs)
                if response.status_code in RETRY_STATUSES and attempt < attempts:
                    await response.aclose()
                    await self._backoff(attempt, response)
                    continue
                if response.is_error and response.status_code not in accept:
                    await response.aclose()
                    tries = f" after {attempt} attempts" if attempt > 1 else ""
                    raise self._fail(f"{where} -> HTTP {response.status_code}{tries}")
                return await self._read(response, where, self.max_body_bytes)
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise self._fail(f"{where} failed after {attempts} attempts: {type(exc).__name__}") from None
                await self._backoff(attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def get_json(self, url: str, **kwargs: Any) -> Any:
        return self._json(await self.request("GET", url, **kwargs))

    async def get_json_or_none(self, url: str, **kwargs: Any) -> Any | None:
        """JSON body, or ``None`` when the server answers 404: for documents that exist only for
        some keys (AWS publishes a price list only for locations that sell the service)."""
        response = await self.request("GET", url, accept=(404,), **kwargs)
        if response.status_code == 404:
            return None
        return self._json(response)

    async def post_json(self, url: str, **kwargs: Any) -> Any:
        return self._json(await self.request("POST", url, **kwargs))

    async def get_text(self, url: str, **kwargs: Any) -> str:
        return self._text(await self.request("GET", url, **kwargs))

    def _text(self, response: httpx.Response) -> str:
        """The body as text in its declared charset (UTF-8 if none); undecodable bytes are a ``FetchError``
        rather than replacement characters that would end up in stored names."""
        try:
            return response.content.decode(response.encoding or "utf-8")
        except (UnicodeDecodeError, LookupError):
            where = f"{response.request.method} {redact_url(response.request.url)}"
            raise self._fail(f"{where} did not return valid {response.encoding or 'utf-8'} text") from None

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json(parse_int=_json_int)
        except (ValueError, RecursionError):  # bad JSON, bad UTF-8, nesting too deep
            raise self._fail(f"{response.request.method} {redact_url(response.request.url)} did not return JSON") from None

    async def download(self, url: str, directory: str | Path | None = None, **kwargs: Any) -> Path:
        """Stream a (possibly huge) body to a temporary file and return its path.

        For payloads such as AWS offer files that must never be held in memory whole. The
        file never grows past ``max_download_bytes`` (decoded): past it the file is deleted and
        a ``FetchError`` names the limit. The caller owns the file and deletes it when done.
        """
        where = f"GET {redact_url(url)}"
        headers = self._headers(kwargs)
        follow = bool(kwargs.pop("follow_redirects", True))
        limit = self.max_download_bytes
        for attempt in range(1, self.retries + 2):
            fd = tempfile.NamedTemporaryFile(prefix="gpu-tracker-", suffix=".download", dir=directory, delete=False)
            path = Path(fd.name)
            try:
                response = await self._open("GET", url, headers, follow, dict(kwargs))
                try:
                    if response.status_code in RETRY_STATUSES and attempt <= self.retries:
                        fd.close()
                        path.unlink(missing_ok=True)
                        await self._backoff(attempt, response)
                        continue
                    if response.is_error:
                        raise self._fail(f"{where} -> HTTP {response.status_code}")
                    written = 0
                    with fd:
                        async for piece in _decoded_chunks(response):
                            written += len(piece)
                            if written > limit:
                                raise self._too_big(where, limit, "max_download_mb")
                            fd.write(piece)
                finally:
                    await response.aclose()
                return path
            except httpx.TransportError as exc:
                fd.close()
                path.unlink(missing_ok=True)
                if attempt > self.retries:
                    raise self._fail(f"{where} failed after {attempt} attempts: {type(exc).__name__}") from None
                await self._backoff(attempt)
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
            parser: robotparser.RobotFileParser | None = None
            try:
                response = await self._open("GET", f"{site}/robots.txt", {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING}, True, {})
                if response.status_code == 200:
                    body = await self._read(response, f"GET {site}/robots.txt", MAX_ROBOTS_BYTES)
                    parser = robotparser.RobotFileParser()
                    parser.parse(body.content.decode("utf-8", errors="replace").splitlines())
                else:
                    await response.aclose()
            except (httpx.TransportError, FetchError):
                parser = None  # unreadable, too big or redirected away: allow, as for a missing file
            self._robots[site] = parser
        parser = self._robots[site]
        return True if parser is None else parser.can_fetch(USER_AGENT, url)
