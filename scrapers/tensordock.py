"""TensorDock marketplace host nodes and their per-GPU component prices.

Request: ``GET https://marketplace.tensordock.com/api/v0/client/deploy/hostnodes`` with no query
(no filter: every listed host node) and no auth; one answer, no pagination. ``fetch`` returns the
decoded body ``{"success": true, "hostnodes": {"<hostnode uuid>": {"specs": ..., "location": ...,
"status": ...}}}``.

TensorDock prices a VM as the sum of its parts, each per unit per hour: ``specs.gpu[<model>].price``
per GPU, ``specs.cpu.price`` per vCPU, ``specs.ram.price`` per GB and ``specs.storage.price`` per
GB. The VM size is the renter's choice, so what is tracked is the **GPU component**: one offer
per (host node, GPU model) with ``gpu_count`` 1, ``price_per_hour`` = that GPU's price and
``extra["gpu_component_only"]``; the vCPU/RAM/storage unit prices ride along in ``extra`` so a
whole VM can be priced later. ``available`` is whether the node has a GPU of that model free
(``amount`` > 0; ``extra["gpus_free"]`` is the count). A GPU price of 0 or null means not offered;
one that is missing, no number or negative quarantines that GPU (the field named), not the run.

Keys relied on: ``hostnodes`` (object keyed by host node id = first half of the sku),
``specs.gpu`` (object keyed by TensorDock's GPU slug such as ``"l40-pcie-48gb"`` = gpu_raw and
second half of the sku) with ``price``, ``amount`` and ``vram`` (GB per GPU); optional
``specs.cpu/ram/storage.price``, ``specs.cpu.type``, ``location.city/region/country`` (joined
into ``region``; ``country`` only when it is an ISO code), ``status.uptime``. ``success: false``
raises ``ParseError``.
"""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    number,
    read_price,
    require,
)

HOSTNODES_URL = "https://marketplace.tensordock.com/api/v0/client/deploy/hostnodes"
_ISO_COUNTRY = re.compile(r"^[A-Za-z]{2}$")


_number = number


def location_of(location: Any) -> tuple[str, str | None]:
    """``{"city": "Chicago", "region": "Illinois", "country": "United States"}`` -> region text, ISO country."""
    if not isinstance(location, dict):
        return "", None
    parts = [str(location.get(k) or "").strip() for k in ("city", "region", "country")]
    country = parts[2].upper() if _ISO_COUNTRY.match(parts[2]) else None
    return ", ".join(p for p in parts if p), country


class TensordockScraper(Scraper):
    name = "tensordock"
    display_name = "TensorDock"
    homepage = "https://marketplace.tensordock.com"
    endpoint = "GET https://marketplace.tensordock.com/api/v0/client/deploy/hostnodes"
    source_kind = "api"
    fixture_kind = "handmade"
    kinds = ("on_demand",)
    caveats = (
        "marketplace: price is the GPU component only, per GPU-hour per host node "
        "(vCPU, RAM and storage are billed on top per unit)"
    )

    async def fetch(self, http: Http) -> Any:
        return await http.get_json(HOSTNODES_URL, headers={"Accept": "application/json"})

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, dict):
            raise ParseError(f"{self.name}: payload should be an object, got {type(raw).__name__}")
        if raw.get("success") is False:
            raise ParseError(f"{self.name}: API answered success=false: {raw.get('error', '')}")
        hostnodes = require(raw, "hostnodes", provider=self.name, kind=dict)
        if not hostnodes:
            raise ParseError(f"{self.name}: hostnodes is empty")
        offers: list[ScrapedOffer] = []
        for node_id, node in hostnodes.items():
            specs = require(hostnodes, node_id, "specs", provider=self.name, kind=dict)
            gpus = require(specs, "gpu", provider=self.name, kind=dict)
            region, country = location_of(node.get("location"))
            status = node.get("status") if isinstance(node.get("status"), dict) else {}

            def unit_price(part: str) -> float | None:
                entry = specs.get(part)
                return _number(entry.get("price")) if isinstance(entry, dict) else None

            cpu = specs.get("cpu") if isinstance(specs.get("cpu"), dict) else {}
            node_extra = {
                "gpu_component_only": True,
                "price_per_vcpu_hour": unit_price("cpu"),
                "price_per_ram_gb_hour": unit_price("ram"),
                "price_per_storage_gb_hour": unit_price("storage"),
                "cpu_type": cpu.get("type"),
                "uptime": status.get("uptime"),
            }
            for gpu_key, gpu in gpus.items():
                where = f"hostnodes.{node_id}.specs.gpu.{gpu_key}"
                if not isinstance(gpu, dict):
                    raise ParseError(f"{self.name}: {where} should be an object, got {type(gpu).__name__}")
                # missing, no number or negative: this GPU is quarantined, the others are kept
                price, bad = read_price(gpu, "price", at=where, strings=False)
                if not price and not bad:
                    continue  # null or 0: not offered
                amount = _number(gpu.get("amount"))
                vram = _number(gpu.get("vram"))
                extra = {**node_extra, "gpus_free": int(amount) if amount is not None else None, **bad}
                offers.append(
                    self.offer(
                        sku=f"{node_id}:{gpu_key}",
                        gpu_raw=gpu_key,
                        gpu_count=1,
                        price_per_hour=price,
                        kind="on_demand",
                        region=region,
                        country=country,
                        gpu_memory_gb=vram if vram else None,
                        available=None if amount is None else amount > 0,
                        extra={k: v for k, v in extra.items() if v is not None},
                    )
                )
        if not offers:
            raise ParseError(f"{self.name}: no entry of hostnodes lists a priced GPU")
        return offers
