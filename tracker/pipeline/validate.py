"""Validate stage: decide which normalised offers may enter the price history.

Two kinds of check, both ending in quarantine (kept with a reason, never stored as a price,
never alerted on) rather than a failed run:

* absolute sanity: a price or GPU count field the parser could not take (missing, no number,
  negative: ``extra[UNREADABLE_PRICE]`` holds the reason, naming the field), a price or GPU count that is not a finite number, a price <= 0, more than
  ``MAX_USD_PER_GPU_HOUR`` (other currencies through a coarse table of units per USD), or no
  GPUs;
* consistency within the scrape: a spot price above the on-demand price of the same sku in
  the same region is not a bargain anyone can take (Vast.ai lists such bid floors);
* outliers against the offer's own last stored price: a jump by more than ``JUMP_FACTOR``
  either way is held back until a second consecutive scrape confirms it; a *new* offer,
  which has no price of its own to compare with, is held the same way when it is more than
  ``MARKET_FACTOR`` away from the market median of its GPU (wide on purpose: marketplace bid
  floors sit at a fifth of enterprise list prices; a parsing glitch is off by 100x). A parsing glitch
  that reads "$0.25" for "$2.50" once is then never alerted on, while a real price change
  is accepted one scrape later.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scrapers.base import UNREADABLE_PRICE
from tracker.pipeline.normalise import NormalisedOffer

MAX_USD_PER_GPU_HOUR = 200.0
JUMP_FACTOR = 5.0
MARKET_FACTOR = 20.0
#: Fewest current offers of a GPU for its median to judge a new offer.
MARKET_MIN_OFFERS = 5
#: Every held reason ends so: a later scrape that sees the same price confirms it.
HELD = "held until a second scrape confirms it"
#: Coarse units of a currency per USD, only to bound absurd prices in currencies without a
#: configured rate (a rate in ``currency_rates`` converts the price to USD before this).
UNITS_PER_USD = {"USD": 1.0, "EUR": 1.0, "GBP": 1.0, "CHF": 1.0, "CAD": 1.5, "AUD": 1.6, "SGD": 1.4,
                 "JPY": 160.0, "CNY": 7.5, "INR": 90.0, "KRW": 1500.0, "SEK": 11.0, "NOK": 11.0}


@dataclass(frozen=True, slots=True)
class Rejected:
    offer: NormalisedOffer
    reason: str


def sanity_reason(o: NormalisedOffer) -> str | None:
    """Why ``o`` can never be a real price, or ``None`` if it can."""
    if o.extra.get(UNREADABLE_PRICE):
        return str(o.extra[UNREADABLE_PRICE])
    if not math.isfinite(o.gpu_count) or o.gpu_count <= 0:
        return f"gpu_count {o.gpu_count} is not a positive number"
    if o.price_per_hour is None:
        return None  # listed without a price: stored as an offer, no price interval
    if not math.isfinite(o.price_per_hour) or o.price_per_hour <= 0:
        return f"price {o.price_per_hour} {o.currency}/h is not a positive number"
    per_usd = UNITS_PER_USD.get(o.currency)
    if per_usd is None:
        return f"currency {o.currency} has no rate: set currency_rates.{o.currency} to convert it to USD"
    limit = MAX_USD_PER_GPU_HOUR * per_usd
    if o.price_per_gpu_hour is not None and o.price_per_gpu_hour > limit:
        return (f"price {o.price_per_gpu_hour:.2f} {o.currency}/GPU-h is above the "
                f"{MAX_USD_PER_GPU_HOUR:.0f} USD plausibility limit")
    return None


def spot_reason(o: NormalisedOffer, on_demand_price: float | None) -> str | None:
    """Why a spot price cannot be right next to the same sku's on-demand price, or ``None``."""
    if o.kind != "spot" or o.price_per_hour is None or on_demand_price is None:
        return None
    if o.price_per_hour > on_demand_price * 1.001:  # equal up to rounding is not above
        return f"spot price {o.price_per_hour:g} is above the on-demand price {on_demand_price:g} of the same offer"
    return None


def jump_reason(o: NormalisedOffer, previous: float | None, confirmed: bool) -> str | None:
    """Why a new price is an unconfirmed outlier against the previous one, or ``None``."""
    if previous is None or o.price_per_hour is None or previous <= 0 or confirmed:
        return None
    ratio = o.price_per_hour / previous
    if ratio > JUMP_FACTOR or ratio < 1 / JUMP_FACTOR:
        return f"price jumped from {previous:g} to {o.price_per_hour:g} {o.currency}/h (x{ratio:.2f}); {HELD}"
    return None


def market_reason(o: NormalisedOffer, median: float | None) -> str | None:
    """Why a new offer's USD price per GPU-hour is an unconfirmed outlier against its GPU's market."""
    if median is None or median <= 0 or o.gpu is None or o.currency != "USD" or o.price_per_gpu_hour is None:
        return None
    ratio = o.price_per_gpu_hour / median
    if ratio > MARKET_FACTOR or ratio < 1 / MARKET_FACTOR:
        return (f"new offer at {o.price_per_gpu_hour:g} USD/GPU-h is x{ratio:.3g} the {o.gpu} market median "
                f"{median:g}; {HELD}")
    return None


def validate(
    offers: Iterable[NormalisedOffer],
    previous_prices: Mapping[tuple[str, str, str, int], float],
    pending: Mapping[tuple[str, str, str, int], float],
    market: Mapping[str, float] | None = None,
) -> tuple[list[NormalisedOffer], list[Rejected]]:
    """Split offers into accepted and quarantined.

    ``previous_prices``: the offer's last stored whole-instance price by identity.
    ``pending``: prices held (jumps, market outliers) in the provider's previous run; seeing
    the same price again confirms it.
    ``market``: median current USD price per GPU-hour by canonical GPU, for new offers.
    """
    offers = list(offers)
    # only prices that can stand judge a spot price (a negative or unreadable one is quarantined itself)
    on_demand = {(o.sku, o.region): o.price_per_hour for o in offers
                 if o.kind == "on_demand" and o.price_per_hour is not None and o.price_per_hour > 0
                 and not o.extra.get(UNREADABLE_PRICE)}
    accepted: list[NormalisedOffer] = []
    rejected: list[Rejected] = []
    for o in offers:
        reason = sanity_reason(o) or spot_reason(o, on_demand.get((o.sku, o.region)))
        if reason is None:
            held = pending.get(o.identity)
            confirmed = held is not None and o.price_per_hour is not None and abs(held - o.price_per_hour) < 1e-9
            previous = previous_prices.get(o.identity)
            if not confirmed:
                reason = (jump_reason(o, previous, confirmed) if previous is not None
                          else market_reason(o, (market or {}).get(o.gpu or "")))
        if reason is None:
            accepted.append(o)
        else:
            rejected.append(Rejected(o, reason))
    return accepted, rejected
