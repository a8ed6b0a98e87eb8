"""Answer HTTP requests from recordings, so the real ``fetch`` code runs with no network.

Layout of a recordings directory (the bundled one is ``tracker/recordings/``)::

    <dir>/<provider>/manifest.json
    <dir>/<provider>/<body files>

``manifest.json``::

    {
      "source": "where the bodies came from (repository, path, commit / page capture)",
      "recorded": "2025-06-21",          # when recorded: YYYY-MM-DD, YYYY-MM, YYYY or an ISO timestamp; null if unknown
      "recorded_note": "...",            # optional: why the date is partial or unknown
      "fixture": "recording",            # recording | reference | handmade | api-reference
      "responses": [
        {"method": "POST", "url": "https://api.runpod.io/graphql",
         "query": {"page": "2"},            # optional: these params must be present and equal
         "body_contains": "gpuTypes",       # optional: substring of the request body
         "file": "gpuTypes.json", "status": 200,
         "content_type": "application/json",
         "headers": {"Link": "<...?page=3>; rel=\"next\""}}  # optional: recorded response headers
      ]
    }

Replayed prices are stored as observed at ``recorded`` (midnight UTC of that day, or of the first
day of the month or year when only those are known), not at the time of the replay, and every
replayed offer carries ``extra["replay"]`` = ``{"recorded": ..., "fixture": ...}`` so every view of
its price can say it is a replay. A handmade sample has no recording date: it is stored at the
time of the replay and says ``"fixture": "handmade"`` (so is an undated recording, with
``"recorded": null``).

A store holds either replayed or live prices, not both: recorded prices are old and would read as
part of the live history (trends against them, a 30-day change since a recording), so
``mixing_refusal`` says why a collection of the other kind must not go into a store, and the
``scrape`` and ``run`` commands refuse it unless told to mix (``--mix-replay``).

``url`` is matched on scheme, host and path (query ignored unless ``query`` is given); the
first matching entry wins. A request with no recording gets a 404 whose body says so, which
``Http`` turns into a ``FetchError`` naming the URL. ``robots.txt`` is 404 (allow all)
unless recorded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy.engine import Engine

from db import reads
from db.engine import engine_reader
from scrapers.base import FIXTURE_KINDS
from tracker.errors import ConfigError

BUNDLED_RECORDINGS = Path(__file__).parent.parent / "recordings"


def _url_key(url: str | httpx.URL) -> str:
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")


@dataclass(frozen=True)
class Recording:
    method: str
    url: str
    file: Path
    status: int = 200
    content_type: str = "application/json"
    query: dict[str, str] = field(default_factory=dict)
    body_contains: str | None = None
    #: Recorded response headers some APIs page with (``Link``, ``X-Total-Count``).
    headers: dict[str, str] = field(default_factory=dict)

    def matches(self, request: httpx.Request) -> bool:
        if request.method != self.method or _url_key(request.url) != _url_key(self.url):
            return False
        params = request.url.params
        if any(params.get(k) != v for k, v in self.query.items()):
            return False
        if self.body_contains is not None and self.body_contains not in request.content.decode("utf-8", "replace"):
            return False
        return True


def load_manifest(provider_dir: Path) -> list[Recording]:
    path = provider_dir / "manifest.json"
    try:
        manifest: dict[str, Any] = json.loads(path.read_text())
        entries = manifest["responses"]
        return [
            Recording(
                method=e.get("method", "GET").upper(),
                url=e["url"],
                file=provider_dir / e["file"],
                status=int(e.get("status", 200)),
                content_type=e.get("content_type", "application/json"),
                query={k: str(v) for k, v in (e.get("query") or {}).items()},
                body_contains=e.get("body_contains"),
                headers={str(k): str(v) for k, v in (e.get("headers") or {}).items()},
            )
            for e in entries
        ]
    except FileNotFoundError:
        raise ConfigError(f"replay: no manifest.json in {provider_dir}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"replay: {path} is not a valid manifest ({exc})") from None


_RECORDED_RE = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?$")


@dataclass(frozen=True)
class RecordingInfo:
    """What a provider's recordings are: when they were recorded and what kind of fixture they are."""

    provider: str
    recorded: str | None
    fixture: str

    @property
    def observed_at(self) -> datetime | None:
        """The observation time replayed prices get: the start of the recorded day, month or year."""
        if self.recorded is None:
            return None
        if "T" in self.recorded:  # a full timestamp (recordings made by a tool that knows the time)
            at = datetime.fromisoformat(self.recorded.replace("Z", "+00:00"))
            return at if at.tzinfo else at.replace(tzinfo=UTC)
        m = _RECORDED_RE.match(self.recorded)
        assert m is not None  # checked by recording_info
        return datetime(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1), tzinfo=UTC)

    def mark(self) -> dict[str, str | None]:
        """The ``extra["replay"]`` value of every offer replayed from these recordings."""
        return {"recorded": self.recorded, "fixture": self.fixture}


def recording_info(provider: str, directory: Path | None = None) -> RecordingInfo | None:
    """The manifest's ``recorded`` and ``fixture`` fields for ``provider`` (``None`` without recordings)."""
    path = (BUNDLED_RECORDINGS if directory is None else Path(directory)) / provider / "manifest.json"
    try:
        manifest: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ConfigError(f"replay: {path} is not valid JSON ({exc})") from None
    recorded, fixture = manifest.get("recorded"), manifest.get("fixture", "recording")
    if fixture not in FIXTURE_KINDS:
        raise ConfigError(f"replay: {path}: 'fixture' should be one of {', '.join(FIXTURE_KINDS)}, got {fixture!r}")
    if recorded is not None:
        m = _RECORDED_RE.match(str(recorded))
        try:
            if "T" in str(recorded):
                ok = datetime.fromisoformat(str(recorded).replace("Z", "+00:00")) is not None
            else:
                ok = m is not None and datetime(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)) is not None
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(f"replay: {path}: 'recorded' should be YYYY-MM-DD, YYYY-MM, YYYY or an ISO timestamp, got {recorded!r}")
    return RecordingInfo(provider, None if recorded is None else str(recorded), fixture)


def recorded_providers(directory: Path = BUNDLED_RECORDINGS) -> list[str]:
    """Providers that have a recording directory under ``directory``."""
    return sorted(p.name for p in directory.iterdir() if (p / "manifest.json").is_file()) if directory.is_dir() else []


class ReplayTransport(httpx.AsyncBaseTransport):
    """An httpx transport that serves one provider's recordings and counts what was asked."""

    def __init__(self, recordings: list[Recording]) -> None:
        self.recordings = recordings
        self.requests: list[httpx.Request] = []

    @classmethod
    def for_provider(cls, provider: str, directory: Path | None = None) -> ReplayTransport:
        base = BUNDLED_RECORDINGS if directory is None else Path(directory)
        provider_dir = base / provider
        if not provider_dir.is_dir():
            return cls([])
        return cls(load_manifest(provider_dir))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests.append(request)
        for rec in self.recordings:
            if rec.matches(request):
                return httpx.Response(
                    rec.status,
                    content=rec.file.read_bytes(),
                    headers={**rec.headers, "Content-Type": rec.content_type},
                    request=request,
                )
        text = f"no recording for {request.method} {_url_key(request.url)}"
        return httpx.Response(404, text=text, request=request)


def mixing_refusal(engine: Engine, *, replay: bool, store: str) -> str | None:
    """Why a collection (replayed when ``replay``, else live) must not go into this store, or ``None``.

    The store's successful collections say what it holds; a store with none takes either kind.
    An archive import is history, not a collection of either kind (``make demo`` imports into its
    replayed store, and replays into it again). ``store`` names it in the message (a masked URL:
    no password)."""
    with engine_reader(engine) as reader:
        if not reads.collected(reader, "live" if replay else "replay"):
            return None
    # neither message suggests --mix-replay: followed on a live store, it would leave recordings in
    # that store's history for good (the option is for scratch stores, and its help says so)
    if replay:
        return (f"--replay: {store} holds live prices, and replayed recordings (old prices) would be mixed into "
                "their history; replay into a store of its own instead, e.g. --db sqlite:///demo.db (as `make demo` does)")
    return (f"{store} holds prices replayed from recordings, and live prices would be mixed with them; collect into "
            "your live store instead (--db URL or $GPU_TRACKER_DB; without either, the default store)")
