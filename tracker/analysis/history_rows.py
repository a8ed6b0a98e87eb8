"""The CLI's ``history`` answer in plain Python: the rows ``History.rows()`` gives (the wide
table: market columns, then one column per provider), its notes, unit and providers, computed
without pandas or numpy, so that ``gpu-tracker history`` starts in a fraction of the time.

The numbers are those of ``tracker.analysis.history`` (a property test holds every field
equal on random histories and on the bundled recordings, on both backends): the same
reads (``db.plain_reads``: the roll-ups for whole buckets, raw intervals for partial ones,
the statements of ``db.sql``), the same bucket rule (``db.spans``, the one-interval form of
``db.rollups.spans``), the same market statistics (``quantile`` and ``median`` are the
scalar forms of ``history._quantile``/``_median``) and the same metric transforms. Region
filters need the offers' columns (a join the frame path makes): ``history_rows`` answers
``None`` for them, and the caller takes the frame path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from db.asof import provider_intervals
from db.plain_reads import Labels, provider_lows, raw_horizon, raw_rows
from db.reader import Reader
from db.spans import DAY, DEFAULT_INTERVAL_S, HOUR, hold_end, origin, span
from db.times import epoch, from_epoch, utcnow
from tracker.analysis import specs
from tracker.analysis.grid import (
    HOURS_PER_MONTH,
    MAX_GRID_ROWS,
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

METRICS = ("price", "cost-per-tflop", "breakeven-months")
#: What to do when a history is empty or a single point (CLI notes, charts, API notes).
HOW_TO_GET_HISTORY = ("collect over time with `gpu-tracker run` (or `gpu-tracker scrape` now and then), "
                      "or load older prices with `gpu-tracker import FILE`")
_ROLLUP_STEPS = {Resolution.hour: HOUR, Resolution.day: DAY}
#: One provider's value in one bucket: (bucket start, gpu id, provider id, lowest price, offers).
Bucket = tuple[int, int, int, float, int]


@dataclass
class HistoryRows:
    """What the CLI prints of a history: ``rows`` as ``History.rows()`` gives them."""

    metric: str
    unit: str
    resolution: Resolution
    providers: list[str]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def unit(metric: str, basis: str | None) -> str:
    if metric == "price":
        return "USD/GPU-h"
    if metric == "cost-per-tflop":
        return f"USD/TFLOP-h ({basis})"
    return "months of 24/7 rent"


def check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ConfigError(f"--metric: {metric!r} is not one of {', '.join(METRICS)}")


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile ``q`` of ascending ``ordered``, computed as pandas'
    ``quantile`` does (``history._quantile``), so the numbers match to the bit."""
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


def _floor(t: int, step: int) -> int:
    o = origin(step)
    return o + ((t - o) // step) * step


class Scope:
    """The label ids of a query's filters, and the collection intervals prices hold for."""

    def __init__(self, reader: Reader, f: Filters, tolerance: Tolerance | None) -> None:
        self.labels = Labels(reader)
        lab = self.labels
        self.gpu_ids = lab.lookup("gpu", f.gpus) if f.gpus is not None else sorted(lab.names("gpu"))
        self.provider_ids = lab.lookup("provider", f.providers) if f.providers else None
        self.kind_ids = lab.lookup("kind", f.kinds) if f.kinds else None
        self.stored = provider_intervals(reader)
        self.tolerance = tolerance
        longest = max([*self.stored.values(), DEFAULT_INTERVAL_S])
        self.given: dict[int, int] | None = None
        if tolerance is not None:  # buckets.holds
            tol = tolerance_lookup(tolerance)
            self.given = {pid: int(tol(name).total_seconds()) for pid, name in lab.names("provider").items()}
            longest = max([longest, *self.given.values()])
        self.longest = longest

    def interval_s(self, provider_id: int) -> int:
        if self.given is not None:
            return self.given[provider_id]
        return self.stored.get(provider_id, DEFAULT_INTERVAL_S)

    def tolerance_agrees(self, step: int) -> bool:
        """``buckets._tolerance_agrees``: the given intervals put every price in the buckets the
        roll-ups were built with."""
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
    """Each provider's lowest price and distinct offers per bucket of ``step`` holding ``[lo, hi]``,
    from the raw intervals in effect then (``buckets.raw_intervals`` + ``raw_buckets``)."""
    if not scope.gpu_ids:
        return []
    usd = scope.labels.lookup("currency", ["USD"])
    rows = raw_rows(reader, scope.gpu_ids, lo - scope.longest, hi, scope.provider_ids, scope.kind_ids,
                    usd[0] if usd else -1)
    # RAW_COLUMNS: id, offer, provider, gpu, kind, price, first_seen, last_seen, ends_at
    rows.sort(key=lambda r: (int(r[1]), int(r[6]), int(r[0])))  # db.rollups.with_next_seen's order
    o = origin(step)
    b_lo, b_hi = (lo - o) // step, (hi - o) // step
    groups: dict[tuple[int, int, int], tuple[float, set[int]]] = {}
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
            key = (o + b * step, int(gpu), int(provider))
            have = groups.get(key)
            if have is None:
                groups[key] = (float(price), {int(offer)})
            else:
                have[1].add(int(offer))
                if float(price) < have[0]:
                    groups[key] = (float(price), have[1])
    return [(b, g, p, v, len(offers)) for (b, g, p), (v, offers) in groups.items()]


def provider_buckets(reader: Reader, f: Filters, res: Resolution, lo: int, hi: int,
                     tolerance: Tolerance | None) -> tuple[list[Bucket], Labels]:
    """``buckets.provider_buckets`` (no region filters): each provider's value per bucket of the
    grid from ``lo`` to ``hi`` (epoch seconds), roll-ups for whole buckets, raw intervals elsewhere."""
    scope = Scope(reader, f, tolerance)

    def all_raw() -> list[Bucket]:
        try:
            return _raw_buckets(reader, scope, res.seconds, lo, hi, MAX_GRID_ROWS)
        except OverflowError as exc:
            raise too_many_rows(exc.args[0], res) from None

    step = _ROLLUP_STEPS.get(res)
    if step is None:
        return all_raw(), scope.labels
    first_full = _floor(lo, step) + (0 if lo % step == 0 else step)
    last_full = _floor(hi + 1, step) - step
    if last_full < first_full:
        return all_raw(), scope.labels
    if not scope.gpu_ids:
        return [], scope.labels
    if not scope.tolerance_agrees(step):
        return all_raw(), scope.labels
    horizon = raw_horizon(reader)
    if lo < horizon:  # raw intervals there were pruned: the whole first bucket is what is known
        first_full = _floor(lo, step)
    if hi < horizon:
        last_full = _floor(hi, step)
    out = [(b, g, p, v, n) for g, b, p, v, n in provider_lows(
        reader, step, gpu_ids=scope.gpu_ids, lo=first_full, hi=last_full, provider_ids=scope.provider_ids,
        kind_ids=scope.kind_ids)]
    if lo < first_full:
        out += _raw_buckets(reader, scope, step, lo, first_full - 1)
    if last_full + step <= hi:
        out += _raw_buckets(reader, scope, step, last_full + step, hi)
    return out, scope.labels


def _nan_to_none(v: float) -> float | None:
    return None if math.isnan(v) else v


def _divide(a: float, b: float) -> float:
    """``a / b`` as numpy divides floats (no exception at zero)."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _factors(metric: str, basis: str | None, gpus: Iterable[str], catalog: specs.Catalog | None
             ) -> tuple[dict[str, float], list[str], str]:
    """Per GPU the factor of ``history._transform`` (NaN: the catalog lacks the figure), the notes
    and the unit, as ``cost_per_tflop_history`` and ``breakeven_history`` make them."""
    factor: dict[str, float] = {}
    notes: list[str] = []
    if metric == "cost-per-tflop":
        basis = specs.check_basis(basis)
        for gpu in gpus:
            t = specs.tflops(specs.spec_for(gpu, catalog), basis)
            factor[gpu] = (1.0 / t) if t else math.nan
            if not t:
                notes.append(f"{gpu}: no {basis} TFLOPS in the catalog; its cost per TFLOP is left empty")
        return factor, notes, unit(metric, basis)
    for gpu in gpus:
        spec = specs.spec_for(gpu, catalog)
        price = spec.purchase_price_usd if spec else None
        factor[gpu] = price / (HOURS_PER_MONTH * 1.0) if price else math.nan
        if not price:
            notes.append(f"{gpu}: no purchase price in the catalog; its break-even is left empty")
    return factor, notes, "months of 24/7 rent"


def history_rows(
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
) -> HistoryRows | None:
    """``history(...)`` as the CLI prints it (see the module docstring); ``None`` for what needs
    the frame path (region filters, no ``since``: the first stored price)."""
    check_metric(metric)
    res = Resolution.parse(resolution)
    f = filters or Filters()
    if f.regions or since is None:
        return None
    check_dates(since=since, until=until)
    until = _utc(until) if until is not None else utcnow()
    since = _utc(since)
    if since > until:
        raise ConfigError(f"history: the range starts ({since}) after it ends ({until})")
    check_range(res, since, until)
    lo, hi = epoch(since), epoch(until)
    buckets, labels = provider_buckets(reader, f, res, lo, hi, tolerance)
    names = labels.names("gpu") | labels.names("provider")  # ids are unique across spaces
    times = grid_starts(res, lo, hi)
    on_grid = set(times)
    gpus = sorted({names[g] for _b, g, _p, _v, _n in buckets})
    cells: dict[tuple[str, int], list[float]] = {}
    offers: dict[tuple[str, int], int] = {}
    values: dict[tuple[int, str, str], float] = {}
    for b, g, p, v, n in buckets:
        gpu, provider = names[g], names[p]
        values[(b, gpu, provider)] = v
        if b in on_grid:
            offers[(gpu, b)] = offers.get((gpu, b), 0) + n
            if not math.isnan(v):
                cells.setdefault((gpu, b), []).append(v)
    notes: list[str] = []
    if not gpus:
        what = ", ".join(f.gpus) if f.gpus else "any GPU"
        notes.append(f"no stored prices in range for {what} with these filters; {HOW_TO_GET_HISTORY}")
    else:
        single = sorted(g for g in gpus if sum(1 for t in times if (g, t) in cells) <= 1 and len(times) > 1)
        if single:
            notes.append(f"{', '.join(single)}: one point of history in this range, so no line to draw; "
                         f"{HOW_TO_GET_HISTORY}")
    the_unit, factor = unit(metric, None), {}
    if metric != "price":
        factor, more, the_unit = _factors(metric, basis, gpus, catalog)
        notes += more

    def convert(gpu: str, v: float) -> float:
        """``history._transform`` of one value (break-even divides, per TFLOP multiplies)."""
        if metric == "price":
            return v
        return _divide(factor[gpu], v) if metric == "breakeven-months" else v * factor[gpu]

    shown = {(b, gpu, provider): convert(gpu, v) for (b, gpu, provider), v in values.items()}
    providers = sorted({p for _b, _g, p in shown})
    columns = sorted({p for (_b, _g, p), v in shown.items() if not math.isnan(v)})  # pivot_table drops all-NaN
    kinds = ",".join(f.kinds) if f.kinds else "all"
    rows: list[dict[str, Any]] = []
    for gpu in gpus:
        for t in times:
            cell = sorted(cells.get((gpu, t), []))
            stats = (cell[0], quantile(cell, 0.25), median(cell)) if cell else (math.nan,) * 3
            low, p25, mid = (convert(gpu, v) for v in stats)
            row: dict[str, Any] = {"time": from_epoch(t), "gpu": gpu, "metric": metric, "unit": the_unit, "kinds": kinds,
                                   "min": _nan_to_none(low), "p25": _nan_to_none(p25), "median": _nan_to_none(mid),
                                   "providers": len(cell), "offers": offers.get((gpu, t), 0)}
            for p in columns:
                v = shown.get((t, gpu, p))
                row[p] = None if v is None else _nan_to_none(v)
            rows.append(row)
    return HistoryRows(metric, the_unit, res, providers, rows, notes)


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)

