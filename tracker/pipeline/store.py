"""The store stage: write one scrape's accepted offers as price intervals and its rejects to quarantine;
and open the store the way every entry point needs it: engine, schema, GPU catalog loaded.

The CLI, the scheduler and the web app all call ``open_store(settings)`` so that a fresh
database, an old one needing migration and a changed user catalog are handled in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import queries
from db.engine import default_database_url, make_engine, session_scope
from db.migrate import init_db
from db.models import Offer, PriceInterval, Quarantine
from db.queries import PRICE_EPSILON, StoreStats, latest_intervals, offers_by_identity
from tracker.catalog.specs import catalog_rows_for_db, load_catalog
from tracker.config.settings import Settings
from tracker.pipeline.normalise import NormalisedOffer
from tracker.pipeline.validate import Rejected


def database_url(settings: Settings) -> str:
    return settings.database or default_database_url()


def sync_catalog(engine: Engine, settings: Settings) -> int:
    """Load the shipped catalog plus the user's ``catalog_file`` into ``gpu_model``."""
    rows = catalog_rows_for_db(load_catalog(settings.catalog_file))
    with session_scope(engine) as session:
        return queries.sync_gpu_models(session, rows)


def open_store(settings: Settings, url: str | None = None) -> Engine:
    engine = make_engine(url or database_url(settings))
    init_db(engine)
    sync_catalog(engine, settings)
    return engine


def store_offers(
    session: Session,
    provider: str,
    offers: Sequence[NormalisedOffer],
    observed_at: datetime,
    previous_observed_at: datetime | None,
) -> StoreStats:
    """Upsert offers and extend or open price intervals.

    An interval is extended only when the price, currency and availability are unchanged
    *and* it was seen by the provider's previous successful scrape (``previous_observed_at``):
    an offer that vanished and came back at the same price gets a new interval, so the gap
    stays visible.
    """
    existing = offers_by_identity(session, provider)
    new_offers = 0
    rows: list[tuple[NormalisedOffer, Offer]] = []
    for o in offers:
        row = existing.get(o.identity)
        if row is None:
            row = Offer(
                provider=provider, sku=o.sku, region=o.region, kind=o.kind, term_months=o.term_months,
                gpu_raw=o.gpu_raw, gpu_count=o.gpu_count, first_seen=observed_at, last_seen=observed_at,
            )
            session.add(row)
            existing[o.identity] = row
            new_offers += 1
        row.gpu, row.gpu_raw, row.gpu_count = o.gpu, o.gpu_raw, o.gpu_count
        row.gpu_memory_gb, row.vcpus, row.ram_gb, row.country = o.gpu_memory_gb, o.vcpus, o.ram_gb, o.country
        row.extra = dict(o.extra)
        row.last_seen = observed_at
        rows.append((o, row))
    session.flush()

    latest = latest_intervals(session, provider)
    changed = unchanged = unpriced = 0
    for o, row in rows:
        if o.price_per_hour is None or o.price_per_gpu_hour is None:
            unpriced += 1
            continue
        current = latest.get(row.id) if row.id is not None else None
        same = (
            current is not None
            and abs(current.price_per_hour - o.price_per_hour) < PRICE_EPSILON
            and current.currency == o.currency
            and current.available == o.available
            and current.gpu == o.gpu
            and previous_observed_at is not None
            and current.last_seen >= previous_observed_at
        )
        if same and current is not None:
            current.last_seen = observed_at
            current.observations += 1
            unchanged += 1
            continue
        if current is not None:
            changed += 1
        assert row.id is not None
        session.add(
            PriceInterval(
                offer_id=row.id, provider=provider, gpu=o.gpu, kind=o.kind,
                price_per_hour=o.price_per_hour, price_per_gpu_hour=o.price_per_gpu_hour,
                currency=o.currency, available=o.available, first_seen=observed_at, last_seen=observed_at,
            )
        )
    session.flush()
    return StoreStats(len(offers), new_offers, changed, unchanged, unpriced)


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
