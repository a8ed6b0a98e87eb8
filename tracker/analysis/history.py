"""Price history per GPU on an hour/day/week grid: the market (min, p25, median across
providers) and each provider's own line; cost-per-TFLOP and break-even series derived from it.

How a bucket gets its numbers:

1. every stored interval that counts in the bucket counts (``db.spans``, the bucket rule:
   observed during it, or, for buckets finer than the collection interval, held into it);
   whole buckets are read from the hourly/daily roll-ups, the partial buckets at either end of
   the range (a range starting at 14:20 counts only prices in effect from 14:20 on), region
   filters, week buckets and caller-given collection intervals that move a price into other
   buckets from raw intervals (``provider_runs``). Both give the same numbers (a property test
   on both backends). Before the raw-retention horizon only roll-ups are left: a partial bucket
   there is answered by its whole roll-up bucket;
2. a provider's value is the lowest USD per GPU-hour among its offers of that GPU in the
   bucket (a price cut at 14:00 makes the day's value the new price);
3. the market columns (``min``, ``p25``, ``median``) are taken *across providers* by the
   market rule (``tracker.analysis.market``: each provider's value once, an aggregator's offers
   of a cloud we also collect directly as that cloud's); the per-provider lines stay each stored
   provider's own.

Every figure is computed over runs of buckets with one value, never bucket by bucket: roll-up
runs, day rows and raw intervals become each series key's runs (``db.spans.lows``), and the
market changes only where some provider's run starts or ends (``market.sweep``), so an hourly
year costs what its runs cost, not hours times providers.

A bucket no interval touches is ``NaN`` in the market (the grid is complete, gaps included) and
has no row per provider. Nothing is forward-filled.

Derived metrics transform each price the same way: ``cost-per-tflop`` is the price divided by
the GPU's dense TFLOPS on the chosen basis (USD per TFLOP-hour), and ``breakeven-months`` is
purchase price / (price x 730 h) -- how many months of 24/7 rent cost as much as buying the
card. So the ``min`` column of a break-even series is the break-even *at the cheapest rent*
(the longest one).

Plain Python on a ``db.reader.Reader`` (the store's own driver for the CLI): no pandas or numpy
is imported, so ``gpu-tracker history`` starts in a fraction of the time. ``History.market``,
``by_provider`` and ``wide()`` give the answer as DataFrames (pandas is imported then).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from db import reads
from db.reader import Reader
from db.reads import (
    Labels,
    provider_intervals,
    provider_low_runs,
    raw_horizon,
    raw_rows,
)
from db.spans import (
    DAY,
    DEFAULT_INTERVAL_S,
    HOUR,
    Piece,
    Run,
    epoch,
    floor,
    from_epoch,
    hold_end,
    lows,
    origin,
    span,
)
from tracker.analysis import specs
from tracker.analysis.grid import (
    MAX_GRID_ROWS,
    METRICS,
    Filters,
    RangeAnswer,
    Resolution,
    Tolerance,
    grid_starts,
    time_range,
    tolerance_lookup,
    too_many_rows,
)
from tracker.analysis.market import NO_MARKET, sweep
from tracker.catalog.value import breakeven_hours, column_header, months_for_hours
from tracker.cells import EXPORT_COLUMNS
from tracker.errors import ConfigError
from tracker.repeats import Repeats

if TYPE_CHECKING:
    import pandas as pd

#: What to do when a history is empty or a single point (CLI notes, charts, API notes).
HOW_TO_GET_HISTORY = ("collect over time with `gpu-tracker run` (or `gpu-tracker scrape` now and then), "
                      "or load older prices with `gpu-tracker import FILE`")
MARKET_COLUMNS = ["time", "gpu", "min", "p25", "median", "providers", "offers"]
PROVIDER_COLUMNS = ["time", "gpu", "provider", "value"]
_ROLLUP_STEPS = {Resolution.hour: HOUR, Resolution.day: DAY}

__all__ = ["HOW_TO_GET_HISTORY", "METRICS", "History", "history", "price_history"]


def check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ConfigError(f"--metric: {metric!r} is not one of {', '.join(METRICS)}")


# --- each provider's value per bucket ------------------------------------------------------


class Scope:
    """The label ids of a query's filters, and the collection intervals prices hold for."""

    def __init__(self, reader: Reader, f: Filters, tolerance: Tolerance | None) -> None:
        self.reader = reader
        self.labels = lab = Labels(reader)
        self.regions = f.regions
        self.gpu_ids = lab.lookup("gpu", f.gpus)
        names = lab.names("provider")
        self.names = lab.names("gpu") | names  # GPU and provider names by id (ids are unique across spaces)
        #: roll-ups are read by series key: a provider's composite keys come with it (``db.reads``)
        self.provider_ids = reads.expand(names, lab.lookup("provider", f.providers)) if f.providers else None
        self.kind_ids = lab.lookup("kind", f.kinds) if f.kinds else None
        self.usd = lab.usd
        self.stored = provider_intervals(reader)
        self.stored |= {k: self.stored[p] for k, p in reads.owners(names).items() if p in self.stored}
        self.given: dict[int, int] | None = None
        if tolerance is not None:
            tol = tolerance_lookup(tolerance)
            self.given = {pid: int(tol(reads.split(name)[0]).total_seconds()) for pid, name in names.items()}
        #: The longest a price may hold past its last observation: the bound a read of "in effect
        #: from t" puts on ``last_seen``.
        self.longest = max([*self.stored.values(), *(self.given or {}).values(), DEFAULT_INTERVAL_S])
        self._raw: dict[tuple[int | None, int | None], list[tuple[Any, ...]]] = {}

    @property
    def holds(self) -> dict[int, int]:
        """Each provider id's collection interval as this scope counts it: the tolerance's when
        one is given, else the stored one (missing: ``DEFAULT_INTERVAL_S``)."""
        return self.stored if self.given is None else self.given

    def interval_s(self, provider_id: int) -> int:
        return self.holds.get(provider_id, DEFAULT_INTERVAL_S)

    def offer_keys(self, rows: Iterable[tuple[int, int]]) -> dict[int, int]:
        """The series key of each aggregator offer among ``rows`` ((offer, provider) ids) that
        names a cloud (``db.reads``); other offers' key is their provider's id."""
        return reads.offer_keys(self.reader, self.labels.names("provider"), rows)

    def where(self, params: dict[str, Any]) -> str:
        """The ``WHERE`` of the intervals in scope on ``price_interval i``."""
        return reads.interval_terms("i", params, self.gpu_ids, self.provider_ids, self.kind_ids, self.usd, self.regions)

    def raw(self, lo: int | None, hi: int | None) -> list[tuple[Any, ...]]:
        """The intervals in scope that may be in effect in ``[lo, hi]`` (``RAW_COLUMNS``), in the
        order the bucket rule reads them (offer, ``first_seen``, id); read once per range (a
        trend table asks for its moment's twice: its market now and its daily lows' last day)."""
        rows = self._raw.get((lo, hi))
        if rows is None:
            rows = raw_rows(self.reader, self.gpu_ids, None if lo is None else lo - self.longest, hi, self.provider_ids,
                            self.kind_ids, self.usd, self.regions)
            rows.sort(key=itemgetter(1, 6, 0))
            self._raw[(lo, hi)] = rows
        return rows

    def tolerance_agrees(self, step: int) -> bool:
        """The given collection intervals put every price in the buckets the roll-ups were built
        with (equal to the stored ones, or both no longer than a bucket)."""
        if self.given is None:
            return True
        in_scope = self.provider_ids if self.provider_ids is not None else self.labels.names("provider")
        have = {pid: self.stored.get(pid, DEFAULT_INTERVAL_S) for pid in in_scope}
        return all(self.given[pid] == s or max(self.given[pid], s) <= step for pid, s in have.items())


def _raw_runs(scope: Scope, step: int, lo: int, hi: int,
              max_rows: int | None = None) -> dict[tuple[int, int], list[Run]]:
    """Each series key's (a provider's, or an aggregator's per cloud: ``db.reads``) value (lowest
    price, distinct offers) over the buckets of ``step`` holding ``[lo, hi]``, as runs per (gpu
    id, key id), from the raw intervals in effect then: each interval counts in the buckets of
    the bucket rule (``db.spans.span``), each offer once over the union of its intervals' buckets."""
    if not scope.gpu_ids:
        return {}
    rows = scope.raw(lo, hi)
    o = origin(step)
    b_lo, b_hi = (lo - o) // step, (hi - o) // step
    pieces: dict[tuple[int, int], list[Piece]] = {}
    keys = scope.offer_keys((r[1], r[2]) for r in rows)
    holds = scope.holds
    total = 0
    held: dict[tuple[int, int], list[int]] = {}  # the current offer's union of buckets per (gpu, provider)
    # integers and floats from both drivers: one pass, no conversions (an hourly year is a million rows)
    for k, (_id, offer, provider, gpu, _kind, price, first_seen, last_seen, ends_at) in enumerate(rows, 1):
        nxt = rows[k] if k < len(rows) else None
        same_next = nxt is not None and nxt[1] == offer
        interval_s = holds.get(provider, DEFAULT_INTERVAL_S)  # scope.interval_s
        if hold_end(last_seen, ends_at, interval_s) > lo:
            first, last = span(first_seen, last_seen, ends_at, interval_s, nxt[6] if same_next else None, step)
            first, last = max(first, b_lo), min(last, b_hi)
            if last >= first:
                total += last - first + 1
                if max_rows is not None and total > max_rows:
                    raise OverflowError(total)
                key = (gpu, keys.get(offer, provider))
                pieces.setdefault(key, []).append((first, last, price, 0))
                union = held.get(key)
                if union is not None and first <= union[1] + 1:
                    union[1] = max(union[1], last)
                else:
                    if union is not None:
                        pieces[key].append((union[0], union[1], None, 1))
                    held[key] = [first, last]
        if not same_next:  # the offer's last interval: its buckets are known
            for done, (a, b) in held.items():
                pieces[done].append((a, b, None, 1))
            held = {}
    return {key: lows(ps) for key, ps in pieces.items()}


def _merge(into: dict[tuple[int, int], list[Run]], more: dict[tuple[int, int], list[Run]]) -> None:
    """Add runs of other buckets (never overlapping ``into``'s) to ``into``."""
    for key, runs in more.items():
        into[key] = sorted([*into.get(key, []), *runs])


def provider_runs(reader: Reader, f: Filters, res: Resolution, lo: int, hi: int, tolerance: Tolerance | None,
                  *, use_rollups: bool = True, scope: Scope | None = None
                  ) -> tuple[dict[tuple[int, int], list[Run]], Scope, str]:
    """Each provider's value over the buckets of the grid from ``lo`` to ``hi`` (epoch seconds),
    as runs of bucket indices per (gpu id, provider id) (``db.spans.Run``; bucket start =
    ``res.origin_s + index * res.seconds``): the roll-ups for whole buckets, raw intervals
    elsewhere (see the module docstring); the scope read, and which data answered
    (``"rollups"``, ``"rollups+raw"`` or ``"raw"``). ``use_rollups=False``: raw intervals alone
    (what the roll-ups are held equal to); ``scope``: the caller's of the same filters and tolerance."""
    scope = scope or Scope(reader, f, tolerance)

    def all_raw() -> tuple[dict[tuple[int, int], list[Run]], Scope, str]:
        try:
            return _raw_runs(scope, res.seconds, lo, hi, MAX_GRID_ROWS), scope, "raw"
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
        return {}, scope, "rollups"
    if not scope.tolerance_agrees(step):
        return all_raw()
    horizon = raw_horizon(reader)
    if lo < horizon:  # raw intervals there were pruned: the whole first bucket is what is known
        first_full = floor(lo, step)
    if hi < horizon:
        last_full = floor(hi, step)
    out = provider_low_runs(reader, step, gpu_ids=scope.gpu_ids, lo=first_full, hi=last_full,
                            provider_ids=scope.provider_ids, kind_ids=scope.kind_ids)
    source = "rollups"
    if lo < first_full:
        _merge(out, _raw_runs(scope, step, lo, first_full - 1))
        source = "rollups+raw"
    if last_full + step <= hi:
        _merge(out, _raw_runs(scope, step, last_full + step, hi))
        source = "rollups+raw"
    return out, scope, source


def first_price(reader: Reader, f: Filters, until: int) -> int | None:
    """When the first stored USD price matching ``f`` and starting by ``until`` was first seen."""
    params: dict[str, Any] = {}
    return reads.first_seen(reader, Scope(reader, f, None).where(params), params, until)


# --- the answer ----------------------------------------------------------------------------


#: One provider's values over a run of buckets: (gpu, provider, first bucket start, last bucket
#: start, value), epoch seconds.
ProviderRun = tuple[str, str, int, int, float]
#: The market of one GPU over a run of buckets of the grid: first and last index into
#: ``History.grid``, (min, p25, median), providers, offers.
GridRun = tuple[int, int, tuple[float, float, float], int, int]


@dataclass
class History(RangeAnswer):
    """A history result. ``grid`` is every bucket start of the range; ``market_runs`` holds, per
    GPU in order, its market over the whole grid as runs of buckets with one market (gaps are
    NaN with no providers); ``market_rows`` (``MARKET_COLUMNS``) spells them out one bucket at a
    time. ``provider_runs`` (by gpu, provider and time) holds each provider's values as runs of
    buckets with one value, only where the provider had a price; ``provider_rows``
    (``PROVIDER_COLUMNS``) spells them out one bucket at a time."""

    metric: str
    unit: str
    grid: list[datetime]
    market_runs: dict[str, list[GridRun]]
    provider_runs: list[ProviderRun]
    notes: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> list[str]:
        return list(self.market_runs)

    @property
    def providers(self) -> list[str]:
        return sorted({r[1] for r in self.provider_runs})

    @cached_property
    def market_rows(self) -> list[dict[str, Any]]:
        """The complete grid per GPU, one mapping per bucket (``MARKET_COLUMNS``; gaps are NaN)."""
        return [{"time": t, "gpu": gpu, "min": f[0], "p25": f[1], "median": f[2], "providers": n, "offers": k}
                for gpu, runs in self.market_runs.items() for a, b, f, n, k in runs for t in self.grid[a:b + 1]]

    @property
    def provider_rows(self) -> list[dict[str, Any]]:
        step = self.resolution.seconds
        when = {t.timestamp(): t for t in self.grid}
        return [{"time": when.get(t) or from_epoch(t), "gpu": gpu, "provider": provider, "value": v}
                for gpu, provider, first, last, v in self.provider_runs for t in range(first, last + 1, step)]

    def _provider_lines(self, gpu: str | None = None) -> dict[str, dict[str, list[tuple[float | None, int]]]]:
        """Per GPU (only ``gpu`` when given), each provider's values over the whole grid as
        (value, buckets) runs in order (``None``: no value)."""
        step, n = self.resolution.seconds, len(self.grid)
        t0 = int(self.grid[0].timestamp()) if self.grid else 0
        out: dict[str, dict[str, list[tuple[float | None, int]]]] = {
            g: {} for g in self.market_runs if gpu is None or g == gpu}
        for (g, provider), group in groupby(self.provider_runs, itemgetter(0, 1)):  # runs by gpu, provider, time
            if g not in out:
                continue
            line: list[tuple[float | None, int]] = []
            at = 0  # the first bucket the line leaves open
            for _g, _p, first, last, v in group:
                a, b = max((first - t0) // step, 0), min((last - t0) // step, n - 1)
                if b < a:
                    continue
                if a > at:
                    line.append((None, a - at))
                line.append((None if v != v else v, b - a + 1))
                at = b + 1
            if line:
                if at < n:
                    line.append((None, n - at))
                out[g][provider] = line
        return out

    def provider_columns(self, gpu: str | None = None) -> dict[str, dict[str, list[float | None]]]:
        """Per GPU (only ``gpu`` when given), each provider's values on the grid (``None``: no value)."""
        return {g: {p: list(Repeats(line)) for p, line in lines.items()}
                for g, lines in self._provider_lines(gpu).items()}

    def columns(self) -> dict[str, Sequence[Any]]:
        """One row per (time, gpu) as columns (key -> values in row order): ``EXPORT_COLUMNS``,
        then one column per provider with a value (``None``: no value in that bucket). Every
        column but the time is a ``Repeats``: built, and shown, run by run."""
        providers = sorted({p for _g, p, _a, _b, v in self.provider_runs if not math.isnan(v)})
        kinds = ",".join(self.kinds) if self.kinds else "all"
        n = len(self.grid)
        lines = self._provider_lines()
        runs: dict[str, list[tuple[Any, int]]] = {k: [] for k in [*EXPORT_COLUMNS[1:], *providers]}
        for gpu, market in self.market_runs.items():
            for key, value in (("gpu", gpu), ("metric", self.metric), ("unit", self.unit), ("kinds", kinds)):
                runs[key].append((value, n))
            firsts, lasts, figures, counts, offers = zip(*market, strict=True)
            sizes = [b - a + 1 for a, b in zip(firsts, lasts, strict=True)]
            for key, values in zip(("min", "p25", "median"), zip(*figures, strict=True), strict=True):
                runs[key] += zip([None if v != v else v for v in values], sizes, strict=True)
            runs["providers"] += zip(counts, sizes, strict=True)
            runs["offers"] += zip(offers, sizes, strict=True)
            for p in providers:
                runs[p] += lines[gpu].get(p) or [(None, n)]
        return {"time": self.grid * len(self.market_runs), **{k: Repeats(r) for k, r in runs.items()}}

    def rows(self) -> list[dict[str, Any]]:
        """``columns()`` one mapping per row."""
        cols = self.columns()
        return [dict(zip(cols, cells, strict=True)) for cells in zip(*cols.values(), strict=True)]

    # pandas forms, for charts and exports (pandas is imported by the callers that use them)
    @property
    def market(self) -> pd.DataFrame:
        return _frame(self.market_rows, MARKET_COLUMNS)

    @property
    def by_provider(self) -> pd.DataFrame:
        return _frame(self.provider_rows, PROVIDER_COLUMNS)

    def wide(self) -> pd.DataFrame:
        """``columns()`` as a frame (NaN for no value)."""
        import pandas as pd

        cols = {k: list(v) for k, v in self.columns().items()}
        df = pd.DataFrame(cols) if self.market_runs else pd.DataFrame(columns=list(cols))  # no rows: no dtype guessed
        for c in df.columns:
            if c not in ("time", "gpu", "metric", "unit", "kinds", "providers", "offers"):
                df[c] = df[c].astype(float)
        return df

    def convert(self, metric: str, one: Callable[[str, float], float], unit_: str, notes: list[str]) -> History:
        """The history in ``metric``: each value ``v`` of a GPU becomes ``one(gpu, v)`` (break-even
        months flip the order, so ``min`` keeps meaning "from the cheapest price"), NaN where the
        GPU lacks the figure."""
        market = {gpu: [(a, b, (one(gpu, f[0]), one(gpu, f[1]), one(gpu, f[2])), n, k) for a, b, f, n, k in runs]
                  for gpu, runs in self.market_runs.items()}
        runs = [(g, p, a, b, one(g, v)) for g, p, a, b, v in self.provider_runs]
        return replace(self, metric=metric, unit=unit_, market_runs=market, provider_runs=runs,
                       notes=[*self.notes, *notes])


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(rows, columns=columns)
    if rows:
        df["time"] = pd.to_datetime(df["time"], utc=True)
    return df


def answer_runs(runs: dict[tuple[int, int], list[Run]], names: Mapping[int, str], res: Resolution, lo: int, hi: int
                ) -> tuple[list[datetime], dict[str, list[GridRun]], list[ProviderRun]]:
    """The grid, each GPU's market over all of it (in GPU order) and the provider runs of a grid
    from each series key's runs (by (gpu id, key id), named by ``Scope.names``): the market is
    computed once per run boundary (``market.sweep``), the buckets between are one run; each
    stored provider's line is the lowest of its keys' values."""
    times = grid_starts(res, lo, hi)
    step, o = res.seconds, res.origin_s
    b0 = (times[0] - o) // step
    b1 = b0 + len(times) - 1
    when = [from_epoch(t) for t in times]
    by_gpu: dict[str, dict[str, list[Run]]] = {}  # per GPU, each series key's runs
    for (g, p), key_runs in runs.items():
        # a key's runs are in order: cut only when the first or last passes the grid
        if key_runs and (key_runs[0][0] < b0 or key_runs[-1][1] > b1):
            key_runs = [(max(a, b0), min(b, b1), v, n) for a, b, v, n in key_runs if b >= b0 and a <= b1]
        if key_runs:
            by_gpu.setdefault(names[g], {})[names[p]] = key_runs
    provider_out: list[ProviderRun] = []  # by gpu, provider and time: each line's runs are in order
    market: dict[str, list[GridRun]] = {}
    for gpu in sorted(by_gpu):
        lines: dict[str, list[list[Run]]] = {}  # each stored provider's line: the lowest of its keys' values
        for key, key_runs in by_gpu[gpu].items():
            lines.setdefault(reads.split(key)[0], []).append(key_runs)
        for provider in sorted(lines):
            parts = lines[provider]
            line = parts[0] if len(parts) == 1 else lows((a, b, v, 0) for part in parts for a, b, v, _n in part)
            provider_out += [(gpu, provider, o + a * step, o + b * step, v) for a, b, v, _n in line]
        filled = market[gpu] = []
        at = 0  # the first bucket (grid index) not yet covered
        for a, b, figures, providers, offers in sweep(by_gpu[gpu]):
            if a - b0 > at:
                filled.append((at, a - b0 - 1, NO_MARKET, 0, 0))
            filled.append((a - b0, b - b0, figures, providers, offers))
            at = b - b0 + 1
        if at < len(times):
            filled.append((at, len(times) - 1, NO_MARKET, 0, 0))
    return when, market, provider_out


def price_history(
    reader: Reader,
    filters: Filters | None = None,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    resolution: Resolution | str = Resolution.day,
    tolerance: Tolerance | None = None,
    use_rollups: bool = True,
) -> History:
    """USD per GPU-hour history for the GPUs in ``filters`` (every mapped GPU when ``None``).

    ``reader``: the store's (``db.reader``).
    ``since`` defaults to the first stored price, ``until`` to now."""
    res = Resolution.parse(resolution)
    f = filters or Filters()
    since, until = time_range("history", res, since, until, lambda end: first_price(reader, f, epoch(end)))
    lo, hi = epoch(since), epoch(until)
    runs, scope, _source = provider_runs(reader, f, res, lo, hi, tolerance, use_rollups=use_rollups)
    grid, market, runs_out = answer_runs(runs, scope.names, res, lo, hi)
    notes: list[str] = []
    if not market:
        what = ", ".join(f.gpus) if f.gpus else "any GPU"
        notes.append(f"no stored prices in range for {what} with these filters; {HOW_TO_GET_HISTORY}")
    else:  # a range of several buckets with a price in at most one: a dot, not a line
        points = {gpu: sum(b - a + 1 for a, b, f, _n, _k in gpu_runs if not math.isnan(f[0]))
                  for gpu, gpu_runs in market.items()}
        single = sorted(g for g in market if points[g] <= 1 and len(grid) > 1)
        if single:
            notes.append(f"{', '.join(single)}: one point of history in this range, so no line to draw; "
                         f"{HOW_TO_GET_HISTORY}")
    return History(res, since, until, f.kinds, "price", "USD/GPU-h", grid, market, runs_out, notes)


def _tflops(gpu: str, basis: str | None, catalog: specs.Catalog | None) -> float | None:
    return specs.tflops(specs.spec_for(gpu, catalog), basis)


def _purchase(gpu: str, catalog: specs.Catalog | None) -> float | None:
    spec = specs.spec_for(gpu, catalog)
    return spec.purchase_price_usd if spec else None


def cost_per_tflop_history(h: History, basis: str | None = None, catalog: specs.Catalog | None = None) -> History:
    """Price history -> USD per TFLOP-hour on ``basis`` (``fp16-dense`` unless told otherwise)."""
    basis = specs.check_basis(basis)
    tflops = {gpu: _tflops(gpu, basis, catalog) for gpu in h.gpus}
    notes = [f"{gpu}: no {basis} TFLOPS in the catalog; its cost per TFLOP is left empty"
             for gpu, t in tflops.items() if not t]
    divisor = {gpu: t or math.nan for gpu, t in tflops.items()}  # as convert_price divides
    return h.convert("cost-per-tflop", lambda gpu, v: v / divisor.get(gpu, math.nan), column_header(basis), notes)


def breakeven_history(h: History, catalog: specs.Catalog | None = None) -> History:
    """Price history -> months of 24/7 renting that cost the purchase price."""
    bought = {gpu: _purchase(gpu, catalog) for gpu in h.gpus}
    notes = [f"{gpu}: no purchase price in the catalog; its break-even is left empty"
             for gpu, p in bought.items() if not p]
    return h.convert("breakeven-months",
                     lambda gpu, v: months_for_hours(breakeven_hours(bought.get(gpu) or math.nan, v)),
                     "months of 24/7 rent", notes)


def convert_price(
    metric: str, gpu: str, price: float, *, basis: str | None = None, catalog: specs.Catalog | None = None
) -> float | None:
    """One USD/GPU-h price in ``metric``'s unit (``None`` when the catalog lacks the figure)."""
    if metric == "price":
        return price
    if metric == "cost-per-tflop":
        t = _tflops(gpu, basis, catalog)
        return price / t if t else None
    if metric == "breakeven-months":
        purchase = _purchase(gpu, catalog)
        return months_for_hours(breakeven_hours(purchase, price)) if purchase and price else None
    check_metric(metric)
    raise AssertionError(metric)


def history(
    reader: Reader,
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
    h = price_history(reader, filters, since=since, until=until, resolution=resolution, tolerance=tolerance)
    if metric == "cost-per-tflop":
        return cost_per_tflop_history(h, basis, catalog)
    if metric == "breakeven-months":
        return breakeven_history(h, catalog)
    return h
