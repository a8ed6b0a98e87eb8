"""Akash Network GPU prices from the Akash Console API's public marketplace summary.

Request: ``GET https://console-api.akash.network/v1/gpu-prices`` (no auth, no query, one
request, no pagination). The response is ``{"availability": {total, available}, "models": [...]}``
with one entry per GPU model/memory/interface.

This is a *marketplace summary*, not a price list: Akash is a reverse-auction market, and the
Console API derives each model's ``price`` from recent bids. For every provider that hosts the
model it takes that provider's most relevant recent bid for a one-GPU deployment (its pricing
bot's bid when there is one, else its cheapest matching bid of the last 14, then 31 days) and
reports, across providers, ``min``, ``max``, ``avg``, ``med`` (median) and ``weightedAverage``
(weighted by each provider's GPU count), in USD per GPU-hour (``priceUakt`` is the same in uakt).
``price`` is ``null`` when no bid was found; such a model gives no offer.

Which figure becomes the offer price: ``med``. One number has to stand for a market of several
independent hosts; the median of the providers' best bids is what a typical provider asks and
moves only when most of them do, whereas ``min`` is a single host (often with no free capacity:
``availability.available`` may be a handful of GPUs) and ``max``/``avg`` follow one outlier.
``weightedAverage`` weights by *total* (not free) GPUs, so a big but fully leased host dominates
it. Every figure is kept in ``extra`` (``price_min``, ``price_max``, ``price_avg``,
``price_weighted_average``, ``price_median``) so the spread stays visible.

One offer per model: sku ``"<vendor>-<model>-<ram>-<interface>"`` (lower case), ``gpu_raw``
``"<vendor> <model> <ram> <interface>"`` (e.g. ``"nvidia a100 80Gi SXM4"``), ``gpu_count`` 1 and
the price per GPU-hour, kind ``community`` (marketplace hosts sold on demand), region ``""``
(the summary is network-wide), ``available`` when ``availability.available`` > 0, and those GPUs
free network-wide as ``available_count``.
``gpu_memory_gb`` is the number in ``ram`` ("80Gi" -> 80).

Keys relied on: ``models[]``, ``vendor``, ``model``, ``ram``, ``interface``, ``availability``
and ``price`` (null or an object with ``currency`` "USD" and a numeric ``med``). A model whose
``med`` is missing, no number or negative is quarantined with the field named; the rest is kept.
"""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    free_count,
    number,
    read_price,
    require,
)

URL = "https://console-api.akash.network/v1/gpu-prices"
#: The price statistics the summary gives, with the ``extra`` key each is kept under.
PRICE_FIELDS = (
    ("min", "price_min"),
    ("max", "price_max"),
    ("avg", "price_avg"),
    ("weightedAverage", "price_weighted_average"),
    ("med", "price_median"),
)
OFFER_FIGURE = "med"
_RAM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:Gi|G|GB|GiB)\s*$", re.IGNORECASE)


class AkashScraper(Scraper):
    name = "akash"
    segment = "marketplace"
    display_name = "Akash Network"
    homepage = "https://akash.network/pricing/gpus/"
    endpoint = "GET https://console-api.akash.network/v1/gpu-prices"
    kinds = ("community",)
    source_kind = "marketplace summary"
    fixture_kind = "recording"
    checked_by = "recording: a live GET of /v1/gpu-prices quoted in opencolin/n8n-nodes-akash"
    caveats = (
        "marketplace summary, not a price list: the price is the median of the providers' recent "
        "one-GPU bids (min/max/avg/weighted average kept in extra); per GPU-hour; network-wide, no region"
    )

    async def fetch(self, http: Http) -> Any:
        return await http.get_json(URL, headers={"Accept": "application/json"})

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        models = require(raw, "models", provider=self.name, kind=list)
        if not models:
            raise ParseError(f"{self.name}: gpu-prices lists no GPU model")
        offers: list[ScrapedOffer] = []
        for index, model in enumerate(models):
            offer = self._offer(model, index)
            if offer is not None:
                offers.append(offer)
        if not offers:
            raise ParseError(f"{self.name}: none of the {len(models)} GPU models has a price")
        return offers

    def _offer(self, model: Any, index: int) -> ScrapedOffer | None:
        if not isinstance(model, dict):
            raise ParseError(f"{self.name}: models[{index}] should be an object, got {type(model).__name__}")
        parts = [self._field(model, key, index, str).strip() for key in ("vendor", "model", "ram", "interface")]
        if not parts[1]:
            raise ParseError(f"{self.name}: models[{index}] has an empty model name")
        label = " ".join(p for p in parts if p)
        if "price" not in model:
            raise ParseError(f"{self.name}: model {label!r} has no 'price'")
        price = model["price"]
        if price is None:
            return None  # no bid for this model in the last month: nothing to quote
        if not isinstance(price, dict):
            raise ParseError(f"{self.name}: model {label!r} price should be an object or null, got {type(price).__name__}")
        currency = price.get("currency")
        if currency != "USD":
            raise ParseError(f"{self.name}: model {label!r} price currency should be 'USD', got {currency!r}")
        figures = {key: number(price.get(key)) for key, _ in PRICE_FIELDS}  # the spread: kept when numbers
        figures[OFFER_FIGURE], bad = read_price(price, OFFER_FIGURE, at=field_path("models", index, "price"), required=True, strings=False)
        availability = self._field(model, "availability", index, dict)
        free = availability.get("available")
        providers = model.get("providerAvailability") if isinstance(model.get("providerAvailability"), dict) else {}
        extra: dict[str, Any] = {extra_key: figures[key] for key, extra_key in PRICE_FIELDS}
        extra.update(
            {
                "summary": "marketplace",
                "price_figure": OFFER_FIGURE,
                "gpus_total": availability.get("total"),
                "gpus_available": free,
                "providers_total": providers.get("total"),
                "providers_available": providers.get("available"),
                **bad,
            }
        )
        return self.offer(
            sku="-".join(parts).lower(),
            gpu_raw=label,
            gpu_count=1,
            price_per_hour=figures[OFFER_FIGURE],
            kind="community",
            region="",
            gpu_memory_gb=_memory_gb(parts[2]),
            currency="USD",
            available=None if free_count(free) is None else free_count(free) > 0,
            available_count=free_count(free),
            extra=extra,
        )

    def _field(self, model: dict[str, Any], key: str, index: int, kind: type) -> Any:
        """``model[key]`` of type ``kind``, or a ParseError saying which model lacks it."""
        value = model.get(key)
        if not isinstance(value, kind):
            what = "has no" if value is None else f"has a {type(value).__name__} for"
            raise ParseError(f"{self.name}: models[{index}] {what} {key!r} ({kind.__name__} expected)")
        return value


def _memory_gb(ram: str) -> float | None:
    """``"80Gi"`` -> 80.0 (the nominal size the catalog uses); anything else -> ``None``."""
    m = _RAM.match(ram)
    return float(m[1]) if m else None
