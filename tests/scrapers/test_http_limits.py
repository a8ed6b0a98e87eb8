"""What a hostile or broken server can make ``Http`` do: bounded bodies, confined hosts, sane Retry-After.

Bodies here are streamed (not built in memory by the mock), as a real socket delivers them, so
the limits are exercised on the streaming path the collector uses.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest

from scrapers.http import CHUNK_BYTES, Http, _retry_after_seconds, format_bytes
from tracker.errors import FetchError


class Chunks(httpx.AsyncByteStream):
    """A response body delivered piece by piece, generated lazily (so a "2 GiB" body costs nothing)."""

    def __init__(self, pieces: Callable[[], Iterable[bytes]]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces():
            yield piece


def zeros(total: int, piece: int = 64 << 10) -> Callable[[], Iterable[bytes]]:
    return lambda: (b"0" * min(piece, total - sent) for sent in range(0, total, piece))


def gzip_bomb(decoded: int) -> bytes:
    """``decoded`` zero bytes, gzip-compressed (about a thousandth of the size)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1 << 20)
    parts = [compressor.compress(block) for _ in range(decoded >> 20)]
    return b"".join(parts) + compressor.flush()


def run(handler: Any, call: Any, **http_kwargs: Any) -> Any:
    async def no_sleep(_: float) -> None:
        return None

    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await call(Http(client, provider="demo", sleep=no_sleep, **http_kwargs))

    return asyncio.run(go())


# --- body size -------------------------------------------------------------------------------


def test_a_body_past_the_limit_is_a_fetch_error_naming_provider_url_and_limit() -> None:
    handler = lambda req: httpx.Response(200, stream=Chunks(zeros(3 << 20)))
    with pytest.raises(FetchError) as info:
        run(handler, lambda h: h.get_text("https://api.x.test/prices?key=SECRET"), max_body_bytes=1 << 20)
    message = str(info.value)
    assert message.startswith("demo: GET https://api.x.test/prices: the body is larger than 1 MiB")
    assert "providers.demo.max_body_mb" in message and "SECRET" not in message


def test_a_declared_length_past_the_limit_is_refused_before_reading() -> None:
    read: list[int] = []

    def pieces() -> Iterable[bytes]:
        read.append(1)
        yield b"x" * 10

    handler = lambda req: httpx.Response(200, headers={"Content-Length": str(5 << 30)}, stream=Chunks(pieces))
    with pytest.raises(FetchError, match="larger than 1 MiB"):
        run(handler, lambda h: h.get_json("https://api.x.test/a"), max_body_bytes=1 << 20)
    assert read == []


def test_a_huge_body_stops_at_the_limit_in_bounded_memory() -> None:
    handler = lambda req: httpx.Response(200, stream=Chunks(zeros(2 << 30)))
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match="larger than 4 MiB"):
            run(handler, lambda h: h.get_text("https://api.x.test/a"), max_body_bytes=4 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20


def test_a_gzip_bomb_stops_at_the_decoded_limit_in_bounded_memory() -> None:
    bomb = gzip_bomb(512 << 20)  # 512 MiB of zeros in about half a MiB
    assert len(bomb) < 1 << 20
    handler = lambda req: httpx.Response(
        200, headers={"Content-Encoding": "gzip"}, stream=Chunks(lambda: (bomb[i:i + 65536] for i in range(0, len(bomb), 65536)))
    )
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match="larger than 2 MiB"):
            run(handler, lambda h: h.get_json("https://api.x.test/a"), max_body_bytes=2 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20


def test_gzip_and_deflate_bodies_within_the_limit_are_decoded() -> None:
    body = b'{"prices": [1, 2, 3]}'
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    encodings = {
        "gzip": zlib.compress(body, wbits=16 + zlib.MAX_WBITS),
        "deflate": zlib.compress(body),
        "deflate ": raw_deflate.compress(body) + raw_deflate.flush(),  # header-less deflate, as some servers send
    }
    for coding, payload in encodings.items():
        handler = lambda req, p=payload, c=coding: httpx.Response(
            200, headers={"Content-Encoding": c.strip()}, stream=Chunks(lambda: [p])
        )
        assert run(handler, lambda h: h.get_json("https://api.x.test/a")) == {"prices": [1, 2, 3]}


def test_a_corrupt_gzip_body_is_a_fetch_error() -> None:
    handler = lambda req: httpx.Response(200, headers={"Content-Encoding": "gzip"}, stream=Chunks(lambda: [b"not gzip at all"]))
    with pytest.raises(FetchError, match=r"^demo: GET https://api.x.test/a: gzip body is corrupt$"):
        run(handler, lambda h: h.get_json("https://api.x.test/a"))


def test_the_download_stops_at_its_limit_and_leaves_no_file(tmp_path: Path) -> None:
    handler = lambda req: httpx.Response(200, stream=Chunks(zeros(6 << 20)))
    with pytest.raises(FetchError) as info:
        run(handler, lambda h: h.download("https://pricing.x.test/index.json", directory=tmp_path), max_download_bytes=2 << 20)
    assert "larger than 2 MiB" in str(info.value) and "providers.demo.max_download_mb" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_the_download_decodes_gzip_within_its_limit(tmp_path: Path) -> None:
    body = b"[" + b"1," * 100_000 + b"1]"
    handler = lambda req: httpx.Response(
        200, headers={"Content-Encoding": "gzip"}, stream=Chunks(lambda: [zlib.compress(body, wbits=31)])
    )
    path = run(handler, lambda h: h.download("https://pricing.x.test/index.json", directory=tmp_path))
    assert Path(path).read_bytes() == body


def test_invalid_utf8_text_is_a_fetch_error_not_replacement_characters() -> None:
    handler = lambda req: httpx.Response(200, headers={"Content-Type": "text/html"}, stream=Chunks(lambda: [b"<td>H100 \xff\xfe</td>"]))
    with pytest.raises(FetchError, match="did not return valid utf-8 text"):
        run(handler, lambda h: h.get_text("https://www.x.test/pricing"))


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (512, 2048, 32 << 20, 6 << 30, 1536 << 10)] == [
        "512 bytes", "2 KiB", "32 MiB", "6 GiB", "1.5 MiB"
    ]


# --- where requests may go -------------------------------------------------------------------


def redirecting(location: str) -> tuple[Callable[[httpx.Request], httpx.Response], list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        if req.url.path == "/start":
            return httpx.Response(302, headers={"Location": location})
        return httpx.Response(200, json={"ok": True})

    return handler, seen


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("https://evil.example/steal", "evil.example is not one of the provider's hosts"),
        ("http://api.x.test/plain", "https -> http"),
        ("https://x.test.evil.example/", "is not one of the provider's hosts"),
        ("https://other.x.test/steal", "other.x.test is not one of the provider's hosts"),
    ],
)
def test_redirects_off_the_hosts_or_to_http_are_refused_before_sending(location: str, reason: str) -> None:
    handler, seen = redirecting(location)
    with pytest.raises(FetchError, match=reason):
        run(handler, lambda h: h.get_json("https://api.x.test/start", headers={"Authorization": "Bearer TOKEN"}), hosts=["api.x.test"])
    assert [str(r.url) for r in seen] == ["https://api.x.test/start"]


def test_redirects_to_the_providers_hosts_are_followed() -> None:
    handler, seen = redirecting("https://www.x.test/moved")
    assert run(handler, lambda h: h.get_json("https://api.x.test/start"), hosts=["api.x.test", "www.x.test"]) == {"ok": True}
    assert [r.url.host for r in seen] == ["api.x.test", "www.x.test"]


def test_without_hosts_a_redirect_stays_on_its_host_and_scheme() -> None:
    for location in ("https://other.test/x", "http://api.x.test/x"):
        handler, _ = redirecting(location)
        with pytest.raises(FetchError, match="refusing the redirect"):
            run(handler, lambda h: h.get_json("https://api.x.test/start"))


def test_a_redirect_loop_ends() -> None:
    handler = lambda req: httpx.Response(302, headers={"Location": "https://api.x.test/start"})
    with pytest.raises(FetchError, match="more than 5 redirects"):
        run(handler, lambda h: h.get_json("https://api.x.test/start"), hosts=["api.x.test"])


def test_a_request_off_the_hosts_is_never_sent() -> None:
    seen: list[httpx.Request] = []
    handler = lambda req: seen.append(req) or httpx.Response(200, json={})
    with pytest.raises(FetchError, match="only https"):
        run(handler, lambda h: h.get_json("http://api.x.test/a"), hosts=["api.x.test"])
    with pytest.raises(FetchError, match="not one of the provider's hosts"):
        run(handler, lambda h: h.get_json("https://api.x.test.evil.example/a"), hosts=["api.x.test"])
    assert seen == []


def test_same_origin_accepts_links_on_the_same_host_and_refuses_others() -> None:
    def check(link: Any) -> str:
        return run(lambda req: httpx.Response(200), lambda h: _const(h.same_origin(link, "https://api.x.test/v2/sizes?page=1")))

    assert check("https://api.x.test/v2/sizes?page=2") == "https://api.x.test/v2/sizes?page=2"
    assert check("/v2/sizes?page=3") == "https://api.x.test/v2/sizes?page=3"
    for bad in ("https://evil.example/v2/sizes", "http://api.x.test/v2/sizes", "https://api.x.test:8443/v2", "//evil.example/x"):
        with pytest.raises(FetchError, match="leaves https://api.x.test"):
            check(bad)
    for junk in (None, 3, "", ["x"]):
        with pytest.raises(FetchError, match="is not a URL"):
            check(junk)


async def _const(value: Any) -> Any:
    return value


# --- Retry-After -----------------------------------------------------------------------------


def test_junk_retry_after_falls_back_to_the_default_backoff() -> None:
    sleeps: list[float] = []

    async def record(s: float) -> None:
        sleeps.append(s)

    answers = iter([httpx.Response(429, headers={"Retry-After": "soon"}), httpx.Response(503, headers={"Retry-After": "nan"}),
                    httpx.Response(200, json=[1])])

    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(lambda req: next(answers))) as client:
            return await Http(client, provider="demo", backoff_s=0.5, sleep=record).get_json("https://api.x.test/a")

    assert asyncio.run(go()) == [1]
    assert sleeps == [0.5, 1.0]


def test_retry_after_seconds_and_http_date_forms() -> None:
    def seconds(value: str) -> float | None:
        return _retry_after_seconds(httpx.Response(429, headers={"Retry-After": value}))

    assert seconds("12") == 12.0
    assert seconds("-5") == 0.0
    in_30s = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27 <= (seconds(in_30s) or 0) <= 30
    assert seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: retry now
    for junk in ("soon", "", "inf", "Mon, 99 Foo 2015", "1e400x"):
        assert seconds(junk) is None


def test_absurdly_long_json_integers_read_as_floats() -> None:
    payload = b'{"price": 1' + b"0" * 400 + b', "id": 12345678901234567890, "count": -' + b"9" * 5000 + b"}"
    handler = lambda req: httpx.Response(200, stream=Chunks(lambda: [payload]))  # noqa: E731
    data = run(handler, lambda h: h.get_json("https://api.x.test/a"))
    assert data["price"] == float("inf") and data["count"] == float("-inf")
    assert data["id"] == 12345678901234567890 and isinstance(data["id"], int)


def test_json_nested_too_deeply_is_a_fetch_error() -> None:
    payload = b"[" * 100_000 + b"]" * 100_000
    handler = lambda req: httpx.Response(200, stream=Chunks(lambda: [payload]))  # noqa: E731
    with pytest.raises(FetchError, match="did not return JSON"):
        run(handler, lambda h: h.get_json("https://api.x.test/a"))


@pytest.mark.parametrize(
    ("provider", "location"),
    [
        ("aws", "https://attacker-bucket.s3.amazonaws.com/index.json"),
        ("aws", "https://evil.awsstatic.com/pricing.json"),
        ("gcp", "https://storage.googleapis.com/attacker-bucket/skus.json"),
    ],
)
def test_a_redirect_to_shared_hosting_beside_a_providers_host_is_refused_before_sending(provider: str, location: str) -> None:
    """A provider's hosts are exact: a bucket on the same cloud's shared hosting is anyone's."""
    from scrapers.registry import get_scraper

    cls = get_scraper(provider)
    start = next(h for h in cls.allowed_hosts() if h.endswith(("amazonaws.com", "googleapis.com")))
    handler, seen = redirecting(location)
    with pytest.raises(FetchError, match="is not one of the provider's hosts"):
        run(handler, lambda h: h.get_json(f"https://{start}/start"), hosts=cls.allowed_hosts())
    assert [r.url.host for r in seen] == [start]


# --- one provider's bodies share a memory budget ---------------------------------------------


def test_concurrent_bodies_of_one_provider_share_its_budget() -> None:
    """Eight concurrent 3 MiB answers under a 4 MiB body limit (and budget): never more than the
    budget plus one body (the oldest always proceeds), plus the piece each waiting body has in
    hand (one decoded chunk), is being read at once -- not 8 x 3 MiB -- and every body arrives."""
    piece, size, n = 64 << 10, 3 << 20, 8
    state = {"held": 0, "peak": 0}

    class Slow(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            sent = 0
            try:
                while sent < size:
                    await asyncio.sleep(0)  # other bodies interleave
                    state["held"] += piece
                    sent += piece
                    state["peak"] = max(state["peak"], state["held"])
                    yield b"0" * piece
                await asyncio.sleep(0)
            finally:
                state["held"] -= sent  # read to the end: the reader owns the body now

    handler = lambda req: httpx.Response(200, stream=Slow())

    async def many(h: Http) -> list[str]:
        bodies = await asyncio.gather(*(h.get_text(f"https://api.x.test/p{i}") for i in range(n)))
        assert h.peak_in_flight <= h.body_budget_bytes + h.max_body_bytes
        return list(bodies)

    bodies = run(handler, many, max_body_bytes=4 << 20)
    assert [len(b) for b in bodies] == [size] * n
    # each waiting body holds at most the one decoded chunk it pulled before waiting
    assert state["peak"] <= 2 * (4 << 20) + n * CHUNK_BYTES, state  # not n x 3 MiB = 24 MiB at once
