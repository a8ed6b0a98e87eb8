"""The aggregator rule: an offer rented (or found) through an aggregator is counted once.

An aggregator or reseller (GetDeploying's listings, Shadeform, Prime Intellect) lists other
clouds' offers. Such an offer is a real price a user can pay, so it is stored, under the
aggregator, with the cloud it names in ``offer.extra["via"]`` (price rows carry it as ``via``).
Market figures must not count that capacity twice: where we also collect the named cloud
directly (it has a scraper), the aggregator's row is that cloud's row -- the cloud is one
provider of the market, its price the cheaper of its own and the aggregator's. An aggregator's
row for a cloud we do not collect stays the aggregator's.

``market_provider`` is the one place that says whose a row is (defined beside the scraper
registry, ``scrapers.registry``, which knows what we collect directly, so the alert rules below
the analysis count a cloud once too). Price rows (with ``via``) go
through ``cheapest_per_provider``; history reads, whose roll-ups keep each (aggregator, cloud)
pair as its own series under a key label (``db.reads``: ``getdeploying/lambda``), go through
``market_of_key`` for one series and ``market_runs`` for a sweep's runs, so a market
figure (min, quartiles, median, provider count, an index) takes one value per market provider.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from db import reads
from db.spans import Run, lows
from scrapers.registry import market_provider

Row = TypeVar("Row", bound=Mapping[str, Any])


def cheapest_per_provider(rows: Iterable[Row]) -> dict[str, Row]:
    """Each market provider's cheapest row, from price rows sorted cheapest first."""
    out: dict[str, Row] = {}
    for r in rows:
        out.setdefault(market_provider(r["provider"], r.get(reads.VIA_KEY)), r)
    return out


def market_prices(rows: Iterable[Row]) -> dict[str, list[float]]:
    """Per GPU of price rows (USD per-GPU-hour prices; rows without a GPU or price left out):
    each market provider's cheapest, what a median "across the market" is taken over."""
    per: dict[str, dict[str, float]] = {}
    for r in rows:
        price = r.get("price_per_gpu_hour")
        if r.get("gpu") and price is not None:
            who = per.setdefault(r["gpu"], {})
            key = market_provider(r["provider"], r.get(reads.VIA_KEY))
            who[key] = min(price, who.get(key, price))
    return {gpu: sorted(v.values()) for gpu, v in per.items()}


def market_of_key(key: str, direct: Collection[str] | None = None) -> str:
    """The market provider of a roll-up series or interval key (a provider's name, or an
    aggregator's ``<aggregator>/<cloud>`` key, ``db.reads``)."""
    provider, via = reads.split(key)
    return market_provider(provider, via, direct)


def market_runs(runs: Mapping[str, Sequence[Run]], direct: Collection[str] | None = None) -> dict[str, list[Run]]:
    """Each market provider's runs from the runs of its series (by key, ``market_of_key``; one
    series' runs in order, never overlapping): where several of its series have a value, the
    lowest (``db.spans.lows``, the rule a provider's kinds are combined by; a NaN adds offers
    only), and their offers added up."""
    groups: dict[str, list[Sequence[Run]]] = {}
    for key, series in runs.items():
        groups.setdefault(market_of_key(key, direct), []).append(series)
    return {who: list(parts[0]) if len(parts) == 1 else lows(
                (a, b, v if v == v else None, n) for part in parts for a, b, v, n in part)
            for who, parts in groups.items()}
