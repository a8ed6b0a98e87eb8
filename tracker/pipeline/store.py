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
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection
from sqlmodel import Session

from db import bulk, labels, open_intervals, queries, rollups, via
from db.models import Offer, Provider, Quarantine
from db.queries import PRICE_EPSILON, StoreStats
from db.types import epoch
from tracker.pipeline.normalise import NormalisedOffer
from tracker.pipeline.opening import database_url, open_store, sync_catalog
from tracker.pipeline.validate import Rejected

__all__ = ["database_url", "insert_offers", "open_store", "record_failed_attempt", "store_counts", "store_observation",
           "store_offers", "store_quarantine", "sync_catalog"]


#: Offer columns copied from each observation (besides the identity).
_OFFER_FIELDS = ("gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "vcpus", "ram_gb", "country")
_OFFER_INSERT = ("provider", "sku", "region", "kind", "term_months", *_OFFER_FIELDS, "extra", "first_seen", "last_seen")
_INTERVAL_INSERT = ("offer_id", "provider_id", "gpu_id", "kind_id", "currency_id", "price_per_hour", "price_per_gpu_hour",
                    "available", "first_seen", "last_seen", "ends_at", "observations")
#: A provider's offers with their newest interval, one tuple each (see ``_provider_state``); the
#: state's ``last_seen`` is its interval's true one (``db.open_intervals``).
_STATE_SQL = (
    f"SELECT o.sku, o.region, o.kind, o.term_months, o.id, {', '.join('o.' + f for f in _OFFER_FIELDS)}, "
    "CAST(o.extra AS TEXT), "
    "i.id, i.gpu_id, i.currency_id, i.price_per_hour, i.available, s.last_seen, i.ends_at, "
    "i.kind_id, i.price_per_gpu_hour, i.first_seen, i.last_seen, s.available_count FROM offer o "
    "LEFT JOIN offer_state s ON s.offer_id = o.id LEFT JOIN price_interval i ON i.id = s.interval_id WHERE o.provider = :p"
)
#: Positions in a ``_STATE_SQL`` row: the offer's id, fields and extra, then its newest interval.
_ID, _ATTRS, _EXTRA = 4, slice(5, 12), 12
_IV, _IV_GPU, _IV_CURRENCY, _IV_PRICE, _IV_AVAILABLE, _IV_LAST, _IV_ENDS = range(13, 20)
#: ... and what the roll-ups read of it (``_IV_ROW_LAST``: the row's own ``last_seen``, ``OPEN`` while open).
_IV_KIND, _IV_GPU_PRICE, _IV_FIRST, _IV_ROW_LAST = range(20, 24)
#: ... and the GPUs free at its last observation (``offer_state.available_count``).
_COUNT = 24
#: What follows the identity and id in the row of a new offer (no stored fields, no interval).
_NO_STATE: tuple[None, ...] = (None,) * 20

State = tuple[Any, ...]


def _provider_state(conn: Connection, provider: str) -> dict[tuple[str, str, str, int], State]:
    """``{identity: row}`` (a ``_STATE_SQL`` row) of every offer of ``provider``, interval part NULL
    when it has none: one indexed read of the provider's offers and current state, as driver tuples."""
    rows = rollups.fetch_tuples(conn, text(_STATE_SQL), {"p": provider})
    return {(r[0], r[1], r[2], r[3]): r for r in rows}


def _stamp(conn: Connection, at: datetime) -> Any:
    """``at`` as the driver takes it for an offer's ``first_seen``/``last_seen`` column."""
    column_type = Offer.__table__.c.first_seen.type  # type: ignore[attr-defined]
    process = column_type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    return process(at) if process else at


def _json_binder(conn: Connection) -> Callable[[dict[str, Any]], Any]:
    """How the driver takes a value of the offer's JSON ``extra`` column: the dialect's own
    serialiser, so a row written here reads back (and compares as text) like one the ORM wrote."""
    column_type = Offer.__table__.c.extra.type  # type: ignore[attr-defined]
    process = column_type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    return process if process is not None else json.dumps


def _same_extra(stored: str, new: Mapping[str, Any]) -> bool:
    """Whether a stored ``extra`` (its JSON text: decoding every offer's would cost more than
    the rest of the comparison) equals ``new``."""
    if stored == "{}":
        return not new
    return bool(json.loads(stored) == dict(new))


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
    scope: Collection[tuple[str, str, str, int]] = (),
    refresh_rollups: bool = True,
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
    size is the collection's, whatever the length of the stored history.

    Counts: ``new_offers`` (never seen before), ``prices_changed`` (seen by the previous
    attempt, now at another price), ``returned`` (seen before, but not by the previous
    attempt), ``unchanged`` and ``unpriced`` (listed without a price: an offer, no interval).
    """
    conn = session.connection()
    session.flush()
    t = epoch(observed_at)
    prev = epoch(previous_attempt_at) if previous_attempt_at is not None else None
    if prev is not None and max_gap is not None and t - prev > max_gap.total_seconds():
        prev = None  # too long since the previous attempt: a missing collection in between
    prov = queries.ensure_provider(session, provider)
    if interval_s:
        remember_interval(session, prov, int(interval_s))
    session.flush()
    unique: dict[tuple[str, str, str, int], NormalisedOffer] = {}
    for o in offers:  # a listing that repeats an offer: the last one wins
        unique[(o.sku, o.region, o.kind, o.term_months)] = o  # ``identity``, without a call per offer
    listed = unique.values()
    ids = labels.ensure(conn, {("provider", provider)} | {("kind", o.kind) for o in listed} | via.key_labels(provider, [o.extra for o in listed])
                        | {("currency", o.currency) for o in listed} | {("gpu", o.gpu) for o in listed if o.gpu is not None})
    pid = ids[("provider", provider)]

    # 1. offers: insert the new ones (their state is empty)
    known = _provider_state(conn, provider)
    seen_at = _stamp(conn, observed_at)
    to_json = _json_binder(conn)
    fresh = [o for ident, o in unique.items() if ident not in known]  # in listing order: ids follow it
    fresh_ids = {ident for ident in unique if ident not in known}
    if fresh:  # ``extra`` as its JSON text, as the dialect's serialiser writes it (no wrapper object per row)
        bulk.insert_many(conn, "offer", _OFFER_INSERT, [
            (provider, o.sku, o.region, o.kind, o.term_months, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb,
             o.vcpus, o.ram_gb, o.country, json.dumps(dict(o.extra)) if o.extra else "{}", seen_at, seen_at)
            for o in fresh
        ])
        for sku, region, kind, term, oid in rollups.fetch_tuples(
            conn, text("SELECT sku, region, kind, term_months, id FROM offer WHERE provider = :p AND first_seen = :t")
            .bindparams(bindparam("t", type_=Offer.__table__.c.first_seen.type)),  # type: ignore[attr-defined]
            {"p": provider, "t": observed_at},
        ):
            known.setdefault((sku, region, kind, term), (sku, region, kind, term, oid) + _NO_STATE)

    # 2. compare each listed offer with what is stored: its attributes, its newest interval
    new_offers = len(fresh)
    changed = returned = unchanged = unpriced = 0
    seen: list[int] = []  # offers stored before: last_seen moves
    changed_attrs: list[tuple[object, ...]] = []
    extend: list[int] = []
    extend_offers: list[int] = []
    opened: list[tuple[object, ...]] = []
    counts: list[tuple[int | None, int, int]] = []  # (GPUs free now, offer, t) where that changed
    leaving: list[int] = []  # open intervals of offers that get a new one
    currency_ids = {c: i for (space, c), i in ids.items() if space == "currency"}
    kind_ids = {k: i for (space, k), i in ids.items() if space == "kind"}
    gpu_ids = {g: i for (space, g), i in ids.items() if space == "gpu"}
    for ident, o in unique.items():
        row = known[ident]
        oid, cur_id = row[_ID], row[_IV]
        if ident not in fresh_ids:
            seen.append(oid)
            attrs = (o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.vcpus, o.ram_gb, o.country)
            if row[_ATTRS] != attrs or not _same_extra(row[_EXTRA], o.extra):
                changed_attrs.append((*attrs, to_json(dict(o.extra)), oid))
        if o.price_per_hour is None or o.price_per_gpu_hour is None:
            unpriced += 1
            continue
        if o.available_count != row[_COUNT]:
            counts.append((o.available_count, oid, t))
        gpu_id = gpu_ids[o.gpu] if o.gpu is not None else None
        currency_id = currency_ids[o.currency]
        continuous = cur_id is not None and row[_IV_ENDS] is None and prev is not None and row[_IV_LAST] >= prev
        if continuous and (
            abs(row[_IV_PRICE] - o.price_per_hour) < PRICE_EPSILON and row[_IV_CURRENCY] == currency_id
            and row[_IV_AVAILABLE] == o.available and row[_IV_GPU] == gpu_id
        ):
            extend.append(cur_id)
            extend_offers.append(oid)
            unchanged += 1
            continue
        if cur_id is not None and row[_IV_ENDS] is None:
            leaving.append(cur_id)
        if cur_id is not None and ident not in fresh_ids:
            if continuous:
                changed += 1
            else:
                returned += 1
        opened.append((oid, pid, gpu_id, kind_ids[o.kind], currency_id, o.price_per_hour, o.price_per_gpu_hour,
                       o.available, t, open_intervals.OPEN, None, 1))
    m = bulk.mark(conn)
    if changed_attrs:
        conn.exec_driver_sql(
            f"UPDATE offer SET {', '.join(f'{f} = {m}' for f in (*_OFFER_FIELDS, 'extra'))} WHERE id = {m}", changed_attrs)
    if seen:
        conn.exec_driver_sql(f"UPDATE offer SET last_seen = {m} WHERE {bulk.in_ids(conn, 'id')}",
                             (seen_at, bulk.id_param(conn, seen)))

    # 3. close what is open and not extended (changed or no longer listed), extend the rest: an
    # extension rewrites the offer's state only (``db.open_intervals``), a close writes the interval's
    # true last_seen and observations with its end
    extend_set = set(extend)
    superseded = {r[0] for r in opened}
    superseded |= {known[i][_ID] for i in scope if i in known}
    closing = [r[_IV] for r in known.values() if r[_IV] is not None and r[_IV_ENDS] is None and r[_IV] not in extend_set
               and (complete or r[_ID] in superseded) and r[_IV_LAST] <= t]
    open_intervals.settle(conn, closing, t)
    if extend:
        conn.exec_driver_sql(  # by primary key (offer_id): the interval id is not indexed
            f"UPDATE offer_state SET last_seen = {m}, observations = observations + 1 WHERE {bulk.in_ids(conn, 'offer_id')}",
            (t, bulk.id_param(conn, extend_offers)))
    if opened:
        # an open interval left open (seen after ``observed_at``, e.g. an import out of order)
        # keeps its true values in its own row once the state moves on
        closed = set(closing)
        open_intervals.settle(conn, [iv for iv in leaving if iv not in closed])
        before = conn.exec_driver_sql("SELECT COALESCE(MAX(id), 0) FROM price_interval").scalar_one()
        bulk.insert_many(conn, "price_interval", _INTERVAL_INSERT, opened)
        opened_ids = dict(conn.exec_driver_sql(  # the new intervals are the newest ids: a range of the primary key
            "INSERT INTO offer_state (offer_id, interval_id, provider_id, last_seen, observations) "
            f"SELECT offer_id, id, provider_id, first_seen, observations FROM price_interval WHERE id > {m} "
            f"AND provider_id = {m} AND first_seen = {m} {bulk.OFFER_STATE_UPSERT} RETURNING offer_id, interval_id",
            (before, pid, t)).all())
    store_counts(conn, counts)  # the state row of every priced offer exists now; only the counts that moved

    # 4. the provider's roll-ups around this collection, from the current intervals at hand
    if refresh_rollups:
        current = _current_intervals(known.values(), pid, t, labels.usd_id(conn), set(extend), set(closing), opened,
                                     opened_ids if opened else {})
        rollups.refresh(conn, pid, min(prev if prev is not None else t, t) - (prov.interval_s or rollups.DEFAULT_INTERVAL_S),
                        t + (prov.interval_s or rollups.DEFAULT_INTERVAL_S), current=current)
    return StoreStats(len(offers), new_offers, changed, unchanged, unpriced, returned)


def store_counts(conn: Connection, counts: Sequence[tuple[int | None, int, int]]) -> None:
    """GPUs free now per offer, ``(count, offer id, observed at)``: written into its ``offer_state``
    only when that observation is the offer's newest (its state was last seen then or before), so an
    import of older snapshots never overwrites a newer count. The one writer of the column."""
    if counts:
        m = bulk.mark(conn)
        conn.exec_driver_sql(
            f"UPDATE offer_state SET available_count = {m} WHERE offer_id = {m} AND last_seen <= {m}", list(counts))


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
    if not pid or conn.exec_driver_sql(f"SELECT 1 FROM offer_state WHERE provider_id = {bulk.mark(conn)} LIMIT 1",
                                       (pid[0],)).first() is None:
        return False
    rollups.rebuild(conn, pid)
    return True


def _current_intervals(known: Iterable[State], pid: int, t: int, usd: int, extended: set[int], closed: set[int],
                       opened: Sequence[tuple[Any, ...]], opened_ids: Mapping[int, int]) -> rollups.Current:
    """The provider's current intervals once a collection at ``t`` is written, as the roll-ups
    read them (``rollups.Current``): each offer's newest interval as it was (``known``), extended
    to ``t``, closed at ``t``, or replaced by the interval ``opened`` for it. Kept in step with the
    statements above, so the refresh reads only the provider's other intervals of its window."""
    rows: list[tuple[Any, ...]] = []
    ids = set()
    for o in opened:  # (offer, provider, gpu, kind, currency, price, price per GPU, available, t, OPEN, None, 1)
        iid = opened_ids[o[0]]
        ids.add(iid)
        if o[4] == usd and o[2] is not None:
            rows.append((iid, o[0], pid, o[2], o[3], o[6], t, t, None))
    for r in known:
        iid = r[_IV]
        if iid is None or r[_ID] in opened_ids:
            continue
        ids.add(iid)
        if r[_IV_CURRENCY] != usd or r[_IV_GPU] is None:
            continue
        # as the statements leave it: an extension moves the state's last_seen (what an OPEN row
        # reads), a close writes the state's into the row; otherwise the row's own, if not OPEN
        is_open = r[_IV_ROW_LAST] == open_intervals.OPEN
        if iid in closed:
            last, ends = r[_IV_LAST], t
        elif iid in extended:
            last, ends = (t if is_open else r[_IV_ROW_LAST]), r[_IV_ENDS]
        else:
            last, ends = (r[_IV_LAST] if is_open else r[_IV_ROW_LAST]), r[_IV_ENDS]
        rows.append((iid, r[_ID], pid, r[_IV_GPU], r[_IV_KIND], r[_IV_GPU_PRICE], r[_IV_FIRST], last, ends))
    return rollups.Current(rows, ids)


def record_failed_attempt(session: Session, provider: str, attempted_at: datetime) -> int:
    """A collection attempt of ``provider`` that saw nothing: every open interval ends at it.

    Returns how many intervals were closed. Their prices are not taken to hold past the
    attempt, and the next successful observation starts new intervals."""
    conn = session.connection()
    session.flush()
    t = epoch(attempted_at)
    pid_row = labels.lookup(conn, "provider", [provider])
    if not pid_row:
        return 0
    pid = pid_row[0]
    open_rows = conn.execute(
        text("SELECT i.id, s.last_seen FROM price_interval i JOIN offer_state s ON s.interval_id = i.id "
             "WHERE s.provider_id = :p AND i.ends_at IS NULL AND s.last_seen <= :t"), {"p": pid, "t": t}
    ).all()
    if not open_rows:
        return 0
    open_intervals.settle(conn, [i for i, _ in open_rows], t)
    prov = queries.ensure_provider(session, provider)
    interval = prov.interval_s or rollups.DEFAULT_INTERVAL_S
    rollups.refresh(conn, pid, min(ls for _, ls in open_rows), t + interval)
    return len(open_rows)


def store_offers(
    session: Session,
    provider: str,
    offers: Sequence[NormalisedOffer],
    observed_at: datetime,
    previous_observed_at: datetime | None,
) -> StoreStats:
    """``store_observation`` of a possibly partial observation, for callers that know only the
    previous *successful* collection (taken as the previous attempt): offers not given are
    left as they are."""
    return store_observation(session, provider, offers, observed_at, previous_observed_at, complete=False)


def store_quarantine(session: Session, run_id: int | None, rejected: Iterable[Rejected], observed_at: datetime) -> int:
    n = 0
    for r in rejected:
        o = r.offer
        session.add(
            Quarantine(
                run_id=run_id, provider=o.provider, sku=o.sku, region=o.region, kind=o.kind, term_months=o.term_months, gpu=o.gpu,
                gpu_raw=o.gpu_raw, gpu_count=o.gpu_count, price_per_hour=o.price_per_hour,
                price_per_gpu_hour=o.price_per_gpu_hour, currency=o.currency, available=o.available,
                extra=dict(o.extra) or None, reason=r.reason,
                observed_at=observed_at,
            )
        )
        n += 1
    return n


def insert_offers(conn: Connection, provider: str, offers: Sequence[tuple[NormalisedOffer, Mapping[str, Any], datetime, datetime]],
                  ) -> dict[tuple[str, str, str, int], int]:
    """Insert offers of ``provider`` the store has never seen, each with the ``extra`` to store
    and its first and last sighting, in one bulk statement (``db.bulk``, as ``store_observation`` inserts a collection's
    new offers); returns their ids by identity. An import of many snapshots at once writes its
    new offers here."""
    if not offers:
        return {}
    before = conn.exec_driver_sql("SELECT COALESCE(MAX(id), 0) FROM offer").scalar_one()
    column_type = Offer.__table__.c.first_seen.type  # type: ignore[attr-defined]
    process = column_type.dialect_impl(conn.dialect).bind_processor(conn.dialect) or (lambda at: at)
    bulk.insert_many(conn, "offer", _OFFER_INSERT, [
        (provider, o.sku, o.region, o.kind, o.term_months, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb,
         o.vcpus, o.ram_gb, o.country, json.dumps(dict(extra)) if extra else "{}", process(first), process(last))
        for o, extra, first, last in offers
    ])
    m = bulk.mark(conn)
    return {(sku, region, kind, term): oid for sku, region, kind, term, oid in conn.exec_driver_sql(
        f"SELECT sku, region, kind, term_months, id FROM offer WHERE id > {m} AND provider = {m}", (before, provider))}
