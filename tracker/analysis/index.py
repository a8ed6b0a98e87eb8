"""The GPU rental index: per GPU and bucket, one number for what the market charges, by a
named, versioned method (the README's "The rental index").

Both methods are two-stage medians: each seller votes once with the median of its per-GPU-hour
prices observed in the bucket, and the index is the median of the votes.

* ``median-of-medians-1`` (the default): a seller is a market provider (the aggregator rule,
  ``tracker.analysis.aggregators``), over the kinds asked for (on-demand unless told otherwise);
  beside the index the provider count, the quartiles of the votes, the lowest and highest vote
  and the offers; fewer than ``THIN`` providers is thin. Hourly or daily buckets.
* ``ewyluda-1.3``: the published methodology of ewyluda/gpu-price-index, version 1.3: daily,
  a provider's community capacity a seller of its own; series ``index`` (every on-demand seller),
  one per market segment (``Scraper.segment``) and ``spot``; a seller absent on a day, seen within
  the last ``CARRY_FORWARD_DAYS`` days, votes with the prices of the last day it was seen; values
  rounded half-up to the cent.

Votes come from ``db.index_rollup``: the day roll-up for daily buckets, the raw intervals for
hourly ones and for ``verify``, which compares the two. Both group intervals with the same
function, so they can only differ when a roll-up row is wrong.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from itertools import zip_longest
from typing import Any, NamedTuple

from db import index_rollup, reads
from db.index_rollup import median_of
from db.reader import Reader
from db.reads import Labels, provider_intervals, raw_horizon, raw_rows
from db.spans import DAY, DEFAULT_INTERVAL_S, epoch, floor, from_epoch
from scrapers.base import SEGMENTS
from scrapers.registry import all_scrapers
from tracker.analysis.aggregators import market_provider
from tracker.analysis.grid import RangeAnswer, Resolution, time_range
from tracker.analysis.market import quantile
from tracker.errors import ConfigError

METHOD_1 = "median-of-medians-1"
EWYLUDA = "ewyluda-1.3"
METHODS = (METHOD_1, EWYLUDA)
#: Fewer providers than this in a bucket: the index is marked thin.
THIN = 3
#: ewyluda-1.3: days a missing seller's last prices stand in for it.
CARRY_FORWARD_DAYS = 3
#: ewyluda-1.3's series, in its order.
EWYLUDA_SERIES = ("index", *SEGMENTS, "spot")
#: The kinds ``median-of-medians-1`` reads unless told otherwise.
DEFAULT_INDEX_KINDS = ("on_demand",)
#: The kinds ``ewyluda-1.3`` reads (its own rule; ``--kind`` does not apply).
EWYLUDA_KINDS = ("on_demand", "community", "spot")
#: Segments of providers no scraper collects, by the name an archive import stores them under.
IMPORTED_SEGMENTS = {"primecompute": "marketplace", "prime intellect": "marketplace", "primeintellect": "marketplace",
                     "fluidstack": "neocloud", "ori": "neocloud", "denvr": "neocloud"}

METHOD_1_COLUMNS = ["time", "gpu", "method", "index", "providers", "thin", "q1", "q3", "iqr", "min", "max", "offers",
                    "kinds"]
EWYLUDA_COLUMNS = ["time", "gpu", "method", "series", "value", "providers", "carried"]


class Group(NamedTuple):
    """One stored group's prices in one bucket (an ``index_day`` row, or the same from raw)."""

    bucket: int
    gpu: str
    provider: str
    kind: str
    via: str
    median: float
    offers: int
    #: The sorted prices (raw groups); ``None`` for a roll-up row, which keeps its median only.
    prices: Sequence[float] | None

    @property
    def key(self) -> tuple[int, str, str, str, str]:
        return self.bucket, self.gpu, self.provider, self.kind, self.via


def seller_median(groups: Sequence[Group]) -> float:
    """A seller's vote: the median of the prices of all its groups (one group: its median). Where
    a group's prices are gone (a roll-up row before the raw-retention horizon), the median of the
    groups' medians stands in (``with_prices`` notes it)."""
    if len(groups) == 1:
        return groups[0].median
    if any(g.prices is None for g in groups):
        return median_of(sorted(g.median for g in groups))
    return median_of(sorted(p for g in groups for p in g.prices or ()))


def kinds_text(kinds: Sequence[str] | None) -> str:
    """The kinds an index read, as its rows and exports write them (``None``: every kind, ``all``)."""
    return ",".join(kinds) if kinds is not None else "all"


def half_up(value: float) -> float:
    """``value`` rounded half-up to the cent (2.345 -> 2.35), from its shortest repr as the
    published index does, so 2.675 is 2.68 (binary rounding would give 2.67)."""
    return float(Decimal(repr(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


# --- reading the groups --------------------------------------------------------------------


class Scope:
    """The label ids of a query: its GPUs, kinds and USD, and every name by id."""

    def __init__(self, reader: Reader, gpus: Sequence[str] | None, kinds: Sequence[str] | None) -> None:
        self.labels = Labels(reader)
        self.names = self.labels.names("gpu") | self.labels.names("provider") | self.labels.names("kind")
        self.gpu_ids = self.labels.lookup("gpu", gpus)
        self.kind_ids = self.labels.lookup("kind", kinds) if kinds is not None else None
        self.usd = self.labels.usd


def rollup_groups(reader: Reader, scope: Scope, lo: int, hi: int) -> list[Group]:
    """The day groups of buckets starting in ``[lo, hi]`` from the index roll-up."""
    names = scope.names
    return [Group(int(r[1]), names[r[0]], names[r[2]], names[r[3]], r[4] or "", float(r[5]), int(r[6]), None)
            for r in reads.index_rows(reader, scope.gpu_ids, lo, hi, scope.kind_ids)]


def with_prices(reader: Reader, scope: Scope, groups: list[Group], seller: Callable[[Group], Hashable],
                notes: list[str]) -> list[Group]:
    """``groups`` where the groups of a seller made of several (whose vote is the median of their
    union) carry their prices, recomputed from the raw intervals of those providers only; the
    others keep their median alone. Before the raw-retention horizon such a seller votes with the
    median of its groups' medians (said in ``notes``)."""
    count = Counter((g.bucket, g.gpu, seller(g)) for g in groups)
    wanted = {g.key for g in groups if count[g.bucket, g.gpu, seller(g)] > 1}
    if not wanted:
        return groups
    days = [k[0] for k in wanted]
    ids = scope.labels.lookup("provider", sorted({k[2] for k in wanted}))
    raw = {g.key: g for g in raw_groups(reader, scope, DAY, min(days), max(days), provider_ids=ids)}
    missing = sorted({k[0] for k in wanted if k not in raw})
    if missing:
        notes.append(f"{len(missing)} day(s) from {from_epoch(missing[0]):%Y-%m-%d} on: a provider whose vote joins "
                     "several groups (an aggregator's offers for it, several kinds) voted with the median of their "
                     "medians; their raw intervals were pruned")
    return [raw.get(g.key, g) if g.key in wanted else g for g in groups]


def raw_groups(reader: Reader, scope: Scope, step: int, lo: int, hi: int,
               provider_ids: Sequence[int] | None = None) -> list[Group]:
    """The same groups as ``rollup_groups`` for buckets of ``step`` starting in ``[lo, hi]`` (of
    ``provider_ids``, None: every provider), with their prices, computed from the raw intervals
    (``db.index_rollup.groups``, the roll-up's own function)."""
    if not scope.gpu_ids:
        return []
    intervals = provider_intervals(reader)
    longest = max([*intervals.values(), DEFAULT_INTERVAL_S])
    rows = raw_rows(reader, scope.gpu_ids, lo - longest, hi + step - 1,
                    None if provider_ids is None else list(provider_ids), scope.kind_ids, scope.usd)
    rows.sort(key=lambda r: (int(r[1]), int(r[6]), int(r[0])))
    by_provider: dict[int, list[index_rollup.Row]] = {}
    for row, nxt in zip_longest(rows, rows[1:]):
        _id, offer, provider, gpu, kind, price, first_seen, last_seen, ends_at = row
        next_seen = int(nxt[6]) if nxt is not None and int(nxt[1]) == int(offer) else None
        by_provider.setdefault(int(provider), []).append(
            (int(offer), int(gpu), int(kind), float(price), int(first_seen), int(last_seen),
             None if ends_at is None else int(ends_at), next_seen))
    names = scope.names
    facts = index_rollup.OfferFacts.read(reader, scope.labels.names("provider"),
                                         [(r[0], pid) for pid, prov_rows in by_provider.items() for r in prov_rows])
    return [Group(bucket, names[gpu], names[pid], names[kind], via, median_of(prices), offers, prices)
            for pid, prov_rows in by_provider.items()
            for (gpu, bucket, kind, via), (prices, offers) in index_rollup.groups(
                prov_rows, facts, intervals.get(pid, DEFAULT_INTERVAL_S), step, lo // step, hi // step).items()]


# --- the methods ---------------------------------------------------------------------------


@cache
def _market(provider: str, via: str) -> str:
    return market_provider(provider, via or None)


def seller(g: Group) -> str:
    """Whose vote a group is in ``median-of-medians-1``: its provider, or the cloud an aggregator's
    offers name when we collect that cloud directly (``tracker.analysis.aggregators``)."""
    return _market(g.provider, g.via)


def ewyluda_seller(g: Group) -> str:
    """A seller of ``ewyluda-1.3``: the market provider, its community capacity apart."""
    return f"{seller(g)} community" if g.kind == "community" else seller(g)


def ewyluda_vote(g: Group) -> Hashable:
    """What one ``ewyluda-1.3`` vote is made of: a seller's groups of one kind family (spot apart)."""
    return ewyluda_seller(g), g.kind == "spot"


@cache
def _declared_segments() -> dict[str, str]:
    return {name: cls.segment for name, cls in all_scrapers().items() if cls.segment}


def segment(g: Group) -> str | None:
    """The market segment of ``g``'s ``ewyluda-1.3`` seller: its scraper's (``Scraper.segment``),
    else ``IMPORTED_SEGMENTS``; community capacity is a marketplace whatever its provider's."""
    if g.kind == "community":
        return "marketplace"
    return _declared_segments().get(seller(g)) or IMPORTED_SEGMENTS.get(seller(g))


def method_1(groups: Iterable[Group], kinds: str) -> list[dict[str, Any]]:
    """``median-of-medians-1`` rows, one per (bucket, gpu) with at least one vote (``kinds``: ``kinds_text``)."""
    sellers: dict[tuple[int, str], dict[str, list[Group]]] = {}
    for g in groups:
        sellers.setdefault((g.bucket, g.gpu), {}).setdefault(seller(g), []).append(g)
    out = []
    for (bucket, gpu), by_seller in sorted(sellers.items()):
        votes = sorted(seller_median(gs) for gs in by_seller.values())
        q1, q3 = quantile(votes, 0.25), quantile(votes, 0.75)
        out.append({"time": from_epoch(bucket), "gpu": gpu, "method": METHOD_1, "index": median_of(votes),
                    "providers": len(votes), "thin": len(votes) < THIN, "q1": q1, "q3": q3, "iqr": q3 - q1,
                    "min": votes[0], "max": votes[-1],
                    "offers": sum(g.offers for gs in by_seller.values() for g in gs), "kinds": kinds})
    return out


def ewyluda(groups: Iterable[Group], presence: dict[int, set[str]], first: int) -> list[dict[str, Any]]:
    """``ewyluda-1.3`` rows, one per (day, gpu, series) with a value, for days from ``first`` on.

    ``presence``: the sellers with any observation (of any GPU) per day, including the days
    before ``first`` that carrying forward looks back to."""
    by_day: dict[int, dict[str, list[Group]]] = {}
    for g in groups:
        by_day.setdefault(g.bucket, {}).setdefault(ewyluda_seller(g), []).append(g)
    last_seen: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for day in sorted(set(presence) | set(by_day)):
        today = dict(by_day.get(day, {}))
        carried: set[str] = set()
        present = presence.get(day, set())
        for name, seen in last_seen.items():
            if name not in present and (day - seen) // DAY <= CARRY_FORWARD_DAYS:
                if name in by_day.get(seen, {}):
                    today[name] = by_day[seen][name]
                carried.add(name)
        for name in present:
            last_seen[name] = day
        if day >= first:
            out += _ewyluda_day(day, today, carried)
    return out


def _ewyluda_day(day: int, sellers: dict[str, list[Group]], carried: set[str]) -> list[dict[str, Any]]:
    """One day's rows: each seller votes per GPU, on demand (in ``index`` and its segment) and spot apart."""
    votes: dict[str, dict[str, list[tuple[str, float]]]] = {}  # per GPU and series: (seller, vote)
    for name, groups in sellers.items():
        by_gpu: dict[tuple[str, bool], list[Group]] = {}
        for g in groups:
            by_gpu.setdefault((g.gpu, g.kind == "spot"), []).append(g)
        for (gpu, is_spot), gs in by_gpu.items():
            for series in ("spot",) if is_spot else ("index", segment(gs[0])):
                if series in EWYLUDA_SERIES:
                    votes.setdefault(gpu, {}).setdefault(series, []).append((name, seller_median(gs)))
    when = from_epoch(day)
    return [{"time": when, "gpu": gpu, "method": EWYLUDA, "series": series,
             "value": half_up(median_of(sorted(v for _s, v in pairs))), "providers": len(pairs),
             "carried": ",".join(sorted(s for s, _v in pairs if s in carried))}
            for gpu, by_series in sorted(votes.items())
            for series in EWYLUDA_SERIES if (pairs := by_series.get(series))]


def presence(groups: Iterable[Group]) -> dict[int, set[str]]:
    """The ``ewyluda-1.3`` sellers with a group per day."""
    out: dict[int, set[str]] = {}
    for g in groups:
        out.setdefault(g.bucket, set()).add(ewyluda_seller(g))
    return out


# --- the answer ----------------------------------------------------------------------------


@dataclass
class IndexResult(RangeAnswer):
    """An index over a range: ``rows`` (``columns``), the method, which data answered
    (``rollups`` or ``raw``) and notes."""

    method: str
    rows: list[dict[str, Any]]
    source: str
    notes: list[str] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        return EWYLUDA_COLUMNS if self.method == EWYLUDA else METHOD_1_COLUMNS

    def metadata(self) -> dict[str, str]:
        """What an export states beside the values (the method and its version)."""
        return {"index_method": self.method, "index_method_version": self.method.rsplit("-", 1)[-1],
                "index_resolution": self.resolution.value, "index_kinds": kinds_text(self.kinds),
                "index_since": self.since.isoformat(), "index_until": self.until.isoformat()}


def _range(since: datetime | None, until: datetime | None, res: Resolution, reader: Reader,
           scope: Scope) -> tuple[datetime, datetime, int, int]:
    since, until = time_range("index", res, since, until, lambda _end: reads.first_index_day(reader, scope.gpu_ids))
    return since, until, res.floor_s(epoch(since)), res.floor_s(epoch(until))


def rental_index(reader: Reader, gpus: Sequence[str] | None = None, *, method: str = METHOD_1,
                 kinds: Sequence[str] | None = None, kinds_given: bool = False, since: datetime | None = None,
                 until: datetime | None = None, resolution: Resolution | str = Resolution.day,
                 use_rollups: bool = True) -> IndexResult:
    """The index of ``gpus`` (canonical ids; ``None``: every GPU) per bucket from the bucket
    holding ``since`` to the one holding ``until`` (default: now), by ``method``.

    Daily buckets read the index roll-up, hourly ones the raw intervals (``use_rollups=False``:
    daily from the raw intervals too, what ``verify`` compares with). ``kinds``, when given
    (``None``: every kind), replaces on-demand; ewyluda-1.3 reads its own kinds."""
    if method not in METHODS:
        raise ConfigError(f"--method: {method!r} is not one of {', '.join(METHODS)}")
    res = Resolution.parse(resolution)
    if res not in (Resolution.day, Resolution.hour):
        raise ConfigError("--every: the index has hourly (1h) and daily (1d) buckets")
    if method == EWYLUDA and res is not Resolution.day:
        raise ConfigError("--every: ewyluda-1.3 is a daily index (--every 1d)")
    if method == EWYLUDA and kinds_given:
        raise ConfigError("--kind: ewyluda-1.3 reads its own kinds (on-demand and community, spot as its own "
                          "series); leave --kind out")
    given = tuple(kinds) if kinds is not None else None
    chosen = EWYLUDA_KINDS if method == EWYLUDA else given if kinds_given else DEFAULT_INDEX_KINDS
    scope = Scope(reader, gpus, chosen)
    since, until, lo, hi = _range(since, until, res, reader, scope)
    step = res.seconds
    daily = res is Resolution.day and use_rollups
    merge = ewyluda_vote if method == EWYLUDA else seller
    notes: list[str] = []

    def load(s: Scope, a: int, b: int, *, votes: bool = True) -> list[Group]:
        if not daily:
            return raw_groups(reader, s, step, a, b)
        found = rollup_groups(reader, s, a, b)
        return with_prices(reader, s, found, merge, notes) if votes else found

    if method == EWYLUDA:
        back = lo - CARRY_FORWARD_DAYS * DAY
        groups = load(scope, back, hi)
        everyone = Scope(reader, None, chosen)  # a seller is present with any GPU
        seen = presence(load(everyone, back, hi, votes=False)) if gpus is not None else presence(groups)
        rows = ewyluda(groups, seen, lo)
        unsegmented = sorted({ewyluda_seller(g) for g in groups if g.kind != "spot" and segment(g) is None})
        if unsegmented:
            notes.append(f"no segment for {', '.join(unsegmented)}: counted in the index, in no segment series")
    else:
        rows = method_1(load(scope, lo, hi), kinds_text(chosen))
    horizon = raw_horizon(reader)
    if not daily and lo < horizon:
        notes.append(f"raw intervals before {from_epoch(horizon):%Y-%m-%d} were pruned: "
                     "hourly buckets before then are empty (daily ones read the roll-up)")
    if not rows:
        notes.append("no prices in this range for these GPUs and kinds")
    return IndexResult(res, since, until, chosen, method, rows, "rollups" if daily else "raw", notes)


# --- verify --------------------------------------------------------------------------------


@dataclass
class Verification:
    """What ``verify`` found: the groups and index values compared, and every difference."""

    since: datetime
    until: datetime
    groups: int
    values: int
    differences: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def verify(reader: Reader, gpus: Sequence[str] | None = None, *, since: datetime | None = None,
           until: datetime | None = None) -> Verification:
    """Recompute the daily groups and index values of a range from the raw intervals and compare
    them with what the index roll-up answers: each (day, gpu, provider, kind, via) group's median
    and offers, then the index values (``median-of-medians-1``, on-demand and every kind). Days
    before the raw-retention horizon cannot be recomputed (their raw intervals are gone) and are
    left out."""
    scope = Scope(reader, gpus, None)
    since, until, lo, hi = _range(since, until, Resolution.day, reader, scope)
    notes = []
    horizon = raw_horizon(reader)
    if lo < horizon:
        notes.append(f"days before {from_epoch(horizon):%Y-%m-%d} are left out: their raw intervals were pruned")
        lo = floor(horizon, DAY)
        if lo > hi:
            return Verification(since, until, 0, 0, [], notes)
    stored = {g.key: g for g in rollup_groups(reader, scope, lo, hi)}
    raw = {g.key: g for g in raw_groups(reader, scope, DAY, lo, hi)}
    differences: list[dict[str, Any]] = []
    for key in sorted(stored.keys() | raw.keys()):
        a, b = stored.get(key), raw.get(key)
        if a is None or b is None:
            what = "missing from the roll-up" if a is None else "in the roll-up only"
        elif not _close(a.median, b.median):
            what = "median differs"
        elif a.offers != b.offers:
            what = "offer count differs"
        else:
            continue
        differences.append({"time": from_epoch(key[0]), "gpu": key[1], "provider": key[2], "kind": key[3],
                            "via": key[4], "what": what, "rollup": None if a is None else a.median,
                            "raw": None if b is None else b.median})
    values = 0
    for kinds in (DEFAULT_INDEX_KINDS, None):
        ask: dict[str, Any] = {"kinds": kinds, "kinds_given": kinds is None, "since": from_epoch(lo), "until": until}
        rolled = {(r["time"], r["gpu"]): r["index"] for r in rental_index(reader, gpus, **ask).rows}
        recomputed = {(r["time"], r["gpu"]): r["index"] for r in rental_index(reader, gpus, **ask, use_rollups=False).rows}
        values += len(rolled)
        for key in sorted(rolled.keys() | recomputed.keys()):
            if not _close(rolled.get(key), recomputed.get(key)):
                differences.append({"time": key[0], "gpu": key[1], "provider": "", "kind": kinds_text(kinds),
                                    "via": "", "what": f"{METHOD_1} index differs", "rollup": rolled.get(key),
                                    "raw": recomputed.get(key)})
    return Verification(since, until, len(stored), values, differences, notes)

