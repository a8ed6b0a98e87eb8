"""Validate stage: decide which normalised offers may enter the price history.

Two kinds of check, both ending in quarantine (kept with a reason, never stored as a price,
never alerted on) rather than a failed run:

* absolute sanity: a price <= 0, more than ``MAX_USD_PER_GPU_HOUR``, or no GPUs;
* consistency within the scrape: a spot price above the on-demand price of the same sku in
  the same region is not a bargain anyone can take (Vast.ai lists such bid floors);
* outliers against the offer's own last stored price: a jump by more than ``JUMP_FACTOR``
  either way is held back until a second consecutive scrape confirms it. A parsing glitch
  that reads "$0.25" for "$2.50" once is then never alerted on, while a real price change
  is accepted one scrape later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tracker.normalise import NormalisedOffer

MAX_USD_PER_GPU_HOUR = 200.0
JUMP_FACTOR = 5.0


@dataclass(frozen=True, slots=True)
class Rejected:
    offer: NormalisedOffer
    reason: str


def sanity_reason(o: NormalisedOffer) -> str | None:
    """Why ``o`` can never be a real price, or ``None`` if it can."""
    if o.gpu_count <= 0:
        return f"gpu_count {o.gpu_count} is not positive"
    if o.price_per_hour is None:
        return None  # listed without a price: stored as an offer, no price interval
    if o.price_per_hour <= 0:
        return f"price {o.price_per_hour} {o.currency}/h is not positive"
    if o.currency == "USD" and o.price_per_gpu_hour is not None and o.price_per_gpu_hour > MAX_USD_PER_GPU_HOUR:
        return f"price {o.price_per_gpu_hour:.2f} USD/GPU-h is above the {MAX_USD_PER_GPU_HOUR:.0f} USD plausibility limit"
    return None


def spot_reason(o: NormalisedOffer, on_demand_price: float | None) -> str | None:
    """Why a spot price cannot be right next to the same sku's on-demand price, or ``None``."""
    if o.kind != "spot" or o.price_per_hour is None or on_demand_price is None:
        return None
    if o.price_per_hour > on_demand_price * (1 + 1e-9):
        return f"spot price {o.price_per_hour:g} is above the on-demand price {on_demand_price:g} of the same offer"
    return None


def jump_reason(o: NormalisedOffer, previous: float | None, confirmed: bool) -> str | None:
    """Why a new price is an unconfirmed outlier against the previous one, or ``None``."""
    if previous is None or o.price_per_hour is None or previous <= 0 or confirmed:
        return None
    ratio = o.price_per_hour / previous
    if ratio > JUMP_FACTOR or ratio < 1 / JUMP_FACTOR:
        return (
            f"price jumped from {previous:g} to {o.price_per_hour:g} {o.currency}/h (x{ratio:.2f}); "
            "held until a second scrape confirms it"
        )
    return None


def validate(
    offers: Iterable[NormalisedOffer],
    previous_prices: Mapping[tuple[str, str, str, int], float],
    pending: Mapping[tuple[str, str, str, int], float],
) -> tuple[list[NormalisedOffer], list[Rejected]]:
    """Split offers into accepted and quarantined.

    ``previous_prices``: the offer's last stored whole-instance price by identity.
    ``pending``: prices quarantined as jumps in the provider's previous run; seeing the same
    price again confirms it.
    """
    offers = list(offers)
    on_demand = {(o.sku, o.region): o.price_per_hour for o in offers if o.kind == "on_demand" and o.price_per_hour}
    accepted: list[NormalisedOffer] = []
    rejected: list[Rejected] = []
    for o in offers:
        reason = sanity_reason(o) or spot_reason(o, on_demand.get((o.sku, o.region)))
        if reason is None:
            held = pending.get(o.identity)
            confirmed = held is not None and o.price_per_hour is not None and abs(held - o.price_per_hour) < 1e-9
            reason = jump_reason(o, previous_prices.get(o.identity), confirmed)
        if reason is None:
            accepted.append(o)
        else:
            rejected.append(Rejected(o, reason))
    return accepted, rejected
