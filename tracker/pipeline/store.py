"""The store stage: write one collection's accepted offers as price intervals and its rejects to quarantine;
and open the store the way every entry point needs it: engine, schema, GPU catalog loaded.

The write API (used by the collector and the importers):

* ``store_observation(session, provider, offers, observed_at, previous_attempt_at)``: one
  successful collection, set-based (see its docstring for when an interval continues);
* ``record_failed_attempt(session, provider, attempted_at)``: a collection that saw nothing
  closes the provider's open intervals;
* ``store_quarantine(...)``: rejected observations with their reasons.

The caller owns the transaction (``db.engine.session_scope``) and must record the attempt on
the provider (``last_attempt_at``) so the next call knows what came before.

The CLI calls ``open_store(settings)`` (``tracker.pipeline.opening``, re-exported here) so that
a fresh database, an old one needing migration and a changed user catalog are handled in one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlmodel import Session

from db import index_rollup, intervals, labels, reads, rollups
from db.labels import PRICE_EPSILON, StoreStats
from db.models import Offer, Provider, Quarantine
from db.reader import in_transaction
from db.spans import epoch
from tracker.pipeline.normalise import NormalisedOffer
from tracker.pipeline.opening import open_store, sync_catalog
from tracker.pipeline.validate import Rejected

__all__ = ["insert_offers", "open_store", "previous_prices", "provider_state", "record_failed_attempt", "store_counts",
           "store_observation", "store_offers", "store_quarantine", "sync_catalog"]


#: Offer columns copied from each observation (besides the identity).
_OFFER_FIELDS = reads.OFFER_FIELDS
_OFFER_INSERT = ("provider", "sku", "region", "kind", "term_months", *_OFFER_FIELDS, "extra", "first_seen", "last_seen")
#: What a new interval's row is written with (``stated_start``: NULL, a collection states no start).
_INTERVAL_INSERT = ("id", "offer_id", "provider_id", "gpu_id", "kind_id", "currency_id", "price_per_hour",
                    "price_per_gpu_hour", "available", "first_seen", "last_seen", "ends_at", "observations",
                    "available_count")

Identity = tuple[str, str, str, int]


class Stored(NamedTuple):
    """One offer of the provider as stored, with its newest interval (all ``None`` without one)."""

    sku: str
    region: str
    kind: str
    term_months: int
    offer_id: int
    gpu: str | None
    gpu_raw: str
    gpu_count: float
    gpu_memory_gb: float | None
    vcpus: float | None
    ram_gb: float | None
    country: str | None
    #: ``offer.extra`` as its JSON text (decoding every offer's would cost more than the comparison).
    extra: str
    interval_id: int | None
    gpu_id: int | None
    kind_id: int | None
    currency_id: int | None
    price_per_hour: float | None
    price_per_gpu_hour: float | None
    available: bool | None
    first_seen: int | None
    last_seen: int | None
    ends_at: int | None
    #: GPUs free at its newest interval's last observation (current-only).
    available_count: int | None

    @property
    def attrs(self) -> tuple[Any, ...]:
        """The stored ``_OFFER_FIELDS``."""
        return (self.gpu, self.gpu_raw, self.gpu_count, self.gpu_memory_gb, self.vcpus, self.ram_gb, self.country)

    @property
    def is_open(self) -> bool:
        """Whether its newest interval may go on (it has one and it has not ended)."""
        return self.interval_id is not None and self.ends_at is None


def provider_state(conn: Connection, provider: str) -> dict[Identity, Stored]:
    """``{identity: Stored}`` of every offer of ``provider``: one indexed read of its offers and
    their newest intervals (``db.reads.provider_offer_state``). A collector reads it once in its
    write transaction for both validation (``previous_prices``) and ``store_observation``."""
    return {r[:4]: Stored._make(r) for r in reads.provider_offer_state(in_transaction(conn), provider)}


def previous_prices(conn: Connection, known: Mapping[Identity, Stored], currencies: Mapping[Identity, str] | None = None
                    ) -> dict[Identity, float]:
    """Last stored whole-instance price per identity of the offers ``known`` (``provider_state``:
    the current state, one row per offer however long the history), for validation's outlier
    checks without reading them again. A price stored in another currency than ``currencies``
    gives the offer now is left out, so a conversion is never judged a price jump (``None``: any)."""
    names = labels.names(conn, "currency")
    return {i: s.price_per_hour for i, s in known.items() if s.interval_id is not None  # type: ignore[misc]
            and (currencies is None or currencies.get(i, names[s.currency_id]) == names[s.currency_id])}


def _stamp_processor(conn: Connection) -> Callable[[datetime], Any]:
    """How the driver takes a time for an offer's ``first_seen``/``last_seen`` column."""
    column_type = Offer.__table__.c.first_seen.type  # type: ignore[attr-defined]
    return column_type.dialect_impl(conn.dialect).bind_processor(conn.dialect) or (lambda at: at)


def _stamp(conn: Connection, at: datetime) -> Any:
    """``at`` as the driver takes it for an offer's ``first_seen``/``last_seen`` column."""
    return _stamp_processor(conn)(at)


def _json_binder(conn: Connection) -> Callable[[dict[str, Any]], Any]:
    """How the driver takes a value of the offer's JSON ``extra`` column: the dialect's own
    serialiser, so a row written here reads back (and compares as text) like one the ORM wrote."""
    column_type = Offer.__table__.c.extra.type  # type: ignore[attr-defined]
    process = column_type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    return process if process is not None else json.dumps


@lru_cache(maxsize=4096)
def _stored_extra(text: str) -> Any:
    """A stored ``extra`` decoded, only ever compared: a provider's offers often share one text,
    decoded once then instead of once per offer and collection."""
    return json.loads(text)


def _same_extra(stored: str, new: Mapping[str, Any]) -> bool:
    """Whether a stored ``extra`` (its JSON text) equals ``new``."""
    if stored == "{}":
        return not new
    return bool(_stored_extra(stored) == dict(new))


@dataclass(frozen=True, slots=True)
class Observation:
    """One collection as the decisions need it: when, what came before, and the label ids."""

    provider_id: int
    t: int
    #: The provider's previous attempt (epoch seconds; ``None``: none, or too long ago).
    previous: int | None
    kinds: Mapping[str, int]
    currencies: Mapping[str, int]
    gpus: Mapping[str, int]


@dataclass(slots=True)
class Plan:
    """What one collection changes: offers to touch, intervals to extend, open and close, and the counts."""

    seen: list[int] = field(default_factory=list)  # offers stored before: last_seen moves
    changed_attrs: list[tuple[object, ...]] = field(default_factory=list)
    extend: list[int] = field(default_factory=list)  # offers whose newest interval goes on
    counts: list[tuple[int | None, int, int]] = field(default_factory=list)  # (GPUs free now, offer, t) where that moved
    opened: list[tuple[Any, ...]] = field(default_factory=list)  # ``_INTERVAL_INSERT`` rows but the id
    replaced: list[int] = field(default_factory=list)  # offers whose newest interval moves to the past for a new one
    closing: list[int] = field(default_factory=list)  # offers whose newest interval ends now
    new_offers: int = 0
    changed: int = 0
    returned: int = 0
    unchanged: int = 0
    unpriced: int = 0


def _continues(s: Stored, c: Observation) -> bool:
    """Whether the previous attempt saw ``s``'s newest interval still going (an observation now may extend it)."""
    return s.is_open and c.previous is not None and s.last_seen is not None and s.last_seen >= c.previous


def _same_price(s: Stored, o: NormalisedOffer, c: Observation) -> bool:
    """Whether ``o`` is priced as ``s``'s newest interval: price, currency, availability, GPU."""
    return (s.price_per_hour is not None and abs(s.price_per_hour - (o.price_per_hour or 0.0)) < PRICE_EPSILON
            and s.currency_id == c.currencies[o.currency] and s.available == o.available
            and s.gpu_id == (c.gpus[o.gpu] if o.gpu is not None else None))


def _open(plan: Plan, offer_id: int, o: NormalisedOffer, c: Observation, count: int | None) -> None:
    """Add to ``plan`` a new interval of ``o`` (an offer id's), or count it unpriced; ``count``: the
    GPUs free it keeps (``o``'s unless an older observation, an import, opens it)."""
    if o.price_per_hour is None or o.price_per_gpu_hour is None:
        plan.unpriced += 1
        return
    plan.opened.append((offer_id, c.provider_id, c.gpus[o.gpu] if o.gpu is not None else None, c.kinds[o.kind],
                        c.currencies[o.currency], o.price_per_hour, o.price_per_gpu_hour, o.available, c.t, c.t, None, 1,
                        count))


def _compare_offer(plan: Plan, s: Stored, o: NormalisedOffer, c: Observation,
                   to_json: Callable[[dict[str, Any]], Any]) -> None:
    """Add to ``plan`` what ``o`` (listed now) changes of ``s`` (as stored): its attributes, its newest interval."""
    plan.seen.append(s.offer_id)
    attrs = (o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.vcpus, o.ram_gb, o.country)
    if s.attrs != attrs or not _same_extra(s.extra, o.extra):
        plan.changed_attrs.append((*attrs, to_json(dict(o.extra)), s.offer_id))
    if o.price_per_hour is None or o.price_per_gpu_hour is None:
        plan.unpriced += 1
        return
    continuous = _continues(s, c)
    if continuous and _same_price(s, o, c):
        plan.extend.append(s.offer_id)
        plan.unchanged += 1
        if o.available_count != s.available_count:
            plan.counts.append((o.available_count, s.offer_id, c.t))
        return
    if s.interval_id is not None:
        plan.replaced.append(s.offer_id)
        if continuous:
            plan.changed += 1
        else:
            plan.returned += 1
    _open(plan, s.offer_id, o, c, o.available_count if s.last_seen is None or c.t >= s.last_seen else s.available_count)


def _plan(conn: Connection, listed: Mapping[Identity, NormalisedOffer], known: Mapping[Identity, Stored],
          added: Sequence[int], c: Observation) -> Plan:
    """What the collection ``listed`` changes of the offers ``known`` (``added``: the ids of the
    others, stored just now in listing order), in listing order, which the new intervals' ids follow."""
    plan = Plan(new_offers=len(added))
    to_json = _json_binder(conn)
    new_ids = iter(added)
    for ident, o in listed.items():
        s = known.get(ident)
        if s is None:
            _open(plan, next(new_ids), o, c, o.available_count)
        else:
            _compare_offer(plan, s, o, c, to_json)
    return plan


def _closing(known: Iterable[Stored], plan: Plan, c: Observation, complete: bool, scope_offers: set[int]) -> list[int]:
    """Offers whose newest interval ends at this collection: still going, not extended and, for a
    partial observation (``complete=False``), one of the offers it speaks for; never one seen after it."""
    extended = set(plan.extend)
    superseded = set(plan.replaced) | scope_offers
    return [s.offer_id for s in known if s.is_open and s.offer_id not in extended
            and (complete or s.offer_id in superseded) and s.last_seen is not None and s.last_seen <= c.t]


def _write_offers(conn: Connection, plan: Plan, observed_at: datetime) -> None:
    """Changed attributes, and ``last_seen`` of every offer stored before."""
    m = intervals.mark(conn)
    if plan.changed_attrs:
        conn.exec_driver_sql(
            f"UPDATE offer SET {', '.join(f'{f} = {m}' for f in (*_OFFER_FIELDS, 'extra'))} WHERE id = {m}",
            plan.changed_attrs)
    if plan.seen:
        conn.exec_driver_sql(f"UPDATE offer SET last_seen = {m} WHERE {intervals.in_ids(conn, 'id')}",
                             (_stamp(conn, observed_at), intervals.id_param(conn, plan.seen)))


def _write_intervals(conn: Connection, plan: Plan, t: int) -> list[tuple[Any, ...]]:
    """End the intervals closing, lengthen those extended (both rewrite the offer's open row in
    place), and open the new ones (the offer's previous newest moves to the past). Returns the
    new intervals' rows (``_INTERVAL_INSERT``)."""
    m = intervals.mark(conn)
    table = intervals.OPEN_TABLE
    if plan.closing:
        conn.exec_driver_sql(f"UPDATE {table} SET ends_at = {m} WHERE {intervals.in_ids(conn, 'offer_id')}",
                             (t, intervals.id_param(conn, plan.closing)))
    if plan.extend:
        conn.exec_driver_sql(f"UPDATE {table} SET last_seen = {m}, observations = observations + 1 "
                             f"WHERE {intervals.in_ids(conn, 'offer_id')}", (t, intervals.id_param(conn, plan.extend)))
    store_counts(conn, plan.counts)  # only the counts that moved
    intervals.retire(conn, plan.replaced)
    rows = [(i, *r) for i, r in zip(intervals.new_ids(conn, len(plan.opened)), plan.opened, strict=True)]
    intervals.insert_many(conn, table, _INTERVAL_INSERT, rows)
    return rows


def _previous(observed_at: datetime, previous_attempt_at: datetime | None, max_gap: timedelta | None) -> int | None:
    """The previous attempt as a collection continues from it: ``None`` when there was none, or
    when more than ``max_gap`` passed since (a missing collection in between)."""
    if previous_attempt_at is None:
        return None
    prev = epoch(previous_attempt_at)
    return None if max_gap is not None and epoch(observed_at) - prev > max_gap.total_seconds() else prev


def store_observation(
    session: Session,
    provider: str,
    offers: Sequence[NormalisedOffer],
    observed_at: datetime,
    previous_attempt_at: datetime | None,
    *,
    max_gap: timedelta | None = None,
    interval_s: float | None = None,
    complete: bool = True,
    scope: Collection[Identity] = (),
    refresh_rollups: bool = True,
    known: Mapping[Identity, Stored] | None = None,
) -> StoreStats:
    """Store one successful collection of ``provider`` at ``observed_at`` (set-based).

    ``offers`` is everything the collection listed (accepted by validation). An offer's
    newest interval is extended only when its price, currency, availability and GPU are
    unchanged *and* the provider's previous collection attempt (``previous_attempt_at``,
    successful or not) saw it, and no more than ``max_gap`` passed since that attempt. So a
    failed or missing collection is unknown, never "unchanged": the next successful
    observation starts a new interval even at the same price. Every interval of the
    provider still open and not extended is closed at ``observed_at`` (its ``ends_at``).
    ``complete=False`` says ``offers`` is only part of what was seen at ``observed_at`` (an
    import split by offer): then only the intervals of the given offers are closed, plus those
    of the identities in ``scope`` (the offers such a partial observation speaks for, e.g. one
    archive series: one of them missing from it is no longer listed).

    ``interval_s``: the provider's collection interval, remembered on ``provider`` for the
    bucket semantics (``db.rollups``; a changed one rebuilds the provider's roll-ups:
    ``remember_interval``). The provider's hourly and daily roll-ups around the
    collection are refreshed in the same transaction (``refresh_rollups=False``: the caller
    refreshes them once for a whole batch of collections, as an import does). The work is a few statements whose
    size is the collection's, whatever the length of the stored history. ``known``: the provider's
    ``provider_state`` when the caller read it in this transaction (else it is read here).

    Counts: ``new_offers`` (never seen before), ``prices_changed`` (seen by the previous
    attempt, now at another price), ``returned`` (seen before, but not by the previous
    attempt), ``unchanged`` and ``unpriced`` (listed without a price: an offer, no interval).
    """
    conn = session.connection()
    session.flush()
    prov = labels.ensure_provider(session, provider)
    if interval_s:
        remember_interval(session, prov, int(interval_s))
    session.flush()
    # a listing that repeats an offer: the last one wins (the identity without a call per offer)
    listed = {(o.sku, o.region, o.kind, o.term_months): o for o in offers}
    c = _collection(conn, provider, listed.values(), epoch(observed_at), _previous(observed_at, previous_attempt_at, max_gap))
    if known is None:
        known = provider_state(conn, provider)
    fresh = [o for ident, o in listed.items() if ident not in known]
    seen = [_stamp(conn, observed_at)] * len(fresh)
    added = _insert_offers(conn, provider, fresh, [o.extra for o in fresh], seen, seen)
    plan = _plan(conn, listed, known, added, c)
    plan.closing = _closing(known.values(), plan, c, complete, {known[i].offer_id for i in scope if i in known})
    _write_offers(conn, plan, observed_at)
    opened = _write_intervals(conn, plan, c.t)
    if refresh_rollups:  # the provider's roll-ups around this collection, from the current intervals at hand
        hold = prov.interval_s or rollups.DEFAULT_INTERVAL_S
        current = _current_intervals(known.values(), plan, c, labels.usd_id(conn), opened,
                                     _fractional(listed, known, zip(added, fresh, strict=True)))
        since = c.t if c.previous is None else min(c.previous, c.t)
        rollups.refresh(conn, c.provider_id, since - hold, c.t + hold, current=current)
    return StoreStats(len(offers), plan.new_offers, plan.changed, plan.unchanged, plan.unpriced, plan.returned)


def _collection(conn: Connection, provider: str, listed: Collection[NormalisedOffer], t: int,
                previous: int | None) -> Observation:
    """The label ids a collection's offers need (created when new), with its times."""
    named = {(o.kind, o.currency, o.gpu) for o in listed}  # a few distinct ones: read once per offer
    ids = labels.ensure(conn, {("provider", provider)} | reads.key_labels(provider, [o.extra for o in listed if o.extra])
                        | {(space, name) for row in named for space, name in zip(("kind", "currency", "gpu"), row, strict=True)
                           if name is not None})
    by_space: dict[str, dict[str, int]] = {"kind": {}, "currency": {}, "gpu": {}}
    for (space, name), i in ids.items():
        if space in by_space:
            by_space[space][name] = i
    return Observation(ids[("provider", provider)], t, previous, by_space["kind"], by_space["currency"], by_space["gpu"])


def store_counts(conn: Connection, counts: Sequence[tuple[int | None, int, int]]) -> None:
    """GPUs free now per offer, ``(count, offer id, observed at)``: written into its open interval's
    row only when that observation is the offer's newest (last seen then or before), so an import
    of older snapshots never overwrites a newer count. The one writer of the column."""
    if counts:
        m = intervals.mark(conn)
        conn.exec_driver_sql(f"UPDATE {intervals.OPEN_TABLE} SET available_count = {m} "
                             f"WHERE offer_id = {m} AND last_seen <= {m}", list(counts))


def remember_interval(session: Session, prov: Provider, interval_s: int) -> bool:
    """Set ``prov``'s collection interval. When that changes the one its roll-ups were computed
    with (the stored one, or the default when none was), and it has stored prices, its roll-ups
    are rebuilt: raw reads apply a provider's present interval to its whole history (how long a
    price holds after its last observation), and the roll-ups must answer as they do. Rare: a
    provider's first collection after an import, or a changed ``interval`` setting. Returns
    whether it rebuilt."""
    before = prov.interval_s or rollups.DEFAULT_INTERVAL_S
    prov.interval_s = interval_s
    if interval_s == before:
        return False
    session.flush()
    conn = session.connection()
    pid = labels.lookup(conn, "provider", [prov.name])
    if not pid or conn.exec_driver_sql(f"SELECT 1 FROM {intervals.OPEN_TABLE} WHERE provider_id = {intervals.mark(conn)} "
                                       "LIMIT 1", (pid[0],)).first() is None:
        return False
    rollups.rebuild(conn, pid)
    return True


def _fractional(listed: Mapping[Identity, NormalisedOffer], known: Mapping[Identity, Stored],
                added: Iterable[tuple[int, NormalisedOffer]]) -> frozenset[int]:
    """The provider's offers renting a fraction of a GPU once a collection is written: by the
    ``gpu_count`` it listed (``_write_offers`` stores that), else as stored; ``added``: the new
    offers with their ids. Every offer of the provider is at hand, so none is read again."""
    counts = [(s.offer_id, listed[i].gpu_count if i in listed else s.gpu_count) for i, s in known.items()]
    return frozenset(i for i, n in [*counts, *((i, o.gpu_count) for i, o in added)] if index_rollup.fractional(n))


def _current_intervals(known: Iterable[Stored], plan: Plan, c: Observation, usd: int,
                       opened: Iterable[tuple[Any, ...]], fractional: frozenset[int]) -> rollups.Current:
    """The provider's newest intervals once a collection is written, as the roll-ups read them
    (``RAW_COLUMNS`` tuples, USD intervals of mapped GPUs): each offer's as it was (``known``),
    extended to ``t``, closed at ``t``, or replaced by the one ``opened`` for it (``_INTERVAL_INSERT``
    rows). Kept in step with ``_write_intervals``, so the refresh reads only the provider's past
    intervals of its window; with the provider's ``fractional`` offers (``_fractional``)."""
    t = c.t
    rows = [(iid, oid, pid, gpu_id, kind_id, price_per_gpu, t, t, None)
            for iid, oid, pid, gpu_id, kind_id, currency_id, _price, price_per_gpu, _av, _first, _last, _ends, _n, _count
            in opened if currency_id == usd and gpu_id is not None]
    replaced, closed, extended = set(plan.replaced), set(plan.closing), set(plan.extend)
    for s in known:
        if s.interval_id is None or s.offer_id in replaced or s.currency_id != usd or s.gpu_id is None:
            continue
        last, ends = s.last_seen, s.ends_at
        if s.offer_id in closed:
            ends = t
        elif s.offer_id in extended:
            last = t
        rows.append((s.interval_id, s.offer_id, c.provider_id, s.gpu_id, s.kind_id, s.price_per_gpu_hour,
                     s.first_seen, last, ends))
    return rollups.Current(rows, fractional)


def record_failed_attempt(session: Session, provider: str, attempted_at: datetime) -> int:
    """A collection attempt of ``provider`` that saw nothing: every open interval ends at it.

    Returns how many intervals were closed. Their prices are not taken to hold past the
    attempt, and the next successful observation starts new intervals."""
    conn = session.connection()
    session.flush()
    t = epoch(attempted_at)
    pid = next(iter(labels.lookup(conn, "provider", [provider])), None)
    if pid is None:
        return 0
    going = f"FROM {intervals.OPEN_TABLE} WHERE provider_id = :p AND ends_at IS NULL AND last_seen <= :t"
    n, earliest = conn.execute(text(f"SELECT COUNT(*), MIN(last_seen) {going}"), {"p": pid, "t": t}).one()
    if not n:
        return 0
    conn.execute(text(f"UPDATE {intervals.OPEN_TABLE} SET ends_at = :t WHERE provider_id = :p AND ends_at IS NULL "
                      "AND last_seen <= :t"), {"p": pid, "t": t})
    prov = labels.ensure_provider(session, provider)
    interval = prov.interval_s or rollups.DEFAULT_INTERVAL_S
    rollups.refresh(conn, pid, int(earliest), t + interval)
    return int(n)


def store_offers(
    session: Session,
    provider: str,
    offers: Sequence[NormalisedOffer],
    observed_at: datetime,
    previous_observed_at: datetime | None,
    known: Mapping[Identity, Stored] | None = None,
) -> StoreStats:
    """``store_observation`` of a possibly partial observation, for callers that know only the
    previous *successful* collection (taken as the previous attempt): offers not given are
    left as they are."""
    return store_observation(session, provider, offers, observed_at, previous_observed_at, complete=False, known=known)


def store_quarantine(session: Session, run_id: int | None, rejected: Iterable[Rejected], observed_at: datetime) -> int:
    """Keep the observations validation rejected, each with its reason (never a price); returns how many."""
    rows = [_quarantined(r.offer, r.reason, run_id, observed_at) for r in rejected]
    session.add_all(rows)
    return len(rows)


def _quarantined(o: NormalisedOffer, reason: str, run_id: int | None, observed_at: datetime) -> Quarantine:
    return Quarantine(run_id=run_id, provider=o.provider, sku=o.sku, region=o.region, kind=o.kind, term_months=o.term_months,
                      gpu=o.gpu, gpu_raw=o.gpu_raw, gpu_count=o.gpu_count, price_per_hour=o.price_per_hour,
                      price_per_gpu_hour=o.price_per_gpu_hour, currency=o.currency, available=o.available,
                      extra=dict(o.extra) or None, reason=reason, observed_at=observed_at)


def insert_offers(conn: Connection, provider: str, offers: Sequence[tuple[NormalisedOffer, Mapping[str, Any], datetime, datetime]],
                  ) -> dict[Identity, int]:
    """Insert offers of ``provider`` the store has never seen, each with the ``extra`` to store
    and its first and last sighting (``insert_offer_rows``); returns their ids by identity. An
    import of many snapshots at once writes its new offers here."""
    return insert_offer_rows(conn, provider, [
        (o.sku, o.region, o.kind, o.term_months, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb,
         o.vcpus, o.ram_gb, o.country, json.dumps(dict(extra)) if extra else "{}", first, last)
        for o, extra, first, last in offers
    ])


def insert_offer_rows(conn: Connection, provider: str, rows: Sequence[tuple[Any, ...]]) -> dict[Identity, int]:
    """Insert new offers of ``provider`` given as tuples in ``_OFFER_INSERT`` order after the
    provider (``extra`` as JSON text, sightings as datetimes), with ids taken first
    (``db.intervals.new_ids``): nothing is read back. Returns their ids by identity. An import
    that builds its rows as tuples writes them here directly."""
    if not rows:
        return {}
    process = _stamp_processor(conn)
    stamps = {at: process(at) for r in rows for at in r[-2:]}  # an import's offers share a few sighting times
    ids = intervals.new_ids(conn, len(rows), of="offer")
    intervals.insert_many(conn, "offer", ("id", *_OFFER_INSERT),
                          [(i, provider, *r[:-2], stamps[r[-2]], stamps[r[-1]]) for i, r in zip(ids, rows, strict=True)])
    return {r[:4]: i for i, r in zip(ids, rows, strict=True)}


def _insert_offers(conn: Connection, provider: str, offers: Sequence[NormalisedOffer], extras: Iterable[Mapping[str, Any]],
                   firsts: Iterable[Any], lasts: Iterable[Any]) -> list[int]:
    """Write offers never stored before (sightings as the driver takes them) with ids taken first,
    in the order given (``db.intervals.new_ids``): nothing is read back. Returns the ids. Parallel
    columns, as a tuple per offer holding the offer would keep 100,000 more objects for the
    garbage collector to walk."""
    ids = intervals.new_ids(conn, len(offers), of="offer")
    intervals.insert_many(conn, "offer", ("id", *_OFFER_INSERT), [
        (i, provider, o.sku, o.region, o.kind, o.term_months, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb,
         o.vcpus, o.ram_gb, o.country, json.dumps(dict(extra)) if extra else "{}", first, last)
        for i, o, extra, first, last in zip(ids, offers, extras, firsts, lasts, strict=True)
    ])
    return ids
