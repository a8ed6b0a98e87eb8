"""The bucket rule of ``db.rollups`` (``hold_end``, ``span_indices``) for one interval at a time,
in plain Python: for readers that start without numpy (the CLI's ``history``,
``tracker.analysis.history_rows``, and ``db.asof``'s price at a moment). A property test holds the
two forms equal. The bucket steps, their origin and the default collection interval are defined
here once, and ``db.rollups`` takes them from here.
"""

from __future__ import annotations

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
