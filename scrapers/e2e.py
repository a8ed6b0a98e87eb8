"""E2E Networks: the offer catalogue in the JSON-LD of https://www.e2enetworks.com/pricing (no auth).

What is called
    ``GET https://www.e2enetworks.com/pricing`` once per run (after checking robots.txt:
    disallowed -> ``RobotsDisallowed``, the run is skipped). No credentials.

What is extracted
    The page carries a schema.org ``OfferCatalog`` in a ``<script type="application/ld+json">``:
    ``itemListElement`` is a list of ``Offer`` objects with ``name``, ``category``, ``url``,
    ``price``, ``priceCurrency``, ``priceSpecification.unitText`` ("per hour"), ``availability``
    and ``itemOffered.description`` ("80 GB VRAM, 26 vCPUs, 250 GB RAM"). Offers whose category
    is a GPU instance are kept; CPU instances are left out.

    * Prices are **INR** as the catalogue states them (``priceCurrency``; an offer without one is
      a ``ParseError``): nothing is converted here. The pipeline converts with a configured,
      dated ``currency_rates.INR`` and otherwise keeps rupees, saying so.
    * "per hour" is the hourly price; "per month" is a monthly plan: reserved for one month at
      its effective hourly price (730 hours, ``extra["monthly_price"]``).
    * The catalogue states no GPU count: an instance whose VRAM is one card's is one GPU
      (``extra["gpu_count_stated"] = False``). The sku is the offer page's last path segment
      (``nvidia-a100-80gb``), which tells the two A100 sizes apart.
    * ``availability`` InStock -> available, OutOfStock/SoldOut -> not available. No region.
    No catalogue, or one without a list of offers -> ``ParseError("e2e: layout changed: ...")``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    read_price,
    unreadable,
)
from tracker.kinds import HOURS_PER_MONTH

URL = "https://www.e2enetworks.com/pricing"
_LD_JSON = re.compile(r"<script[^>]*type=[\"']application/ld\+json[\"'][^>]*>(.*?)</script>", re.S | re.I)
_VRAM = re.compile(r"(\d+(?:\.\d+)?)\s*GB\s*VRAM", re.I)
_VCPUS = re.compile(r"(\d+(?:\.\d+)?)\s*vCPUs?", re.I)
_RAM = re.compile(r"(\d+(?:\.\d+)?)\s*GB\s*RAM", re.I)
_SUFFIX = re.compile(r"\s*GPU\s+Cloud\s+Instance\s*$", re.I)


def _number(pattern: re.Pattern[str], text: str) -> float | None:
    m = pattern.search(text)
    return float(m.group(1)) if m else None


def catalogue(html: str, provider: str) -> list[Any]:
    """The ``itemListElement`` of the page's ``OfferCatalog`` (JSON-LD)."""
    for block in _LD_JSON.findall(html):
        try:
            doc = json.loads(block)
        except ValueError:
            continue
        for node in doc.get("@graph", [doc]) if isinstance(doc, dict) else doc if isinstance(doc, list) else []:
            if isinstance(node, dict) and node.get("@type") == "OfferCatalog":
                items = node.get("itemListElement")
                if not isinstance(items, list):
                    raise ParseError(f"{provider}: layout changed: OfferCatalog.itemListElement is not a list")
                return items
    raise ParseError(f"{provider}: layout changed: the page has no JSON-LD 'OfferCatalog'")


class E2eScraper(Scraper):
    name = "e2e"
    segment = "neocloud"
    display_name = "E2E Networks"
    homepage = "https://www.e2enetworks.com"
    endpoint = "GET https://www.e2enetworks.com/pricing (JSON-LD OfferCatalog in the page)"
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = "reference: the 2026 shape of getcomputable/gpu-index's observatory capture of the e2enetworks.com pricing page (structure only, own values)"
    kinds = ("on_demand", "reserved")
    caveats = (
        "prices in INR as the page's JSON-LD offer catalogue states them, converted to USD only with a configured, "
        "dated currency_rates.INR; one GPU per instance (the catalogue states no count); CPU instances left out; "
        "no region"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(URL, follow_redirects=True)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, (str, bytes)):
            raise ParseError(f"{self.name}: payload should be the page's HTML text, got {type(raw).__name__}")
        if not raw.strip():
            raise ParseError(f"{self.name}: layout changed: the page is empty")
        html = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        offers: list[ScrapedOffer] = []
        for i, item in enumerate(catalogue(html, self.name)):
            where = f"itemListElement[{i}]"
            if not isinstance(item, dict):
                raise ParseError(f"{self.name}: {where} should be an Offer object, got {type(item).__name__}")
            if "gpu" not in str(item.get("category", "")).lower():
                continue  # CPU instances, storage...
            name = item.get("name")
            if not isinstance(name, str) or not name.strip():
                raise ParseError(f"{self.name}: {where}.name should be a non-empty string")
            currency = item.get("priceCurrency")
            if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
                raise ParseError(f"{self.name}: {where}.priceCurrency should be an ISO currency code, got {currency!r}")
            price, bad = read_price(item, "price", at=where, required=True)
            unit = str((item.get("priceSpecification") or {}).get("unitText", "per hour")).lower()
            kind, term, extra = "on_demand", 0, {}
            if "month" in unit:
                kind, term, extra = "reserved", 1, {"monthly_price": price, "monthly_plan": True}
                price = price / HOURS_PER_MONTH if price is not None else None
            elif "hour" not in unit:
                price, bad = None, unreadable("price", f"{where}.priceSpecification.unitText", unit, "not per hour or month")
            product = item.get("itemOffered") if isinstance(item.get("itemOffered"), dict) else {}
            description = str(product.get("description", ""))
            url = str(item.get("url", ""))
            sku = url.rstrip("/").rsplit("/", 1)[-1] if "/gpus/" in url else name
            availability = str(item.get("availability", ""))
            offers.append(self.offer(
                sku=sku, gpu_raw=_SUFFIX.sub("", name).strip() or name, gpu_count=1, price_per_hour=price,
                kind=kind, term_months=term, currency=currency, gpu_memory_gb=_number(_VRAM, description),
                vcpus=_number(_VCPUS, description), ram_gb=_number(_RAM, description),
                available=True if availability.endswith("InStock") else False if availability else None,
                extra={**extra, "gpu_count_stated": False, "description": description, **bad},
            ))
        return offers
