"""Storing archive snapshots so that the history means what a live collection would mean.

Every snapshot goes through the pipeline's own stages (``normalise``, ``validate``), and the
intervals are cut by one rule (``runs.cut``) inside one transaction, a batch at a time
(``batches``): a series the store has never seen is stored set-based with the batch's other new
series (``fresh``); one it has is re-cut over the range its new snapshots change. The rules:

* **Cadence.** A series' snapshots are its collection attempts. Consecutive snapshots more
  than ``max_gap`` apart (the archive's cadence allows no more; each format states a
  default, ``--max-gap`` overrides it) have a gap between them: an interval never spans it,
  and the first snapshot after it starts new intervals even at the same price (counted as
  *returned*, not as a changed price).
* **Absence.** An offer of the series missing from a snapshot is no longer listed: its
  interval ends at that snapshot.
* **Order and repetition.** The stored history is a function of the set of snapshots alone:
  one file or many, in one command or in several, oldest or newest first, twice or once. Each
  series' snapshot times are kept (``db.series``), so the stored observations are known
  exactly (an interval was seen at every snapshot of its series from ``first_seen`` to
  ``last_seen``). An import re-cuts, per provider of the series, only the range its new
  snapshots can change -- from the stored snapshot before the oldest new one to the stored
  snapshot after the newest, widened to whole intervals -- from the stored observations there
  plus the new ones, replaces the intervals that differ, and refreshes that range's roll-ups.
  Snapshots already stored are skipped (``already_stored``), so a second import changes
  nothing; but a snapshot whose rows fall into two batches of one import (a source's rows
  need not be contiguous in its file) is one observation: the later batch *continues* it,
  adding the offers the earlier one did not store there (which stay as they were judged)
  and counting only the ones it did as already stored. A command counts the intervals it begins (new, changed, returned); one it only
  extends or re-cuts from a stored start was counted when that start was stored. The gap rule is the importing command's ``max_gap``: import one archive with one
  value. Validation goes in time order too: an observation is judged against the offer's price
  at its latest accepted observation before it (a jump is held until the next snapshot
  confirms it), so from the oldest new snapshot on, stored observations are judged again, and
  the range widens until every later judgement is the stored one.
* **Stated starts.** A source may say where each of its intervals began (our own ``prices``
  export: ``price_since``): then observations of one offer at one price but of different
  stated starts never join (the source saw the interval begin; what lay between is unknown),
  and a stored interval's ``first_seen`` is its stated start (``runs.Seen.since``). When the
  observation at the stated start was held for confirmation, the interval begins at the next
  one and keeps the stated start (``stated_start``), and the held
  observation keeps its own (``quarantine.extra``): a later import that accepts it joins the
  two, as an import of all the snapshots at once does.
* **Batches.** Series of one offer each (an export of prices) share nothing, so a batch of
  them is re-cut set-based: ``_BatchReads`` reads every interval and held price of the
  batch's offers up front, and ``_Writer`` writes the re-cut intervals once per provider.
* **Providers.** An archive's provider names go through ``aliases.provider_name``. A
  provider with a scraper keeps what its live scrapes say is current; a provider known from
  imports alone (never scraped) takes the newest snapshot as its current list, and one with
  no scraper at all is an *external* provider whose collection interval is the archive's
  ``cadence``.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, cast
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from db import labels, reads, rollups
from db import series as series_db
from db.engine import session_scope
from db.models import Offer, Quarantine, ScrapeRun
from db.reader import in_transaction
from db.reads import Identity
from db.spans import epoch, from_epoch, utcnow
from scrapers.base import ScrapedOffer
from tracker.errors import ValidationError
from tracker.pipeline import store as store_stage
from tracker.pipeline.imports import base
from tracker.pipeline.imports.aliases import is_external
from tracker.pipeline.imports.base import SINCE_KEY, ImportResult, Snapshot, held_prices
from tracker.pipeline.imports.fresh import FreshSeries, store_fresh
from tracker.pipeline.imports.runs import Seen, cut
from tracker.pipeline.normalise import NormalisedOffer, normalise
from tracker.pipeline.validate import HELD, Rejected, validate

#: Offer columns kept from an offer's newest observation (besides its identity).
OFFER_FIELDS = ("gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "vcpus", "ram_gb", "country")


def newest_per_day(times: Iterable[int]) -> set[int]:
    """Of epoch-second snapshot times, the newest of each UTC day."""
    best: dict[int, int] = {}
    for t in times:
        best[t // 86400] = max(best.get(t // 86400, t), t)
    return set(best.values())


def merge(snapshots: Iterable[Snapshot]) -> tuple[dict[str, list[int]], dict[tuple[str, str], dict[int, list[ScrapedOffer]]]]:
    """Each series' snapshot times (epoch seconds, oldest first), and per (provider, series) the
    offers seen at each time, duplicates merged (the same offer at the same time is one observation).

    A snapshot with an empty ``provider`` only says that the series was collected then."""
    times: dict[str, set[int]] = defaultdict(set)
    seen: dict[tuple[str, str], dict[int, dict[tuple[str, str, str, int], ScrapedOffer]]] = defaultdict(dict)
    for s in snapshots:
        t = epoch(s.at)  # the store keeps whole seconds
        times[s.series].add(t)
        if s.provider:
            at = seen[(s.provider, s.series)].setdefault(t, {})
            for o in s.offers:
                at[(o.sku, o.region, o.kind, o.term_months)] = o
    return ({k: sorted(v) if len(v) > 1 else list(v) for k, v in times.items()},
            {k: {t: list(v.values()) for t, v in by.items()} for k, by in sorted(seen.items())})


def _series_like(series: str) -> str:
    """A LIKE pattern of the ``extra`` text of the offers of ``series`` (a prefilter: ``series_of`` decides)."""
    escaped = json.dumps(series)[1:-1].replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return f"%{escaped}%"


class _StoredOffers:
    """The stored offers of the imported series a batch re-cuts, read series by series (a store
    can hold millions of imported offers; a batch re-cuts a few series)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._of: dict[tuple[str, str], dict[Identity, Offer]] = {}
        self._providers: dict[str, set[str]] = {}

    def _read(self, series: str) -> None:
        extra = cast(Offer.extra, String)
        found: dict[str, dict[Identity, Offer]] = defaultdict(dict)
        for o in self.session.exec(select(Offer).where(extra.like(_series_like(series), escape="!"))).all():
            if series_db.series_of(o.extra) == series:
                found[o.provider][(o.sku, o.region, o.kind, o.term_months)] = o
        self._providers[series] = set(found)
        for provider, offers in found.items():
            self._of[(provider, series)] = offers

    def prefetch(self, listings: Mapping[str, Mapping[str, Mapping[int, list[ScrapedOffer]]]]) -> None:
        """Read the stored offers of series each of which is one offer, the one it lists (an export
        of prices): by their identities, one indexed statement per provider and chunk, not a scan each."""
        wanted: dict[str, set[str]] = defaultdict(set)
        for listing in listings.values():
            for provider, by_time in listing.items():
                wanted[provider].update(o.sku for offers in by_time.values() for o in offers)
        for series, listing in listings.items():
            self._providers[series] = set(listing)
        for provider, skus in wanted.items():
            for names in _in_chunks(skus):
                for o in self.session.exec(select(Offer).where(Offer.provider == provider,
                                                               col(Offer.sku).in_(names))).all():
                    if (series := series_db.series_of(o.extra)) in listings:
                        self._of.setdefault((provider, series), {})[(o.sku, o.region, o.kind, o.term_months)] = o

    def of(self, provider: str, series: str) -> dict[Identity, Offer]:
        """The stored offers of ``provider`` that belong to ``series`` (offers created by this
        import are added to the returned dict)."""
        if series not in self._providers:
            self._read(series)
        return self._of.setdefault((provider, series), {})

    def providers(self, series: str) -> set[str]:
        """Providers with stored offers of ``series`` (an import that does not list one still speaks for it)."""
        if series not in self._providers:
            self._read(series)
        return self._providers[series]


def scraped_live(session: Session, provider: str, besides: int | None = None) -> bool:
    """Whether a real (or replayed) scrape of ``provider`` ever succeeded (``besides`` a run of
    this import's own; ``db.reads.OK_COLLECTION``)."""
    return reads.collected_ok(in_transaction(session.connection()), provider, besides=besides)


def _refresh_rollups(session: Session, touched: Mapping[str, list[int]]) -> None:
    """The roll-ups of what the import changed, once per provider (not once per snapshot)."""
    conn = session.connection()
    session.flush()
    intervals = reads.provider_intervals(in_transaction(conn))
    ids = labels.lookup(conn, "provider", sorted(touched))
    for pid, (lo, hi) in zip(ids, (touched[p] for p in sorted(touched)), strict=True):
        pad = intervals.get(pid, rollups.DEFAULT_INTERVAL_S)
        start = lo - pad
        while start <= hi + pad:
            rollups.refresh(conn, pid, start, min(start + rollups.REBUILD_WINDOW - 1, hi + pad), intervals)
            start += rollups.REBUILD_WINDOW


def _tagged(o: NormalisedOffer, series: str) -> NormalisedOffer:
    return replace(o, extra={**dict(o.extra), series_db.SERIES_KEY: series})


def _held_at(held: Iterable[Quarantine], offers: Mapping[Identity, Offer], lo: int,
             hi: int | None) -> dict[int, dict[Identity, Quarantine]]:
    """Of the observations ``held`` for confirmation, those of ``offers`` (with a price) at each
    snapshot time in ``[lo, hi]``."""
    out: dict[int, dict[Identity, Quarantine]] = defaultdict(dict)
    for q in held:
        at = epoch(q.observed_at)
        ident = (q.sku, q.region, q.kind, q.term_months)
        if at >= lo and (hi is None or at <= hi) and q.price_per_hour is not None and ident in offers:
            out[at][ident] = q
    return out


def _in_chunks(values: Iterable[str]) -> Iterator[list[str]]:
    """``values`` sorted, in lists small enough for one statement's ``IN`` (SQLite's parameter limit)."""
    names = sorted(values)
    for k in range(0, len(names), 5000):
        yield names[k:k + 5000]


@dataclass
class _Series:
    """One series of one import: every snapshot time (stored and new), which are new, and the gap rule."""

    name: str
    times: list[int]  # stored and new, oldest first
    new: set[int]
    max_gap_s: float | None
    #: the source states where each interval began: a stored interval's ``first_seen`` is one
    stated_starts: bool = False
    #: stored snapshot times a newer one replaces (``store_snapshots(one_per_day=True)``)
    dropped: set[int] = field(default_factory=set)
    #: new times that an earlier batch of the same import stored part of (one snapshot's rows
    #: split across batches): the offers stored there stay, the batch's others join them
    continued: set[int] = field(default_factory=set)

    def bounds(self) -> tuple[int, int]:
        """The range whose intervals the new (and dropped) snapshots can change: from the stored
        snapshot before the oldest to the stored snapshot after the newest."""
        changed = self.new | self.dropped
        i, j = bisect_left(self.times, min(changed)), bisect_left(self.times, max(changed))
        lo, hi = self.times[max(i - 1, 0)], self.times[min(j + 1, len(self.times) - 1)]
        return min(lo, *changed), hi

    def next_after(self, t: int) -> int | None:
        k = bisect_right(self.times, t)
        return self.times[k] if k < len(self.times) else None


def _seen(r: Mapping[str, Any]) -> Seen:
    return Seen(r["gpu_id"], r["kind_id"], r["currency_id"], r["price_per_hour"], r["price_per_gpu_hour"], r["available"])


class _Reads:
    """The stored rows a re-cut reads (``_plan``), straight from the store: one series at a time."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.conn = session.connection()
        self._currency: dict[int, str] | None = None

    def intervals(self, by_id: Iterable[int], lo: int, hi: int) -> list[dict[str, Any]]:
        """``db.series.intervals_between``."""
        return series_db.intervals_between(self.conn, by_id, lo, hi)

    def prices_before(self, by_id: Iterable[int], t: int) -> dict[int, float]:
        """``db.series.prices_before``."""
        return series_db.prices_before(self.conn, by_id, t)

    def next_first_seen(self, ids: Iterable[int], t: int) -> int | None:
        """``db.series.next_first_seen``."""
        return series_db.next_first_seen(self.conn, ids, t)

    def held(self, provider: str, offers: Mapping[Identity, Offer], lo: int,
             hi: int | None = None) -> dict[int, dict[Identity, Quarantine]]:
        """Observations of ``offers`` held for confirmation at each snapshot time in ``[lo, hi]``."""
        query = select(Quarantine).where(Quarantine.provider == provider, col(Quarantine.reason).endswith(HELD),
                                         col(Quarantine.observed_at) >= from_epoch(lo))
        if hi is not None:
            query = query.where(col(Quarantine.observed_at) <= from_epoch(hi))
        return _held_at(self.session.exec(query).all(), offers, lo, hi)

    def currency(self) -> dict[int, str]:
        if self._currency is None:
            self._currency = labels.names(self.conn, "currency")
        return self._currency


class _BatchReads(_Reads):
    """The same answers for a batch of series that are one offer each (an export of prices),
    read up front in a few statements for all of them: every interval of their offers and the
    prices held for them. The series share no offer, so what one's re-cut writes is never what
    another reads."""

    def __init__(self, session: Session, offers: Mapping[str, Iterable[Offer]]) -> None:
        super().__init__(session)
        conn = self.conn
        ids = sorted(o.id for of in offers.values() for o in of if o.id is not None)
        self._intervals: dict[int, list[dict[str, Any]]] = defaultdict(list)
        if ids:
            for r in reads.recut_intervals(in_transaction(conn), ids, series_db.RECUT_COLUMNS):
                self._intervals[r["offer_id"]].append(r)
        self._held: dict[str, list[Quarantine]] = defaultdict(list)
        for provider, of in offers.items():
            for skus in _in_chunks({o.sku for o in of}):
                self._held[provider] += session.exec(select(Quarantine).where(
                    Quarantine.provider == provider, col(Quarantine.reason).endswith(HELD),
                    col(Quarantine.sku).in_(skus))).all()

    def intervals(self, by_id: Iterable[int], lo: int, hi: int) -> list[dict[str, Any]]:
        return [r for oid in by_id for r in self._intervals.get(oid, ()) if r["last_seen"] >= lo and r["first_seen"] <= hi]

    def prices_before(self, by_id: Iterable[int], t: int) -> dict[int, float]:
        out = {}
        for oid in by_id:
            before = [r for r in self._intervals.get(oid, ()) if r["last_seen"] < t]
            if before:  # the newest last seen (of equals, the one first seen last, as the statement orders them)
                out[oid] = float(max(before, key=lambda r: (r["last_seen"], r["first_seen"]))["price_per_hour"])
        return out

    def next_first_seen(self, ids: Iterable[int], t: int) -> int | None:
        return min((r["first_seen"] for oid in ids for r in self._intervals.get(oid, ()) if r["first_seen"] > t),
                   default=None)

    def held(self, provider: str, offers: Mapping[Identity, Offer], lo: int,
             hi: int | None = None) -> dict[int, dict[Identity, Quarantine]]:
        return _held_at(self._held.get(provider, ()), offers, lo, hi)


@dataclass
class _Writer:
    """Where re-cut intervals, the GPUs free now and labels go: written at once (``deferred``
    false), or gathered per provider and written for the whole batch (``flush``) in a few
    statements -- for series that share no offer (``_BatchReads``)."""

    conn: Connection
    deferred: bool = False
    ids: dict[tuple[str, Any], int] = field(default_factory=dict)
    #: provider id -> [drop, insert, touched, lo, hi]
    recut: dict[int, list[Any]] = field(default_factory=dict)
    free: list[tuple[int | None, int, int]] = field(default_factory=list)

    def labels(self, wanted: Iterable[tuple[str, Any]]) -> dict[tuple[str, Any], int]:
        """``labels.ensure``, asking the store only for names not seen before."""
        wanted = list(wanted)
        missing = [w for w in dict.fromkeys(wanted) if w not in self.ids]
        if missing:
            self.ids.update(labels.ensure(self.conn, missing))
        return self.ids

    def replace(self, pid: int, drop: list[int], insert: list[dict[str, Any]], touched: set[int], lo: int, hi: int) -> None:
        """``db.series.replace_intervals``; deferred, the batch's ranges join into one (each offer's
        newest interval is the one first seen last, whatever the range)."""
        if not self.deferred:
            series_db.replace_intervals(self.conn, pid, drop, insert, touched, lo, hi)
            return
        have = self.recut.setdefault(pid, [[], [], set(), lo, hi])
        have[0] += drop
        have[1] += insert
        have[2] |= touched
        have[3], have[4] = min(have[3], lo), max(have[4], hi)

    def counts(self, counts: list[tuple[int | None, int, int]]) -> None:
        """``store.store_counts`` (after the intervals: it writes into each offer's open one)."""
        if self.deferred:
            self.free += counts
        else:
            store_stage.store_counts(self.conn, counts)

    def flush(self) -> None:
        for pid, (drop, insert, touched, lo, hi) in sorted(self.recut.items()):
            series_db.replace_intervals(self.conn, pid, drop, insert, touched, lo, hi)
        self.recut.clear()
        store_stage.store_counts(self.conn, self.free)
        self.free = []


@dataclass
class _Plan:
    """What one provider's part of a series becomes over ``[lo, hi]`` (before anything is written)."""

    lo: int
    hi: int
    stored: list[dict[str, Any]]  # the stored intervals observed during [lo, hi]
    seen: dict[int, dict[int, Seen]]  # offer id -> snapshot time -> the stored observation
    accepted_at: dict[int, list[NormalisedOffer]] = field(default_factory=dict)  # new snapshots
    rejected_at: dict[int, list[Rejected]] = field(default_factory=dict)  # new snapshots
    now_held: dict[int, list[Rejected]] = field(default_factory=dict)  # stored observations held on a second look
    now_accepted: list[Quarantine] = field(default_factory=list)  # held observations a second look accepts
    #: offers listed at a continued time that an earlier batch already stored there (one observation)
    repeated: int = 0
    synced: bool = True
    #: when not synced: the next snapshot at which an offer judged differently has an observation
    resume_at: int | None = None


def _stored_offer(o: Offer, s: Seen, currency: str) -> NormalisedOffer:
    """A stored observation as it was seen, its stated start included (held on a second look,
    it keeps that start in quarantine for the import that accepts it again)."""
    extra = o.extra if s.since is None else {**o.extra, SINCE_KEY: s.since}
    return NormalisedOffer(o.provider, o.sku, o.region, o.kind, o.term_months, o.gpu, o.gpu_raw, o.gpu_count,
                           s.price_per_hour, s.price_per_gpu_hour, currency, s.available, o.gpu_memory_gb, o.vcpus,
                           o.ram_gb, o.country, extra)


def _held_offer(q: Quarantine) -> NormalisedOffer:
    """The held observation as it was seen (its ``extra`` carries a stated start, ``SINCE_KEY``)."""
    return NormalisedOffer(q.provider, q.sku, q.region, q.kind, q.term_months, q.gpu, q.gpu_raw, q.gpu_count or 1.0,
                           q.price_per_hour, q.price_per_gpu_hour, q.currency, available=q.available,
                           extra=dict(q.extra or {}))


def _stated_start(r: Mapping[str, Any]) -> int:
    """Where a stored interval's source said it began: its first observation, unless the one at
    the stated start was held for confirmation (then the interval keeps that start apart)."""
    return r["stated_start"] if r["stated_start"] is not None else r["first_seen"]


def _plan(known: _Reads, provider: str, sr: _Series, by_time: Mapping[int, list[ScrapedOffer]],
          offers: Mapping[Identity, Offer], hi_at_least: int, currency_rates: Mapping[str, float] | None) -> _Plan | None:
    """Judge ``provider``'s observations of the series in time order over the range the new
    snapshots affect, as the collections would have gone: each against the offer's price at its
    latest accepted observation before and the prices held at the snapshot before. From the
    oldest new snapshot on, stored observations are judged again too (a jump that a newly
    imported older price makes is held; a held price that it confirms is accepted). ``synced``
    says whether every offer's judgement state after ``hi`` is the stored one, so that nothing
    later changes; otherwise the caller widens the range."""
    by_id = {o.id: ident for ident, o in offers.items() if o.id is not None}
    lo, hi = sr.bounds()
    hi = max(hi, hi_at_least)
    affected = known.intervals(by_id, lo, hi)
    if not affected and not any(by_time.get(t) for t in sr.new):
        return None
    lo = min([lo, *(r["first_seen"] for r in affected)])
    hi = max([hi, *(r["last_seen"] for r in affected)])
    stored = known.intervals(by_id, lo, hi)
    stored_times = [t for t in sr.times if t not in sr.new or t in sr.continued]
    # every stored interval observed during the range takes part whole (it is cut again whole)
    plan = _Plan(min([lo, *(r["first_seen"] for r in stored)]), max([hi, *(r["last_seen"] for r in stored)]),
                 stored, defaultdict(dict))
    for r in stored:
        s = replace(_seen(r), since=_stated_start(r)) if sr.stated_starts else _seen(r)
        for t in stored_times[bisect_left(stored_times, r["first_seen"]):bisect_right(stored_times, r["last_seen"])]:
            plan.seen[r["offer_id"]][t] = s
    held = known.held(provider, offers, lo, hi)
    currency = known.currency()
    first_new = min(sr.new | sr.dropped)
    previous = {by_id[o]: p for o, p in known.prices_before(by_id, lo).items()}
    as_stored = dict(previous)  # the judgement state the stored history implies
    pending: dict[Identity, float] = {}
    for t in (t for t in sr.times if lo <= t <= hi):
        if t in sr.new:
            listed = by_time.get(t, [])
            kept_held: dict[Identity, float] = {}
            if t in sr.continued:  # an earlier batch stored part of this snapshot, judged then: it stays
                here = {by_id[o]: by_t[t].price_per_hour for o, by_t in plan.seen.items() if t in by_t}
                as_stored.update(here)
                previous.update(here)
                kept_held = {ident: q.price_per_hour for ident, q in held.get(t, {}).items()}  # type: ignore[misc]
                there = here.keys() | kept_held.keys()
                kept = [o for o in listed if (o.sku, o.region, o.kind, o.term_months) not in there]
                plan.repeated += len(listed) - len(kept)
                listed = kept
            candidates = [_tagged(normalise(o, currency_rates), sr.name) for o in listed]
        else:
            here = {by_id[o]: (offers[by_id[o]], by_t[t]) for o, by_t in plan.seen.items() if t in by_t}
            as_stored.update({ident: s.price_per_hour for ident, (_o, s) in here.items()})
            if t < first_new:  # nothing before the new snapshots changed
                previous.update(as_stored)
                pending = {ident: q.price_per_hour for ident, q in held.get(t, {}).items()}  # type: ignore[misc]
                continue
            candidates = [_stored_offer(o, s, currency[s.currency_id]) for o, s in here.values()]
            candidates += [_held_offer(q) for q in held.get(t, {}).values()]
        accepted, rejected = validate(candidates, previous, pending)
        pending = held_prices(rejected)
        previous.update({o.identity: o.price_per_hour for o in accepted if o.price_per_hour is not None})
        if t in sr.new:
            plan.accepted_at[t], plan.rejected_at[t] = accepted, rejected
            pending.update(kept_held)
            continue
        was_held = held.get(t, {})
        plan.now_accepted += [was_held[o.identity] for o in accepted if o.identity in was_held]
        plan.now_held[t] = [r for r in rejected if r.offer.identity not in was_held]
        for r in plan.now_held[t]:
            plan.seen[offers[r.offer.identity].id].pop(t, None)  # type: ignore[index]
    if sr.next_after(hi) is not None:
        # only offers observed (or held) after the range can be judged differently later
        later = {ident for ident, o in offers.items() if epoch(o.last_seen) > hi}
        later |= {ident for by_ident in known.held(provider, offers, hi + 1).values() for ident in by_ident}
        at_hi = {ident: q.price_per_hour for ident, q in held.get(hi, {}).items()}
        behind = [i for i in later if previous.get(i) != as_stored.get(i) or pending.get(i) != at_hi.get(i)]
        if behind:
            plan.synced = False
            plan.resume_at = _next_candidate(known, provider, sr, offers, behind, stored, hi)
    return plan


def _next_candidate(known: _Reads, provider: str, sr: _Series, offers: Mapping[Identity, Offer],
                    idents: Iterable[Identity], stored: Iterable[Mapping[str, Any]], hi: int) -> int:
    """The first snapshot after ``hi`` at which one of ``idents`` was observed or held (until
    then its judgement cannot differ, so the range may widen to it in one step)."""
    ids = {offers[i].id for i in idents}
    nxt = sr.next_after(hi)
    assert nxt is not None
    if any(r["offer_id"] in ids and r["last_seen"] > hi for r in stored):
        return nxt
    wanted = set(idents)
    times = [t for t, by_ident in known.held(provider, offers, hi + 1).items() if wanted & set(by_ident)]
    if (first := known.next_first_seen(ids, hi)) is not None:
        times.append(first)
    return max(nxt, min(times, default=nxt))


def _store_provider(session: Session, provider: str, sr: _Series, by_time: Mapping[int, list[ScrapedOffer]],
                    offers: dict[Identity, Offer], run: ScrapeRun, result: ImportResult,
                    currency_rates: Mapping[str, float] | None, known: _Reads, writer: _Writer) -> tuple[int, int] | None:
    """Re-cut ``provider``'s intervals of one series over the range the new snapshots affect,
    from the stored observations there plus the new ones (see the module docstring). Returns the
    range of snapshot times changed, or ``None`` when nothing was. ``offers``: the series'
    stored offers of ``provider`` (it gains the ones created now). ``reads``: where the stored rows
    come from; ``writer``: where the re-cut intervals go (both one series at a time, or a batch's at once)."""
    hi_at_least = max(sr.new)
    plan = _plan(known, provider, sr, by_time, offers, hi_at_least, currency_rates)
    while plan is not None and not plan.synced:  # a judgement changed at the end: widen until none does
        assert plan.resume_at is not None and plan.resume_at > hi_at_least
        hi_at_least = plan.resume_at
        plan = _plan(known, provider, sr, by_time, offers, hi_at_least, currency_rates)
    if plan is None:
        return None
    lo, hi, seen = plan.lo, plan.hi, plan.seen  # the whole of every interval taking part
    if sr.dropped:  # what a replaced snapshot quarantined goes with it
        for q in session.exec(select(Quarantine).where(
                Quarantine.provider == provider,
                col(Quarantine.observed_at).in_([from_epoch(t) for t in sorted(sr.dropped)]))).all():
            session.delete(q)
    for t, rejected in [*plan.rejected_at.items(), *plan.now_held.items()]:
        quarantined = store_stage.store_quarantine(session, run.id, rejected, from_epoch(t))
        result.quarantined += quarantined
        run.quarantined += quarantined
    for q in plan.now_accepted:
        session.delete(q)
        # now a sighting of its offer: a later import's range widens to it (``_plan``'s ``later``)
        o = offers[(q.sku, q.region, q.kind, q.term_months)]
        o.first_seen, o.last_seen = min(o.first_seen, q.observed_at), max(o.last_seen, q.observed_at)
    result.observations += plan.repeated
    result.already_stored += plan.repeated
    for t, accepted in plan.accepted_at.items():
        n = len(accepted) + len(plan.rejected_at[t])
        result.observations += n
        result.stored += len(accepted)
        result.snapshots += t not in sr.continued  # a continued snapshot was counted by the batch that began it
        run.offers_seen += n
        for o in accepted:
            if o.gpu is None:
                result.unmapped[o.gpu_raw] += 1
                run.unmapped += 1

    fresh = _upsert_offers(session, provider, offers, plan.accepted_at)
    earlier = {o.id for o in offers.values() if o.id not in fresh and epoch(o.first_seen) < lo}
    now = [(t, o) for t, acc in plan.accepted_at.items() for o in acc]
    now += [(epoch(q.observed_at), _held_offer(q)) for q in plan.now_accepted]
    ids = writer.labels([("provider", provider), *reads.key_labels(provider, [o.extra for _t, o in now])]
                        + [(sp, v) for _t, o in now for sp, v in (("kind", o.kind), ("currency", o.currency))]
                        + [("gpu", o.gpu) for _t, o in now if o.gpu is not None])
    pid = ids[("provider", provider)]
    for t, o in now:
        if o.price_per_hour is None or o.price_per_gpu_hour is None:
            continue  # listed without a price: an offer, no interval
        since = o.extra.get(SINCE_KEY) if sr.stated_starts else None
        seen[offers[o.identity].id][t] = Seen(  # type: ignore[index]
            ids[("gpu", o.gpu)] if o.gpu is not None else None, ids[("kind", o.kind)], ids[("currency", o.currency)],
            o.price_per_hour, o.price_per_gpu_hour, o.available, None if since is None else int(since))

    ends = {(r["offer_id"], r["last_seen"]): r["ends_at"] for r in plan.stored}
    rows = []
    for r in cut([t for t in sr.times if lo <= t <= hi], seen, sr.max_gap_s, earlier):
        nxt = sr.next_after(r.last)
        rows.append({"offer_id": r.offer_id, "provider_id": pid, "gpu_id": r.seen.gpu_id, "kind_id": r.seen.kind_id,
                     "currency_id": r.seen.currency_id, "price_per_hour": r.seen.price_per_hour,
                     "price_per_gpu_hour": r.seen.price_per_gpu_hour, "available": r.seen.available,
                     "first_seen": r.first, "last_seen": r.last,
                     "ends_at": nxt if nxt is not None else ends.get((r.offer_id, r.last)),
                     "observations": r.observations, "_start": r.start,
                     "stated_start": r.seen.since if r.seen.since is not None and r.seen.since < r.first else None})
    key = series_db.RECUT_COLUMNS
    before = {tuple(r[c] for c in key): r["id"] for r in plan.stored}
    after = {tuple(r[c] for c in key): r for r in rows}
    drop = [i for k, i in before.items() if k not in after]
    insert = [r for k, r in after.items() if k not in before]
    began = {(r["offer_id"], r["first_seen"]) for r in plan.stored}  # counted when first stored
    for r in insert:
        start = r.pop("_start") if (r["offer_id"], r["first_seen"]) not in began else "extended"
        result.prices_changed += start == "changed"
        result.returned += start == "returned"
        run.prices_changed += start == "changed"
        run.returned_offers += start == "returned"
    result.new_offers += len(fresh)
    run.new_offers += len(fresh)
    dropped = set(drop)
    touched = {r["offer_id"] for r in plan.stored if r["id"] in dropped} | {r["offer_id"] for r in insert}
    writer.replace(pid, drop, insert, touched, lo, hi)
    if sr.dropped:
        writer.flush()  # the offers' sightings are read back from their intervals
        _resight(session, offers, sr.dropped)
    writer.counts(_counts(offers, plan.accepted_at))
    return lo, sr.next_after(hi) or hi


def _counts(offers: Mapping[Identity, Offer], accepted_at: Mapping[int, list[NormalisedOffer]]) -> list[tuple[int | None, int, int]]:
    """The GPUs free of each offer whose newest sighting is among the new snapshots, as that snapshot
    said, for ``store.store_counts`` (``price_interval_open.available_count``: current-only, so an
    older snapshot never overwrites it)."""
    newest: dict[Identity, tuple[int, NormalisedOffer]] = {}
    for t in sorted(accepted_at):
        for o in accepted_at[t]:
            if o.price_per_hour is not None and o.price_per_gpu_hour is not None:
                newest[o.identity] = (t, o)
    return [(o.available_count, offers[ident].id, t) for ident, (t, o) in newest.items()  # type: ignore[misc]
            if epoch(offers[ident].last_seen) == t]


def _resight(session: Session, offers: Mapping[Identity, Offer], dropped: set[int]) -> None:
    """An offer first or last seen at a replaced snapshot takes its sightings from its intervals."""
    reader = in_transaction(session.connection())
    for o in offers.values():
        if o.id is None or not ({epoch(o.first_seen), epoch(o.last_seen)} & dropped):
            continue
        seen = reads.offer_sightings(reader, o.id)
        if seen is not None:
            o.first_seen, o.last_seen = from_epoch(seen[0]), from_epoch(seen[1])


def _upsert_offers(session: Session, provider: str, offers: dict[Identity, Offer],
                   accepted_at: Mapping[int, list[NormalisedOffer]]) -> set[int]:
    """Create the offers first seen now and keep each offer's attributes from its newest
    observation and its first and last sighting; ``offers`` gains the new ones. Returns their ids."""
    newest: dict[Identity, tuple[int, NormalisedOffer]] = {}
    span: dict[Identity, list[int]] = {}
    for t in sorted(accepted_at):
        for o in accepted_at[t]:
            newest[o.identity] = (t, o)
            span.setdefault(o.identity, [t, t])[1] = t
    created = []
    for ident, (t, o) in newest.items():
        first, last = (from_epoch(x) for x in span[ident])
        attrs = {f: getattr(o, f) for f in OFFER_FIELDS}
        extra = {k: v for k, v in o.extra.items() if k != SINCE_KEY}
        have = offers.get(ident)
        if have is None:
            have = Offer(provider=provider, sku=o.sku, region=o.region, kind=o.kind, term_months=o.term_months,
                         extra=extra, first_seen=first, last_seen=last, **attrs)
            session.add(have)
            offers[ident] = have
            created.append(have)
            continue
        if last >= have.last_seen:  # only what changed is set (each set is tracked by the ORM)
            for f, v in attrs.items():
                if getattr(have, f) != v:
                    setattr(have, f, v)
            if have.extra != extra:
                have.extra = extra
            if have.last_seen != last:
                have.last_seen = last
        if first < have.first_seen:
            have.first_seen = first
    if created:  # their ids; the changes to stored offers are written with the batch (``release``)
        session.flush()
    return {o.id for o in created if o.id is not None}


#: A series whose snapshots come further apart than the format's gap gets this many times its
#: median spacing as its gap (``series_gap``).
SPACING_GAP = 1.5
#: Steps between snapshots a series needs before its spacing is its own (two daily files eleven
#: days apart are two snapshots with a gap between them, not an archive collected every eleven days).
MIN_SPACING_STEPS = 8


def batches(snapshots: Iterable[Snapshot], rows: int | None = None) -> Iterator[list[Snapshot]]:
    """``snapshots`` in lists of about ``rows`` offers, cut where the series changes (an export
    of prices writes each offer's snapshots together: they stay in one batch), or, within one
    long series, where its time changes once the batch holds four times as many."""
    rows = rows or base.BATCH_ROWS
    batch: list[Snapshot] = []
    n, series, at = 0, None, None
    for s in snapshots:
        if n >= rows and (s.series != series or (n >= 4 * rows and s.at != at)):
            yield batch
            batch, n = [], 0
        batch.append(s)
        n += len(s.offers) or 1
        series, at = s.series, s.at
    if batch:
        yield batch


def median_spacing(times: Sequence[int]) -> float | None:
    """The median time between consecutive snapshots (epoch seconds, oldest first), or ``None``."""
    steps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    return float(steps[len(steps) // 2]) if steps else None


def series_gap(times: Sequence[int], max_gap_s: float, adapt: bool, result: ImportResult, name: str) -> float:
    """The gap of a series with these snapshot times: the format's (``max_gap_s``), unless
    ``adapt`` (no ``--max-gap`` was given) and the series' median spacing exceeds it -- an archive
    that collected less often than its format's cadence (tugot17's H100 file: about 4 hours) --
    then ``SPACING_GAP`` times that spacing, so that consecutive snapshots stay consecutive
    (with at least ``MIN_SPACING_STEPS`` steps to judge by). ``result`` notes a gap of the
    series' own, and a spacing wider than the gap used (each snapshot then starts anew: warned)."""
    spacing = median_spacing(times)
    gap = max_gap_s
    if adapt and spacing is not None and spacing > max_gap_s and len(times) > MIN_SPACING_STEPS:
        gap = SPACING_GAP * spacing
        result.gaps[name] = timedelta(seconds=gap)
    if spacing is not None and spacing > gap:
        result.wide_spacing[name] = timedelta(seconds=spacing)
    else:
        result.wide_spacing.pop(name, None)
    return gap


@dataclass
class _Import:
    """What one import keeps across its batches: its runs, each provider's newest snapshot, the
    ranges whose roll-ups it changed."""

    session: Session
    note: str
    runs: dict[str, ScrapeRun] = field(default_factory=dict)
    latest: dict[str, datetime] = field(default_factory=dict)
    touched: dict[str, list[int]] = field(default_factory=dict)  # provider -> [first, last] epoch second changed
    #: series -> the snapshot times this import's batches stored (a later batch listing more of
    #: one of them continues it; not kept for an export of prices, whose every series is one offer)
    stored_here: dict[str, set[int]] = field(default_factory=dict)

    def run(self, provider: str) -> ScrapeRun:
        if provider not in self.runs:
            self.runs[provider] = ScrapeRun(provider=provider, started_at=utcnow(), source="import", status="running")
            self.session.add(self.runs[provider])
            self.session.flush()
        return self.runs[provider]

    def changed(self, provider: str, lo: int, hi: int) -> None:
        span = self.touched.setdefault(provider, [lo, hi])
        span[0], span[1] = min(span[0], lo), max(span[1], hi)

    def listed(self, provider: str, newest: int, cadence: timedelta | None, result: ImportResult) -> None:
        """``provider`` was listed by the import up to ``newest``: its newest snapshot, and an
        external provider's collection interval and name."""
        at = from_epoch(newest)
        self.latest[provider] = max(self.latest.get(provider, at), at)
        if not is_external(provider):
            return
        prov = labels.ensure_provider(self.session, provider)
        if cadence:
            store_stage.remember_interval(self.session, prov, int(cadence.total_seconds()))
        if provider not in result.external_providers:
            result.external_providers.append(provider)
        if not prov.display_name or prov.display_name == provider:
            prov.display_name = provider


def release(session: Session) -> None:
    """Write what a batch changed and let go of its offers: memory stays that of one batch."""
    session.flush()
    for obj in list(session.identity_map.values()):
        if isinstance(obj, (Offer, Quarantine)):
            session.expunge(obj)


def store_batch(imp: _Import, snapshots: list[Snapshot], result: ImportResult, *, max_gap_s: float | None,
                 adapt_gap: bool, cadence: timedelta | None, stated_starts: bool, one_per_day: bool,
                 one_offer_series: bool, currency_rates: Mapping[str, float] | None) -> None:
    """Store one batch: its series never seen before set-based (``fresh``), the others re-cut
    over the range their new snapshots change (``_store_provider``)."""
    session = imp.session
    conn = session.connection()
    series_times, series_map = merge(snapshots)
    by_series: dict[str, dict[str, dict[int, list[ScrapedOffer]]]] = defaultdict(dict)
    for (provider, name), by_time in series_map.items():
        by_series[name][provider] = by_time
    stored_all = series_db.stored_times(conn, series_times)
    stored_offers = _StoredOffers(session)
    known, writer = _Reads(session), _Writer(conn)
    if one_offer_series:
        stored_offers.prefetch({name: by_series[name] for name in stored_all})
        # series of one offer each share nothing: their re-cuts read and write set-based
        prefetched: dict[str, list[Offer]] = defaultdict(list)
        for name in stored_all:
            for provider in stored_offers.providers(name):
                prefetched[provider] += stored_offers.of(provider, name).values()
        known, writer = _BatchReads(session, prefetched), _Writer(conn, deferred=True)
    recut_times: list[tuple[str, int]] = []
    ensured: set[str] = set()
    new_series: list[FreshSeries] = []
    for name in sorted(series_times):
        listing = by_series[name]
        stored = set(stored_all.get(name) or ())
        wanted = set(series_times[name])
        dropped: set[int] = set()
        if one_per_day:
            kept = newest_per_day(stored | wanted)
            dropped, wanted = stored - kept, wanted & kept
        every = sorted((stored - dropped) | wanted)
        gap_s = max_gap_s if max_gap_s is None else series_gap(every, max_gap_s, adapt_gap, result, name)
        # a snapshot an earlier batch of this import stored part of: the rest of its rows join it
        continued = wanted & stored & imp.stored_here.get(name, set())
        sr = _Series(name, every, (wanted - stored) | continued, gap_s, stated_starts, dropped, continued)
        for by_time in listing.values():
            repeated = sum(len(v) for t, v in by_time.items() if t in stored and t not in continued)
            result.observations += repeated
            result.already_stored += repeated
        if not sr.new:
            continue
        if not stored:  # never seen before: stored set-based below
            new_series.append(FreshSeries(name, sorted(sr.new), {
                p: d for p, by in listing.items() if (d := {t: v for t, v in by.items() if t in sr.new})}, gap_s,
                stated_starts))
            continue
        for provider in sorted(set(listing) | stored_offers.providers(name)):
            if provider not in ensured:  # once a batch: each asks the store (and flushes what is pending)
                labels.ensure_provider(session, provider)
                ensured.add(provider)
            # a provider of the series that this import does not list: its intervals may still
            # be re-cut (a new snapshot without it ends them), with nothing to count
            run = imp.run(provider) if provider in listing else ScrapeRun(provider=provider, source="import")
            changed = _store_provider(session, provider, sr, listing.get(provider, {}),
                                      stored_offers.of(provider, name), run, result, currency_rates, known, writer)
            if changed is not None:
                imp.changed(provider, *changed)
            if provider in listing:
                imp.listed(provider, max(sr.new), cadence, result)
        recut_times += [(name, t) for t in sr.new]
        series_db.remove(conn, name, sr.dropped)
    writer.flush()
    series_db.add_many(conn, recut_times)
    if new_series:
        for provider in sorted({p for sr in new_series for p in sr.listing}):
            labels.ensure_provider(session, provider)
        changed_fresh = store_fresh(session, new_series, imp.run, result, currency_rates=currency_rates)
        for provider, (lo, hi) in changed_fresh.items():
            imp.changed(provider, lo, hi)
        newest: dict[str, int] = {}
        for sr in new_series:
            for provider in sr.listing:
                newest[provider] = max(newest.get(provider, sr.times[-1]), sr.times[-1])
        for provider, t in newest.items():
            imp.listed(provider, t, cadence, result)
    if not one_offer_series:
        for name, times in series_times.items():
            imp.stored_here.setdefault(name, set()).update(times)


def store_snapshots(
    engine: Engine,
    snapshots: Iterable[Snapshot],
    result: ImportResult,
    *,
    max_gap: timedelta | None,
    adapt_gap: bool = False,
    cadence: timedelta | None = None,
    stated_starts: bool = False,
    one_per_day: bool = False,
    one_offer_series: bool = False,
    note: str | Callable[[], str],
    currency_rates: Mapping[str, float] | None = None,
    strict: bool = False,
    screen: Callable[[Session, list[Snapshot], ImportResult], list[Snapshot]] | None = None,
) -> ImportResult:
    """Store ``snapshots`` (see the module docstring) in one transaction, read and written in
    batches of about ``base.BATCH_ROWS`` rows; fill ``result``. A failure anywhere (a line past the
    size bounds, ``strict`` and a bad row, the database) rolls the whole import back: nothing of
    it is stored, and importing again starts afresh.

    ``adapt_gap``: ``max_gap`` is the format's default, not the user's: a series whose snapshots
    come further apart takes a gap from its own spacing (``series_gap``).

    ``stated_starts``: each offer's ``extra[SINCE_KEY]`` says where its interval began (an
    export that states it); give every import of a series the same value.

    ``one_per_day``: a series keeps one snapshot per UTC day, the newest (an archive whose
    re-run of a day replaces that day's rows): an older one of a day is skipped, and a stored
    one a newer snapshot of its day replaces is taken out of the history (its observations,
    held prices and snapshot time), whatever order the files come in.

    ``one_offer_series``: each series is one offer, the one it lists (an export of prices): its
    stored offer is read by its identity.

    ``screen``: applied to each batch before it is stored (an export leaves offers other series keep alone).
    ``note``: the message of the import's runs (a callable: made once everything is read)."""
    gap_s = max_gap.total_seconds() if max_gap is not None else None
    with importing(engine, result, max_gap=max_gap, note=note, strict=strict) as imp:
        for batch in batches(snapshots):
            if screen is not None:
                batch = screen(imp.session, batch, result)
            refuse_if_strict(result, strict)
            store_batch(imp, batch, result, max_gap_s=gap_s, adapt_gap=adapt_gap, cadence=cadence,
                        stated_starts=stated_starts, one_per_day=one_per_day, one_offer_series=one_offer_series,
                        currency_rates=currency_rates)
            release(imp.session)
    return result


@contextmanager
def importing(engine: Engine, result: ImportResult, *, max_gap: timedelta | None, note: str | Callable[[], str],
              strict: bool) -> Iterator[_Import]:
    """An import's one transaction: yields the ``_Import`` its batches are stored with
    (``store_batch``, then ``release``); once they are, sets the current list of each provider
    known from imports alone, refreshes the roll-ups of what changed and closes the runs."""
    result.max_gap = max_gap
    with session_scope(engine) as session:
        imp = _Import(session, "")
        yield imp
        refuse_if_strict(result, strict)
        for provider, at in imp.latest.items():
            prov = labels.ensure_provider(session, provider)
            if (prov.last_success_at is None or at > prov.last_success_at) and not scraped_live(session, provider):
                # Only a provider known from imports alone takes the archive as its current list.
                prov.last_success_at = at
                prov.last_status = "ok"
                if prov.last_attempt_at is None or at > prov.last_attempt_at:
                    prov.last_attempt_at = at
        _refresh_rollups(session, imp.touched)
        finished = utcnow()
        message = note() if callable(note) else note
        for run in imp.runs.values():
            run.status, run.finished_at = "ok", finished
            run.duration_s = (finished - run.started_at).total_seconds()
            run.error_message = message
        result.providers = sorted(imp.runs)
        result.external_providers.sort()


def refuse_if_strict(result: ImportResult, strict: bool) -> None:
    if strict and result.bad_total:
        raise ValidationError(f"import: {result.bad_total} bad row(s), nothing imported; first: {result.bad_rows[0]}")
