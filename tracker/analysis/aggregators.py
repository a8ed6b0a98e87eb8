"""The aggregator rule: an offer rented (or found) through an aggregator is counted once.

An aggregator or reseller (GetDeploying's listings, Shadeform, Prime Intellect) lists other
clouds' offers. Such an offer is a real price a user can pay, so it is stored, under the
aggregator, with the cloud it names in ``offer.extra["via"]`` (price rows carry it as ``via``).
Market figures must not count that capacity twice: where we also collect the named cloud
directly (it has a scraper), the aggregator's row is that cloud's row -- the cloud is one
provider of the market, its price the cheaper of its own and the aggregator's. An aggregator's
row for a cloud we do not collect stays the aggregator's.

``market_provider`` is the one place that says whose a row is; every market read that counts
providers or takes each provider's cheapest goes through ``cheapest_per_provider``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from functools import cache
from typing import Any, TypeVar

#: ``offer.extra`` key (and price-row field) naming the cloud an aggregator's offer is rented from.
VIA_KEY = "via"

Row = TypeVar("Row", bound=Mapping[str, Any])


@cache
def directly_collected() -> frozenset[str]:
    """Providers we collect directly: every registered scraper."""
    from scrapers.registry import all_scrapers

    return frozenset(all_scrapers())


def market_provider(provider: str, via: str | None, direct: Collection[str] | None = None) -> str:
    """Whose row this is in market figures: the cloud an aggregator names when we collect that
    cloud directly (``direct``, default: the registered scrapers), else the row's own provider."""
    if not via or via == provider:
        return provider
    return via if via in (directly_collected() if direct is None else direct) else provider


def cheapest_per_provider(rows: Iterable[Row], direct: Collection[str] | None = None) -> dict[str, Row]:
    """Each market provider's cheapest row, from price rows sorted cheapest first."""
    out: dict[str, Row] = {}
    for r in rows:
        out.setdefault(market_provider(r["provider"], r.get(VIA_KEY), direct), r)
    return out
