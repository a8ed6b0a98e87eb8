"""Google Cloud (Compute Engine) GPU prices from the Cloud Billing Catalog API.

Request: ``GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus``
(``6F81-5844-456A`` is Compute Engine) with query ``key=<GCP_API_KEY>``, ``currencyCode=USD``
and ``pageSize=5000``, following ``nextPageToken`` -> ``pageToken`` until the token is empty
(at most ``MAX_PAGES`` pages). Auth: an API key with the Cloud Billing API enabled, from
``$GCP_API_KEY``. ``fetch`` returns the list of page objects ``{"skus": [...], "nextPageToken": ...}``.

What is extracted: GPU *component* SKUs only. GCP bills an attached GPU apart from the VM's
vCPUs and RAM, so each price is per GPU-hour (``gpu_count`` 1, ``extra["gpu_component_only"]``).
The GPU model, the pricing kind and the location name live only in ``description``:

* ``"Nvidia Tesla A100 GPU running in Americas"`` -> on_demand
* ``"Nvidia L4 GPU attached to Spot Preemptible VMs running in Hong Kong"`` (2025) or
  ``"Spot Preemptible Nvidia L4 GPU running in ..."`` / ``"Preemptible ..."`` (older) -> spot
* ``"Commitment v1: Nvidia H100 80GB GPU running in Tokyo for 1 Year"`` -> reserved, 12 months
  (``for 3 Year(s)`` -> 36)

Skipped on purpose: ``Licensing Fee for ... (GPU cost)`` (OS licences), ``... DWS Defined Duration
VMs ...`` (Dynamic Workload Scheduler), ``Reserved ... in Calendar Mode`` and the other
``Reserved ... GPU in <place>`` SKUs (capacity-reservation bookkeeping, listed at $0), SKUs whose
price is 0 (GCP lists a $0 SKU where a GPU is not sold, e.g. V100 in Jakarta), and any other
description outside the grammar above (CPU/RAM SKUs of the same service). A SKU whose
``unitPrice`` is not units/nanos or is negative is quarantined with the field named; the rest is kept.

Region: ``serviceRegions[]`` when the SKU has it (one offer per region code, e.g. ``us-central1``).
When it is absent or empty (the 2025 recording kept only ``skuId``, ``description`` and
``pricingInfo``) the region comes from the description's location ("... running in Sydney"):
``LOCATION_REGIONS`` maps the location names that stand for exactly one region on Google's regions
page to that region's code and country; any other name (pricing groups such as ``Americas``,
``EMEA``, ``APAC``; ``Japan``, which has two regions; names with no region on that page) is kept
as the region itself. ``extra["location"]`` always holds the description's location name and
``extra["region_source"]`` says which of the three ways the region was found
(``serviceRegions`` | ``description`` | ``description_name``). A GPU SKU with neither
``serviceRegions`` nor a location in its description raises ``ParseError`` naming the SKU.

Keys relied on: ``skus[]``, ``skuId``, ``description``, optional ``serviceRegions[]``,
``pricingInfo[0].pricingExpression`` (``usageUnit`` must be ``"h"``; price =
``tieredRates[-1].unitPrice.units + nanos / 1e9`` in ``unitPrice.currencyCode``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, NamedTuple

from scrapers.base import (
    UNREADABLE_PRICE,
    FetchError,
    Http,
    MissingCredentials,
    ParseError,
    ScrapedOffer,
    Scraper,
    names_in,
    require,
    shown,
)

SERVICE = "services/6F81-5844-456A"
SKUS_URL = f"https://cloudbilling.googleapis.com/v1/{SERVICE}/skus"
PAGE_SIZE = 5000
#: Compute Engine has a few tens of thousands of SKUs: ~10 pages of 5000. More means a loop.
MAX_PAGES = 60

# Per-GPU memory of GCP's GPU models whose SKU description does not state it
# (https://cloud.google.com/compute/docs/gpus). Descriptions with "<n>GB" use that instead.
_MEMORY_GB: dict[str, float] = {
    "nvidia tesla a100": 40,
    "nvidia l4": 24,
    "nvidia tesla t4": 16,
    "nvidia tesla p4": 8,
    "nvidia tesla p100": 16,
    "nvidia tesla v100": 16,
    "nvidia tesla k80": 12,
}

# Where the SKU runs is " running in <location>"; optional here so that a GPU SKU without it is
# still recognised (and then needs ``serviceRegions``).
_COMMITMENT = re.compile(
    r"^Commitment v\d+: (?P<model>.+?) GPU(?: running in (?P<loc>.+?))? for (?P<years>\d+) Years?$"
)
_SPOT_ATTACHED = re.compile(r"^(?P<model>.+?) GPU attached to Spot Preemptible VMs(?: running in (?P<loc>.+))?$")
_SPOT_PREFIX = re.compile(r"^(?:Spot )?Preemptible (?P<model>.+?) GPU(?: running in (?P<loc>.+))?$")
_ON_DEMAND = re.compile(r"^(?P<model>.+?) GPU(?: running in (?P<loc>.+))?$")
_SKIP = re.compile(r"^(Licensing Fee|Reserved )|\bDWS\b|Calendar Mode|\battached to\b(?!.*Spot Preemptible)")
_MEMORY_IN_NAME = re.compile(r"\b(\d+)\s*GB\b", re.IGNORECASE)


#: Location names of SKU descriptions -> (region code, ISO country), for the names that stand for
#: exactly one Compute Engine region on Google's regions page
#: (https://cloud.google.com/compute/docs/regions-zones: "Region | Zones | Location" table, e.g.
#: "asia-east1 | Changhua County, Taiwan", "europe-west4 | Eemshaven, Netherlands",
#: "northamerica-south1 | Querétaro, Mexico"). Keys are compared without accents and case.
#: Left out on purpose (kept as the region name): the pricing groups "Americas", "EMEA" and "APAC"
#: (several regions each), "Japan" (Tokyo and Osaka), "Virginia" and "Northern Virginia" (the
#: catalogue uses both names, so which region each one prices is not certain) and "Phoenix" (no
#: region there on that page).
LOCATION_REGIONS: dict[str, tuple[str, str]] = {
    # Americas
    "Iowa": ("us-central1", "US"),
    "South Carolina": ("us-east1", "US"),
    "Columbus": ("us-east5", "US"),
    "Dallas": ("us-south1", "US"),
    "Oregon": ("us-west1", "US"),
    "Los Angeles": ("us-west2", "US"),
    "Salt Lake City": ("us-west3", "US"),
    "Las Vegas": ("us-west4", "US"),
    "Montreal": ("northamerica-northeast1", "CA"),
    "Toronto": ("northamerica-northeast2", "CA"),
    "Mexico": ("northamerica-south1", "MX"),
    "Sao Paulo": ("southamerica-east1", "BR"),
    "Santiago": ("southamerica-west1", "CL"),
    # Europe
    "Finland": ("europe-north1", "FI"),
    "Stockholm": ("europe-north2", "SE"),
    "Warsaw": ("europe-central2", "PL"),
    "Madrid": ("europe-southwest1", "ES"),
    "Belgium": ("europe-west1", "BE"),
    "London": ("europe-west2", "GB"),
    "Frankfurt": ("europe-west3", "DE"),
    "Netherlands": ("europe-west4", "NL"),
    "Zurich": ("europe-west6", "CH"),
    "Milan": ("europe-west8", "IT"),
    "Paris": ("europe-west9", "FR"),
    "Berlin": ("europe-west10", "DE"),
    "Turin": ("europe-west12", "IT"),
    # Middle East and Africa
    "Doha": ("me-central1", "QA"),
    "Dammam": ("me-central2", "SA"),
    "Israel": ("me-west1", "IL"),
    "Tel Aviv": ("me-west1", "IL"),
    "Johannesburg": ("africa-south1", "ZA"),
    # Asia Pacific
    "Taiwan": ("asia-east1", "TW"),
    "Hong Kong": ("asia-east2", "HK"),
    "Tokyo": ("asia-northeast1", "JP"),
    "Osaka": ("asia-northeast2", "JP"),
    "Seoul": ("asia-northeast3", "KR"),
    "Mumbai": ("asia-south1", "IN"),
    "Delhi": ("asia-south2", "IN"),
    "Singapore": ("asia-southeast1", "SG"),
    "Jakarta": ("asia-southeast2", "ID"),
    "Sydney": ("australia-southeast1", "AU"),
    "Melbourne": ("australia-southeast2", "AU"),
}


def _fold(name: str) -> str:
    decomposed = unicodedata.normalize("NFKD", name)
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).casefold().split())


_LOCATION_REGIONS_FOLDED = {_fold(k): v for k, v in LOCATION_REGIONS.items()}


def region_of_location(location: str) -> tuple[str, str] | None:
    """``"Sydney"`` -> ``("australia-southeast1", "AU")``; ``None`` for names not in ``LOCATION_REGIONS``."""
    return _LOCATION_REGIONS_FOLDED.get(_fold(location))


class GpuSku(NamedTuple):
    """What a GPU SKU's description says: model as written, kind, term and location name ("" if none)."""

    model: str
    kind: str
    term_months: int
    location: str


def classify_description(description: str) -> GpuSku | None:
    """Read a GCP SKU description; ``None`` when it is not a rentable GPU SKU.

    >>> classify_description("Nvidia Tesla A100 GPU running in Americas")
    GpuSku(model='Nvidia Tesla A100', kind='on_demand', term_months=0, location='Americas')
    """
    text = " ".join(description.split())
    if _SKIP.search(text):
        return None
    if m := _COMMITMENT.match(text):
        return GpuSku(m["model"], "reserved", 12 * int(m["years"]), m["loc"] or "")
    if m := _SPOT_ATTACHED.match(text) or _SPOT_PREFIX.match(text):
        return GpuSku(m["model"], "spot", 0, m["loc"] or "")
    if m := _ON_DEMAND.match(text):
        model = m["model"]
        if model.lower().startswith(("commitment", "reserved")):
            return None
        return GpuSku(model, "on_demand", 0, m["loc"] or "")
    return None


def gpu_memory_gb(model: str) -> float | None:
    """Per-GPU memory: the ``<n>GB`` in the model name, else GCP's documented size."""
    if m := _MEMORY_IN_NAME.search(model):
        return float(m.group(1))
    return _MEMORY_GB.get(model.lower())


class GcpScraper(Scraper):
    name = "gcp"
    segment = "hyperscaler"
    display_name = "Google Cloud"
    homepage = "https://cloud.google.com/compute/gpus-pricing"
    endpoint = "GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = "reference: the 2025 shape of Cloud Billing API SKUs, via Jumbo2020/gpu_prices (structure only, own values)"
    #: pages of 5,000 SKUs
    max_body_bytes = 64 << 20
    credentials = ("GCP_API_KEY",)
    kinds = ("on_demand", "spot", "reserved")
    caveats = (
        "price is the GPU component only, per GPU-hour (the VM's vCPUs and RAM are billed apart); "
        "spot prices change up to monthly; DWS and calendar-mode reservations are not tracked"
    )
    async def fetch(self, http: Http) -> list[Any]:
        key = self.credential("GCP_API_KEY")
        if not key:
            raise MissingCredentials(self.name, self.credentials)
        pages: list[Any] = []
        token = ""
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params: dict[str, str | int] = {"key": key, "currencyCode": "USD", "pageSize": PAGE_SIZE}
            if token:
                params["pageToken"] = token
            page = await http.get_json(SKUS_URL, params=params)
            pages.append(page)
            token = (page.get("nextPageToken") or "") if isinstance(page, dict) else ""
            if not token:
                return pages
            if token in seen:
                raise FetchError(f"{self.name}: the SKU list returned the same nextPageToken twice")
            seen.add(token)
        raise FetchError(f"{self.name}: the SKU list did not end after {MAX_PAGES} pages")

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        pages = raw if isinstance(raw, list) else [raw]
        if not pages:
            raise ParseError(f"{self.name}: payload has no pages of skus")
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        total = 0
        for i, page in enumerate(pages):
            skus = require(page, "skus", provider=self.name, kind=list)
            total += len(skus)
            for j, sku in enumerate(skus):
                if not isinstance(sku, dict):
                    raise ParseError(f"{self.name}: page {i} skus[{j}] should be an object")
                description = require(sku, "description", provider=self.name, kind=str)
                what = classify_description(description)
                if what is None:
                    continue
                sku_id = require(sku, "skuId", provider=self.name, kind=str)
                if sku_id in seen:  # pages overlapping after a retried request
                    continue
                seen.add(sku_id)
                offers.extend(self._offers(sku, sku_id, description, what))
        if not total:
            raise ParseError(f"{self.name}: the SKU list is empty")
        if not offers:
            raise ParseError(f"{self.name}: no GPU SKU recognised among {total} SKUs (description format changed?)")
        return offers

    def _offers(self, sku: dict[str, Any], sku_id: str, description: str, what: GpuSku) -> list[ScrapedOffer]:
        where = f"sku {sku_id}"
        places = self._places(sku, where, description, what)
        pricing = require(sku, "pricingInfo", provider=self.name, kind=list)
        if not pricing:
            raise ParseError(f"{self.name}: {where} has an empty pricingInfo")
        expr = require(pricing[0], "pricingExpression", provider=self.name, kind=dict)
        unit = require(expr, "usageUnit", provider=self.name, kind=str)
        if unit != "h":
            raise ParseError(f"{self.name}: {where} is priced per {unit!r}, expected per hour 'h'")
        tiers = require(expr, "tieredRates", provider=self.name, kind=list)
        if not tiers:
            raise ParseError(f"{self.name}: {where} has no tieredRates")
        unit_price = require(tiers[-1], "unitPrice", provider=self.name, kind=dict)
        price, bad = _money(unit_price, f"{where} pricingInfo[0].pricingExpression.tieredRates[{len(tiers) - 1}].unitPrice")
        if price == 0 and not bad:  # GCP's way of listing a GPU that is not sold in that place
            return []
        currency = require(unit_price, "currencyCode", provider=self.name, kind=str)
        return [
            self.offer(
                sku=sku_id,
                region=region,
                country=country,
                gpu_raw=what.model,
                gpu_count=1,
                gpu_memory_gb=gpu_memory_gb(what.model),
                price_per_hour=price,
                kind=what.kind,
                term_months=what.term_months,
                currency=currency,
                extra={
                    "location": what.location,
                    "region_source": source,
                    "gpu_component_only": True,
                    "description": description,
                    **bad,
                },
            )
            for region, country, source in places
        ]

    def _places(
        self, sku: dict[str, Any], where: str, description: str, what: GpuSku
    ) -> list[tuple[str, str | None, str]]:
        """(region, country, region_source) of each offer: ``serviceRegions`` first, else the description."""
        if sku.get("serviceRegions") is not None:
            regions = require(sku, "serviceRegions", provider=self.name, kind=list)
            if regions:
                names = names_in(regions, f"{where} serviceRegions", provider=self.name)
                return [(region, None, "serviceRegions") for region in names]
        if not what.location.strip():
            raise ParseError(
                f"{self.name}: {where} ({description!r}) has no serviceRegions and its description names no location"
            )
        if found := region_of_location(what.location):
            return [(found[0], found[1], "description")]
        return [(what.location, None, "description_name")]


def _money(unit_price: dict[str, Any], where: str) -> tuple[float | None, dict[str, str]]:
    """(``units`` (int64 as a string) + ``nanos`` / 1e9, {}), or (``None`` or the negative price,
    ``{UNREADABLE_PRICE: reason}``) so that this SKU alone is quarantined."""
    try:
        units = int(unit_price.get("units") or 0)
        nanos = int(unit_price.get("nanos") or 0)
        price = round(units + nanos / 1e9, 9)
    except (TypeError, ValueError, OverflowError):
        return None, {UNREADABLE_PRICE: f"price field {where} holds {shown(unit_price, 60)}, not units/nanos"}
    if price < 0:
        return price, {UNREADABLE_PRICE: f"price field {where} holds {shown(unit_price, 60)}, a negative price"}
    return price, {}
