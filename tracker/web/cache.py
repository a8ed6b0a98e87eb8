"""A short-lived cache of rendered bodies for the heaviest read endpoints (``/api/prices``,
``/api/history`` and the GPU pages).

The store changes when a collection commits (hourly by default) and a full price list is a
few hundred kilobytes that take a CPU-bound ~0.1-0.2 s to query, validate, encode and gzip.
Twenty clients asking every second would each pay that; with the body kept for
``web.cache_s`` (2 s by default, 0 turns it off) they share one rendering, plain and gzipped,
and an answer is at most that much behind the store. One lock per key, so an expired entry
is rendered once, not once per waiting client. Bounded: the oldest entries go first.
``cached`` is how an endpoint uses it: a hit is answered on the event loop, a miss is rendered
in a worker thread, and the gzipped copy goes to clients that accept it.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import anyio
from starlette.requests import Request
from starlette.responses import Response


@dataclass(frozen=True, slots=True)
class Rendered:
    body: bytes
    gzipped: bytes
    expires: float


class BodyCache:
    def __init__(self, ttl_s: float, max_entries: int = 128) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Rendered] = OrderedDict()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def fresh(self, key: Hashable) -> Rendered | None:
        """The cached rendering of ``key`` if it has not expired (never blocks)."""
        entry = self._entries.get(key)
        return entry if entry is not None and entry.expires > time.monotonic() else None

    def get(self, key: Hashable, render: Callable[[], bytes]) -> Rendered:
        """The cached rendering of ``key``, rendering it (once) when absent or expired."""
        if self.ttl_s <= 0:
            body = render()
            return Rendered(body, gzip.compress(body, compresslevel=5), 0.0)
        entry = self._entries.get(key)
        if entry is not None and entry.expires > time.monotonic():
            return entry
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            entry = self._entries.get(key)
            if entry is not None and entry.expires > time.monotonic():
                return entry
            body = render()
            entry = Rendered(body, gzip.compress(body, compresslevel=5), time.monotonic() + self.ttl_s)
            with self._guard:
                self._entries[key] = entry
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    old, _ = self._entries.popitem(last=False)
                    self._locks.pop(old, None)
            return entry


async def cached(bodies: BodyCache, request: Request, key: Hashable, render: Callable[[], bytes],
                 media_type: str = "application/json") -> Response:
    """The response of ``key``: its cached rendering, or ``render()`` run once in a worker thread."""
    rendered = bodies.fresh(key)  # a hit is served on the event loop; a miss renders in a thread
    if rendered is None:
        rendered = await anyio.to_thread.run_sync(lambda: bodies.get(key, render))
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(rendered.gzipped, media_type=media_type,
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(rendered.body, media_type=media_type, headers={"Vary": "Accept-Encoding"})
