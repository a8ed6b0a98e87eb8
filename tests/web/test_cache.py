"""The /api/prices body cache: one rendering per key and period, shared by concurrent callers."""

from __future__ import annotations

import gzip
import threading
import time

from tracker.web.cache import BodyCache


def test_one_rendering_serves_every_caller_until_it_expires() -> None:
    calls: list[int] = []

    def render() -> bytes:
        calls.append(1)
        time.sleep(0.05)
        return b'[{"price": 1}]' * 100

    cache = BodyCache(ttl_s=0.5)
    threads = [threading.Thread(target=cache.get, args=("k", render)) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1  # ten waiting callers, one rendering
    hit = cache.fresh("k")
    assert hit is not None and gzip.decompress(hit.gzipped) == hit.body
    assert cache.get("other", render) is not hit and len(calls) == 2  # keys apart
    time.sleep(0.6)
    assert cache.fresh("k") is None
    cache.get("k", render)
    assert len(calls) == 3


def test_zero_turns_it_off_and_the_size_is_bounded() -> None:
    calls: list[str] = []
    off = BodyCache(ttl_s=0)
    off.get("k", lambda: calls.append("x") or b"x")
    off.get("k", lambda: calls.append("x") or b"x")
    assert calls == ["x", "x"] and off.fresh("k") is None
    small = BodyCache(ttl_s=60, max_entries=3)
    for i in range(5):
        small.get(i, lambda: b"body")
    assert [small.fresh(i) is not None for i in range(5)] == [False, False, True, True, True]
