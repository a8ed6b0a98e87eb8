"""Sesterce: the live GPU offer book of its public compute console, read from the page's flight data.

Called: ``GET https://cloud.sesterce.com/compute`` once per run, after checking robots.txt; no
key (the console's offer list renders without an account; Sesterce's REST API,
``api.cloud.sesterce.com/gpu-cloud/instances/offers``, needs an ``X-API-KEY`` and is not used).

The page is a Next.js app: its data is not in the HTML elements but in the flight stream, the
``self.__next_f.push([1, "<chunk>"])`` scripts. The chunks are JSON strings; joined, they hold
the React tree, in which the offer list component's props carry ``"filteredOffers": [...]``.
Each offer (the console's own names): ``gpuName`` ("H100", "A100_80G", "RTXPro6000", "CPU"),
``gpuCount``, ``hourlyPrice`` (whole instance, USD), ``spotOfferAvailable`` and
``hourlySpotPrice``, ``configuration`` (``ramGB``, ``storageGB``, ``vCpu``, ``vRamGB`` for all
GPUs, ``interconnect`` "pcie"/"sxm4"/"sxm5"), ``availability[]`` (``name``, ``region``,
``countryCode``, ``available``), ``deploymentType`` ("vm"/"baremetal"), ``cloud`` (``name`` is an
opaque label such as "AZ_07": Sesterce resells capacity of several clouds without naming them)
and ``instanceId``.

Offers: one per offer and availability entry (``region`` is the entry's ``region``, ``country``
its ``countryCode``, ``available`` its flag: the stock the console shows), ``on_demand`` at
``hourlyPrice``, plus a ``spot`` offer at ``hourlySpotPrice`` when ``spotOfferAvailable``.
``gpu_raw`` is the GPU name with its interconnect ("H100 PCIe", "H200 SXM5"), which is what
tells the variants apart; memory per GPU is ``vRamGB / gpuCount``. The sku is the instance id
with the anonymous cloud label, since two clouds can sell the same instance id. CPU-only offers
(``gpuCount`` 0 or ``gpuName`` "CPU") are not GPU rentals and are left out.

No flight data, no ``filteredOffers``, an offer list that is not a list or holds no GPU offer
-> ``ParseError("sesterce: ...")``. One offer's missing or non-numeric price or count
quarantines that offer only.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from scrapers.base import (
    REFERENCE_CAPTURE,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    as_list,
    dig,
    field_path,
    number,
    read_count,
    read_price,
)

COMPUTE_URL = "https://cloud.sesterce.com/compute"
_PUSH_RE = re.compile(r"self\.__next_f\.push\(\s*\[\s*1\s*,\s*(\"(?:[^\"\\]|\\.)*\")\s*\]\s*\)", re.S)
_OFFERS_KEY = '"filteredOffers":'
_INTERCONNECT = {"pcie": "PCIe", "sxm": "SXM", "sxm4": "SXM4", "sxm5": "SXM5", "sxm6": "SXM6", "nvl": "NVL"}


def flight_text(html: str) -> str:
    """The page's Next.js flight stream: every ``self.__next_f.push([1, "..."])`` chunk decoded
    and joined in order ("" when the page has none)."""
    parts = []
    for literal in _PUSH_RE.findall(html):
        try:
            parts.append(json.loads(literal))
        except ValueError:
            continue
    return "".join(p for p in parts if isinstance(p, str))


class SesterceScraper(Scraper):
    name: ClassVar[str] = "sesterce"
    segment: ClassVar[str] = "marketplace"
    display_name: ClassVar[str] = "Sesterce"
    homepage: ClassVar[str] = "https://www.sesterce.com"
    endpoint: ClassVar[str] = f"GET {COMPUTE_URL} (console page, Next.js flight data)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = REFERENCE_CAPTURE
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "spot")
    caveats: ClassVar[str] = (
        "live offer book of the public compute console: whole-instance USD prices per region with stock; "
        "capacity resold from clouds Sesterce labels anonymously (AZ_nn, kept in extra)"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(COMPUTE_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, str):
            raise ParseError(f"{self.name}: expected the console page's HTML text, got {type(raw).__name__}")
        if not raw.strip():
            raise ParseError(f"{self.name}: the page is empty")
        stream = flight_text(raw)
        if not stream:
            raise ParseError(f"{self.name}: the page has no Next.js flight data (self.__next_f.push chunks)")
        at = stream.find(_OFFERS_KEY)
        if at < 0:
            raise ParseError(f"{self.name}: the flight data has no 'filteredOffers'")
        try:
            items, _ = json.JSONDecoder().raw_decode(stream, at + len(_OFFERS_KEY))
        except ValueError:
            raise ParseError(f"{self.name}: 'filteredOffers' in the flight data is not valid JSON") from None
        if not isinstance(items, list):
            raise ParseError(f"{self.name}: 'filteredOffers' should be a list, got {type(items).__name__}")
        offers: list[ScrapedOffer] = []
        seen: set[tuple[str, str, str]] = set()
        gpu_items = 0
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ParseError(f"{self.name}: 'filteredOffers[{index}]' should be an object, got {type(item).__name__}")
            name = item.get("gpuName")
            if not isinstance(name, str) or not name.strip():
                raise ParseError(f"{self.name}: 'filteredOffers[{index}].gpuName' is missing or empty")
            if name.strip().upper() == "CPU" or item.get("gpuCount") == 0:
                continue  # CPU-only instance
            gpu_items += 1
            for offer in self._item_offers(item, index):
                key = (offer.sku, offer.region, offer.kind)
                if key not in seen:
                    seen.add(key)
                    offers.append(offer)
        if not gpu_items:
            raise ParseError(f"{self.name}: 'filteredOffers' lists no GPU offer ({len(items)} listed)")
        return offers

    def _item_offers(self, item: dict[str, Any], index: int) -> list[ScrapedOffer]:
        at = field_path("filteredOffers", index)
        gpu_name = str(item["gpuName"]).strip()
        count, bad_count = read_count(item, "gpuCount", at=at, zero=False)
        config = item.get("configuration") if isinstance(item.get("configuration"), dict) else {}
        interconnect = str(config.get("interconnect") or "").strip()
        form = _INTERCONNECT.get(interconnect.lower(), "")
        gpu_raw = f"{gpu_name} {form}" if form else gpu_name
        vram = number(config.get("vRamGB"))
        memory = round(vram / count, 3) if vram and count and not bad_count else None
        instance = str(item.get("instanceId") or gpu_name)
        cloud = dig(item, "cloud", "name")
        sku = f"{instance}@{cloud}" if isinstance(cloud, str) and cloud else instance
        extra_common: dict[str, Any] = {
            "instance_id": instance,
            "sesterce_cloud": cloud if isinstance(cloud, str) else None,
            "deployment_type": item.get("deploymentType"),
            "interconnect": interconnect or None,
            "nvlink": item.get("nvlink"),
            "storage_gb": number(config.get("storageGB")),
            **bad_count,
        }
        prices: list[tuple[str, float | None, dict[str, str]]] = []
        price, bad = read_price(item, "hourlyPrice", at=at, required=True)
        prices.append(("on_demand", price, bad))
        if item.get("spotOfferAvailable") is True:
            spot, bad_spot = read_price(item, "hourlySpotPrice", at=at, required=True)
            prices.append(("spot", spot, bad_spot))

        places = [a for a in as_list(item.get("availability")) if isinstance(a, dict)]
        if not places:
            places = [{}]  # listed without a location: one offer, region unknown
        offers = []
        for place in places:
            region = place.get("region") or place.get("name") or ""
            country = place.get("countryCode")
            available = place.get("available")
            for kind, value, why in prices:
                extra = {**extra_common, "location": place.get("name"), **why}
                if not place:
                    extra["regions_unstated"] = True
                offers.append(
                    self.offer(
                        sku=sku,
                        gpu_raw=gpu_raw,
                        gpu_count=int(count) if float(count).is_integer() else count,
                        gpu_memory_gb=memory,
                        vcpus=number(config.get("vCpu")),
                        ram_gb=number(config.get("ramGB")),
                        price_per_hour=value,
                        kind=kind,
                        region=str(region),
                        country=country if isinstance(country, str) and country else None,
                        currency="USD",
                        available=available if isinstance(available, bool) else None,
                        extra=extra,
                    )
                )
        return offers
