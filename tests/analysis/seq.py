"""Building stored price sequences with known answers (the store's own write path)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from db import labels
from db.engine import session_scope
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def offer(provider: str, sku: str, price: float, gpu: str | None = "H100-SXM", count: float = 1,
          kind: str = "on_demand", region: str = "r1", currency: str = "USD",
          available: bool | None = True) -> NormalisedOffer:
    return NormalisedOffer(
        provider=provider, sku=sku, region=region, kind=kind, term_months=12 if kind == "reserved" else 0, gpu=gpu,
        gpu_raw=gpu or "mystery", gpu_count=count, price_per_hour=price * count, price_per_gpu_hour=price,
        currency=currency, available=available,
    )


def scrape(engine: Engine, provider: str, at: datetime, *offers: NormalisedOffer) -> None:
    """One successful scrape of ``provider`` at ``at`` listing exactly ``offers``."""
    with session_scope(engine) as s:
        prov = labels.ensure_provider(s, provider)
        store_stage.store_offers(s, provider, list(offers), at, prov.last_success_at)
        prov.last_success_at = at
