"""Shadeform: the GPU instance types of its marketplace API, an aggregator (key required).

Request: ``GET https://api.shadeform.ai/v1/instances/types`` with the account's key in the
``X-API-KEY`` header (``$SHADEFORM_API_KEY``; a free account has one). The answer is
``{"instance_types": [...]}``: every instance type of every cloud Shadeform resells, as its API
reference (docs.shadeform.ai, ``/instances/types``) documents it.

Shadeform is an aggregator: each row is another cloud's instance (``cloud``: ``lambdalabs``,
``hyperstack``, ``crusoe``...), rented through Shadeform at the price it shows. It is stored under
``shadeform`` with that cloud in ``extra["via"]`` (our provider name where we have one), so market
figures count a cloud we also collect directly once (``tracker.analysis.aggregators``).
``excesssupply`` is Shadeform's own resale pool: its rows are Shadeform's (no ``via``).

Per row the parser reads: ``cloud``, ``shade_instance_type`` (Shadeform's standard name, with the
cloud: the offer's sku ``<via>:<shade_instance_type>``), ``cloud_instance_type`` (kept),
``hourly_price`` (US cents per hour for the whole instance), ``configuration`` (``gpu_type``,
``num_gpus``, ``vram_per_gpu_in_gb``, ``interconnect``, ``vcpus``, ``memory_in_gb``,
``storage_in_gb``, ``nvlink``), ``deployment_type`` (kept), ``availability`` (a list of
``{region, available, display_name}``). Each region listed is its own offer (region, and whether it
can be launched there now: ``available``); a type without regions is one offer without a region
whose availability is unknown. The GPU as printed is ``gpu_type`` with its interconnect ("H100
SXM5", "A100_80G PCIE"); the catalog names it, with ``vram_per_gpu_in_gb`` as its memory.

A payload without an ``instance_types`` list, an empty one, a row that is not an object or lacks
``cloud`` / ``shade_instance_type`` / ``configuration.gpu_type`` -> ``ParseError``. A row's own
price or GPU count unreadable (missing, no number, zero or negative) -> that offer is quarantined.
"""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    as_list,
    field_path,
    positive,
    read_count,
    read_price,
    require_text,
    shown,
    unreadable,
)

URL = "https://api.shadeform.ai/v1/instances/types"
KEY = "SHADEFORM_API_KEY"
#: Shadeform's cloud names that are not ours (the others are the same word).
VIA_ALIASES = {"lambdalabs": "lambda", "datacrunch": "verda", "akamai": "linode", "vast": "vastai", "ovh": "ovhcloud"}
#: Clouds that are Shadeform's own capacity: their rows are Shadeform's.
OWN_POOLS = frozenset({"excesssupply", "shadeform"})


def via_name(cloud: str) -> str | None:
    """Our provider name for a cloud Shadeform names (``None``: Shadeform's own pool)."""
    key = re.sub(r"[^a-z0-9]", "", cloud.lower())
    return None if key in OWN_POOLS else VIA_ALIASES.get(key, key)


class ShadeformScraper(Scraper):
    name = "shadeform"
    segment = "marketplace"
    display_name = "Shadeform (aggregator)"
    homepage = "https://www.shadeform.ai"
    endpoint = "GET https://api.shadeform.ai/v1/instances/types (JSON, X-API-KEY header)"
    credentials = (KEY,)
    kinds = ("on_demand",)
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = ("API reference: docs.shadeform.ai /instances/types (fields and cents); public client: "
                  "thatkavish/OpenComputePrices collectors/shadeform.py (MIT) makes the same request")
    caveats = (
        "reference fixture (documented 2026 shape, own values); aggregator: every row is another cloud's instance, "
        "stored under shadeform with that cloud as 'via' (counted as the cloud's in market figures where we collect "
        "it directly); one offer per region listed, available = launchable there now; prices in cents, whole instance"
    )

    async def fetch(self, http: Http) -> Any:
        key = self.credential(KEY) or ""
        return await http.get_json(URL, headers={"Accept": "application/json", "X-API-KEY": key})

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, dict) or not isinstance(raw.get("instance_types"), list):
            raise ParseError(f"{self.name}: payload should be an object with an 'instance_types' list, "
                             f"got {type(raw).__name__}")
        rows = raw["instance_types"]
        if not rows:
            raise ParseError(f"{self.name}: payload.instance_types is empty")
        offers: list[ScrapedOffer] = []
        seen: set[tuple[str, str]] = set()
        for index, row in enumerate(rows):
            for offer in self._row_offers(row, field_path("instance_types", index)):
                if (offer.sku, offer.region) not in seen:  # a type listed twice: read once
                    seen.add((offer.sku, offer.region))
                    offers.append(offer)
        return offers


    def _row_offers(self, row: Any, at: str) -> list[ScrapedOffer]:
        if not isinstance(row, dict):
            raise ParseError(f"{self.name}: {at} should be an object, got {type(row).__name__}")
        cloud = require_text(row, "cloud", provider=self.name, at=at)
        shade_type = require_text(row, "shade_instance_type", provider=self.name, at=at)
        config = row.get("configuration")
        if not isinstance(config, dict):
            raise ParseError(f"{self.name}: {field_path(at, 'configuration')} should be an object, got {shown(config)}")
        gpu_type = require_text(config, "gpu_type", provider=self.name, at=field_path(at, "configuration"))
        cents, bad = read_price(row, "hourly_price", at=at, strings=False)
        if cents == 0:
            cents, bad = None, unreadable("price", field_path(at, "hourly_price"), 0, "a zero price")
        count, bad_count = read_count(config, "num_gpus", at=field_path(at, "configuration"), zero=False, strings=False)
        bad = bad or bad_count
        interconnect = config.get("interconnect") if isinstance(config.get("interconnect"), str) else ""
        via = via_name(cloud)
        base = {
            "price_cents_per_hour": cents,
            "cloud": cloud,
            **({"via": via} if via else {}),
            "cloud_instance_type": row.get("cloud_instance_type"),
            "deployment_type": row.get("deployment_type"),
            "interconnect": interconnect or None,
            "nvlink": config.get("nvlink"),
            "storage_gb": positive(config.get("storage_in_gb")),
            **bad,
        }
        fields = {
            "sku": f"{via or cloud}:{shade_type}",
            "gpu_raw": f"{gpu_type} {interconnect}".strip(),
            "gpu_count": count if not bad_count else 1,
            "price_per_hour": None if cents is None else round(cents / 100, 6),
            "gpu_memory_gb": positive(config.get("vram_per_gpu_in_gb")),
            "vcpus": positive(config.get("vcpus")),
            "ram_gb": positive(config.get("memory_in_gb")),
            "currency": "USD",
        }
        regions = [a for a in as_list(row.get("availability")) if isinstance(a, dict) and isinstance(a.get("region"), str)
                   and a["region"].strip()]
        if not regions:
            return [self.offer(**fields, extra=base)]
        return [self.offer(**fields, region=a["region"].strip(),
                           available=a["available"] if isinstance(a.get("available"), bool) else None,
                           extra={**base, "region_name": a.get("display_name")})
                for a in regions]
