"""The buyer's defaults and bounds that tco, recommend, the CLI, the API and MCP all offer.

They live here, apart from ``tco`` and ``recommend``, because those import pandas and the CLI
(and ``history``, on its fast path) must not at start-up: every interface takes its option
defaults and choices from this one place.
"""

from __future__ import annotations

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
