"""TensorDock GPU prices per location from the v2 API (``dashboard.tensordock.com``).

Why v2 and not retired. The v0 marketplace API this scraper read
(``marketplace.tensordock.com/api/v0/client/deploy/hostnodes``) is TensorDock's legacy API, and the
clients that read it dropped TensorDock with it (dstack's gpuhunt removed its provider). TensorDock
itself did not go away: 2026 clients read its v2 API at ``dashboard.tensordock.com/api/v2``:
``/locations`` (every location with its GPU models and their prices) and ``/hostnodes`` (per
host node). thatkavish/OpenComputePrices (MIT; its collector of March 2026 and later) reads
``/locations`` with no key ("locations works without auth; hostnodes needs key"), and other 2026
clients send a Bearer key. So this scraper reads ``/locations``, keyless, sending
``Authorization: Bearer $TENSORDOCK_API_KEY`` when that is set. ``/hostnodes`` is not read: it
needs a key, and its per-node rows would count each location's offers a second time.

Request: ``GET https://dashboard.tensordock.com/api/v2/locations``, one answer, no pagination.

Response (the structure OpenComputePrices' collector reads; no capture of it is public, so the
bundled fixture is a REFERENCE of our own values in that structure):
``{"data": {"locations": [{"id", "city", "stateprovince", "country", "tier", "gpus": [{"v0Name":
"geforcertx4090-pcie-24gb", "displayName": "NVIDIA GeForce RTX 4090 PCIe 24GB", "max_count": 4,
"price_per_hr": 0.35, "resources": {"max_vcpus", "max_ram_gb", "max_storage_gb"}, "pricing":
{"per_vcpu_hr", "per_gb_ram_hr", "per_gb_storage_hr"}, "network_features":
{"dedicated_ip_available"}}]}]}}``.

Offers: one per (location, GPU model), ``sku`` ``"<location id>:<v0Name>"``, ``gpu_count`` 1 and
``price_per_hour`` = ``price_per_hr``, the price of one GPU per hour: TensorDock prices a VM as
its parts, so vCPUs, RAM and storage are billed on top at the unit prices kept in ``extra``
(``price_per_vcpu_hour`` ...; ``extra["gpu_component_only"]``), as the v0 scraper did. ``max_count``
is how many of that GPU one VM there can have (``extra["max_gpus"]``, the per-GPU limit;
``available`` is whether it is above 0). ``gpu_raw`` is ``displayName`` (else ``v0Name``), the
memory is read from the ``v0Name``'s "<n>gb". ``region`` is "city, state, country" and
``country`` the country when it is an ISO code. A price of 0 or null is "not offered"; one that
is missing, no number or negative quarantines that offer (the field named), not the run.
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
    number,
    read_price,
    require,
)

LOCATIONS_URL = "https://dashboard.tensordock.com/api/v2/locations"
_ISO_COUNTRY = re.compile(r"^[A-Za-z]{2}$")
_MEMORY = re.compile(r"(\d+)\s*gb\b", re.IGNORECASE)


def location_of(location: Any) -> tuple[str, str | None]:
    """``{"city": "Chicago", "stateprovince": "Illinois", "country": "United States"}`` -> region
    text, ISO country (only when ``country`` is a two-letter code)."""
    if not isinstance(location, dict):
        return "", None
    parts = [str(location.get(k) or "").strip() for k in ("city", "stateprovince", "country")]
    country = parts[2].upper() if _ISO_COUNTRY.match(parts[2]) else None
    return ", ".join(p for p in parts if p), country


class TensordockScraper(Scraper):
    name = "tensordock"
    segment = "marketplace"
    display_name = "TensorDock"
    homepage = "https://dashboard.tensordock.com"
    endpoint = "GET https://dashboard.tensordock.com/api/v2/locations"
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = "reference: the v2 locations answer as thatkavish/OpenComputePrices reads it (structure only, own values)"
    optional_credentials = ("TENSORDOCK_API_KEY",)
    per_gpu_limit_field = "max_gpus"
    kinds = ("on_demand",)
    caveats = (
        "price is the GPU component only, per GPU-hour per location (vCPU, RAM and storage are billed "
        "on top per unit, kept in extra); up to max_gpus per VM"
    )

    async def fetch(self, http: Http) -> Any:
        headers = {"Accept": "application/json"}
        key = self.credential("TENSORDOCK_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return await http.get_json(LOCATIONS_URL, headers=headers)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        locations = require(raw, "data", "locations", provider=self.name, kind=list)
        if not locations:
            raise ParseError(f"{self.name}: data.locations is empty")
        offers: list[ScrapedOffer] = []
        for i, location in enumerate(locations):
            at = field_path("data", "locations", i)
            location_id = require(location, "id", provider=self.name, kind=str, at=at)
            gpus = require(location, "gpus", provider=self.name, kind=list, at=at)
            region, country = location_of(location)
            for j, gpu in enumerate(gpus):
                where = field_path(at, "gpus", j)
                v0_name = require(gpu, "v0Name", provider=self.name, kind=str, at=where)
                # missing, no number or negative: this offer is quarantined, the others are kept
                price, bad = read_price(gpu, "price_per_hr", at=where, strings=False)
                if not price and not bad:
                    continue  # null or 0: not offered
                display = gpu.get("displayName")
                resources = gpu.get("resources") if isinstance(gpu.get("resources"), dict) else {}
                pricing = gpu.get("pricing") if isinstance(gpu.get("pricing"), dict) else {}
                network = gpu.get("network_features") if isinstance(gpu.get("network_features"), dict) else {}
                max_count = number(gpu.get("max_count"))
                memory = _MEMORY.search(v0_name)
                extra = {
                    "gpu_component_only": True,
                    "location_id": location_id,
                    "tier": location.get("tier"),
                    "max_gpus": int(max_count) if max_count is not None else None,
                    "max_vcpus": number(resources.get("max_vcpus")),
                    "max_ram_gb": number(resources.get("max_ram_gb")),
                    "max_storage_gb": number(resources.get("max_storage_gb")),
                    "price_per_vcpu_hour": number(pricing.get("per_vcpu_hr")),
                    "price_per_ram_gb_hour": number(pricing.get("per_gb_ram_hr")),
                    "price_per_storage_gb_hour": number(pricing.get("per_gb_storage_hr")),
                    "dedicated_ip": network.get("dedicated_ip_available"),
                    **bad,
                }
                offers.append(
                    self.offer(
                        sku=f"{location_id}:{v0_name}",
                        gpu_raw=display.strip() if isinstance(display, str) and display.strip() else v0_name,
                        gpu_count=1,
                        price_per_hour=price,
                        kind="on_demand",
                        region=region,
                        country=country,
                        gpu_memory_gb=float(memory.group(1)) if memory else None,
                        available=None if max_count is None else max_count > 0,
                        extra={k: v for k, v in extra.items() if v is not None},
                    )
                )
        if not offers:
            raise ParseError(f"{self.name}: no GPU of any of {len(locations)} locations has a price")
        return offers
