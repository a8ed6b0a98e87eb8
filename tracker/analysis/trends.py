"""Trends per GPU: the current market price, its change over 24 h / 7 d / 30 d / 90 d, the
all-time low and when it happened, a good-deal flag, and volatility.

Definitions (all in USD per GPU-hour, across the filtered kinds, providers and regions):

* **current** -- without ``as_of``: the cheapest price now, as every surface answers it
  (``db.reads.latest_prices``: each provider's latest collection while it is within its
  staleness limit, USD, the filtered kinds), so a store whose newest data is a year old has
  no current price and says so rather than reporting last year as today. With ``as_of``: the
  cheapest price in effect then (the "price at t" rule: a provider whose last good scrape is
  older than its scrape interval does not count).
* **change over P** -- ``current`` against the cheapest price in effect at ``as_of - P``, in
  percent. When nothing was in effect then (before the history starts, or a gap), the change
  is empty: a gap is never bridged with a neighbour's price.
* **all-time low** -- the lowest price of any stored interval that started by ``as_of``, the
  provider, and ``first_seen`` of the earliest interval at that price (when it first happened).
* **good deal** -- ``current`` is within 5% of the all-time low (``current <= 1.05 x low``),
  the rule price-alert sites use, *and* the GPU has at least ``MIN_HISTORY_DAYS`` (7) days of
  observations: with less, every price is close to its own "low" and the flag would mean
  nothing. ``history_days`` says how many: UTC calendar days from the GPU's first
  observation to ``as_of``, both counted.
* **volatility** -- the standard deviation of day-over-day changes of the daily market low
  over the last 30 days, in percent. Only consecutive days count; at least two changes are
  needed, otherwise it is empty.

Plain Python on a ``db.reader.Reader``, so
``gpu-tracker trends`` starts without pandas or SQLAlchemy. Point-in-time prices (now and 24 h /
7 d / 30 d / 90 d before) read the raw intervals in effect then; the all-time low reads the day
roll-ups for the days before ``as_of``'s and the raw intervals for that day (region filters,
which the roll-ups do not carry, read every raw interval); the volatility reads the daily
market lows of a day-grid history (``history.provider_runs``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from db import reads
from db.reader import Reader
from db.reads import latest_prices
from db.spans import DAY, epoch, floor, from_epoch, hold_end, utc, utcnow
from tracker.analysis.aggregators import market_of_key, market_provider
from tracker.analysis.grid import Filters, Resolution, Tolerance
from tracker.analysis.history import Scope, answer_runs, provider_runs

PERIODS: dict[str, timedelta] = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
}
GOOD_DEAL_WITHIN = 0.05
#: Days of observations a GPU needs before its price can be called a good deal.
MIN_HISTORY_DAYS = 7
VOLATILITY_WINDOW = timedelta(days=30)

TREND_COLUMNS = [
    "gpu", "current", "provider", "providers", "offers", "as_of",
    *[c for p in PERIODS for c in (f"price_{p}_ago", f"change_{p}_pct")],
    "all_time_low", "all_time_low_at", "all_time_low_provider", "good_deal", "history_days", "volatility_30d_pct",
]


def history_days(first_day: int, at: Any) -> int:
    """UTC calendar days from the day of the first observation (a day bucket's start, epoch
    seconds) to the day of ``at`` (a datetime or Timestamp), both counted."""
    return (floor(int(at.timestamp()), DAY) - first_day) // DAY + 1


def volatility(daily_low: Sequence[float]) -> float | None:
    """Std dev (percent, sample: n - 1) of day-over-day relative changes; gaps break the chain."""
    lows = [float(v) for v in daily_low]
    changes = [b / a - 1 for a, b in zip(lows, lows[1:], strict=False) if a and not math.isnan(a) and not math.isnan(b)]
    if len(changes) < 2:
        return None
    mean = math.fsum(changes) / len(changes)
    return math.sqrt(math.fsum((c - mean) ** 2 for c in changes) / (len(changes) - 1)) * 100


def is_good_deal(current: float | None, low: float | None, history_days: int | None = None) -> bool:
    """Within ``GOOD_DEAL_WITHIN`` of the low, and (when ``history_days`` is given) ``MIN_HISTORY_DAYS`` of history."""
    if history_days is not None and history_days < MIN_HISTORY_DAYS:
        return False
    return current is not None and low is not None and current <= low * (1 + GOOD_DEAL_WITHIN) + 1e-12


def low_run(days: Sequence[int], lows: Sequence[float], today: int) -> tuple[float, int, int, int | None]:
    """One GPU's daily lows (``days`` ascending): its low, its first day, the first day at the
    low, and an exclusive bound on ``last_seen`` of any interval at the low starting that day.

    Such an interval counts in every day from its first to its last observation, and on each of
    them the day's low is the all-time low; so it ends within the run of consecutive days at the
    low, unless the run reaches ``today`` (then it may still go on: no bound)."""
    low = float(min(lows))
    k = next(i for i, v in enumerate(lows) if v == low)
    first_day = int(days[k])
    while k + 1 < len(days) and days[k + 1] == days[k] + DAY and lows[k + 1] == low:
        k += 1
    end = None if days[k] >= today else int(days[k]) + DAY
    return low, int(days[0]), first_day, end


#: A lean interval in effect at ``t``: (t, gpu id, provider id, offer id, price, first_seen, end).
Live = tuple[int, int, int, int, float, int, int]
#: A GPU's market at one time: (cheapest price, its provider, providers, offers).
Market = tuple[float, str, int, int]


def _market(listed: Sequence[tuple[float, str, str]]) -> Market:
    """A GPU's market from its offers' (price, provider, market provider): the cheapest price, its
    provider (the first name on a tie), and how many market providers and offers list it."""
    price, provider, _who = min(listed, key=lambda c: (math.isnan(c[0]), c[0], c[1]))
    return price, provider, len({w for _v, _p, w in listed}), len(listed)


def markets_at(rows: Sequence[Live], names: dict[int, str], keys: Mapping[int, int] | None = None
               ) -> dict[int, dict[str, Market]]:
    """The market at each time, per GPU name: among the rows in effect at their ``t``
    (``first_seen <= t < end``), per offer the newest (the later row on a tie, as a stable sort
    keeps it), the cheapest price, its provider (the first name on a tie), and how many
    providers (market providers: an aggregator's offer of a cloud we collect is the cloud's;
    ``keys``: an aggregator's offer id -> its series key id, ``db.reads``) and offers list the GPU."""
    keys = keys or {}
    newest: dict[tuple[int, int], Live] = {}
    for row in rows:
        t, _gpu, _provider, offer, _price, first, end = row
        if first <= t < end:
            have = newest.get((t, offer))
            if have is None or first >= have[5]:
                newest[(t, offer)] = row
    cells: dict[tuple[int, str], list[tuple[float, str, str]]] = {}
    market_of: dict[int, str] = {}  # per series key: a few dozen, where the rows are thousands
    for t, gpu, provider, offer, price, _first, _end in newest.values():
        key = keys.get(offer, provider)
        who = market_of.get(key)
        if who is None:
            who = market_of[key] = market_of_key(names[key])
        cells.setdefault((t, names[gpu]), []).append((price, names[provider], who))
    out: dict[int, dict[str, Market]] = {}
    for (t, gpu), listed in cells.items():
        out.setdefault(t, {})[gpu] = _market(listed)
    return out


class _Reads(Scope):
    """The reads of a trend table over the scope of its filters (``history.Scope``: label ids and
    names, the ``WHERE`` on ``price_interval i``, the collection intervals prices hold for)."""

    def current_at(self) -> int | None:
        """The newest observation of an interval matching the filters (each offer's newest
        interval is kept in ``price_interval_open``)."""
        params: dict[str, Any] = {}
        return reads.newest_seen(self.reader, self.where(params), params)

    def recent(self, lo: int, hi: int) -> list[Live]:
        """The intervals in effect at some point of ``[lo, hi]`` as lean rows, with ``t = hi``."""
        if not self.gpu_ids:
            return []
        rows = ((hi, gpu, provider, offer, price, first_seen, hold_end(last_seen, ends_at, self.interval_s(provider)))
                for _id, offer, provider, gpu, _kind, price, first_seen, last_seen, ends_at in self.raw(lo, hi))
        return [r for r in rows if r[6] > lo]  # integers and floats from both drivers

    @cached_property
    def split_span(self) -> int:
        """Where a read of "in effect at t" turns from the GPU index to the span index
        (``db.reads.split_span``), read once."""
        return reads.split_span(self.reader)

    def rows_at(self, times: list[int]) -> list[Live]:
        """The intervals matching the filters that may be in effect at each of ``times``
        (``db.reads.interval_rows_at``), as lean rows."""
        params: dict[str, Any] = {}
        rows = reads.interval_rows_at(self.reader, self.where(params), params, times, self.longest, self.split_span)
        return [(t, gpu, provider, offer, price, first, hold_end(last, ends_at, self.interval_s(provider)))
                for t, gpu, provider, offer, price, first, last, ends_at in rows]  # integers and floats from both drivers

    def prices_at(self, times: list[int]) -> dict[int, dict[str, float]]:
        """Per time of ``times``, per GPU name, the cheapest price in effect then, as
        ``markets_at`` has it: where each offer has one interval in effect, the lowest of them
        (``db.reads.interval_lows_at``, a few groups per time); at a time where an offer may
        have two (an older price still held when a newer one began), ``markets_at`` over the
        rows, which counts each offer's newest."""
        params: dict[str, Any] = {}
        holds = {provider: self.interval_s(provider) for provider in self.labels.names("provider")}
        out: dict[int, dict[str, float]] = {}
        several: set[int] = set()
        for t, gpu, low, held in reads.interval_lows_at(self.reader, self.where(params), params, times, self.longest,
                                                        self.split_span, holds):
            prices = out.setdefault(t, {})
            have = prices.get(self.names[gpu])
            if have is None or (math.isnan(low), low) < (math.isnan(have), have):
                prices[self.names[gpu]] = low
            if held:
                several.add(t)
        if several:
            for t, market in markets_at(self.rows_at(sorted(several)), self.names).items():
                out[t] = {gpu: m[0] for gpu, m in market.items()}
        return out

    def day_lows(self, before: int) -> list[tuple[int, int, float]]:
        """Per (gpu id, day) before ``before``, the day roll-ups' lowest price."""
        return reads.day_lows(self.reader, self.gpu_ids, self.provider_ids, self.kind_ids, before)

    def first_at_lows(self, lows: list[tuple[int, float, int, int | None]], until: int) -> dict[int, tuple[int, str]]:
        """Per GPU of ``lows`` (gpu id, low, day, end), the earliest interval at the low starting
        that day (and by ``until``), last seen before ``end`` (``None``: no bound): its
        ``first_seen`` and provider. One query for every GPU; a GPU whose raw intervals there were
        pruned is absent."""
        if not lows:
            return {}
        params: dict[str, Any] = {}
        bounded = [(gpu_id, low, day, min(day + DAY - 1, until), end) for gpu_id, low, day, end in lows]
        rows = reads.first_at_lows(self.reader, self.where(params), params, bounded, reads.longest_span(self.reader))
        first: dict[int, tuple[int, str]] = {}
        for gpu_id, first_seen, provider in sorted(rows):
            first.setdefault(gpu_id, (first_seen, provider))
        return first


def _lows_from_rollups(known: _Reads, at: datetime, at_s: int, recent: list[Live]) -> dict[str, dict[str, Any]]:
    """The all-time low of every interval started by ``at``, by GPU name: the day roll-ups before
    ``at``'s day, the raw intervals ``recent`` (from that day to ``at``) for the day itself; the
    time and provider from the earliest raw interval at the low, read within the days the low
    lasted (``low_run``)."""
    day = floor(at_s, DAY)
    per_day = {(g, b): low for g, b, low in known.day_lows(day)}  # one row per (gpu, day) already
    for _t, g, _p, _o, price, first, _end in recent:
        if first <= at_s:
            per_day[(g, day)] = min(price, per_day.get((g, day), price))
    by_gpu: dict[int, list[tuple[int, float]]] = {}  # per GPU, its (day, low) in day order
    for (g, b), low in sorted(per_day.items()):
        by_gpu.setdefault(g, []).append((b, low))
    runs = {g: low_run(*zip(*lows, strict=True), day) for g, lows in by_gpu.items()}
    found = known.first_at_lows([(g, low, first, end) for g, (low, _, first, end) in runs.items()], at_s)
    out = {}
    for gpu_id, (low, start, first_day, _end) in runs.items():
        when, provider = found.get(gpu_id, (first_day, None))  # raw intervals pruned: the day is what is known
        out[known.names[gpu_id]] = {"all_time_low": low, "all_time_low_at": from_epoch(when),
                                    "all_time_low_provider": provider, "history_days": history_days(start, at)}
    return out


def _lows_from_raw(known: _Reads, at: datetime, at_s: int) -> dict[str, dict[str, Any]]:
    """The all-time low of every raw interval started by ``at``, by GPU name: the lowest price,
    then the earliest ``first_seen``, then the first provider name (filters the roll-ups do not
    carry: regions)."""
    best: dict[int, tuple[float, int, str]] = {}
    first: dict[int, int] = {}
    for _id, _offer, provider, gpu, _kind, price, first_seen, _last, _ends in known.raw(None, at_s):
        g, key = int(gpu), (float(price), int(first_seen), known.names[int(provider)])
        best[g] = min(key, best.get(g, key))
        first[g] = min(int(first_seen), first.get(g, int(first_seen)))
    return {known.names[g]: {"all_time_low": low, "all_time_low_at": from_epoch(when), "all_time_low_provider": provider,
                             "history_days": history_days(floor(first[g], DAY), at)}
            for g, (low, when, provider) in best.items()}


def _lows(known: _Reads, at: datetime, at_s: int, recent: list[Live]) -> dict[str, dict[str, Any]]:
    return _lows_from_raw(known, at, at_s) if known.regions else _lows_from_rollups(known, at, at_s, recent)


def all_time_lows(reader: Reader, filters: Filters | None = None, *, until: datetime | None = None,
                  tolerance: Tolerance | None = None) -> list[dict[str, Any]]:
    """Per GPU (by name): the lowest price of any interval started by ``until`` (default: the
    newest observation), its provider and when it first happened (``all_time_low``,
    ``all_time_low_provider``, ``all_time_low_at``), as the trend table has them."""
    f = filters or Filters()
    known = _Reads(reader, f, tolerance)
    at_s = epoch(utc(until)) if until is not None else known.current_at()
    if at_s is None:
        return []
    at = from_epoch(at_s)
    lows = _lows(known, at, at_s, known.recent(floor(at_s, DAY), at_s))
    return [{"gpu": gpu, **{k: v for k, v in row.items() if k != "history_days"}} for gpu, row in sorted(lows.items())]


def _daily_lows(known: _Reads, f: Filters, start: int, at_s: int, tolerance: Tolerance | None) -> dict[str, list[float]]:
    """Each GPU's daily market low (NaN: no price that day) on the day grid from ``start`` to ``at_s``."""
    runs, _scope, _source = provider_runs(known.reader, f, Resolution.day, start, at_s, tolerance, scope=known)
    _grid, market, _providers = answer_runs(runs, known.names, Resolution.day, start, at_s)
    return {gpu: [low for a, b, (low, _p25, _median), _n, _k in gpu_runs for _ in range(a, b + 1)]
            for gpu, gpu_runs in market.items()}


def newest_observation(reader: Reader, filters: Filters | None = None) -> datetime | None:
    """The newest observation of a price matching ``filters``: the moment a stored history
    ends, for asking trends as of then (``as_of``) when nothing is current."""
    newest = _Reads(reader, filters or Filters(), None).current_at()
    return None if newest is None else from_epoch(newest)


def trends(reader: Reader, filters: Filters | None = None, *, as_of: datetime | None = None,
           tolerance: Tolerance | None = None) -> list[dict[str, Any]]:
    """The trend table (``TREND_COLUMNS``, one row per GPU, by name) for every GPU matching
    ``filters`` (see the module docstring), read through ``reader``."""
    f = filters or Filters()
    known = _Reads(reader, f, tolerance)
    if known.current_at() is None:
        return []
    at = utc(as_of) if as_of is not None else utcnow().replace(microsecond=0)
    at_s = epoch(at)
    recent = known.recent(floor(at_s, DAY), at_s)
    lows = _lows(known, at, at_s, recent)
    if not lows:
        return []
    then = {p: epoch(at - span) for p, span in PERIODS.items()}
    if as_of is not None:
        now = markets_at(recent, known.names, known.offer_keys((r[3], r[2]) for r in recent)).get(at_s, {})
    else:
        now = _market_now(reader, f)
    past = known.prices_at(list(then.values()))
    daily = _daily_lows(known, f, epoch(at - VOLATILITY_WINDOW), at_s, tolerance)
    rows: list[dict[str, Any]] = []
    for gpu, low_row in sorted(lows.items()):
        current, provider, providers, offers = now.get(gpu, (None, None, 0, 0))
        row: dict[str, Any] = {"gpu": gpu, "current": current, "provider": provider, "providers": providers,
                               "offers": offers, "as_of": at, **low_row,
                               "good_deal": is_good_deal(current, low_row["all_time_low"], low_row["history_days"]),
                               "volatility_30d_pct": volatility(daily.get(gpu, []))}
        for p, t in then.items():
            price = past.get(t, {}).get(gpu)
            row[f"price_{p}_ago"] = price
            row[f"change_{p}_pct"] = (current - price) / price * 100 if current is not None and price else None
        rows.append({c: _plain(row[c]) for c in TREND_COLUMNS})
    return rows


def _market_now(reader: Reader, f: Filters) -> dict[str, Market]:
    """Per GPU, the market now as ``prices`` answers it (``db.reads.latest_prices``, USD): the
    cheapest price, its provider (the first name on a tie), and how many providers (market
    providers: ``tracker.analysis.aggregators``) and offers."""
    rows = latest_prices(reader, gpus=f.gpus, providers=f.providers, kinds=f.kinds, regions=f.regions,
                         include_unmapped=False)
    listed: dict[str, list[tuple[float, str, str]]] = {}
    for r in rows:
        if r["currency"] == "USD" and r["price_per_gpu_hour"] is not None:
            who = market_provider(r["provider"], r.get(reads.VIA_KEY))
            listed.setdefault(r["gpu"], []).append((r["price_per_gpu_hour"], r["provider"], who))
    return {gpu: _market(offers) for gpu, offers in listed.items()}


def _plain(v: Any) -> Any:
    """NaN is ``None``."""
    return None if isinstance(v, float) and math.isnan(v) else v
