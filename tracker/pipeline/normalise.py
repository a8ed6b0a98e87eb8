"""Normalise stage: a ``ScrapedOffer`` becomes a ``NormalisedOffer`` with a canonical GPU id
and a price per GPU-hour, ready to validate and store.

Why a separate record: the store must not care how a provider spelt "H100 80GB HBM3"; it
keys everything on the canonical id, and keeps ``gpu_raw`` so an unmapped name is never lost
(``gpu`` is ``None`` and the offer is flagged unmapped).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from scrapers.base import ScrapedOffer
from tracker.catalog.specs import resolve_gpu


@dataclass(slots=True, unsafe_hash=True)
class NormalisedOffer:
    """An offer as the store keeps it. Treated as immutable (``dataclasses.replace`` makes a
    changed copy) but not declared frozen: a collection builds one per offer every cycle, and a
    frozen dataclass sets each of its 18 fields through ``object.__setattr__`` (3 microseconds an
    offer against 0.4, about 5% of storing a 20,000-offer market). Hashed by its fields but ``extra``."""

    provider: str
    sku: str
    region: str
    kind: str
    term_months: int
    gpu: str | None
    gpu_raw: str
    gpu_count: float
    price_per_hour: float | None
    price_per_gpu_hour: float | None
    currency: str
    available: bool | None = None
    gpu_memory_gb: float | None = None
    vcpus: float | None = None
    ram_gb: float | None = None
    country: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: GPUs free now, where the provider states a count (``ScrapedOffer.available_count``).
    available_count: int | None = None

    @property
    def identity(self) -> tuple[str, str, str, int]:
        """(sku, region, kind, term_months): with the provider, one ``offer`` row."""
        return (self.sku, self.region, self.kind, self.term_months)

    @property
    def mapped(self) -> bool:
        return self.gpu is not None


def normalise(
    offer: ScrapedOffer, rates_to_usd: Mapping[str, float] | None = None, observed_at: datetime | None = None
) -> NormalisedOffer:
    """Resolve the GPU and compute per-GPU prices.

    A price in a currency with a configured rate is converted to USD; ``extra`` keeps the
    original price and currency, the rate and the day it was read (``usd_rate``,
    ``usd_rate_date``: every converted price is shown with them). Without a rate it stays in its
    own currency and says so in ``currency``.
    A price the provider announced for a later date (``extra["announced_price_per_hour"]`` from
    ``extra["announced_effective"]``) replaces the current one once ``observed_at`` has reached
    that date, so the store holds the price in effect when the page was seen.
    """
    gpu = offer.gpu or resolve_gpu(offer.gpu_raw, offer.gpu_memory_gb, provider=offer.provider)
    price, currency, extra = price_in_effect(offer, observed_at)
    if price is not None and currency != "USD" and rates_to_usd and currency in rates_to_usd:
        rate = rates_to_usd[currency]
        on = getattr(rate, "date", None)
        extra.update(original_price_per_hour=price, original_currency=currency, usd_rate=float(rate),
                     usd_rate_date=on.isoformat() if on is not None else None)
        price, currency = price * rate, "USD"
    per_gpu = price / offer.gpu_count if price is not None and offer.gpu_count > 0 else None
    return NormalisedOffer(
        provider=offer.provider,
        sku=offer.sku,
        region=offer.region,
        kind=offer.kind,
        term_months=offer.term_months,
        gpu=gpu,
        gpu_raw=offer.gpu_raw.strip(),
        gpu_count=offer.gpu_count,
        price_per_hour=price,
        price_per_gpu_hour=per_gpu,
        currency=currency,
        available=offer.available,
        gpu_memory_gb=offer.gpu_memory_gb,
        vcpus=offer.vcpus,
        ram_gb=offer.ram_gb,
        country=offer.country,
        extra=extra,
        available_count=offer.available_count,
    )


def price_in_effect(offer: ScrapedOffer, observed_at: datetime | None) -> tuple[float | None, str, dict[str, Any]]:
    """(price, currency, extra) in effect at ``observed_at``: the announced price from its date on.

    Before the date (or with no observation time) the current price stays and the announced one
    stays in ``extra``; from the date on the announced price is the price, and the one it
    replaced is kept as ``extra["superseded_price_per_hour"]``.
    """
    extra = dict(offer.extra)
    announced, effective = extra.get("announced_price_per_hour"), extra.get("announced_effective")
    if observed_at is None or not isinstance(announced, (int, float)) or not isinstance(effective, str):
        return offer.price_per_hour, offer.currency, extra
    try:
        starts = date.fromisoformat(effective)
    except ValueError:
        return offer.price_per_hour, offer.currency, extra
    if observed_at.date() < starts:
        return offer.price_per_hour, offer.currency, extra
    extra["superseded_price_per_hour"] = offer.price_per_hour
    extra["price_effective_from"] = effective
    return float(announced), str(extra.get("announced_currency") or offer.currency), extra
