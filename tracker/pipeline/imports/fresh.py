"""Storing the series an import sees for the first time, set-based, as a scrape stores a collection.

A series with no stored snapshot has nothing to re-cut: its history is its new snapshots
alone. So instead of re-cutting it one series at a time (``snapshots._store_provider``: a
dozen statements per series, 60 rows a second for an export whose every offer is a series of
its own), every such series of a batch is judged and cut in memory by the same rules
(``validate`` in time order, ``runs.cut``) and written per provider in a few bulk statements:
the new offers (``store.insert_offers``), their intervals (``db.intervals.insert_new``), the
held prices (``store.store_quarantine``) and the snapshot times (``db.series.add_many``). The
rows written are the ones the re-cut would write for the same snapshots (a test compares them).

The commonest such series, a row of an export of prices that is an offer of its own, accepted
at one price from its stated start to its observation, is one offer and one interval: it is
written from its row (``OfferRow``) by ``store_rows`` with no record per observation at all.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

from sqlalchemy.engine import Connection
from sqlmodel import Session

from db import intervals, labels, reads
from db import series as series_db
from db.reads import Identity
from db.spans import from_epoch
from scrapers.base import ScrapedOffer
from tracker.pipeline import store as store_stage
from tracker.pipeline.imports.base import SINCE_KEY, ImportResult, held_prices
from tracker.pipeline.imports.runs import Seen, cut
from tracker.pipeline.normalise import NormalisedOffer, normalise
from tracker.pipeline.validate import Rejected, validate


class _Instants(dict[int, datetime]):
    """Epoch second -> its datetime, each made once (the offers of a batch share a few times)."""

    def __missing__(self, t: int) -> datetime:
        self[t] = at = from_epoch(t)
        return at


@dataclass
class FreshSeries:
    """A series with no stored snapshot: its snapshot times (epoch seconds, oldest first) and
    what each provider listed at each."""

    name: str
    times: list[int]
    listing: Mapping[str, Mapping[int, Sequence[ScrapedOffer]]]
    max_gap_s: float | None
    stated_starts: bool = False


#: A row of an export of prices, read: an offer (every field of ``NormalisedOffer``, as ``normalise``
#: would make it, ``extra`` the export's own) listed at one price from ``since`` to ``observed``
#: (its stated start and its observation, with their epoch seconds), the only offer of its
#: ``series``; ``term_unstated``: a reserved row without a term (its provider printed none).
#: A tuple whose fields are taken from ``NormalisedOffer``, not one: an import builds one a row,
#: and a frozen dataclass costs several times a tuple to build.
OfferRow = NamedTuple("OfferRow", [*((f.name, f.type) for f in fields(NormalisedOffer)),  # type: ignore[misc]
                                   ("term_unstated", bool), ("since_at", datetime), ("since", int),
                                   ("observed_at", datetime), ("observed", int), ("line", int), ("series", str)])


def store_rows(session: Session, rows: Sequence[OfferRow], run_of: Callable[[str], Any], result: ImportResult, *,
               extra: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """Store ``rows``, each a series the store has never seen and whose observations ``validate``
    accepts (the caller checked), as ``store_fresh`` would: a new offer (its ``extra`` this one,
    the series' and an unstated term's) with one interval from the row's first snapshot time to
    its last, and the snapshot times; every row a tuple. Returns each provider's changed range."""
    conn = session.connection()
    # the series are new: their times are inserted in bulk (``COPY`` on PostgreSQL), not merged
    intervals.insert_many(conn, "snapshot_time", ("series", "at"), [(r.series, t) for r in rows for t in {r.since, r.observed}])
    ids = _ensure_labels(conn, {r.provider for r in rows}, {(r.gpu, r.kind, r.currency) for r in rows})
    ids[("gpu", None)] = None  # type: ignore[index]
    by_provider: dict[str, list[OfferRow]] = defaultdict(list)
    for r in sorted(rows, key=attrgetter("series")):  # the order ``store_fresh`` writes a batch in
        by_provider[r.provider].append(r)
    instant = _Instants()
    # the JSON of each row's extra up to its series' name (``[:-3]``: the empty name and brace)
    head = {u: json.dumps({**extra, **({"term_unstated": True} if u else {}), series_db.SERIES_KEY: ""})[:-3]
            for u in (False, True)}
    changed: dict[str, tuple[int, int]] = {}
    for provider, group in sorted(by_provider.items()):
        run, pid = run_of(provider), ids[("provider", provider)]
        offer_ids = store_stage.insert_offer_rows(conn, provider, [
            (r.sku, r.region, r.kind, r.term_months, r.gpu, r.gpu_raw, r.gpu_count, r.gpu_memory_gb, None, None, r.country,
             f"{head[r.term_unstated]}{json.dumps(r.series)}}}", instant[r.since], instant[r.observed]) for r in group])
        rows_out = [(offer_ids[(r.sku, r.region, r.kind, r.term_months)], pid, ids[("gpu", r.gpu)], ids[("kind", r.kind)],
                     ids[("currency", r.currency)], r.price_per_hour, r.price_per_gpu_hour, r.available,
                     r.since, r.observed, None, 1 + (r.since != r.observed), None) for r in group]  # intervals.COLUMNS
        intervals.insert_new(conn, sorted(rows_out, key=itemgetter(0)))
        observations = len(group) + sum(r.since != r.observed for r in group)
        unmapped = [(r.gpu_raw, 1 + (r.since != r.observed)) for r in group if r.gpu is None]
        for raw, n in unmapped:
            result.unmapped[raw] += n
        run.new_offers += len(offer_ids)
        run.offers_seen += observations
        run.unmapped += sum(n for _raw, n in unmapped)
        result.new_offers += len(offer_ids)
        result.observations += observations
        result.stored += observations
        result.snapshots += observations
        changed[provider] = (min(r.since for r in group), max(r.observed for r in group))
    return changed


@dataclass
class _Writes:
    """One provider's part of a batch, before anything is written."""

    #: identity -> [first, last, newest observation] of the offers accepted at least once
    offers: dict[Identity, list[Any]] = field(default_factory=dict)
    #: identity -> snapshot time -> what it saw
    seen: dict[Identity, dict[int, Seen]] = field(default_factory=dict)
    rejected_at: list[tuple[int, list[Rejected]]] = field(default_factory=list)
    observations: int = 0
    unmapped: int = 0
    #: per series: identity -> snapshot time -> what it saw (GPU, kind and currency by name)
    cuts: list[tuple[FreshSeries, dict[Identity, dict[int, Seen]]]] = field(default_factory=list)


def _judge(provider: str, sr: FreshSeries, w: _Writes, result: ImportResult,
           currency_rates: Mapping[str, float] | None) -> dict[int, list[NormalisedOffer]]:
    """Validate ``provider``'s snapshots of the series in time order (each against the offer's
    latest accepted price and the prices held at the snapshot before), as its collections would
    have gone; returns the accepted offers by snapshot time."""
    by_time = sr.listing.get(provider, {})
    previous: dict[Identity, float] = {}
    pending: dict[Identity, float] = {}
    accepted_at: dict[int, list[NormalisedOffer]] = {}
    normalised: dict[int, NormalisedOffer] = {}  # an offer listed at several times is normalised once
    observations = stored = snapshots = 0
    offers = w.offers
    for t in sr.times:
        candidates = []
        for o in by_time.get(t, ()):
            n = normalised.get(id(o))
            if n is None:
                n = normalised[id(o)] = normalise(o, currency_rates)
                n.extra[series_db.SERIES_KEY] = sr.name  # type: ignore[index]  # normalise made this dict: the offer's own
            candidates.append(n)
        accepted, rejected = validate(candidates, previous, pending)
        pending = held_prices(rejected)
        previous.update({o.identity: o.price_per_hour for o in accepted if o.price_per_hour is not None})
        if t not in by_time:
            continue
        accepted_at[t] = accepted
        if rejected:
            w.rejected_at.append((t, rejected))
        observations += len(accepted) + len(rejected)
        stored += len(accepted)
        snapshots += 1
        for o in accepted:
            if o.gpu is None:
                result.unmapped[o.gpu_raw] += 1
                w.unmapped += 1
            ident = o.identity
            have = offers.get(ident)
            if have is None:
                offers[ident] = [t, t, o]
            else:
                have[0], have[1] = min(have[0], t), max(have[1], t)
                if t >= have[1]:
                    have[2] = o
    result.observations += observations
    w.observations += observations
    result.stored += stored
    result.snapshots += snapshots
    return accepted_at


def store_fresh(session: Session, batch: Sequence[FreshSeries], run_of: Callable[[str], Any], result: ImportResult, *,
                currency_rates: Mapping[str, float] | None = None) -> dict[str, tuple[int, int]]:
    """Store ``batch`` (series with no stored snapshot); returns each provider's changed range
    of snapshot times (for the roll-ups). ``run_of(provider)``: the import's ``scrape_run`` of the
    provider (it counts what was stored)."""
    conn = session.connection()
    writes: dict[str, _Writes] = defaultdict(_Writes)
    for sr in batch:
        for provider in sorted(sr.listing):
            w = writes[provider]
            accepted_at = _judge(provider, sr, w, result, currency_rates)
            seen: dict[Identity, dict[int, Seen]] = {}
            w.cuts.append((sr, seen))
            for t, accepted in accepted_at.items():
                for o in accepted:
                    if o.price_per_hour is None or o.price_per_gpu_hour is None:
                        continue  # listed without a price: an offer, no interval
                    since = o.extra.get(SINCE_KEY) if sr.stated_starts else None
                    seen.setdefault(o.identity, {})[t] = Seen(o.gpu, o.kind, o.currency, o.price_per_hour,  # type: ignore[arg-type]
                                                              o.price_per_gpu_hour, o.available,
                                                              None if since is None else int(since))
    series_db.add_many(conn, [(sr.name, t) for sr in batch for t in sr.times])
    if not writes:
        return {}
    named = {(s.gpu_id, s.kind_id, s.currency_id) for w in writes.values() for _sr, seen in w.cuts
             for by_t in seen.values() for s in by_t.values()}
    aggregated = {key for p, w in writes.items() for key in reads.key_labels(p, [o.extra for _f, _l, o in w.offers.values()])}
    ids = _ensure_labels(conn, writes, named, aggregated)
    labelled: dict[Seen, Seen] = {}
    changed: dict[str, tuple[int, int]] = {}
    instant = _Instants()
    for provider, w in sorted(writes.items()):
        run = run_of(provider)
        pid = ids[("provider", provider)]
        offer_ids = store_stage.insert_offers(conn, provider, [
            (o, {k: v for k, v in o.extra.items() if k != SINCE_KEY}, instant[first], instant[last])
            for first, last, o in w.offers.values()])
        result.new_offers += len(offer_ids)
        run.new_offers += len(offer_ids)
        for t, rejected in w.rejected_at:
            n = store_stage.store_quarantine(session, run.id, rejected, from_epoch(t))
            result.quarantined += n
            run.quarantined += n
        rows: list[tuple[Any, ...]] = []
        changes = returns = 0
        for sr, seen in w.cuts:
            keyed = {}
            for ident, by_t in seen.items():
                keyed[offer_ids[ident]] = {t: labelled.get(s) or labelled.setdefault(s, _labelled(s, ids))
                                           for t, s in by_t.items()}
            following = dict(zip(sr.times, [*sr.times[1:], None], strict=True))
            for r in cut(sr.times, keyed, sr.max_gap_s):
                changes += r.start == "changed"
                returns += r.start == "returned"
                s, since = r.seen, r.seen.since
                rows.append((r.offer_id, pid, s.gpu_id, s.kind_id, s.currency_id, s.price_per_hour,  # intervals.COLUMNS
                             s.price_per_gpu_hour, s.available, r.first, r.last, following[r.last], r.observations,
                             since if since is not None and since < r.first else None))
            lo, hi = changed.get(provider, (sr.times[0], sr.times[-1]))
            changed[provider] = (min(lo, sr.times[0]), max(hi, sr.times[-1]))
        run.offers_seen += w.observations
        run.unmapped += w.unmapped
        run.prices_changed += changes
        run.returned_offers += returns
        result.prices_changed += changes
        result.returned += returns
        rows.sort(key=_offer_then_start)
        intervals.insert_new(conn, rows)  # the offers are new: nothing of theirs is stored to re-cut
        # each offer's newest observation's GPUs free (``store.store_counts``: current-only)
        store_stage.store_counts(conn, [(o.available_count, offer_ids[ident], last) for ident, (_f, last, o) in w.offers.items()
                                        if o.available_count is not None and o.price_per_hour is not None
                                        and o.price_per_gpu_hour is not None])
    return changed


def _ensure_labels(conn: Connection, providers: Iterable[str], named: set[tuple[str | None, str, str]],
                   keys: Iterable[tuple[str, str]] = ()) -> dict[tuple[str, Any], int]:
    """The label ids of ``providers``, of each (GPU, kind, currency) ``named`` (a GPU ``None`` has
    none) and of the aggregators' composite ``keys``, ensured in one statement."""
    return labels.ensure(conn, sorted({("provider", p) for p in providers} | set(keys) | {("kind", k) for _g, k, _c in named}
                                      | {("currency", c) for _g, _k, c in named}
                                      | {("gpu", g) for g, _k, _c in named if g is not None}, key=str))


def _offer_then_start(row: tuple[Any, ...]) -> tuple[int, int]:
    """Rows in ``intervals.COLUMNS`` order by offer, oldest first (``intervals.insert_new``'s order)."""
    return row[0], row[8]


def _labelled(s: Seen, ids: Mapping[tuple[str, Any], int]) -> Seen:
    """``s`` with its GPU, kind and currency names (as ``store_fresh`` collects them) as label ids."""
    return Seen(ids[("gpu", s.gpu_id)] if s.gpu_id is not None else None, ids[("kind", s.kind_id)],
                ids[("currency", s.currency_id)], s.price_per_hour, s.price_per_gpu_hour, s.available, s.since)
