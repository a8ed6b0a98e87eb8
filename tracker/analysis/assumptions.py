"""The buyer's defaults and bounds that tco, recommend, the CLI, the API and MCP all offer, and
the break-even rule that tco and the break-even history share.

They live here, apart from ``tco`` and ``recommend``, because those import pandas and the CLI
(and ``history``, on its fast path) must not at start-up: every interface takes its option
defaults and choices from this one place.
"""

from __future__ import annotations

import math

from tracker.kinds import HOURS_PER_MONTH

#: The electricity price (USD per kWh), the share of hours a card is busy and the years its
#: purchase is spread over, unless told otherwise (the seed article's).
USD_PER_KWH = 0.10
UTILIZATION = 0.6
YEARS = 3.0
#: Which provider's rent a TCO compares against: the cheapest, or the median provider's.
RENT_BASES = ("cheapest", "median")
#: What a model is sized for in ``recommend``.
WORKLOADS = ("inference", "lora", "qlora", "full")
#: The most GPUs one instance offers, and the most hours of use a month holds (31 days).
MAX_GPUS = 8
MAX_HOURS_PER_MONTH = 744


def breakeven_hours(purchase: float, rent_per_hour: float) -> float:
    """Simple break-even: hours of rent that cost the purchase price, divided as floats divide in
    numpy (a zero rent gives infinity, or NaN with no purchase price: a history keeps its gaps)."""
    if rent_per_hour == 0:
        return math.nan if purchase == 0 or math.isnan(purchase) else math.copysign(math.inf, purchase) * math.copysign(1.0, rent_per_hour)
    return purchase / rent_per_hour


def months_for_hours(hours: float | None, utilization: float = 1.0) -> float | None:
    """Calendar months to accumulate ``hours`` of use at ``utilization`` (730 h a month)."""
    return None if hours is None else hours / (HOURS_PER_MONTH * utilization)
