"""Record mode: ``gpu-tracker scrape --record DIR`` makes the real requests and saves every
provider's answers as replay recordings, in the layout ``tracker.pipeline.replay`` reads.

``RecordingTransport`` sits under the provider's ``Http`` client (below every check it makes:
domains, https, redirects, body limits) and keeps each request with its raw answer. Once the
collection stored prices (complete or partial; a failed one leaves the old recording alone),
``save`` writes ``DIR/<provider>/``: one body file per distinct request (a repeated request, a
retry, keeps its last answer) and ``manifest.json`` with ``source``, ``recorded`` (the UTC time
of the recording, to the second), ``fixture: "recording"`` and per response its method, URL
(scheme, host and path: no query), the query parameters that are not secrets, the request body
(``body_contains``) for a POST, the status, the content type and the headers replay needs
(``Link``, ``Location``, ``X-Total-Count``).

No credential, token or key is written, anywhere: request headers are not recorded at all; a
query parameter named like a secret (``key``, ``api_key``, ``token``, ``signature``...) is left
out of the manifest (replay does not ask for it); every value the scraper holds (its configured
credentials and the tokens it obtained while fetching) becomes ``replay-no-secret`` in bodies,
URLs, request bodies and headers, which is also what ``Scraper.credential`` answers during a
replay, so a request body that carried a key matches again; and any secret-named JSON field or
query parameter left in a body is masked (``tracker.pipeline.secrets``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from scrapers.base import REPLAY_CREDENTIAL
from tracker.pipeline.secrets import is_secret_name, scrub, scrub_fields

#: Response headers a replay needs (pagination, redirects); no other header is recorded.
KEPT_HEADERS: Final = ("link", "location", "x-total-count", "x-next-page", "x-next-cursor")
_EXTENSIONS: Final = {"json": ".json", "html": ".html", "xml": ".xml", "csv": ".csv", "javascript": ".js", "text": ".txt"}


#: Raw bytes of one answer kept for its recording; a larger one (a bulk download) is still
#: passed through to the scraper, but recorded as missing (``not_recorded`` in the manifest).
MAX_RECORDED_BYTES: Final = 64 * 1024 * 1024


@dataclass
class Exchange:
    """One request and its raw answer, as sent and received (secrets still in: scrubbed on save)."""

    method: str
    url: str
    body: bytes
    status: int
    headers: httpx.Headers
    content: bytearray = field(default_factory=bytearray)
    too_big: bool = False


class _Tee(httpx.AsyncByteStream):
    """The answer's raw stream as the client reads it, copied into its ``Exchange`` up to the cap:
    the client still reads (and bounds, and decodes) the body itself, as from the network."""

    def __init__(self, stream: httpx.AsyncByteStream, exchange: Exchange) -> None:
        self.stream, self.exchange = stream, exchange

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        async for chunk in self.stream:
            if not self.exchange.too_big:
                if len(self.exchange.content) + len(chunk) > MAX_RECORDED_BYTES:
                    self.exchange.too_big, self.exchange.content = True, bytearray()
                else:
                    self.exchange.content += chunk
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


@dataclass
class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes every request to ``inner`` (the network by default) and keeps the exchange."""

    inner: httpx.AsyncBaseTransport
    exchanges: list[Exchange] = field(default_factory=list)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        response = await self.inner.handle_async_request(request)
        exchange = Exchange(request.method, str(request.url), body, response.status_code, response.headers)
        self.exchanges.append(exchange)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        return httpx.Response(response.status_code, headers=response.headers, stream=_Tee(stream, exchange),
                              request=request, extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _decoded(exchange: Exchange) -> bytes:
    """The body as the client reads it (gzip or deflate undone), for the recording file."""
    headers = [(k, v) for k, v in exchange.headers.multi_items() if k.lower() not in ("content-length", "transfer-encoding")]
    return httpx.Response(exchange.status, headers=headers, content=bytes(exchange.content)).content


def _clean(text: str, secrets: list[str]) -> str:
    return scrub_fields(scrub(text, secrets, REPLAY_CREDENTIAL))


def _file_name(index: int, url: str, content_type: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", urlsplit(url).path.strip("/").rsplit("/", 1)[-1] or "index").strip("-.")
    ext = next((e for k, e in _EXTENSIONS.items() if k in content_type), ".bin")
    stem = stem.removesuffix(ext) or "body"
    return f"{index:02d}-{stem[:60]}{ext}"


def _entry(exchange: Exchange, secrets: list[str]) -> dict[str, Any]:
    """A manifest entry for ``exchange`` (its file is added by ``save``)."""
    parts = urlsplit(exchange.url)
    url = _clean(f"{parts.scheme}://{parts.netloc}{parts.path}", secrets)
    entry: dict[str, Any] = {"method": exchange.method, "url": url}
    query = {k: _clean(v, secrets) for k, v in httpx.URL(exchange.url).params.multi_items() if not is_secret_name(k)}
    if query:
        entry["query"] = query
    if exchange.body:
        sent = exchange.body.decode("utf-8", "replace")
        known = scrub(sent, secrets, REPLAY_CREDENTIAL)
        cleaned = scrub_fields(known)
        if cleaned != known:  # a secret-named field the scraper did not hold: match on what precedes it
            cut = next((i for i, (a, b) in enumerate(zip(known, cleaned, strict=False)) if a != b), 0)
            cleaned = cleaned[:cut]
        if cleaned.strip():
            entry["body_contains"] = cleaned
    entry["status"] = exchange.status
    entry["content_type"] = exchange.headers.get("content-type", "application/octet-stream").split(";")[0].strip()
    headers = {k: _clean(v, secrets) for k, v in exchange.headers.items() if k.lower() in KEPT_HEADERS}
    if headers:
        entry["headers"] = headers
    return entry


def _key(entry: dict[str, Any]) -> str:
    return json.dumps([entry["method"], entry["url"], entry.get("query"), entry.get("body_contains")], sort_keys=True)


def _drop_old_bodies(folder: Path) -> None:
    """Remove the body files the folder's old manifest names (other files, a README, stay)."""
    try:
        old = json.loads((folder / "manifest.json").read_text())
        files = [e.get("file") for e in old.get("responses", []) if isinstance(e, dict)]
    except (OSError, ValueError, AttributeError):
        return
    for name in files:
        path = folder / str(name)
        if isinstance(name, str) and path.resolve().parent == folder.resolve() and path.is_file():
            path.unlink()


def save(directory: Path, provider: str, exchanges: list[Exchange], secrets: list[str], recorded_at: datetime) -> Path:
    """Write ``exchanges`` as ``directory/provider/`` (replacing what was there) and return that folder."""
    secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
    entries: dict[str, tuple[dict[str, Any], Exchange]] = {}
    for exchange in exchanges:  # a repeated request (a retry) keeps its last answer
        entry = _entry(exchange, secrets)
        entries.pop(_key(entry), None)
        entries[_key(entry)] = (entry, exchange)
    out = Path(directory) / provider
    out.mkdir(parents=True, exist_ok=True)
    _drop_old_bodies(out)
    responses, missing = [], []
    hosts = []
    # replay takes the first entry that matches, and an entry matches a request that has its query
    # parameters and more: the entries asking more come first (page 2's token before page 1)
    ordered = sorted(entries.values(), key=lambda pair: -(len(pair[0].get("query", {})) + ("body_contains" in pair[0])))
    for i, (entry, exchange) in enumerate(ordered, start=1):
        if exchange.too_big:
            missing.append({"method": entry["method"], "url": entry["url"],
                            "reason": f"larger than {MAX_RECORDED_BYTES // (1024 * 1024)} MiB, not recorded"})
            continue
        body = _decoded(exchange)
        try:
            data = _clean(body.decode("utf-8"), secrets).encode("utf-8")
        except UnicodeDecodeError:  # binary: only the known values can be found in it
            data = body
            for secret in secrets:
                data = data.replace(secret.encode(), REPLAY_CREDENTIAL.encode())
        entry["file"] = _file_name(i, entry["url"], entry["content_type"])
        (out / entry["file"]).write_bytes(data)
        responses.append(entry)
        hosts.append(urlsplit(entry["url"]).netloc)
    manifest = {
        "source": (f"recorded by `gpu-tracker scrape --record` from {provider}'s live endpoints "
                   f"({', '.join(dict.fromkeys(hosts))}); the provider's own answers, secrets replaced"),
        "recorded": recorded_at.isoformat(timespec="seconds"),
        "fixture": "recording",
        "responses": responses,
        **({"not_recorded": missing} if missing else {}),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return out
