"""The bucket rule: which buckets an interval counts in, and until when a price holds. Defined
here once, in plain Python, for every reader and writer (the roll-ups, ``db.rollups``; the
history and trends, ``tracker.analysis``; the price at a moment, ``db.reads``; the frames of the
exports and the back-test):

* A bucket's value is taken over the prices **observed** during the bucket: an interval
  counts in every bucket from the one holding ``first_seen`` to the one holding
  ``last_seen`` (every collection in between saw it).
* For buckets **finer** than the provider's collection interval (hourly buckets of a daily
  provider), a price also holds after its last observation until the provider's next
  collection attempt (``ends_at``), never beyond it, never longer than one collection
  interval after ``last_seen`` (an attempt that never happened is unknown, not "unchanged"),
  and never into a bucket where a newer observation of the same offer exists.
* Buckets at least as long as the collection interval see observations only, so a price last
  seen at 23:35 is not carried into the next day.

The bucket steps, their origin and the default collection interval are defined here too.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

HOUR = 3600
DAY = 86_400
WEEK = 7 * DAY
#: Collection interval assumed for a provider that never recorded one.
DEFAULT_INTERVAL_S = 3600
#: "No such time" where an integer is needed (a quarter of the int64 range: sums stay in range).
NEVER = (2**63 - 1) // 4


def origin(step: int) -> int:
    """Buckets start at the epoch; weeks on Monday 1970-01-05."""
    return 4 * DAY if step == WEEK else 0


def floor(t: int, step: int) -> int:
    """Start (epoch seconds) of the bucket of ``step`` holding epoch second ``t``."""
    o = origin(step)
    return o + ((t - o) // step) * step


def hold_end(last_seen: int, ends_at: int | None, interval_s: int) -> int:
    """Exclusive end of the time a price holds (``db.rollups.hold_end``): the next collection
    attempt (``ends_at``; ``None``: not yet), at most one collection interval after the last
    observation, never before the end of the second it was last observed in."""
    end = NEVER if ends_at is None else int(ends_at)
    return max(min(end, last_seen + interval_s), last_seen + 1)


def hold_ends(last_seen: Iterable[Any], ends_at: Iterable[Any], interval_s: Iterable[Any]) -> list[int]:
    """``hold_end`` of each interval of columns (an ``ends_at`` of ``None`` or NaN: not yet)."""
    return [hold_end(int(last), None if end is None or end != end else int(end), int(every))
            for last, end, every in zip(last_seen, ends_at, interval_s, strict=True)]


def span(first_seen: int, last_seen: int, ends_at: int | None, interval_s: int, next_seen: int | None,
         step: int) -> tuple[int, int]:
    """First and last bucket index (bucket start = origin + index * step) one interval counts
    in (``db.rollups.span_indices``); ``next_seen``: the offer's next observation, if any."""
    o = origin(step)
    first = (first_seen - o) // step
    observed = (last_seen - o) // step
    if step >= interval_s:
        return first, observed
    held = (hold_end(last_seen, ends_at, interval_s) - 1 - o) // step
    next_bucket = NEVER if next_seen is None else (next_seen - o) // step
    if held > observed and next_bucket == held:
        held -= 1
    return first, max(held, observed)


#: A piece of a provider's value over buckets: first and last bucket index it counts in, a price
#: (``None``: it adds offers only) and the offers it adds.
Piece = tuple[int, int, float | None, int]
#: A run of buckets with one value: first and last bucket index, lowest price, offers.
Run = tuple[int, int, float, int]


def joined(ordered: Iterable[Piece]) -> list[Run] | None:
    """``lows`` of pieces given in order of first bucket, none empty, when no two overlap and each
    has a price: the pieces as they are, adjacent equal ones joined, in one pass (a store's
    hourly runs of one series, read in order, are such pieces). ``None`` when two overlap or one
    has no price: only the sweep answers those."""
    out: list[Run] = []
    a = b = n = 0
    v: float | None = None  # the run being joined: buckets a to b at price v with n offers
    for first, last, price, offers in ordered:
        if price is None:
            return None
        if v is not None:
            if first <= b:
                return None
            if first == b + 1 and price == v and offers == n:
                b = last
                continue
            out.append((a, b, v, n))
        a, b, v, n = first, last, price, offers
    if v is not None:
        out.append((a, b, v, n))
    return out


def lows(pieces: Iterable[Piece]) -> list[Run]:
    """One provider's value per bucket as runs: in each bucket the lowest price among the pieces
    counting in it and the sum of their offers; a run ends only where some piece starts or
    ends (a sweep over those boundaries), so the cost follows the pieces, not the buckets.
    Buckets no priced piece counts in have no run; adjacent equal runs are one."""
    ordered = sorted((p for p in pieces if p[1] >= p[0]), key=itemgetter(0))
    runs = joined(ordered)  # priced pieces that never overlap (day rows, one kind's runs) are the runs, joined
    if runs is not None:
        return runs
    out: list[Run] = []
    events: dict[int, list[tuple[float | None, int, int]]] = {}
    for first, last, price, offers in ordered:
        events.setdefault(first, []).append((price, offers, 1))
        events.setdefault(last + 1, []).append((price, offers, -1))
    heap: list[float] = []
    gone: dict[float, int] = {}
    offers_now = 0
    at = sorted(events)  # nearly in order already: pieces were sorted by first bucket, and each end follows its start
    for k, pos in enumerate(at):
        for price, offers, sign in events[pos]:
            offers_now += sign * offers
            if price is None:
                continue
            if sign > 0:
                heapq.heappush(heap, price)
            else:
                gone[price] = gone.get(price, 0) + 1
        while heap and gone.get(heap[0]):
            gone[heap[0]] -= 1
            heapq.heappop(heap)
        if heap and k + 1 < len(at):
            out.append((pos, at[k + 1] - 1, heap[0], offers_now))
    runs = joined(out)  # the sweep's runs are in order and apart: joined joins the adjacent equal ones
    assert runs is not None
    return runs


# ------------------------------------------------------------------------------------------------
# Epoch-second conversions of the stored times, without SQLAlchemy (``db.models`` re-exports
# them beside the column types): the read path of ``db.direct`` needs them, not the types.


def utcnow() -> datetime:
    return datetime.now(UTC)


def epoch(value: datetime) -> int:
    """Integer epoch seconds (floored) of an aware datetime: how interval times are stored."""
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}: timestamps must be timezone-aware UTC")
    return int(value.timestamp() // 1)


def from_epoch(value: int | float) -> datetime:
    """The UTC datetime of stored epoch seconds."""
    return datetime.fromtimestamp(int(value), UTC)


def parse_when(text: str) -> datetime:
    """A moment as people and archives write it: an ISO date or date-time, a value without a
    zone taken as UTC (the CLI's ``--until``/``--as-of``, the API, every importer)."""
    from tracker.errors import ConfigError

    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{text!r} is not an ISO date or date-time (e.g. 2025-06-01 or 2025-06-01T12:00Z)") from None
    return utc(value)


def utc(t: datetime) -> datetime:
    """``t`` (a datetime or a pandas Timestamp) as an aware UTC datetime; without a zone it is UTC."""
    if hasattr(t, "to_pydatetime"):
        t = t.to_pydatetime()
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
