"""The time grid of a history and the inputs that define it, in plain Python (so the CLI's
``history`` answers without pandas): resolutions, spans and dates, filters, collection-interval
tolerances, and the limits on a grid.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import cache
from typing import Any

from db.spans import DAY, DEFAULT_INTERVAL_S, HOUR, WEEK, epoch, floor, from_epoch, origin, parse_when, utc, utcnow
from tracker.errors import ConfigError, QueryTooLarge
from tracker.kinds import DEFAULT_KINDS

#: What a history can show: the price, its cost per TFLOP, or the months of rent that buy the card.
METRICS = ("price", "cost-per-tflop", "breakeven-months")
#: The tolerance of a provider a mapping leaves out: the collection interval assumed for it.
DEFAULT_TOLERANCE = timedelta(seconds=DEFAULT_INTERVAL_S)
#: Upper bound on (interval, bucket) rows one history may expand to (~1 GB of frames).
MAX_GRID_ROWS = 20_000_000
#: Most time buckets one history grid may have (a year of hours is 8,760; 27 years of days):
#: a longer grid is refused with ``QueryTooLarge`` (the API answers 422) before any work.
MAX_BUCKETS = 10_000
#: Dates a history may ask about (the store holds epoch seconds; pandas ends in 2262).
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

Tolerance = timedelta | Mapping[str, timedelta] | Callable[[str], timedelta]
_STEPS = {"hour": HOUR, "day": DAY, "week": WEEK}


class Resolution(str, Enum):
    hour = "hour"
    day = "day"
    week = "week"

    @property
    def seconds(self) -> int:
        """The bucket length in seconds."""
        return _STEPS[self.value]

    @property
    def origin_s(self) -> int:
        """Epoch seconds of the first bucket start (``db.spans.origin``: weeks on a Monday)."""
        return origin(self.seconds)

    def floor_s(self, t: int) -> int:
        """Start (epoch seconds) of the bucket holding epoch second ``t`` (``db.spans.floor``)."""
        return floor(t, self.seconds)

    @classmethod
    def parse(cls, text: str | Resolution) -> Resolution:
        """``hour``/``1h``/``h``, ``day``/``1d``/``d``, ``week``/``1w``/``7d``/``w``."""
        if isinstance(text, Resolution):
            return text
        t = text.strip().lower()
        aliases = {"hour": "hour", "1h": "hour", "h": "hour", "hourly": "hour", "60m": "hour",
                   "day": "day", "1d": "day", "d": "day", "daily": "day", "24h": "day",
                   "week": "week", "1w": "week", "w": "week", "7d": "week", "weekly": "week"}
        if t not in aliases:
            raise ConfigError(f"--every: {text!r} is not one of hour (1h), day (1d) or week (1w)")
        return cls(aliases[t])


@dataclass
class RangeAnswer:
    """What every answer over a time range states first (a history, an index): its buckets, its
    bounds and the price kinds it covers (``None``: all)."""

    resolution: Resolution
    since: datetime
    until: datetime
    kinds: tuple[str, ...] | None


_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(h|d|w|m|y)?\s*$", re.IGNORECASE)
_SPAN_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1),
               "m": timedelta(days=30), "y": timedelta(days=365), None: timedelta(days=1)}


def parse_span(text: str) -> timedelta:
    """``"24h"``, ``"30d"``, ``"2w"``, ``"3m"`` (30-day months), ``"1y"``; a bare number is days."""
    m = _SPAN.match(text)
    if not m:
        raise ConfigError(f"--since: {text!r} is not a span like 24h, 30d, 12w, 3m or 1y")
    unit = _SPAN_UNITS[m.group(2).lower() if m.group(2) else None]
    try:
        return unit * float(m.group(1))
    except OverflowError:
        raise ConfigError(f"--since: {text!r} is longer than any history") from None


def since_time(text: str, now: datetime, error: str) -> datetime:
    """A span back from ``now`` (``parse_span``) or an ISO date (``parse_when``); ``ConfigError(error)`` if neither."""
    try:
        span = parse_span(text)
    except ConfigError:
        try:
            return parse_when(text)
        except ConfigError:
            raise ConfigError(error) from None
    try:
        return now - span
    except OverflowError:
        raise ConfigError(f"{text!r} reaches back before 1970-01-01, the earliest date a history can hold") from None


@dataclass(frozen=True, slots=True)
class Filters:
    """Which prices an analysis looks at. ``None`` means "no restriction"."""

    gpus: tuple[str, ...] | None = None
    providers: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = DEFAULT_KINDS

    @classmethod
    def of(cls, gpus: Iterable[str] | None = None, providers: Iterable[str] | None = None,
           regions: Iterable[str] | None = None, kinds: Iterable[str] | None = DEFAULT_KINDS) -> Filters:
        """Filters from any iterables; an empty one is no restriction."""
        return cls(*(tuple(v) if v else None for v in (gpus, providers, regions, kinds)))


def tolerance_lookup(tolerance: Tolerance) -> Callable[[str], timedelta]:
    """A provider -> tolerance function from a single value, a mapping or a function."""
    if isinstance(tolerance, timedelta):
        return lambda _p: tolerance
    if isinstance(tolerance, Mapping):
        return lambda p: tolerance.get(p, DEFAULT_TOLERANCE)
    return tolerance


def scrape_intervals(settings: Any) -> Callable[[str], timedelta]:
    """Each provider's collection interval (``Settings.interval_for``, the rule the scheduler
    runs on): the tolerance for "price at t". Each provider is looked up once (its scraper's
    module alone is imported: ``scrapers.registry.find``)."""
    return cache(lambda provider: timedelta(seconds=settings.interval_for(provider)))


def check_dates(**named: datetime | None) -> None:
    """``ConfigError`` for a date outside 1970-01-01 .. 2199-12-31 (checked before any
    conversion, so a year-1 or year-9999 date is one clear line, never an overflow)."""
    for what, t in named.items():
        if t is None:
            continue
        aware = t if t.tzinfo is not None else t.replace(tzinfo=UTC)
        if not EARLIEST <= aware < LATEST:
            raise ConfigError(f"{what}: {t:%Y-%m-%d} is outside the dates a history can hold (1970-01-01 .. 2199-12-31)")


def check_range(resolution: Resolution, since: datetime, until: datetime) -> int:
    """The number of buckets of the grid from ``since`` to ``until`` (aware datetimes or
    Timestamps); ``QueryTooLarge`` beyond ``MAX_BUCKETS``."""
    first, last = (resolution.floor_s(epoch(t)) for t in (since, until))
    n = (last - first) // resolution.seconds + 1
    if n > MAX_BUCKETS:
        raise QueryTooLarge(
            f"history: {n:,} {resolution.value} buckets is more than the {MAX_BUCKETS:,} one history may have; "
            "use a coarser --every (1d, 1w), a later --since or an earlier --until"
        )
    return n


def time_range(what: str, resolution: Resolution, since: datetime | None, until: datetime | None,
               first: Callable[[datetime], int | None]) -> tuple[datetime, datetime]:
    """The bounds of a range answer (``what``: its name in errors), in UTC: ``until`` defaults to
    now, ``since`` to ``first(until)`` (the first stored price, epoch seconds; ``until`` when there
    is none). ``check_dates`` and ``check_range`` hold, and a range may not start after it ends."""
    check_dates(since=since, until=until)
    until = utc(until) if until is not None else utcnow()
    if since is None:
        start = first(until)
        since = from_epoch(start) if start is not None else until
    else:
        since = utc(since)
    if since > until:
        raise ConfigError(f"{what}: the range starts ({since}) after it ends ({until})")
    check_range(resolution, since, until)
    return since, until


def too_many_rows(rows: int, resolution: Resolution) -> QueryTooLarge:
    """The error of a raw history that would expand to more than ``MAX_GRID_ROWS`` offer-buckets."""
    return QueryTooLarge(f"history: {rows:,} offer-buckets is too much to chart at one {resolution.value} "
                         "per point; use a coarser --every (1d, 1w), a shorter --since, or narrower filters")


def grid_starts(resolution: Resolution, since: int, until: int) -> list[int]:
    """Every bucket start (epoch seconds) from the one holding ``since`` to the one holding ``until``."""
    return list(range(resolution.floor_s(since), resolution.floor_s(until) + 1, resolution.seconds))

