"""Query functions: every read and write the application makes, in one place.

Writers take an open ``Session`` and never commit: the caller owns the transaction, so one
provider's batch is all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db.models import GpuModel, Offer, PriceInterval, Provider, Quarantine, ScrapeRun

Identity = tuple[str, str, str, int]
PRICE_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class StoreStats:
    offers_seen: int
    new_offers: int
    prices_changed: int
    unchanged: int
    unpriced: int


def ensure_provider(session: Session, name: str, display_name: str = "") -> Provider:
    provider = session.get(Provider, name)
    if provider is None:
        provider = Provider(name=name, display_name=display_name or name)
        session.add(provider)
        session.flush()
    elif display_name and provider.display_name != display_name:
        provider.display_name = display_name
    return provider


def _identity(o: Offer) -> Identity:
    return (o.sku, o.region, o.kind, o.term_months)


def offers_by_identity(session: Session, provider: str) -> dict[Identity, Offer]:
    rows = session.exec(select(Offer).where(Offer.provider == provider)).all()
    return {_identity(o): o for o in rows}


def latest_intervals(session: Session, provider: str) -> dict[int, PriceInterval]:
    """The newest price interval of every offer of ``provider``, by offer id."""
    newest = (
        select(func.max(PriceInterval.id))
        .where(PriceInterval.provider == provider)
        .group_by(PriceInterval.offer_id)
        .scalar_subquery()
    )
    rows = session.exec(select(PriceInterval).where(col(PriceInterval.id).in_(newest))).all()
    return {r.offer_id: r for r in rows}


def previous_prices(session: Session, provider: str) -> dict[Identity, float]:
    """Last stored whole-instance price per offer identity (for outlier checks)."""
    offers = offers_by_identity(session, provider)
    latest = latest_intervals(session, provider)
    return {ident: latest[o.id].price_per_hour for ident, o in offers.items() if o.id in latest}


def pending_jumps(session: Session, provider: str, marker: str = "held until a second scrape confirms it") -> dict[Identity, float]:
    """Prices held for confirmation (reason ending in ``marker``) in the provider's latest good run."""
    last_run = session.exec(
        select(ScrapeRun.id)
        .where(ScrapeRun.provider == provider, ScrapeRun.status == "ok")
        .order_by(col(ScrapeRun.id).desc())
        .limit(1)
    ).first()
    if last_run is None:
        return {}
    rows = session.exec(
        select(Quarantine).where(Quarantine.run_id == last_run, col(Quarantine.reason).endswith(marker))
    ).all()
    return {(q.sku, q.region, q.kind, q.term_months): q.price_per_hour for q in rows if q.price_per_hour is not None}


def market_medians(session: Session, min_offers: int = 3) -> dict[str, float]:
    """Median current USD price per GPU-hour of every GPU with at least ``min_offers`` offers."""
    import statistics

    by_gpu: dict[str, list[float]] = {}
    for row in latest_prices(session, include_unmapped=False):
        if row["currency"] == "USD" and row["gpu"]:
            by_gpu.setdefault(row["gpu"], []).append(row["price_per_gpu_hour"])
    return {gpu: statistics.median(ps) for gpu, ps in by_gpu.items() if len(ps) >= min_offers}


# --- reads ---------------------------------------------------------------------------------


def latest_prices(
    session: Session,
    *,
    gpus: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    include_unmapped: bool = True,
) -> list[dict[str, Any]]:
    """Current price of every offer listed by its provider's latest successful scrape,
    cheapest per GPU-hour first.

    "Current" means the interval's ``last_seen`` equals the provider's ``last_success_at``:
    an offer missing from the latest good scrape is no longer on sale and is not shown.
    """
    stmt = (
        select(PriceInterval, Offer)
        .join(Offer, col(Offer.id) == col(PriceInterval.offer_id))
        .join(Provider, col(Provider.name) == col(PriceInterval.provider))
        .where(PriceInterval.last_seen == Provider.last_success_at)
    )
    if gpus is not None:
        stmt = stmt.where(col(PriceInterval.gpu).in_(list(gpus)))
    elif not include_unmapped:
        stmt = stmt.where(col(PriceInterval.gpu).is_not(None))
    if providers:
        stmt = stmt.where(col(PriceInterval.provider).in_(list(providers)))
    if kinds:
        stmt = stmt.where(col(PriceInterval.kind).in_(list(kinds)))
    if regions:
        stmt = stmt.where(col(Offer.region).in_(list(regions)))
    stmt = stmt.order_by(col(PriceInterval.price_per_gpu_hour), col(PriceInterval.provider), col(Offer.sku))
    out = []
    for interval, offer in session.exec(stmt).all():
        out.append(
            {
                "provider": offer.provider,
                "gpu": offer.gpu,
                "gpu_raw": offer.gpu_raw,
                "gpu_count": offer.gpu_count,
                "gpu_memory_gb": offer.gpu_memory_gb,
                "kind": offer.kind,
                "term_months": offer.term_months,
                "region": offer.region,
                "country": offer.country,
                "sku": offer.sku,
                "price_per_hour": interval.price_per_hour,
                "price_per_gpu_hour": interval.price_per_gpu_hour,
                "currency": interval.currency,
                "available": interval.available,
                "observed_at": interval.last_seen,
                "price_since": interval.first_seen,
            }
        )
    return out


def provider_rows(session: Session) -> dict[str, Provider]:
    return {p.name: p for p in session.exec(select(Provider)).all()}


def last_runs(session: Session, limit_per_provider: int = 1) -> dict[str, list[ScrapeRun]]:
    runs = session.exec(select(ScrapeRun).order_by(col(ScrapeRun.provider), col(ScrapeRun.id).desc())).all()
    out: dict[str, list[ScrapeRun]] = {}
    for r in runs:
        bucket = out.setdefault(r.provider, [])
        if len(bucket) < limit_per_provider:
            bucket.append(r)
    return out


def unmapped_gpu_names(session: Session) -> list[dict[str, Any]]:
    """Raw GPU names stored without a canonical id, with how many offers carry each."""
    stmt = (
        select(Offer.gpu_raw, func.count(), func.min(Offer.provider))
        .where(col(Offer.gpu).is_(None))
        .group_by(Offer.gpu_raw)
        .order_by(func.count().desc(), Offer.gpu_raw)
    )
    return [{"gpu_raw": raw, "offers": n, "example_provider": p} for raw, n, p in session.exec(stmt).all()]


def sync_gpu_models(session: Session, rows: Iterable[dict[str, Any]]) -> int:
    """Make the ``gpu_model`` table equal to the catalog rows (insert, update, delete)."""
    wanted = {r["id"]: r for r in rows}
    existing = {m.id: m for m in session.exec(select(GpuModel)).all()}
    for gpu_id, model in existing.items():
        if gpu_id not in wanted:
            session.delete(model)
    for gpu_id, row in wanted.items():
        model = existing.get(gpu_id)
        if model is None:
            session.add(GpuModel(**row))
        else:
            for key, value in row.items():
                if getattr(model, key) != value:
                    setattr(model, key, value)
    return len(wanted)


def row_counts(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        return {
            model.__tablename__: session.exec(select(func.count()).select_from(model)).one()  # type: ignore[attr-defined]
            for model in (Provider, GpuModel, Offer, PriceInterval, ScrapeRun, Quarantine)
        }


def recent_runs(
    session: Session, *, limit: int = 50, providers: Sequence[str] | None = None, statuses: Sequence[str] | None = None
) -> list[ScrapeRun]:
    """The newest scrape runs first (optionally of some providers / with some statuses)."""
    stmt = select(ScrapeRun)
    if providers:
        stmt = stmt.where(col(ScrapeRun.provider).in_(list(providers)))
    if statuses:
        stmt = stmt.where(col(ScrapeRun.status).in_(list(statuses)))
    return list(session.exec(stmt.order_by(col(ScrapeRun.id).desc()).limit(limit)).all())


def latest_run_per_provider(session: Session) -> dict[str, ScrapeRun]:
    """Each provider's newest scrape run (one indexed query, unlike ``last_runs``)."""
    newest = select(func.max(ScrapeRun.id)).group_by(ScrapeRun.provider).scalar_subquery()
    return {r.provider: r for r in session.exec(select(ScrapeRun).where(col(ScrapeRun.id).in_(newest))).all()}


def current_offer_counts(session: Session) -> dict[str, int]:
    """Per provider: priced offers listed by its latest successful scrape (what ``latest_prices`` shows)."""
    stmt = (
        select(PriceInterval.provider, func.count())
        .join(Provider, col(Provider.name) == col(PriceInterval.provider))
        .where(PriceInterval.last_seen == Provider.last_success_at)
        .group_by(PriceInterval.provider)
    )
    return {p: n for p, n in session.exec(stmt).all()}


def first_price_at(session: Session, gpus: Sequence[str] | None = None) -> datetime | None:
    """When the oldest stored price (of ``gpus``, when given) was first seen."""
    stmt = select(func.min(PriceInterval.first_seen))
    if gpus is not None:
        stmt = stmt.where(col(PriceInterval.gpu).in_(list(gpus)))
    return session.exec(stmt).one()  # min() keeps the column's type: UTC-aware on every backend
