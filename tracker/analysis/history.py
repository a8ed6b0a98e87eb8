"""Price history per GPU on an hour/day/week grid: the market (min, p25, median across
providers) and each provider's own line; cost-per-TFLOP and break-even series derived from it.

How a bucket gets its numbers:

1. every stored interval that counts in the bucket counts (``db.spans``, the bucket rule:
   observed during it, or, for buckets finer than the collection interval, held into it);
   whole buckets are read from the hourly/daily roll-ups, the partial buckets at either end of
   the range (a range starting at 14:20 counts only prices in effect from 14:20 on), region
   filters, week buckets and caller-given collection intervals that move a price into other
   buckets from raw intervals (``provider_buckets``). Both give the same numbers (a property test
   on both backends). Before the raw-retention horizon only roll-ups are left: a partial bucket
   there is answered by its whole roll-up bucket;
2. a provider's value is the lowest USD per GPU-hour among its offers of that GPU in the
   bucket (a price cut at 14:00 makes the day's value the new price);
3. the market columns are taken *across providers* (each provider's value once; ``market``), so
   a marketplace listing 500 hosts does not outweigh a cloud listing one: ``min`` is the
   cheapest provider, ``median`` the typical provider, ``p25`` in between (linear
   interpolation, so with one provider all three are its price). An aggregator's offers of a
   cloud we also collect directly count as that cloud's (``tracker.analysis.aggregators``: the
   roll-ups keep each aggregator's clouds apart, ``db.via``), so no cloud counts twice; the
   per-provider lines stay each stored provider's own.

A bucket no interval touches is ``NaN`` in the market (the grid is complete, gaps included) and
has no row per provider. Nothing is forward-filled.

Derived metrics transform each price the same way: ``cost-per-tflop`` is the price divided by
the GPU's dense TFLOPS on the chosen basis (USD per TFLOP-hour), and ``breakeven-months`` is
purchase price / (price x 730 h) -- how many months of 24/7 rent cost as much as buying the
card. So the ``min`` column of a break-even series is the break-even *at the cheapest rent*
(the longest one).

Plain Python on a ``db.reader.Reader`` (the store's own driver for the CLI): no pandas or numpy
is imported, so ``gpu-tracker history`` starts in a fraction of the time. ``History.market``,
``by_provider`` and ``wide()`` give the answer as DataFrames for the callers that chart or
export it (pandas is imported then).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from db import sql as q
from db import via
from db.asof import provider_intervals
from db.plain_reads import Labels, provider_lows, raw_horizon, raw_rows
from db.reader import Reader, reading
from db.spans import DAY, DEFAULT_INTERVAL_S, HOUR, floor, hold_end, origin, span
from db.times import epoch, from_epoch, utcnow
from tracker.analysis import specs
from tracker.analysis.aggregators import market_values
from tracker.analysis.grid import (
    HOURS_PER_MONTH,
    MAX_GRID_ROWS,
    METRICS,
    Filters,
    Resolution,
    Tolerance,
    check_dates,
    check_range,
    grid_starts,
    tolerance_lookup,
    too_many_rows,
)
from tracker.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

#: What to do when a history is empty or a single point (CLI notes, charts, API notes).
HOW_TO_GET_HISTORY = ("collect over time with `gpu-tracker run` (or `gpu-tracker scrape` now and then), "
                      "or load older prices with `gpu-tracker import FILE`")
MARKET_COLUMNS = ["time", "gpu", "min", "p25", "median", "providers", "offers"]
PROVIDER_COLUMNS = ["time", "gpu", "provider", "value"]
#: Fixed columns of the wide export (``history --format csv``); any other column is a provider.
EXPORT_COLUMNS = ["time", "gpu", "metric", "unit", "kinds", "min", "p25", "median", "providers", "offers"]
_ROLLUP_STEPS = {Resolution.hour: HOUR, Resolution.day: DAY}
#: One provider's value in one bucket: (bucket start, gpu id, provider id, lowest price, offers).
Bucket = tuple[int, int, int, float, int]

__all__ = ["HOW_TO_GET_HISTORY", "METRICS", "History", "history", "price_history"]


def unit(metric: str, basis: str | None) -> str:
    if metric == "price":
        return "USD/GPU-h"
    if metric == "cost-per-tflop":
        return f"USD/TFLOP-h ({basis})"
    return "months of 24/7 rent"


def check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ConfigError(f"--metric: {metric!r} is not one of {', '.join(METRICS)}")


# --- the market rule -----------------------------------------------------------------------


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile ``q`` of ascending ``ordered`` (as pandas and numpy compute it)."""
    pos = q * (len(ordered) - 1)
    below = math.floor(pos)
    frac = pos - below
    a = ordered[below]
    b = ordered[min(below + 1, len(ordered) - 1)]
    return a if frac == 0 else a + (b - a) * frac


def median(ordered: Sequence[float]) -> float:
    """Median of ascending ``ordered`` (the mean of the two middle values of an even count)."""
    n = len(ordered)
    a, b = ordered[(n - 1) // 2], ordered[n // 2]
    return a if n % 2 == 1 else (a + b) / 2


def market(values: Iterable[float]) -> tuple[float, float, float]:
    """The market figures of one bucket from each provider's value in it: (min, p25, median),
    NaN when no provider has one."""
    ordered = sorted(v for v in values if not math.isnan(v))
    if not ordered:
        return math.nan, math.nan, math.nan
    return ordered[0], quantile(ordered, 0.25), median(ordered)


# --- each provider's value per bucket ------------------------------------------------------


class Scope:
    """The label ids of a query's filters, and the collection intervals prices hold for."""

    def __init__(self, reader: Reader, f: Filters, tolerance: Tolerance | None) -> None:
        self.labels = Labels(reader)
        lab = self.labels
        self.regions = f.regions
        self.gpu_ids = lab.lookup("gpu", f.gpus) if f.gpus is not None else sorted(lab.names("gpu"))
        names = lab.names("provider")
        #: roll-ups are read by series key: a provider's composite keys come with it (``db.via``)
        self.provider_ids = via.expand(names, lab.lookup("provider", f.providers)) if f.providers else None
        self.reader = reader
        self.kind_ids = lab.lookup("kind", f.kinds) if f.kinds else None
        usd = lab.lookup("currency", ["USD"])
        self.usd = usd[0] if usd else -1
        self.stored = provider_intervals(reader)
        owner = via.owners(names)
        self.stored |= {k: self.stored[p] for k, p in owner.items() if p in self.stored}
        self.tolerance = tolerance
        longest = max([*self.stored.values(), DEFAULT_INTERVAL_S])
        self.given: dict[int, int] | None = None
        if tolerance is not None:
            tol = tolerance_lookup(tolerance)
            self.given = {pid: int(tol(via.split(name)[0]).total_seconds()) for pid, name in names.items()}
            longest = max([longest, *self.given.values()])
        #: The longest a price may hold past its last observation: the bound a read of "in effect
        #: from t" puts on ``last_seen``.
        self.longest = longest

    def interval_s(self, provider_id: int) -> int:
        if self.given is not None:
            return self.given.get(provider_id, DEFAULT_INTERVAL_S)
        return self.stored.get(provider_id, DEFAULT_INTERVAL_S)

    def offer_keys(self, rows: Iterable[tuple[int, int]]) -> dict[int, int]:
        """The series key of each aggregator offer among ``rows`` ((offer, provider) ids) that
        names a cloud (``db.via``); other offers' key is their provider's id."""
        return via.offer_keys(self.reader, self.labels.names("provider"), rows)

    def where(self, params: dict[str, Any], alias: str = "i") -> str:
        """The ``WHERE`` of the intervals in scope on ``price_interval`` alias ``alias``."""
        return q.interval_terms(alias, params, self.gpu_ids, self.provider_ids, self.kind_ids, self.usd, self.regions)

    def raw(self, reader: Reader, lo: int | None, hi: int | None) -> list[tuple[Any, ...]]:
        """The intervals in scope that may be in effect in ``[lo, hi]`` (``RAW_COLUMNS``), in the
        order the bucket rule reads them (offer, ``first_seen``, id)."""
        rows = raw_rows(reader, self.gpu_ids, None if lo is None else lo - self.longest, hi, self.provider_ids,
                        self.kind_ids, self.usd, self.regions)
        rows.sort(key=lambda r: (int(r[1]), int(r[6]), int(r[0])))
        return rows

    def tolerance_agrees(self, step: int) -> bool:
        """The given collection intervals put every price in the buckets the roll-ups were built
        with (equal to the stored ones, or both no longer than a bucket)."""
        if self.given is None:
            return True
        in_scope = self.provider_ids if self.provider_ids is not None else sorted(self.labels.names("provider"))
        for pid in in_scope:
            given, have = self.given[pid], self.stored.get(pid, DEFAULT_INTERVAL_S)
            if given != have and not (given <= step and have <= step):
                return False
        return True


def _raw_buckets(reader: Reader, scope: Scope, step: int, lo: int, hi: int,
                 max_rows: int | None = None) -> list[Bucket]:
    """Each series key's (a provider's, or an aggregator's per cloud: ``db.via``) lowest price and
    distinct offers per bucket of ``step`` holding ``[lo, hi]``, from the raw intervals in effect then."""
    if not scope.gpu_ids:
        return []
    rows = scope.raw(reader, lo, hi)
    o = origin(step)
    b_lo, b_hi = (lo - o) // step, (hi - o) // step
    groups: dict[tuple[int, int, int], tuple[float, set[int]]] = {}
    keys = scope.offer_keys((int(r[1]), int(r[2])) for r in rows)
    total = 0
    for k, (_id, offer, provider, gpu, _kind, price, first_seen, last_seen, ends_at) in enumerate(rows):
        nxt = rows[k + 1] if k + 1 < len(rows) else None
        next_seen = int(nxt[6]) if nxt is not None and int(nxt[1]) == int(offer) else None
        interval_s = scope.interval_s(int(provider))
        ends = None if ends_at is None else int(ends_at)
        if hold_end(int(last_seen), ends, interval_s) <= lo:
            continue
        first, last = span(int(first_seen), int(last_seen), ends, interval_s, next_seen, step)
        first, last = max(first, b_lo), min(last, b_hi)
        total += max(last - first + 1, 0)
        if max_rows is not None and total > max_rows:
            raise OverflowError(total)
        for b in range(first, last + 1):
            key = (o + b * step, int(gpu), keys.get(int(offer), int(provider)))
            have = groups.get(key)
            if have is None:
                groups[key] = (float(price), {int(offer)})
            else:
                have[1].add(int(offer))
                if float(price) < have[0]:
                    groups[key] = (float(price), have[1])
    return [(b, g, p, v, len(offers)) for (b, g, p), (v, offers) in groups.items()]


def provider_buckets(reader: Reader, f: Filters, res: Resolution, lo: int, hi: int, tolerance: Tolerance | None,
                     *, use_rollups: bool = True) -> tuple[list[Bucket], Labels, str]:
    """Each provider's value per bucket of the grid from ``lo`` to ``hi`` (epoch seconds): the
    roll-ups for whole buckets, raw intervals elsewhere (see the module docstring); the labels
    read, and which data answered (``"rollups"``, ``"rollups+raw"`` or ``"raw"``).
    ``use_rollups=False``: raw intervals alone (what the roll-ups are held equal to)."""
    scope = Scope(reader, f, tolerance)

    def all_raw() -> tuple[list[Bucket], Labels, str]:
        try:
            return _raw_buckets(reader, scope, res.seconds, lo, hi, MAX_GRID_ROWS), scope.labels, "raw"
        except OverflowError as exc:
            raise too_many_rows(exc.args[0], res) from None

    step = _ROLLUP_STEPS.get(res)
    if step is None or f.regions or not use_rollups:
        return all_raw()
    first_full = floor(lo, step) + (0 if lo % step == 0 else step)
    last_full = floor(hi + 1, step) - step  # the last bucket ending by ``hi``
    if last_full < first_full:
        return all_raw()
    if not scope.gpu_ids:
        return [], scope.labels, "rollups"
    if not scope.tolerance_agrees(step):
        return all_raw()
    horizon = raw_horizon(reader)
    if lo < horizon:  # raw intervals there were pruned: the whole first bucket is what is known
        first_full = floor(lo, step)
    if hi < horizon:
        last_full = floor(hi, step)
    out = [(b, g, p, v, n) for g, b, p, v, n in provider_lows(
        reader, step, gpu_ids=scope.gpu_ids, lo=first_full, hi=last_full, provider_ids=scope.provider_ids,
        kind_ids=scope.kind_ids)]
    source = "rollups"
    if lo < first_full:
        out += _raw_buckets(reader, scope, step, lo, first_full - 1)
        source = "rollups+raw"
    if last_full + step <= hi:
        out += _raw_buckets(reader, scope, step, last_full + step, hi)
        source = "rollups+raw"
    return out, scope.labels, source


def first_price(reader: Reader, f: Filters, until: int | None = None) -> int | None:
    """When the first stored USD price matching ``f`` (and starting by ``until``) was first seen."""
    scope = Scope(reader, f, None)
    params: dict[str, Any] = {}
    sql = f"SELECT MIN(i.first_seen) FROM price_interval i WHERE {scope.where(params)}"
    if until is not None:
        sql += " AND i.first_seen <= :until"
        params["until"] = until
    value = reader.scalar(sql, params)
    return None if value is None else int(value)


# --- the answer ----------------------------------------------------------------------------


def _nan_to_none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


@dataclass
class History:
    """A history result. ``market_rows`` is the complete grid per GPU (``MARKET_COLUMNS``; gaps
    are NaN); ``provider_rows`` (``PROVIDER_COLUMNS``, by gpu, provider and time) has a row only
    where the provider had a price."""

    metric: str
    unit: str
    resolution: Resolution
    since: datetime
    until: datetime
    kinds: tuple[str, ...] | None
    market_rows: list[dict[str, Any]]
    provider_rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> list[str]:
        return sorted({r["gpu"] for r in self.market_rows})

    @property
    def providers(self) -> list[str]:
        return sorted({r["provider"] for r in self.provider_rows})

    def rows(self) -> list[dict[str, Any]]:
        """One row per (time, gpu): ``EXPORT_COLUMNS``, then one column per provider with a value
        (``None``: no value in that bucket)."""
        shown = {(r["time"], r["gpu"], r["provider"]): r["value"] for r in self.provider_rows}
        columns = sorted({p for (_t, _g, p), v in shown.items() if not math.isnan(v)})
        kinds = ",".join(self.kinds) if self.kinds else "all"
        out = []
        for m in self.market_rows:
            row: dict[str, Any] = {"time": m["time"], "gpu": m["gpu"], "metric": self.metric, "unit": self.unit,
                                   "kinds": kinds, "min": _nan_to_none(m["min"]), "p25": _nan_to_none(m["p25"]),
                                   "median": _nan_to_none(m["median"]), "providers": m["providers"], "offers": m["offers"]}
            for p in columns:
                row[p] = _nan_to_none(shown.get((m["time"], m["gpu"], p)))
            out.append(row)
        return out

    # pandas forms, for charts and exports (pandas is imported by the callers that use them)
    @property
    def market(self) -> pd.DataFrame:
        return _frame(self.market_rows, MARKET_COLUMNS)

    @property
    def by_provider(self) -> pd.DataFrame:
        return _frame(self.provider_rows, PROVIDER_COLUMNS)

    def provider_series(self, gpu: str, provider: str) -> pd.Series:
        """One provider's values for one GPU on the full grid (NaN where it had no price)."""
        import pandas as pd

        values = {r["time"]: r["value"] for r in self.provider_rows if r["gpu"] == gpu and r["provider"] == provider}
        times = [m["time"] for m in self.market_rows if m["gpu"] == gpu]
        return pd.Series([values.get(t, math.nan) for t in times], index=pd.DatetimeIndex(times, name="time"),
                         name="value", dtype=float)

    def wide(self) -> pd.DataFrame:
        """``rows()`` as a frame (NaN for no value)."""
        import pandas as pd

        rows = self.rows()
        columns = [*EXPORT_COLUMNS, *sorted({k for r in rows[:1] for k in r} - set(EXPORT_COLUMNS))]
        df = pd.DataFrame(rows, columns=columns)
        for c in columns:
            if c not in ("time", "gpu", "metric", "unit", "kinds", "providers", "offers"):
                df[c] = df[c].astype(float)
        return df

    def convert(self, metric: str, factor: dict[str, float], unit_: str, notes: list[str]) -> History:
        """The history in ``metric``: each value ``v`` of a GPU becomes ``factor[gpu] / v``
        (break-even: dividing flips the order, so ``min`` keeps meaning "from the cheapest price")
        or ``v * factor[gpu]`` (per TFLOP); NaN where the factor is."""

        def one(gpu: str, v: float) -> float:
            f = factor.get(gpu, math.nan)
            return _divide(f, v) if metric == "breakeven-months" else v * f

        market_rows = [{**m, **{c: one(m["gpu"], m[c]) for c in ("min", "p25", "median")}} for m in self.market_rows]
        provider_rows = [{**r, "value": one(r["gpu"], r["value"])} for r in self.provider_rows]
        return replace(self, metric=metric, unit=unit_, market_rows=market_rows, provider_rows=provider_rows,
                       notes=[*self.notes, *notes])


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(rows, columns=columns)
    if rows:
        df["time"] = pd.to_datetime(df["time"], utc=True)
    return df


def _divide(a: float, b: float) -> float:
    """``a / b`` as floats divide in numpy (no exception at zero)."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _utc(t: datetime) -> datetime:
    if hasattr(t, "to_pydatetime"):
        t = t.to_pydatetime()
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def answer(buckets: list[Bucket], labels: Labels, res: Resolution, lo: int, hi: int
           ) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """The GPUs, market rows and provider rows of a grid from each provider's bucket values."""
    names = labels.names("gpu") | labels.names("provider")  # ids are unique across spaces
    times = grid_starts(res, lo, hi)
    when = {t: from_epoch(t) for t in times}
    gpus = sorted({names[g] for _b, g, _p, _v, _n in buckets})
    cells: dict[tuple[str, int], list[tuple[str, float]]] = {}
    offers: dict[tuple[str, int], int] = {}
    lines: dict[tuple[str, str, int], float] = {}  # each stored provider's value: its keys' lowest
    for b, g, p, v, n in buckets:
        own = (names[g], via.split(names[p])[0], b)
        lines[own] = v if own not in lines or v < lines[own] else lines[own]
        if b in when:
            key = (names[g], b)
            offers[key] = offers.get(key, 0) + n
            cells.setdefault(key, []).append((names[p], v))
    provider_rows = [{"time": when.get(b) or from_epoch(b), "gpu": gpu, "provider": provider, "value": v}
                     for (gpu, provider, b), v in sorted(lines.items())]
    market_rows = []
    for gpu in gpus:
        for t in times:
            values = market_values(cells.get((gpu, t), ()))  # one value per market provider
            low, p25, mid = market(values.values())
            market_rows.append({"time": when[t], "gpu": gpu, "min": low, "p25": p25, "median": mid,
                                "providers": len(values), "offers": offers.get((gpu, t), 0)})
    return gpus, market_rows, provider_rows


def price_history(
    source: Any,
    filters: Filters | None = None,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    resolution: Resolution | str = Resolution.day,
    tolerance: Tolerance | None = None,
    use_rollups: bool = True,
) -> History:
    """USD per GPU-hour history for the GPUs in ``filters`` (every mapped GPU when ``None``).

    ``source``: a ``db.reader.Reader``, a SQLAlchemy ``Engine``, ``Connection`` or ``Session``.
    ``since`` defaults to the first stored price, ``until`` to now."""
    res = Resolution.parse(resolution)
    f = filters or Filters()
    check_dates(since=since, until=until)
    until = _utc(until) if until is not None else utcnow()
    with reading(source) as reader:
        if since is None:
            first = first_price(reader, f, epoch(until))
            since = from_epoch(first) if first is not None else until
        else:
            since = _utc(since)
        if since > until:
            raise ConfigError(f"history: the range starts ({since}) after it ends ({until})")
        check_range(res, since, until)
        lo, hi = epoch(since), epoch(until)
        buckets, labels, _source = provider_buckets(reader, f, res, lo, hi, tolerance, use_rollups=use_rollups)
    gpus, market_rows, provider_rows = answer(buckets, labels, res, lo, hi)
    notes: list[str] = []
    if not gpus:
        what = ", ".join(f.gpus) if f.gpus else "any GPU"
        notes.append(f"no stored prices in range for {what} with these filters; {HOW_TO_GET_HISTORY}")
    else:  # a range of several buckets with a price in at most one: a dot, not a line
        points: dict[str, int] = {}
        for m in market_rows:
            points[m["gpu"]] = points.get(m["gpu"], 0) + (0 if math.isnan(m["min"]) else 1)
        single = sorted(g for g in gpus if points[g] <= 1 and len(market_rows) > len(gpus))
        if single:
            notes.append(f"{', '.join(single)}: one point of history in this range, so no line to draw; "
                         f"{HOW_TO_GET_HISTORY}")
    return History("price", unit("price", None), res, since, until, f.kinds, market_rows, provider_rows, notes)


def cost_per_tflop_history(h: History, basis: str | None = None, catalog: specs.Catalog | None = None) -> History:
    """Price history -> USD per TFLOP-hour on ``basis`` (``fp16-dense`` unless told otherwise)."""
    basis = specs.check_basis(basis)
    factor: dict[str, float] = {}
    notes = []
    for gpu in h.gpus:
        t = specs.tflops(specs.spec_for(gpu, catalog), basis)
        factor[gpu] = (1.0 / t) if t else math.nan
        if not t:
            notes.append(f"{gpu}: no {basis} TFLOPS in the catalog; its cost per TFLOP is left empty")
    return h.convert("cost-per-tflop", factor, unit("cost-per-tflop", basis), notes)


def breakeven_history(
    h: History,
    purchase: dict[str, float] | None = None,
    utilization: float = 1.0,
    catalog: specs.Catalog | None = None,
) -> History:
    """Price history -> months of renting (at ``utilization``) that cost the purchase price."""
    if not 0 < utilization <= 1:
        raise ConfigError(f"--utilization: {utilization} must be in (0, 1]")
    factor: dict[str, float] = {}
    notes = []
    for gpu in h.gpus:
        spec = specs.spec_for(gpu, catalog)
        price = (purchase or {}).get(gpu) or (spec.purchase_price_usd if spec else None)
        factor[gpu] = price / (HOURS_PER_MONTH * utilization) if price else math.nan
        if not price:
            notes.append(f"{gpu}: no purchase price in the catalog; its break-even is left empty")
    unit_ = "months of 24/7 rent" if utilization == 1 else f"months of rent at {utilization:.0%} use"
    return h.convert("breakeven-months", factor, unit_, notes)


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
    source: Any,
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
