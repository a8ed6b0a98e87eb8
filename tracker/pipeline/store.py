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
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select, text
from sqlmodel import Session

from db import labels, queries, rollups
from db.models import Offer, OfferState, PriceInterval, Quarantine
from db.queries import PRICE_EPSILON, StoreStats
from db.types import epoch
from tracker.pipeline.normalise import NormalisedOffer
from tracker.pipeline.opening import database_url, open_store, sync_catalog
from tracker.pipeline.validate import Rejected

__all__ = ["database_url", "open_store", "record_failed_attempt", "store_observation", "store_offers", "store_quarantine",
           "sync_catalog"]


#: Offer columns copied from each observation (besides the identity).
_OFFER_FIELDS = ("gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "vcpus", "ram_gb", "country")


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
    bucket semantics (``db.rollups``). The provider's hourly and daily roll-ups around the
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
        prov.interval_s = int(interval_s)
    session.flush()
    ids = labels.ensure(conn, [("provider", provider)]
                        + [(sp, v) for o in offers for sp, v in (("kind", o.kind), ("currency", o.currency))]
                        + [("gpu", o.gpu) for o in offers if o.gpu is not None])
    pid = ids[("provider", provider)]
    offer_table, interval_table, state_table = (
        m.__table__ for m in (Offer, PriceInterval, OfferState)  # type: ignore[attr-defined]
    )

    # 1. offers: insert the new ones, update the ones whose attributes changed, move last_seen
    existing = {
        (r.sku, r.region, r.kind, r.term_months): r
        for r in conn.execute(
            select(offer_table.c.id, offer_table.c.sku, offer_table.c.region, offer_table.c.kind,
                   offer_table.c.term_months, *(offer_table.c[f] for f in _OFFER_FIELDS), offer_table.c.extra)
            .where(offer_table.c.provider == provider)
        ).all()
    }
    unique: dict[tuple[str, str, str, int], NormalisedOffer] = {}
    for o in offers:
        unique[o.identity] = o  # a listing that repeats an offer: the last one wins
    fresh = [o for ident, o in unique.items() if ident not in existing]
    if fresh:
        conn.execute(offer_table.insert(), [
            {"provider": provider, "sku": o.sku, "region": o.region, "kind": o.kind, "term_months": o.term_months,
             **{f: getattr(o, f) for f in _OFFER_FIELDS}, "extra": dict(o.extra),
             "first_seen": observed_at, "last_seen": observed_at}
            for o in fresh
        ])
        existing.update({
            (r.sku, r.region, r.kind, r.term_months): r
            for r in conn.execute(
                select(offer_table.c.id, offer_table.c.sku, offer_table.c.region, offer_table.c.kind,
                       offer_table.c.term_months, *(offer_table.c[f] for f in _OFFER_FIELDS), offer_table.c.extra)
                .where(offer_table.c.provider == provider, offer_table.c.first_seen == observed_at)
            ).all()
        })
    fresh_ids = {o.identity for o in fresh}
    changed_attrs = []
    for ident, o in unique.items():
        if ident in fresh_ids:
            continue
        row = existing[ident]
        extra = row.extra if not isinstance(row.extra, str) else json.loads(row.extra)
        if any(getattr(row, f) != getattr(o, f) for f in _OFFER_FIELDS) or extra != dict(o.extra):
            changed_attrs.append({"b_id": row.id, **{f: getattr(o, f) for f in _OFFER_FIELDS}, "extra": dict(o.extra)})
    if changed_attrs:
        conn.execute(
            offer_table.update().where(offer_table.c.id == bindparam("b_id"))
            .values(**{f: bindparam(f) for f in (*_OFFER_FIELDS, "extra")}),
            changed_attrs,
        )
    seen_ids = [existing[ident].id for ident in unique]
    if seen_ids:
        conn.execute(
            offer_table.update().where(offer_table.c.id == bindparam("b_id")).values(last_seen=observed_at),
            [{"b_id": i} for i in seen_ids],
        )

    # 2. the provider's current state: each offer's newest interval
    current = {
        r.offer_id: r
        for r in conn.execute(
            select(interval_table.c.id, interval_table.c.offer_id, interval_table.c.gpu_id, interval_table.c.currency_id,
                   interval_table.c.price_per_hour, interval_table.c.available, interval_table.c.last_seen,
                   interval_table.c.ends_at)
            .join(state_table, state_table.c.interval_id == interval_table.c.id)
            .where(state_table.c.provider_id == pid)
        ).all()
    }
    new_offers = len(fresh)
    changed = returned = unchanged = unpriced = 0
    extend: list[int] = []
    extend_offers: list[int] = []
    opened: list[dict[str, object]] = []
    for ident, o in unique.items():
        if o.price_per_hour is None or o.price_per_gpu_hour is None:
            unpriced += 1
            continue
        oid = existing[ident].id
        cur = current.get(oid)
        gpu_id = ids[("gpu", o.gpu)] if o.gpu is not None else None
        cur_id = ids[("currency", o.currency)]
        continuous = cur is not None and cur.ends_at is None and prev is not None and cur.last_seen >= prev
        if continuous and cur is not None and (
            abs(cur.price_per_hour - o.price_per_hour) < PRICE_EPSILON and cur.currency_id == cur_id
            and cur.available == o.available and cur.gpu_id == gpu_id
        ):
            extend.append(cur.id)
            extend_offers.append(oid)
            unchanged += 1
            continue
        if cur is not None and ident not in fresh_ids:
            if continuous:
                changed += 1
            else:
                returned += 1
        opened.append({
            "offer_id": oid, "provider_id": pid, "gpu_id": gpu_id, "kind_id": ids[("kind", o.kind)],
            "currency_id": cur_id, "price_per_hour": o.price_per_hour, "price_per_gpu_hour": o.price_per_gpu_hour,
            "available": o.available, "first_seen": t, "last_seen": t, "ends_at": None, "observations": 1,
        })

    # 3. close what is open and not extended (changed or no longer listed), extend the rest
    extend_set = set(extend)
    superseded = {int(o["offer_id"]) for o in opened}  # type: ignore[call-overload]
    superseded |= {existing[i].id for i in scope if i in existing}
    closing = [r.id for r in current.values() if r.ends_at is None and r.id not in extend_set
               and (complete or r.offer_id in superseded) and r.last_seen <= t]
    if closing:
        conn.execute(
            interval_table.update().where(interval_table.c.id == bindparam("b_id")).values(ends_at=t),
            [{"b_id": i} for i in closing],
        )
    if extend:
        conn.execute(
            interval_table.update().where(interval_table.c.id == bindparam("b_id"))
            .values(last_seen=t, observations=interval_table.c.observations + 1),
            [{"b_id": i} for i in extend],
        )
        conn.execute(  # by primary key (offer_id): the interval id is not indexed
            state_table.update().where(state_table.c.offer_id == bindparam("b_id")).values(last_seen=t),
            [{"b_id": o} for o in extend_offers],
        )
    if opened:
        before = conn.execute(select(func.coalesce(func.max(interval_table.c.id), 0))).scalar_one()
        conn.execute(interval_table.insert(), opened)
        new_rows = conn.execute(
            select(interval_table.c.id, interval_table.c.offer_id)
            .where(interval_table.c.id > before, interval_table.c.provider_id == pid, interval_table.c.first_seen == t)
        ).all()
        conn.execute(
            text("INSERT INTO offer_state (offer_id, interval_id, provider_id, last_seen) "
                 "VALUES (:offer_id, :interval_id, :provider_id, :last_seen) "
                 "ON CONFLICT (offer_id) DO UPDATE SET interval_id = excluded.interval_id, "
                 "provider_id = excluded.provider_id, last_seen = excluded.last_seen"),
            [{"offer_id": oid, "interval_id": iid, "provider_id": pid, "last_seen": t} for iid, oid in new_rows],
        )

    # 4. the provider's roll-ups around this collection
    if refresh_rollups:
        rollups.refresh(conn, pid, min(prev if prev is not None else t, t) - (prov.interval_s or rollups.DEFAULT_INTERVAL_S),
                        t + (prov.interval_s or rollups.DEFAULT_INTERVAL_S))
    return StoreStats(len(offers), new_offers, changed, unchanged, unpriced, returned)


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
        text("SELECT i.id, i.last_seen FROM price_interval i JOIN offer_state s ON s.interval_id = i.id "
             "WHERE s.provider_id = :p AND i.ends_at IS NULL AND i.last_seen <= :t"), {"p": pid, "t": t}
    ).all()
    if not open_rows:
        return 0
    conn.execute(text("UPDATE price_interval SET ends_at = :t WHERE id = :id"), [{"t": t, "id": i} for i, _ in open_rows])
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
                price_per_gpu_hour=o.price_per_gpu_hour, currency=o.currency, reason=r.reason, observed_at=observed_at,
            )
        )
        n += 1
    return n
