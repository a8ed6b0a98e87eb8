"""Microsoft Azure: GPU virtual-machine prices from the public Azure Retail Prices API.

What is called: ``GET https://prices.azure.com/api/retail/prices`` with
``api-version=2023-01-01-preview`` and one OData ``$filter``: ``serviceName eq 'Virtual
Machines'``, ``priceType eq 'Consumption'``, Linux only (``contains(productName, 'Windows') eq
false``) and an ``armSkuName`` of a GPU series (``Standard_NC*``, ``Standard_ND*``,
``Standard_NG*``, ``Standard_NV*``). The API answers at most 1,000 items a page and links the
next one in ``NextPageLink`` (followed, on prices.azure.com only, up to ``MAX_PAGES``, with a
pause between pages because the API rate-limits bursts). No auth.

What is extracted, per item: ``armSkuName`` (the VM size, our ``sku`` and ``gpu_raw``),
``armRegionName`` (region), ``retailPrice`` per ``unitOfMeasure`` ("1 Hour"), ``currencyCode``
(or the page's ``BillingCurrency``), and the pricing tier, which is not a flag: Spot and Low
Priority are the suffixes " Spot" / " Low Priority" on ``skuName`` / ``meterName``. Both are
``kind="spot"``; Low Priority keeps its own ``sku`` (``<armSkuName>:low-priority``) and
``extra["tier"]`` so the two never collide. Windows rows (``productName`` ending in "Windows")
are dropped even if the filter let them through: they include an OS licence. GPU model and
count come from ``tracker.catalog.instance_gpu(armSkuName, "azure")`` (rows in
``tracker/catalog/data/instance_types.csv`` sourced from Microsoft's VM size pages); a GPU series
missing from that table is kept with ``gpu=None`` and ``gpu_count=0`` so the validate stage
quarantines it with a reason instead of a guessed count.

Reservation and savings-plan prices are not requested (``priceType`` Consumption only).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from scrapers.base import (
    FetchError,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    read_price,
    require,
)
from tracker.catalog.instance_types import instance_gpu

PRICES_URL: Final = "https://prices.azure.com/api/retail/prices"
API_VERSION: Final = "2023-01-01-preview"
GPU_SERIES_PREFIXES: Final = ("Standard_NC", "Standard_ND", "Standard_NG", "Standard_NV")
PRICE_FILTER: Final = (
    "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
    "and contains(productName, 'Windows') eq false and ("
    + " or ".join(f"contains(armSkuName, '{p}')" for p in GPU_SERIES_PREFIXES)
    + ")"
)
MAX_PAGES: Final = 60

_GPU_SKU = re.compile(r"^Standard_N[CDGV]", re.IGNORECASE)
_WINDOWS = re.compile(r"\bWindows\b", re.IGNORECASE)
_LOW_PRIORITY = re.compile(r"\bLow Priority\b", re.IGNORECASE)
_SPOT = re.compile(r"\bSpot\b", re.IGNORECASE)
_HOURS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Hours?\s*$", re.IGNORECASE)

#: armRegionName -> ISO 3166 country code (regions not listed get ``country=None``).
REGION_COUNTRY: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        ["eastus", "eastus2", "centralus", "northcentralus", "southcentralus", "westcentralus", "westus", "westus2",
         "westus3", "usgovvirginia", "usgovarizona", "usgovtexas"],
        "US",
    ),
    "canadacentral": "CA", "canadaeast": "CA", "brazilsouth": "BR", "brazilsoutheast": "BR", "mexicocentral": "MX",
    "chilecentral": "CL", "northeurope": "IE", "westeurope": "NL", "uksouth": "GB", "ukwest": "GB",
    "francecentral": "FR", "francesouth": "FR", "germanywestcentral": "DE", "germanynorth": "DE",
    "norwayeast": "NO", "norwaywest": "NO", "swedencentral": "SE", "swedensouth": "SE", "switzerlandnorth": "CH",
    "switzerlandwest": "CH", "polandcentral": "PL", "italynorth": "IT", "spaincentral": "ES", "austriaeast": "AT",
    "belgiumcentral": "BE", "denmarkeast": "DK", "eastasia": "HK", "southeastasia": "SG", "japaneast": "JP",
    "japanwest": "JP", "koreacentral": "KR", "koreasouth": "KR", "centralindia": "IN", "southindia": "IN",
    "westindia": "IN", "jioindiawest": "IN", "jioindiacentral": "IN", "australiaeast": "AU",
    "australiasoutheast": "AU", "australiacentral": "AU", "australiacentral2": "AU", "newzealandnorth": "NZ",
    "indonesiacentral": "ID", "malaysiawest": "MY", "uaenorth": "AE", "uaecentral": "AE", "qatarcentral": "QA",
    "israelcentral": "IL", "southafricanorth": "ZA", "southafricawest": "ZA",
}


def _tier(item: Mapping[str, Any]) -> str:
    """``on_demand``, ``spot`` or ``low_priority`` from the skuName/meterName suffixes."""
    names = " ".join(str(item.get(k) or "") for k in ("skuName", "meterName"))
    if _LOW_PRIORITY.search(names):
        return "low_priority"
    if _SPOT.search(names):
        return "spot"
    return "on_demand"


class AzureScraper(Scraper):
    name: ClassVar[str] = "azure"
    segment: ClassVar[str] = "hyperscaler"
    display_name: ClassVar[str] = "Microsoft Azure"
    homepage: ClassVar[str] = "https://azure.microsoft.com/pricing/details/virtual-machines/linux/"
    endpoint: ClassVar[str] = f"GET {PRICES_URL}"
    source_kind: ClassVar[str] = "api"
    fixture_kind: ClassVar[str] = "recording"
    checked_by: ClassVar[str] = "recording: Azure Retail Prices API items, via ewyluda/gpu-price-index"
    #: pages of up to 1,000 price items; allow for much larger ones before calling it hostile
    max_body_bytes: ClassVar[int] = 64 << 20
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "spot")
    caveats: ClassVar[str] = (
        "Linux pay-as-you-go retail prices without discounts; spot includes Low Priority (sku suffix "
        "':low-priority'); GPU model and count come from Microsoft's VM size pages."
    )
    #: Seconds to wait between pages (the Retail Prices API answers bursts with HTTP 429).
    page_interval_s: float = 6.0

    async def fetch(self, http: Http) -> list[dict[str, Any]]:
        """Every page of GPU VM consumption prices, in order."""
        pages: list[dict[str, Any]] = []
        url: str | None = PRICES_URL
        params: dict[str, str] | None = {"api-version": API_VERSION, "$filter": PRICE_FILTER}
        while url:
            if len(pages) >= MAX_PAGES:
                raise FetchError(f"azure: more than {MAX_PAGES} pages of prices; refusing a partial result")
            if pages and self.page_interval_s > 0 and not self.replay:
                await asyncio.sleep(self.page_interval_s)
            page = await http.get_json(url, params=params)
            if not isinstance(page, dict):
                raise ParseError(f"azure: page {len(pages) + 1} should be an object, got {type(page).__name__}")
            pages.append(page)
            link = self._next_link(page)
            url, params = (http.same_origin(link, PRICES_URL) if link else None), None
        return pages

    @staticmethod
    def _next_link(page: Mapping[str, Any]) -> str | None:
        link = page.get("NextPageLink")
        if not link:
            return None
        if not isinstance(link, str):
            raise ParseError(f"azure: NextPageLink should be a string, got {type(link).__name__}")
        return link

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        pages = [raw] if isinstance(raw, dict) else raw
        if not isinstance(pages, list) or not pages:
            raise ParseError((
                f"azure: payload should be a price page {{'Items': [...]}} or a non-empty list of them, "
                f"got {type(raw).__name__}"
            ))
        chosen: dict[tuple[str, str, str], tuple[Mapping[str, Any], float | None, str, dict[str, str]]] = {}
        alternatives: dict[tuple[str, str, str], list[float]] = {}
        seen_items = 0
        for number, page in enumerate(pages, 1):
            items = require(page, "Items", provider=self.name, kind=list)
            billing = page.get("BillingCurrency") if isinstance(page, dict) else None
            seen_items += len(items)
            for i, item in enumerate(items):
                at = field_path("payload", number - 1, "Items", i) if isinstance(raw, list) else field_path("Items", i)
                picked = self._price_row(item, billing, at)
                if picked is None:
                    continue
                key, price, currency, bad = picked
                if key in chosen:
                    # Two meters for one (size, region, tier): keep the primary-region meter, else the
                    # cheaper one, and record the other price rather than dropping it silently; a
                    # meter whose price is unreadable gives way to a readable one.
                    old_item, old_price, _, old_bad = chosen[key]
                    if bad or old_bad or price is None or old_price is None:
                        if old_bad and not bad:
                            chosen[key] = (item, price, currency, bad)
                    elif self._prefer(item, price, old_item, old_price):
                        alternatives.setdefault(key, []).append(old_price)
                        chosen[key] = (item, price, currency, bad)
                    else:
                        alternatives.setdefault(key, []).append(price)
                    continue
                chosen[key] = (item, price, currency, bad)
        if not chosen:
            raise ParseError(f"azure: no Linux GPU VM prices among {seen_items} items (filter or payload changed?)")
        return [
            self._offer(key, item, price, currency, alternatives.get(key), bad)
            for key, (item, price, currency, bad) in chosen.items()
        ]

    def _price_row(self, item: Any, billing: Any, at: str) -> tuple[tuple[str, str, str], float | None, str, dict[str, str]] | None:
        """(identity, hourly price, currency, extra) for a Linux GPU consumption row, or ``None`` to
        skip it; a ``retailPrice`` that is missing, no number or negative says why in the extra, so
        that row alone is quarantined."""
        arm_sku = require(item, "armSkuName", provider=self.name, kind=str).strip()
        if not _GPU_SKU.match(arm_sku):
            return None  # not a GPU series (or a dedicated-host meter without an ARM size)
        product = require(item, "productName", provider=self.name, kind=str)
        if _WINDOWS.search(product):
            return None
        if item.get("type", "Consumption") != "Consumption":
            return None  # DevTest / Reservation meters are not public pay-as-you-go prices
        region = require(item, "armRegionName", provider=self.name, kind=str).strip()
        if not region:
            raise ParseError(f"azure: item for {arm_sku} has an empty armRegionName")
        if not (item.get("meterName") or item.get("skuName")):
            raise ParseError(f"azure: item for {arm_sku} in {region} has neither meterName nor skuName")
        price, bad = read_price(item, "retailPrice", at=at, required=True, strings=False)
        unit = require(item, "unitOfMeasure", provider=self.name, kind=str)
        hours = _HOURS.match(unit)
        if not hours or not float(hours.group(1)):
            raise ParseError(f"azure: unitOfMeasure {unit!r} of {arm_sku} in {region} is not hourly")
        if price == 0:
            return None  # a zero meter means "not sold here", not a free GPU
        currency = item.get("currencyCode") or billing or "USD"
        tier = _tier(item)
        return (arm_sku, region, tier), None if price is None else price / float(hours.group(1)), str(currency), bad

    @staticmethod
    def _prefer(new: Mapping[str, Any], new_price: float, old: Mapping[str, Any], old_price: float) -> bool:
        new_primary, old_primary = new.get("isPrimaryMeterRegion") is True, old.get("isPrimaryMeterRegion") is True
        if new_primary != old_primary:
            return new_primary
        return new_price < old_price

    def _offer(
        self,
        key: tuple[str, str, str],
        item: Mapping[str, Any],
        price: float | None,
        currency: str,
        other_prices: list[float] | None,
        bad: dict[str, str],
    ) -> ScrapedOffer:
        arm_sku, region, tier = key
        known = instance_gpu(arm_sku, "azure")
        extra: dict[str, Any] = {"meter_name": item.get("meterName") or item.get("skuName"), "product_name": item.get("productName")}
        if tier == "low_priority":
            extra["tier"] = "low_priority"
        elif tier == "spot":
            extra["tier"] = "spot"
        if other_prices:
            extra["other_meter_prices"] = sorted(set(other_prices))
        if known is None:
            extra["gpu_count_unknown"] = True
        extra.update(bad)
        return self.offer(
            sku=f"{arm_sku}:low-priority" if tier == "low_priority" else arm_sku,
            region=region,
            country=REGION_COUNTRY.get(region.lower()),
            gpu_raw=arm_sku,
            gpu=known[0] if known else None,
            gpu_count=known[1] if known else 0,
            price_per_hour=price,
            currency=currency,
            kind="on_demand" if tier == "on_demand" else "spot",
            extra=extra,
        )
