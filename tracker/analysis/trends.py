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
  the rule price-alert sites use.
* **volatility** -- the standard deviation of day-over-day changes of the daily market low
  over the last 30 days, in percent. Only consecutive days count; at least two changes are
  needed, otherwise it is empty.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from tracker.analysis.frames import (
    Filters,
    Resolution,
    Tolerance,
    load_intervals,
    market_at,
    records,
    utc,
)
from tracker.analysis.history import aggregate

PERIODS: dict[str, timedelta] = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
}
GOOD_DEAL_WITHIN = 0.05
VOLATILITY_WINDOW = timedelta(days=30)

TREND_COLUMNS = [
    "gpu", "current", "provider", "providers", "offers", "as_of",
    *[c for p in PERIODS for c in (f"price_{p}_ago", f"change_{p}_pct")],
    "all_time_low", "all_time_low_at", "all_time_low_provider", "good_deal", "volatility_30d_pct",
]


def all_time_lows(intervals: pd.DataFrame) -> pd.DataFrame:
    """Per GPU: the lowest stored price, its provider, and when it first happened."""
    if intervals.empty:
        return pd.DataFrame(columns=["gpu", "all_time_low", "all_time_low_at", "all_time_low_provider"])
    ordered = intervals.sort_values(["gpu", "price", "first_seen", "provider"])
    best = ordered.drop_duplicates("gpu")
    return best[["gpu", "price", "first_seen", "provider"]].rename(
        columns={"price": "all_time_low", "first_seen": "all_time_low_at", "provider": "all_time_low_provider"}
    )


def volatility(daily_low: pd.Series) -> float | None:
    """Std dev (percent) of day-over-day relative changes; gaps break the chain."""
    changes = (daily_low / daily_low.shift(1) - 1).dropna()
    if len(changes) < 2:
        return None
    return float(changes.std(ddof=1) * 100)


def is_good_deal(current: float | None, low: float | None, within: float = GOOD_DEAL_WITHIN) -> bool:
    return current is not None and low is not None and current <= low * (1 + within) + 1e-12


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
    lows = all_time_lows(intervals).set_index("gpu")
    start = at - VOLATILITY_WINDOW
    daily, _ = aggregate(intervals, Resolution.day, start, at)

    rows: list[dict[str, Any]] = []
    for gpu in sorted(intervals["gpu"].unique()):
        current = float(now.at[gpu, "min"]) if gpu in now.index else None
        row: dict[str, Any] = {
            "gpu": gpu,
            "current": current,
            "provider": now.at[gpu, "provider"] if gpu in now.index else None,
            "providers": int(now.at[gpu, "providers"]) if gpu in now.index else 0,
            "offers": int(now.at[gpu, "offers"]) if gpu in now.index else 0,
            "as_of": at.to_pydatetime(),
        }
        for p, series in past.items():
            then = float(series[gpu]) if gpu in series.index else None
            row[f"price_{p}_ago"] = then
            row[f"change_{p}_pct"] = (current - then) / then * 100 if current is not None and then else None
        low = float(lows.at[gpu, "all_time_low"])
        row["all_time_low"] = low
        row["all_time_low_at"] = pd.Timestamp(lows.at[gpu, "all_time_low_at"]).to_pydatetime()
        row["all_time_low_provider"] = lows.at[gpu, "all_time_low_provider"]
        row["good_deal"] = is_good_deal(current, low)
        g = daily[daily["gpu"] == gpu].set_index("time")["min"].astype(float) if not daily.empty else pd.Series(dtype=float)
        row["volatility_30d_pct"] = volatility(g)
        rows.append(row)
    return pd.DataFrame(rows, columns=TREND_COLUMNS)


def trends(
    source: Engine | Session,
    filters: Filters | None = None,
    *,
    as_of: datetime | None = None,
    tolerance: Tolerance | None = None,
) -> pd.DataFrame:
    """The trend table for every GPU matching ``filters`` (see the module docstring)."""
    intervals = load_intervals(source, filters, until=as_of, tolerance=tolerance)
    return trends_from_intervals(intervals, as_of)


def trend_rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    return records(df)
