"""Price history per GPU on an hour/day/week grid: the market (min, p25, median across
providers) and each provider's own line; cost-per-TFLOP and break-even series derived from it.

How a bucket gets its numbers:

1. every stored interval that counts in the bucket counts (``db.rollups.spans``: observed
   during it, or, for buckets finer than the collection interval, held into it); whole
   buckets are read from the roll-ups, partial ones from raw intervals (``buckets``);
2. a provider's value is the lowest USD per GPU-hour among its offers of that GPU in the
   bucket (a price cut at 14:00 makes the day's value the new price);
3. the market columns are taken *across providers* (each provider's value once), so a
   marketplace listing 500 hosts does not outweigh a cloud listing one: ``min`` is the
   cheapest provider, ``median`` the typical provider, ``p25`` in between (linear
   interpolation, so with one provider all three are its price).

A bucket no interval touches is ``NaN`` in the market frame (the grid is complete, gaps
included) and has no row in the provider frame. Nothing is forward-filled.

Derived metrics transform each price column the same way: ``cost-per-tflop`` is the price
divided by the GPU's dense TFLOPS on the chosen basis (USD per TFLOP-hour), and
``breakeven-months`` is purchase price / (price x 730 h) -- how many months of 24/7 rent cost
as much as buying the card. So the ``min`` column of a break-even series is the break-even
*at the cheapest rent* (the longest one).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Connection, Engine

from db.types import utcnow
from tracker.analysis import buckets, specs
from tracker.analysis.frames import (
    HOURS_PER_MONTH,
    Filters,
    Resolution,
    check_dates,
    check_range,
    Tolerance,
    first_price,
    grid,
    records,
    utc,
)
from tracker.analysis.history_rows import HOW_TO_GET_HISTORY, METRICS, check_metric
from tracker.analysis.history_rows import unit as _unit
from tracker.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

MARKET_COLUMNS = ["time", "gpu", "min", "p25", "median", "providers", "offers"]
PROVIDER_COLUMNS = ["time", "gpu", "provider", "value"]
#: Fixed columns of the wide export (``history --format csv``); any other column is a provider.
EXPORT_COLUMNS = ["time", "gpu", "metric", "unit", "kinds", "min", "p25", "median", "providers", "offers"]


@dataclass
class History:
    """A history result. ``market`` is the complete grid per GPU (gaps are NaN rows);
    ``by_provider`` has a row only where the provider had a price."""

    metric: str
    unit: str
    resolution: Resolution
    since: pd.Timestamp
    until: pd.Timestamp
    kinds: tuple[str, ...] | None
    market: pd.DataFrame
    by_provider: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> list[str]:
        return sorted(self.market["gpu"].unique()) if not self.market.empty else []

    @property
    def providers(self) -> list[str]:
        return sorted(self.by_provider["provider"].unique()) if not self.by_provider.empty else []

    def provider_series(self, gpu: str, provider: str) -> pd.Series:
        """One provider's values for one GPU on the full grid (NaN where it had no price)."""
        rows = self.by_provider[(self.by_provider["gpu"] == gpu) & (self.by_provider["provider"] == provider)]
        times = self.market.loc[self.market["gpu"] == gpu, "time"]
        return rows.set_index("time")["value"].reindex(pd.DatetimeIndex(times, name="time"))

    def wide(self) -> pd.DataFrame:
        """One row per (time, gpu): the market columns, then one column per provider."""
        out = self.market.copy()
        out.insert(2, "metric", self.metric)
        out.insert(3, "unit", self.unit)
        out.insert(4, "kinds", ",".join(self.kinds) if self.kinds else "all")
        if not self.by_provider.empty:
            pivot = self.by_provider.pivot_table(index=["time", "gpu"], columns="provider", values="value", aggfunc="min")
            pivot.columns = [str(c) for c in pivot.columns]
            out = out.merge(pivot.reset_index(), on=["time", "gpu"], how="left")
        return out

    def rows(self) -> list[dict[str, Any]]:
        return records(self.wide())


__all__ = ["HOW_TO_GET_HISTORY", "METRICS", "History", "history", "price_history"]


def _quantile(v: np.ndarray, starts: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """Linear-interpolation quantile ``q`` of each group ``v[starts[i]:starts[i] + n[i]]`` (sorted
    ascending), computed as pandas' ``groupby().quantile`` does, so the numbers match to the bit."""
    pos = q * (n - 1)
    below = np.floor(pos).astype(np.int64)
    frac = pos - below
    a = v[starts + below]
    b = v[np.minimum(starts + below + 1, starts + n - 1)]
    return np.where(frac == 0, a, a + (b - a) * frac)


def _median(v: np.ndarray, starts: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Median of each sorted group, as pandas' ``groupby().median`` computes it (the mean of the
    two middle values of an even group)."""
    a = v[starts + (n - 1) // 2]
    b = v[starts + n // 2]
    return np.where(n % 2 == 1, a, (a + b) / 2)


def market_from_buckets(buckets: pd.DataFrame, times: pd.DatetimeIndex) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(market, by_provider) frames from per-provider bucket values (``buckets.BUCKET_COLUMNS``)
    on the grid ``times``; see the module docstring.

    Computed on arrays (one sort, no per-group Python): a year of daily buckets of a GPU family
    is tens of thousands of provider values, and this runs on every history request."""
    if buckets.empty:
        return pd.DataFrame(columns=MARKET_COLUMNS), pd.DataFrame(columns=PROVIDER_COLUMNS)
    gpu_codes, gpus = pd.factorize(buckets["gpu"], sort=True)
    provider_codes, _ = pd.factorize(buckets["provider"], sort=True)
    when = pd.DatetimeIndex(buckets["time"])
    order = np.lexsort((when.asi8, provider_codes, gpu_codes))
    by_provider = buckets.iloc[order].reset_index(drop=True)[PROVIDER_COLUMNS]

    n_times = len(times)
    at = times.get_indexer(when)  # -1: off the grid (left out of the market, as a reindex would)
    value = buckets["value"].to_numpy(dtype=float)
    on_grid = at >= 0
    cell = gpu_codes * n_times + at
    size = len(gpus) * n_times
    offers = np.bincount(cell[on_grid], weights=buckets["offers"].to_numpy(dtype=float)[on_grid], minlength=size)
    priced = on_grid & ~np.isnan(value)
    cell, value = cell[priced], value[priced]
    order = np.lexsort((value, cell))
    cell, value = cell[order], value[order]
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]]) if len(cell) else np.zeros(0, dtype=np.int64)
    n = np.diff(np.r_[starts, len(cell)])
    cells = cell[starts]
    stats = {"min": value[starts] if len(cell) else value, "p25": _quantile(value, starts, n, 0.25),
             "median": _median(value, starts, n)}
    market = pd.DataFrame({"time": times[np.tile(np.arange(n_times), len(gpus))],
                           "gpu": np.repeat(np.asarray(gpus, dtype=object), n_times)})
    for name, figures in stats.items():
        column = np.full(size, np.nan)
        column[cells] = figures
        market[name] = column
    providers = np.zeros(size, dtype=np.int64)
    providers[cells] = n
    market["providers"] = providers
    market["offers"] = offers.astype(np.int64)
    return market[MARKET_COLUMNS], by_provider


def aggregate(
    intervals: pd.DataFrame, resolution: Resolution, since: pd.Timestamp, until: pd.Timestamp
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(market, by_provider) frames from loaded intervals (the raw path); see the module docstring."""
    return market_from_buckets(buckets.from_intervals(intervals, resolution, since, until), grid(resolution, since, until))


def price_history(
    source: Engine | Connection | Session,
    filters: Filters | None = None,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    resolution: Resolution | str = Resolution.day,
    tolerance: Tolerance | None = None,
) -> History:
    """USD per GPU-hour history for the GPUs in ``filters`` (every mapped GPU when ``None``).

    ``since`` defaults to the first stored price, ``until`` to now.
    """
    res = Resolution.parse(resolution)
    f = filters or Filters()
    check_dates(since=since, until=until)
    until_ts = utc(until) or pd.Timestamp(utcnow())
    if since is None:
        first = first_price(source, f, until_ts)
        since_ts = first if first is not None else until_ts
    else:
        since_ts = utc(since)
    assert since_ts is not None
    if since_ts > until_ts:
        raise ConfigError(f"history: the range starts ({since_ts}) after it ends ({until_ts})")
    check_range(res, since_ts, until_ts)
    notes: list[str] = []
    per_provider, _answered_by = buckets.provider_buckets(source, f, res, since_ts, until_ts, tolerance)
    market, by_provider = market_from_buckets(per_provider, grid(res, since_ts, until_ts))
    if market.empty:
        what = ", ".join(f.gpus) if f.gpus else "any GPU"
        notes.append(f"no stored prices in range for {what} with these filters; {HOW_TO_GET_HISTORY}")
    else:
        # a range of several buckets with a price in at most one: a dot, not a line
        buckets_per_gpu = market.groupby("gpu").size()
        points = market.dropna(subset=["min"]).groupby("gpu").size()
        single = sorted(str(g) for g, n in points.items() if n <= 1 and buckets_per_gpu.get(g, 0) > 1)
        if single:
            notes.append(f"{', '.join(single)}: one point of history in this range, so no line to draw; "
                         f"{HOW_TO_GET_HISTORY}")
    return History("price", _unit("price", None), res, since_ts, until_ts, f.kinds, market, by_provider, notes)


def _transform(h: History, metric: str, factor: dict[str, float | None], unit: str, notes: list[str]) -> History:
    """Apply ``value -> factor[gpu] / value`` (break-even) or ``value * factor[gpu]`` (per TFLOP)."""

    def apply(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
        out = df.copy()
        f = out["gpu"].map(lambda g: factor.get(g)).astype(float)
        for c in cols:
            v = out[c].astype(float)
            out[c] = f / v if metric == "breakeven-months" else v * f
        return out

    # for break-even, dividing flips the order: "min" keeps meaning "from the cheapest price"
    market = apply(h.market, ["min", "p25", "median"]) if not h.market.empty else h.market
    by_provider = apply(h.by_provider, ["value"]) if not h.by_provider.empty else h.by_provider
    return replace(h, metric=metric, unit=unit, market=market, by_provider=by_provider, notes=[*h.notes, *notes])


def cost_per_tflop_history(h: History, basis: str | None = None, catalog: specs.Catalog | None = None) -> History:
    """Price history -> USD per TFLOP-hour on ``basis`` (``fp16-dense`` unless told otherwise)."""
    basis = specs.check_basis(basis)
    factor: dict[str, float | None] = {}
    notes = []
    for gpu in h.gpus:
        t = specs.tflops(specs.spec_for(gpu, catalog), basis)
        factor[gpu] = (1.0 / t) if t else np.nan
        if not t:
            notes.append(f"{gpu}: no {basis} TFLOPS in the catalog; its cost per TFLOP is left empty")
    return _transform(h, "cost-per-tflop", factor, _unit("cost-per-tflop", basis), notes)


def breakeven_history(
    h: History,
    purchase: dict[str, float] | None = None,
    utilization: float = 1.0,
    catalog: specs.Catalog | None = None,
) -> History:
    """Price history -> months of renting (at ``utilization``) that cost the purchase price."""
    if not 0 < utilization <= 1:
        raise ConfigError(f"--utilization: {utilization} must be in (0, 1]")
    factor: dict[str, float | None] = {}
    notes = []
    for gpu in h.gpus:
        spec = specs.spec_for(gpu, catalog)
        price = (purchase or {}).get(gpu) or (spec.purchase_price_usd if spec else None)
        factor[gpu] = price / (HOURS_PER_MONTH * utilization) if price else np.nan
        if not price:
            notes.append(f"{gpu}: no purchase price in the catalog; its break-even is left empty")
    unit = "months of 24/7 rent" if utilization == 1 else f"months of rent at {utilization:.0%} use"
    return _transform(h, "breakeven-months", factor, unit, notes)


def convert_price(
    metric: str, gpu: str, price: float, *, basis: str | None = None, catalog: specs.Catalog | None = None
) -> float | None:
    """One USD/GPU-h price in ``metric``'s unit (``None`` when the catalog lacks the figure)."""
    if metric == "price":
        return price
    spec = specs.spec_for(gpu, catalog)
    if metric == "cost-per-tflop":
        t = specs.tflops(spec, basis)
        return price / t if t else None
    if metric == "breakeven-months":
        purchase = spec.purchase_price_usd if spec else None
        return purchase / (price * HOURS_PER_MONTH) if purchase and price else None
    check_metric(metric)
    raise AssertionError(metric)


def history(
    source: Engine | Connection | Session,
    filters: Filters | None = None,
    *,
    metric: str = "price",
    basis: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    resolution: Resolution | str = Resolution.day,
    tolerance: Tolerance | None = None,
    catalog: specs.Catalog | None = None,
) -> History:
    """``price_history`` followed by the metric's transform (``price`` is returned as is)."""
    check_metric(metric)
    h = price_history(source, filters, since=since, until=until, resolution=resolution, tolerance=tolerance)
    if metric == "cost-per-tflop":
        return cost_per_tflop_history(h, basis, catalog)
    if metric == "breakeven-months":
        return breakeven_history(h, catalog=catalog)
    return h
