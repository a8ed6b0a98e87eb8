"""The CLI's ``trends`` answer without pandas or SQLAlchemy: the rows ``records(trends(...))``
gives, computed in plain Python over a ``db.reader.Reader`` (numpy only for the volatility's
standard deviation), so that ``gpu-tracker trends`` starts in a fraction of the time.

The steps are those of ``tracker.analysis.trends`` (a property test holds every field equal on
random histories and on the bundled recordings, on both backends), one by one:

* the same statements, written with ``db.sql``'s pieces (the newest observation, the raw
  intervals in effect since the start of ``as_of``'s day, the day roll-ups' lows, the earliest
  interval at each low, the intervals in effect at each past time);
* the same "price at t" (``db.spans.hold_end``) and market rule (``_markets_at``: per offer the
  newest interval in effect, the cheapest price, the first provider name on a tie);
* the same daily values for the volatility (``history_rows.provider_buckets``, the plain form of
  ``buckets.provider_buckets``, whose equality has its own property test).

Region filters need the offers' columns: ``trend_rows`` answers ``None`` for them, and the
caller takes the frame path. The definitions themselves (and the constants) live here, and
``trends`` imports them, so that the two cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from db import sql as q
from db.open_intervals import LAST_SEEN, seen_since
from db.plain_reads import raw_rows
from db.reader import Reader
from db.spans import DAY, DEFAULT_INTERVAL_S, hold_end, origin
from db.times import epoch, from_epoch
from tracker.analysis.grid import Filters, Resolution, Tolerance, grid_starts
from tracker.analysis.history_rows import Scope, provider_buckets

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


def floor_day(t: int) -> int:
    """The start of the UTC day holding epoch second ``t`` (``db.rollups.floor(t, DAY)``)."""
    o = origin(DAY)
    return o + ((t - o) // DAY) * DAY


def history_days(first_day: int, at: Any) -> int:
    """UTC calendar days from the day of the first observation (a day bucket's start, epoch
    seconds) to the day of ``at`` (a datetime or Timestamp), both counted."""
    return (floor_day(int(at.timestamp())) - first_day) // DAY + 1


def volatility(daily_low: Any) -> float | None:
    """Std dev (percent) of day-over-day relative changes; gaps break the chain."""
    import numpy as np

    lows = np.asarray(daily_low, dtype=float)
    changes = lows[1:] / lows[:-1] - 1
    changes = changes[~np.isnan(changes)]
    if len(changes) < 2:
        return None
    return float(np.std(changes, ddof=1) * 100)


def is_good_deal(current: float | None, low: float | None, within: float = GOOD_DEAL_WITHIN,
                 history_days: int | None = None) -> bool:
    """Within ``within`` of the low, and (when ``history_days`` is given) ``MIN_HISTORY_DAYS`` of history."""
    if history_days is not None and history_days < MIN_HISTORY_DAYS:
        return False
    return current is not None and low is not None and current <= low * (1 + within) + 1e-12


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


def markets_at(rows: Sequence[Live], names: dict[int, str]) -> dict[int, dict[str, Market]]:
    """``trends._markets_at`` per time and GPU name: among the rows in effect at their ``t``
    (``first_seen <= t < end``), per offer the newest (the later row on a tie, as a stable sort
    keeps it), the cheapest price, its provider (the first name on a tie), and how many
    providers and offers list the GPU."""
    newest: dict[tuple[int, int], Live] = {}
    for row in rows:
        t, _gpu, _provider, offer, _price, first, end = row
        if first <= t < end:
            have = newest.get((t, offer))
            if have is None or first >= have[5]:
                newest[(t, offer)] = row
    cells: dict[tuple[int, str], list[tuple[float, str]]] = {}
    for t, gpu, provider, _offer, price, _first, _end in newest.values():
        cells.setdefault((t, names[gpu]), []).append((price, names[provider]))
    out: dict[int, dict[str, Market]] = {}
    for (t, gpu), listed in cells.items():
        price, provider = min(listed, key=lambda c: (math.isnan(c[0]), c[0], c[1]))
        out.setdefault(t, {})[gpu] = (price, provider, len({p for _v, p in listed}), len(listed))
    return out


class _Reads:
    """The label ids of a query's filters, its ``WHERE`` on ``price_interval i``
    (``frames.filter_sql``) and the collection intervals prices hold for (``buckets.holds``)."""

    def __init__(self, reader: Reader, f: Filters, tolerance: Tolerance | None) -> None:
        self.reader = reader
        self.scope = Scope(reader, f, tolerance)
        lab = self.scope.labels
        usd = lab.lookup("currency", ["USD"])
        self.usd = usd[0] if usd else -1
        self.names = lab.names("gpu") | lab.names("provider")  # ids are unique across spaces
        self.hold = self.scope.given if self.scope.given is not None else self.scope.stored

    def where(self, params: dict[str, Any]) -> str:
        s = self.scope
        params |= {"gpus": s.gpu_ids or [-1], "usd": self.usd}
        return ("i.gpu_id IN :gpus AND i.currency_id = :usd" + q.label_terms("i.provider_id", "providers", s.provider_ids, params)
                + q.label_terms("i.kind_id", "kinds", s.kind_ids, params))

    def end(self, provider: int, last_seen: int, ends_at: Any) -> int:
        return hold_end(last_seen, None if ends_at is None else int(ends_at), self.hold.get(provider, DEFAULT_INTERVAL_S))

    def current_at(self) -> int | None:
        """``trends._current_at``: the newest observation of an interval matching the filters."""
        params: dict[str, Any] = {}
        value = self.reader.scalar(f"SELECT MAX({LAST_SEEN}) FROM offer_state s JOIN price_interval i ON i.id = s.interval_id "
                                   f"WHERE {self.where(params)}", params)
        return None if value is None else int(value)

    def recent(self, lo: int, hi: int) -> list[Live]:
        """``buckets.raw_intervals(lo, hi)`` as lean rows in its order (offer, ``first_seen``,
        id), with ``t = hi``."""
        s = self.scope
        if not s.gpu_ids:
            return []
        rows = raw_rows(self.reader, s.gpu_ids, lo - s.longest, hi, s.provider_ids, s.kind_ids, self.usd)
        # RAW_COLUMNS: id, offer, provider, gpu, kind, price, first_seen, last_seen, ends_at
        rows.sort(key=lambda r: (int(r[1]), int(r[6]), int(r[0])))
        out = []
        for _id, offer, provider, gpu, _kind, price, first_seen, last_seen, ends_at in rows:
            end = self.end(int(provider), int(last_seen), ends_at)
            if end > lo:
                out.append((hi, int(gpu), int(provider), int(offer), float(price), int(first_seen), end))
        return out

    def rows_at(self, times: list[int]) -> list[Live]:
        """``trends._rows_at``: the intervals matching the filters in effect at each of ``times``."""
        params: dict[str, Any] = {}
        where = self.where(params)
        branches = []
        for k, t in enumerate(times):
            branches.append(f"SELECT {int(t)} AS t, i.gpu_id, i.provider_id, i.offer_id, i.price_per_gpu_hour, i.first_seen, "
                            f"{LAST_SEEN}, i.ends_at FROM price_interval i WHERE {where} "
                            f"AND i.first_seen <= :t{k} AND {seen_since('i', f':from{k}')}")
            params |= {f"t{k}": int(t), f"from{k}": int(t) - self.scope.longest}
        return [(int(t), int(gpu), int(provider), int(offer), float(price), int(first), self.end(int(provider), int(last), ends_at))
                for t, gpu, provider, offer, price, first, last, ends_at in self.reader.rows(" UNION ALL ".join(branches), params)]

    def day_lows(self, before: int) -> list[tuple[int, int, float]]:
        """``trends._rollup_lows``: per (gpu id, day) before ``before``, the day roll-ups' lowest price."""
        s = self.scope
        params: dict[str, Any] = {"gpus": s.gpu_ids or [-1], "before": before}
        sql = ("SELECT r.gpu_id, r.bucket, MIN(r.min) FROM rollup_day r WHERE r.gpu_id IN :gpus AND r.bucket < :before"
               + q.label_terms("r.provider_id", "providers", s.provider_ids, params)
               + q.label_terms("r.kind_id", "kinds", s.kind_ids, params) + " GROUP BY r.gpu_id, r.bucket")
        return [(int(g), int(b), float(low)) for g, b, low in self.reader.rows(sql, params)]

    def first_at_lows(self, lows: list[tuple[int, float, int, int | None]], until: int) -> dict[int, tuple[int, str]]:
        """``trends._first_at_lows``: per GPU of ``lows`` (gpu id, low, day, end), the earliest
        interval at the low starting that day (and by ``until``), last seen before ``end``: its
        ``first_seen`` and provider."""
        if not lows:
            return {}
        params: dict[str, Any] = {}
        where = self.where(params)
        terms = []
        for k, (gpu_id, low, day, end) in enumerate(lows):
            terms.append(f"(i.gpu_id = :g{k} AND {seen_since('i', f':lo{k}')} AND i.first_seen >= :lo{k} "
                         f"AND i.first_seen <= :hi{k} AND i.price_per_gpu_hour = :low{k}"
                         f"{f' AND {LAST_SEEN} < :end{k}' if end is not None else ''})")
            params |= {f"g{k}": gpu_id, f"lo{k}": day, f"hi{k}": min(day + DAY - 1, until), f"low{k}": low}
            if end is not None:
                params[f"end{k}"] = end
        rows = self.reader.rows("SELECT i.gpu_id, i.first_seen, l.name FROM price_interval i JOIN label l ON l.id = i.provider_id "
                                f"WHERE {where} AND ({' OR '.join(terms)})", params)
        first: dict[int, tuple[int, str]] = {}
        for gpu_id, first_seen, provider in sorted((int(g), int(t), str(n)) for g, t, n in rows):
            first.setdefault(gpu_id, (first_seen, provider))
        return first


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _all_time_lows(reads: _Reads, at: datetime, at_s: int, recent: list[Live]) -> dict[str, dict[str, Any]]:
    """``trends._lows_from_rollups`` by GPU name."""
    day = floor_day(at_s)
    per_day: dict[tuple[int, int], float] = {}
    for g, b, low in reads.day_lows(day):
        per_day[(g, b)] = min(low, per_day.get((g, b), low))
    for _t, g, _p, _o, price, first, _end in recent:
        if first <= at_s:
            per_day[(g, day)] = min(price, per_day.get((g, day), price))
    by_gpu: dict[int, tuple[list[int], list[float]]] = {}
    for (g, b), low in sorted(per_day.items()):
        days, lows = by_gpu.setdefault(g, ([], []))
        days.append(b)
        lows.append(low)
    runs = {g: low_run(days, lows, day) for g, (days, lows) in by_gpu.items()}
    found = reads.first_at_lows([(g, low, first, end) for g, (low, _, first, end) in runs.items()], at_s)
    out = {}
    for gpu_id, (low, start, first_day, _end) in runs.items():
        when, provider = found.get(gpu_id, (first_day, None))  # raw intervals pruned: the day is what is known
        out[reads.names[gpu_id]] = {"all_time_low": low, "all_time_low_at": from_epoch(when),
                                    "all_time_low_provider": provider, "history_days": history_days(start, at)}
    return out


def _daily_lows(reader: Reader, f: Filters, start: int, at_s: int, tolerance: Tolerance | None) -> dict[str, list[float]]:
    """Each GPU's daily market low (NaN: no price that day) on the day grid from ``start`` to
    ``at_s``: ``market_from_buckets`` of ``_daily_values``' per-provider values."""
    buckets, labels = provider_buckets(reader, f, Resolution.day, start, at_s, tolerance)
    names = labels.names("gpu")
    times = grid_starts(Resolution.day, start, at_s)
    lows: dict[tuple[str, int], float] = {}
    for b, g, _p, v, _n in buckets:
        if not math.isnan(v):
            key = (names[g], b)
            lows[key] = min(v, lows.get(key, v))
    return {gpu: [lows.get((gpu, t), math.nan) for t in times] for gpu in sorted({names[g] for _b, g, _p, _v, _n in buckets})}


def trend_rows(reader: Reader, filters: Filters | None = None, *, as_of: datetime | None = None,
               tolerance: Tolerance | None = None) -> list[dict[str, Any]] | None:
    """``records(trends(...))`` (see the module docstring); ``None`` for region filters."""
    f = filters or Filters()
    if f.regions:
        return None
    reads = _Reads(reader, f, tolerance)
    if as_of is not None:
        at = _utc(as_of)
    else:
        newest = reads.current_at()
        if newest is None:
            return []
        at = from_epoch(newest)
    at_s = epoch(at)
    recent = reads.recent(floor_day(at_s), at_s)
    lows = _all_time_lows(reads, at, at_s, recent)
    if not lows:
        return []
    now = markets_at(recent, reads.names).get(at_s, {})
    then = {p: epoch(at - span) for p, span in PERIODS.items()}
    past = markets_at(reads.rows_at(list(then.values())), reads.names)
    daily = _daily_lows(reader, f, epoch(at - VOLATILITY_WINDOW), at_s, tolerance)
    rows: list[dict[str, Any]] = []
    for gpu, low_row in sorted(lows.items()):
        market = now.get(gpu)
        current = market[0] if market is not None else None
        row: dict[str, Any] = {
            "gpu": gpu,
            "current": current,
            "provider": market[1] if market is not None else None,
            "providers": market[2] if market is not None else 0,
            "offers": market[3] if market is not None else 0,
            "as_of": at,
        }
        for p, t in then.items():
            was = past.get(t, {}).get(gpu)
            price = was[0] if was is not None else None
            row[f"price_{p}_ago"] = price
            row[f"change_{p}_pct"] = (current - price) / price * 100 if current is not None and price else None
        low = low_row["all_time_low"]
        row["all_time_low"] = low
        row["all_time_low_at"] = low_row["all_time_low_at"]
        row["all_time_low_provider"] = low_row["all_time_low_provider"]
        row["history_days"] = low_row["history_days"]
        row["good_deal"] = is_good_deal(current, low, history_days=row["history_days"])
        row["volatility_30d_pct"] = volatility(daily.get(gpu, []))
        rows.append({c: _plain(row[c]) for c in TREND_COLUMNS})
    return rows


def _plain(v: Any) -> Any:
    """What ``frames.records`` makes of a cell: NaN is ``None``."""
    return None if isinstance(v, float) and math.isnan(v) else v
