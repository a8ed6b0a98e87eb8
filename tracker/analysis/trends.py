"""Trends per GPU: the current market price, its change over 24 h / 7 d / 30 d / 90 d, the
all-time low and when it happened, a good-deal flag, and volatility.

Definitions (all in USD per GPU-hour, across the filtered kinds, providers and regions):

* **current** -- the cheapest price in effect at ``as_of`` (``frames.market_at``: the
  "price at t" rule, so a provider whose last good scrape is older than its scrape interval
  does not count). ``as_of`` defaults to the newest observation in the store, so a database
  that was last scraped yesterday reports as of yesterday instead of showing nothing.
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
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection, Engine

from db import columns, labels, open_intervals, rollups
from db.engine import connected
from db.types import epoch
from tracker.analysis import buckets
from tracker.analysis.frames import (
    Filters,
    Resolution,
    Tolerance,
    filter_sql,
    grid,
    label_terms,
    load_intervals,
    market_at,
    records,
    utc,
)
from tracker.analysis.history import aggregate, market_from_buckets
from tracker.analysis.trend_rows import (  # the definitions, shared with the CLI's pandas-free path
    GOOD_DEAL_WITHIN,  # noqa: F401 - importers read the definitions here
    MIN_HISTORY_DAYS,  # noqa: F401
    PERIODS,
    TREND_COLUMNS,
    VOLATILITY_WINDOW,
    history_days,
    is_good_deal,
    volatility,
)
from tracker.analysis.trend_rows import low_run as _low_run

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

def all_time_lows(intervals: pd.DataFrame) -> pd.DataFrame:
    """Per GPU: the lowest stored price, its provider, and when it first happened."""
    if intervals.empty:
        return pd.DataFrame(columns=["gpu", "all_time_low", "all_time_low_at", "all_time_low_provider"])
    ordered = intervals.sort_values(["gpu", "price", "first_seen", "provider"])
    best = ordered.drop_duplicates("gpu")
    return best[["gpu", "price", "first_seen", "provider"]].rename(
        columns={"price": "all_time_low", "first_seen": "all_time_low_at", "provider": "all_time_low_provider"}
    )


def trends_from_intervals(intervals: pd.DataFrame, as_of: datetime | None = None) -> pd.DataFrame:
    """The trend table (``TREND_COLUMNS``) from loaded intervals, one row per GPU."""
    if intervals.empty:
        return pd.DataFrame(columns=TREND_COLUMNS)
    at = utc(as_of) if as_of is not None else intervals["last_seen"].max()
    assert at is not None
    intervals = intervals[intervals["first_seen"] <= at]
    if intervals.empty:
        return pd.DataFrame(columns=TREND_COLUMNS)
    now = market_at(intervals, at).set_index("gpu")
    past = {p: market_at(intervals, at - span).set_index("gpu")["min"] for p, span in PERIODS.items()}
    first = intervals.groupby("gpu")["first_seen"].min()
    lows = all_time_lows(intervals).set_index("gpu")
    lows["history_days"] = [history_days(rollups.floor(int(pd.Timestamp(first[g]).timestamp()), rollups.DAY), at)
                            for g in lows.index]
    start = at - VOLATILITY_WINDOW
    daily, _ = aggregate(intervals, Resolution.day, start, at)

    return _table(at, now, past, lows, daily)


def _table(at: pd.Timestamp, now: pd.DataFrame, past: dict[str, pd.Series], lows: pd.DataFrame,
           daily: pd.DataFrame) -> pd.DataFrame:
    """The trend rows from the market now (by gpu), then (per period), the lows (by gpu) and daily lows."""
    markets = now.to_dict("index")
    prices_then = {p: series.to_dict() for p, series in past.items()}
    daily_lows = _lows_by_gpu(daily)
    rows: list[dict[str, Any]] = []
    for gpu, low_row in sorted(lows.to_dict("index").items()):
        market = markets.get(gpu)
        current = float(market["min"]) if market is not None else None
        row: dict[str, Any] = {
            "gpu": gpu,
            "current": current,
            "provider": market["provider"] if market is not None else None,
            "providers": int(market["providers"]) if market is not None else 0,
            "offers": int(market["offers"]) if market is not None else 0,
            "as_of": at.to_pydatetime(),
        }
        for p, values in prices_then.items():
            then = float(values[gpu]) if gpu in values else None
            row[f"price_{p}_ago"] = then
            row[f"change_{p}_pct"] = (current - then) / then * 100 if current is not None and then else None
        low = float(low_row["all_time_low"])
        row["all_time_low"] = low
        row["all_time_low_at"] = pd.Timestamp(low_row["all_time_low_at"]).to_pydatetime()
        row["all_time_low_provider"] = low_row["all_time_low_provider"]
        row["history_days"] = int(low_row["history_days"])
        row["good_deal"] = is_good_deal(current, low, history_days=row["history_days"])
        row["volatility_30d_pct"] = volatility(daily_lows.get(gpu, np.zeros(0)))
        rows.append(row)
    return pd.DataFrame(rows, columns=TREND_COLUMNS)


def _lows_by_gpu(daily: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each GPU's ``min`` column of a market frame, in the frame's order (slices of one sort,
    not a pandas group per GPU)."""
    if daily.empty:
        return {}
    codes, gpus = pd.factorize(daily["gpu"])
    order = np.argsort(codes, kind="stable")
    lows = daily["min"].to_numpy(dtype=float)[order]
    bounds = np.searchsorted(codes[order], np.arange(len(gpus) + 1))
    return {gpu: lows[bounds[k]:bounds[k + 1]] for k, gpu in enumerate(gpus)}


def _current_at(conn: Connection, f: Filters) -> pd.Timestamp | None:
    """The newest observation of any interval matching ``f`` (each offer's newest interval is
    its current state, so ``offer_state`` holds it)."""
    where, params, binds = filter_sql(conn, f)
    value = conn.execute(text(f"SELECT MAX({open_intervals.LAST_SEEN}) FROM offer_state s JOIN price_interval i ON i.id = s.interval_id "
                              f"WHERE {where}").bindparams(*binds), params).scalar()
    return None if value is None else pd.Timestamp(int(value), unit="s", tz="UTC")


def _rollup_lows(conn: Connection, f: Filters, before: int) -> pd.DataFrame:
    """Per (gpu, day) before ``before``: the day roll-ups' lowest price (columns gpu_id, bucket, low)."""
    gpu_ids = labels.lookup(conn, "gpu", f.gpus) if f.gpus is not None else sorted(labels.names(conn, "gpu"))
    sql = "FROM (SELECT r.gpu_id, r.bucket, MIN(r.min) AS low FROM rollup_day r WHERE r.gpu_id IN :gpus AND r.bucket < :before"
    params: dict[str, Any] = {"gpus": gpu_ids or [-1], "before": before}
    binds = [bindparam("gpus", expanding=True)]
    sql += label_terms(conn, f, "r", params, binds) + " GROUP BY r.gpu_id, r.bucket) AS d"
    gpu, bucket, low = columns.read(conn, ROLLUP_LOW_COLUMNS, sql, params, binds)
    return pd.DataFrame({"gpu_id": gpu, "bucket": bucket, "low": low})


#: What ``_rollup_lows`` reads per (gpu, day) (``db.columns``: packed on PostgreSQL).
ROLLUP_LOW_COLUMNS: list[columns.Column] = [("gpu_id", "int"), ("bucket", "int"), ("low", "float")]


def _first_at_lows(conn: Connection, f: Filters, lows: list[tuple[int, float, int, int | None]],
                   until: int) -> dict[int, tuple[pd.Timestamp, str]]:
    """Per GPU of ``lows`` (gpu_id, low, day, end): the earliest interval at ``low`` starting in
    ``[day, day + 1 day)`` (and by ``until``) and last seen before ``end`` (``None``: no bound):
    its ``first_seen`` and provider. One query for every GPU; a GPU whose raw intervals there
    were pruned is absent."""
    if not lows:
        return {}
    where, params, binds = filter_sql(conn, f)
    terms = []
    for k, (gpu_id, low, day, end) in enumerate(lows):
        terms.append(f"(i.gpu_id = :g{k} AND {open_intervals.seen_since('i', f':lo{k}')} AND i.first_seen >= :lo{k} "
                     f"AND i.first_seen <= :hi{k} AND i.price_per_gpu_hour = :low{k}"
                     f"{f' AND {open_intervals.LAST_SEEN} < :end{k}' if end is not None else ''})")
        params |= {f"g{k}": gpu_id, f"lo{k}": day, f"hi{k}": min(day + rollups.DAY - 1, until), f"low{k}": low}
        if end is not None:
            params[f"end{k}"] = end
    rows = conn.execute(text(
        "SELECT i.gpu_id, i.first_seen, l.name FROM price_interval i JOIN label l ON l.id = i.provider_id "
        f"WHERE {where} AND ({' OR '.join(terms)})").bindparams(*binds), params).all()
    first: dict[int, tuple[pd.Timestamp, str]] = {}
    for gpu_id, first_seen, provider in sorted((int(g), int(t), str(n)) for g, t, n in rows):
        first.setdefault(gpu_id, (pd.Timestamp(first_seen, unit="s", tz="UTC"), provider))
    return first


def _lows_from_rollups(conn: Connection, f: Filters, at: pd.Timestamp, recent: pd.DataFrame) -> pd.DataFrame:
    """``all_time_lows`` of every interval started by ``at``: the day roll-ups before ``at``'s
    day, the raw intervals ``recent`` (``buckets.raw_intervals`` from that day to ``at``) for
    the day itself; the time and provider from the earliest raw interval at the low, read
    within the days the low lasted (``_low_run``)."""
    at_s = epoch(at.to_pydatetime())
    day = rollups.floor(at_s, rollups.DAY)
    days = _rollup_lows(conn, f, day)
    today = recent[recent["first_seen"] <= at_s]
    if not today.empty:
        days = pd.concat([days, pd.DataFrame({"gpu_id": today["gpu_id"], "bucket": day, "low": today["price"]})],
                         ignore_index=True)
    if days.empty:
        return pd.DataFrame(columns=["gpu", "all_time_low", "all_time_low_at", "all_time_low_provider", "history_days"])
    per_day = days.groupby(["gpu_id", "bucket"], sort=True)["low"].min().reset_index()
    gpu_ids = per_day["gpu_id"].to_numpy(dtype=np.int64)
    buckets_, lows_ = per_day["bucket"].to_numpy(dtype=np.int64), per_day["low"].to_numpy(dtype=float)
    starts = np.flatnonzero(np.r_[True, gpu_ids[1:] != gpu_ids[:-1]])
    runs = {int(gpu_ids[a]): _low_run(buckets_[a:b], lows_[a:b], day)
            for a, b in zip(starts, np.r_[starts[1:], len(gpu_ids)], strict=True)}
    found = _first_at_lows(conn, f, [(g, low, first, end) for g, (low, _, first, end) in runs.items()], at_s)
    names = labels.names(conn, "gpu")
    rows = []
    for gpu_id, (low, start, first_day, _end) in runs.items():
        # raw intervals pruned: the day is what the roll-ups know
        when, provider = found.get(gpu_id, (pd.Timestamp(first_day, unit="s", tz="UTC"), None))
        rows.append({"gpu": names[gpu_id], "all_time_low": low, "all_time_low_at": when,
                     "all_time_low_provider": provider, "history_days": history_days(start, at)})
    return pd.DataFrame(rows)


def _rows_at(conn: Connection, f: Filters, times: list[int], tolerance: Tolerance | None) -> pd.DataFrame:
    """The intervals matching ``f`` in effect at each of ``times`` (epoch seconds; ``t`` says
    which), lean: label ids and names, price, ``first_seen`` and ``end`` (``db.rollups.hold_end``).

    One statement, a branch per time: ``first_seen <= t`` and ``last_seen`` no earlier than the
    longest hold before ``t``, the range the (gpu, last_seen, first_seen) index answers."""
    cols = ["t", "gpu_id", "provider_id", "offer_id", "price", "first_seen", "last_seen", "ends_at"]
    where, params, binds = filter_sql(conn, f)
    per_provider, longest = buckets.holds(conn, tolerance)
    branches = []
    for k, t in enumerate(times):
        branches.append(f"SELECT {int(t)} AS t, i.gpu_id, i.provider_id, i.offer_id, i.price_per_gpu_hour, i.first_seen, "
                        f"{open_intervals.LAST_SEEN}, i.ends_at FROM price_interval i WHERE {where} "
                        f"AND i.first_seen <= :t{k} AND {open_intervals.seen_since('i', f':from{k}')}")
        params |= {f"t{k}": int(t), f"from{k}": int(t) - longest}
    rows = rollups.fetch_tuples(conn, text(" UNION ALL ".join(branches)).bindparams(*binds), params)
    table = np.array(rows, dtype=float).reshape(-1, len(cols))  # one pass; NULL ends_at -> NaN
    ints = {c: table[:, k].astype(np.int64) for k, c in enumerate(cols) if c not in ("price", "ends_at")}
    providers = np.unique(ints["provider_id"])
    interval_s = np.array([per_provider.get(p, rollups.DEFAULT_INTERVAL_S) for p in providers.tolist()],
                          dtype=np.int64)[np.searchsorted(providers, ints["provider_id"])]
    end = rollups.hold_end(ints["last_seen"], table[:, cols.index("ends_at")], interval_s)
    names = labels.names(conn, "gpu") | labels.names(conn, "provider")  # ids are unique across spaces
    lookup = np.empty(max(names, default=0) + 1, dtype=object)
    lookup[list(names)] = list(names.values())
    return pd.DataFrame({**ints, "price": table[:, cols.index("price")], "end": end,
                         "gpu": lookup[ints["gpu_id"]], "provider": lookup[ints["provider_id"]]})


def _markets_at(rows: pd.DataFrame) -> pd.DataFrame:
    """``frames.market_at`` for lean rows with a time ``t`` each (``_rows_at``): per (t, gpu),
    among the intervals in effect at ``t`` (``first_seen <= t < end``, the newest per offer),
    the cheapest price, its provider (the first name on a tie), and how many providers and
    offers list the GPU. Arrays, not a pandas group-by: this runs for five times per request."""
    cols = ["t", "gpu", "min", "provider", "providers", "offers"]
    t, first, end = (rows[c].to_numpy(dtype=np.int64) for c in ("t", "first_seen", "end"))
    live = rows[(first <= t) & (end > t)]
    if live.empty:
        return pd.DataFrame(columns=cols)
    gpu, gpus = pd.factorize(live["gpu"], sort=True)
    provider, providers = pd.factorize(live["provider"], sort=True)
    t, offer, first = (live[c].to_numpy(dtype=np.int64) for c in ("t", "offer_id", "first_seen"))
    price = live["price"].to_numpy(dtype=float)
    # a price change inside the hold: the newer interval wins for that offer
    order = np.lexsort((first, offer, t))
    newest = order[np.r_[(t[order][1:] != t[order][:-1]) | (offer[order][1:] != offer[order][:-1]), True]]
    t, gpu, provider, price = t[newest], gpu[newest], provider[newest], price[newest]
    order = np.lexsort((provider, price, gpu, t))
    t, gpu, provider, price = t[order], gpu[order], provider[order], price[order]
    group = np.r_[True, (t[1:] != t[:-1]) | (gpu[1:] != gpu[:-1])]
    starts = np.flatnonzero(group)
    by_provider = np.lexsort((provider, gpu, t))  # the same groups, providers together inside each
    tp, gp, pp = t[by_provider], gpu[by_provider], provider[by_provider]
    new_provider = np.r_[True, (tp[1:] != tp[:-1]) | (gp[1:] != gp[:-1]) | (pp[1:] != pp[:-1])]
    group_of = (np.cumsum(group) - 1)[by_provider]
    return pd.DataFrame({
        "t": t[starts], "gpu": np.asarray(gpus, dtype=object)[gpu[starts]], "min": price[starts],
        "provider": np.asarray(providers, dtype=object)[provider[starts]],
        "providers": np.bincount(group_of, weights=new_provider, minlength=len(starts)).astype(np.int64),
        "offers": np.diff(np.r_[starts, len(t)]),
    })


def _daily_values(conn: Connection, f: Filters, start: pd.Timestamp, at: pd.Timestamp, recent: pd.DataFrame,
                  tolerance: Tolerance | None) -> pd.DataFrame:
    """``buckets.provider_buckets`` by day from ``start`` to ``at``, its last (partial) day
    from ``recent`` (the raw intervals of that day, already read) instead of a second read."""
    at_s = epoch(at.to_pydatetime())
    today = rollups.floor(at_s, rollups.DAY)
    if epoch(start.to_pydatetime()) >= today or today < rollups.raw_horizon(conn):
        return buckets.provider_buckets(conn, f, Resolution.day, start, at, tolerance)[0]
    before = pd.Timestamp(today - 1, unit="s", tz="UTC")
    parts = [buckets.provider_buckets(conn, f, Resolution.day, start, before, tolerance)[0],
             buckets.raw_buckets(conn, recent, rollups.DAY, today, at_s)]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=buckets.BUCKET_COLUMNS)


def trends(
    source: Engine | Connection | Session,
    filters: Filters | None = None,
    *,
    as_of: datetime | None = None,
    tolerance: Tolerance | None = None,
) -> pd.DataFrame:
    """The trend table for every GPU matching ``filters`` (see the module docstring).

    Point-in-time prices (now and 24 h / 7 d / 30 d / 90 d before) read the raw intervals in
    effect then, and only those columns (``buckets.raw_intervals``: no offer join); the
    all-time low and the 30-day volatility read the daily roll-ups for whole days
    (``buckets``). Region filters are not in the roll-ups: then every interval is loaded."""
    f = filters or Filters()
    if f.regions:
        return trends_from_intervals(load_intervals(source, f, until=as_of, tolerance=tolerance), as_of)
    with connected(source) as conn, labels.snapshot(conn):
        at = utc(as_of) if as_of is not None else _current_at(conn, f)
        if at is None:
            return pd.DataFrame(columns=TREND_COLUMNS)
        at_s = epoch(at.to_pydatetime())
        # every interval in effect from the start of as_of's day: today's lows and the market now
        recent = buckets.raw_intervals(conn, f, rollups.floor(at_s, rollups.DAY), at_s, tolerance)
        lows = _lows_from_rollups(conn, f, at, recent)
        if lows.empty:
            return pd.DataFrame(columns=TREND_COLUMNS)
        now = _markets_at(recent.assign(t=at_s)).set_index("gpu")
        then = {p: epoch((at - span).to_pydatetime()) for p, span in PERIODS.items()}
        markets = _markets_at(_rows_at(conn, f, list(then.values()), tolerance))
        t, gpu, low = markets["t"].to_numpy(), markets["gpu"].to_numpy(dtype=object), markets["min"].to_numpy(dtype=float)
        past = {p: pd.Series(low[t == at_t], index=gpu[t == at_t]) for p, at_t in then.items()}
        start = at - VOLATILITY_WINDOW
        per_provider = _daily_values(conn, f, start, at, recent, tolerance)
        daily, _ = market_from_buckets(per_provider, grid(Resolution.day, start, at))
    return _table(at, now, past, lows.set_index("gpu"), daily)


def trend_rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    return records(df)
