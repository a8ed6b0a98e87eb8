"""Cudo Compute VM machine types and their per-GPU-hour price in each data centre.

Request: ``GET https://rest.compute.cudo.org/v1/vms/machine-types`` (no query: every data centre;
one answer, no pagination). Auth: the listing answers without a key (dstackai/gpuhunt and others call
it anonymously); when ``$CUDO_API_KEY`` is set it is sent the way the Cudo API
expects keys, ``Authorization: Bearer <key>``. ``fetch`` returns the decoded body
``{"machineTypes": [...]}``; ``parse`` also takes the bare list.

Cudo bills a VM by its parts, each per hour: ``gpuPriceHr`` per GPU, ``vcpuPriceHr`` per vCPU,
``memoryGibPriceHr`` per GiB, ``minStorageGibPriceHr`` per GiB of disk and ``ipv4PriceHr``. The
VM size is chosen at creation, so one offer per (machine type, GPU model, data centre) is
emitted with ``gpu_count`` 1 and ``price_per_hour`` = ``gpuPriceHr`` (the GPU component,
``extra["gpu_component_only"]``); the other unit prices ride along in ``extra``. Prices are
decimal strings (``{"value": "0.520000"}``), in USD unless the object names a ``currency``.
Machine types without a GPU (empty ``gpuModel``/``gpuModelId``) and GPU prices of 0 are skipped.

Keys relied on: ``machineTypes[]``, ``dataCenterId`` (region; its first dash-separated part is the
ISO country, e.g. ``no-luster-1`` -> NO), ``machineType`` and ``gpuModelId`` (sku), ``gpuModel``
(gpu_raw), ``gpuPriceHr.value``; optional ``vcpuPriceHr``, ``memoryGibPriceHr``,
``minStorageGibPriceHr``, ``ipv4PriceHr``, ``maxGpuFree`` (GPUs free on one host -> available),
``totalGpuFree`` (GPUs free in the data center -> ``available_count``, 0 when no host has one), ``minVcpuPerGpu``/``maxVcpuPerGpu``, ``cpuModel``, ``renewableEnergy``.
No GPU memory in this payload (``gpu_memory_gb`` None; the catalog knows it).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from scrapers.base import (
    UNREADABLE_PRICE,
    Http,
    ParseError,
    Retired,
    ScrapedOffer,
    Scraper,
    field_path,
    free_count,
    read_price,
    require,
    shown,
)

MACHINE_TYPES_URL = "https://rest.compute.cudo.org/v1/vms/machine-types"
_COUNTRY_PREFIX = re.compile(r"^([a-z]{2})-")


class CudoScraper(Scraper):
    name = "cudo"
    segment = "neocloud"
    display_name = "Cudo Compute"
    homepage = "https://www.cudocompute.com/pricing"
    endpoint = "GET https://rest.compute.cudo.org/v1/vms/machine-types"
    source_kind = "api"
    fixture_kind = "handmade"
    checked_by = "public client: dstackai/gpuhunt (its machine-types request and test fixture)"
    retired = Retired(date(2026, 3, 31), "CUDO Compute's public platform shut down on 2026-03-31 "
                      "(dstackai/dstack#4017 and PR #4018; dstackai/gpuhunt PR #237 dropped it)")
    optional_credentials = ("CUDO_API_KEY",)
    kinds = ("on_demand",)
    caveats = (
        "price is the GPU component only, per GPU-hour per data centre "
        "(vCPU, RAM, disk and IPv4 are billed on top per unit)"
    )

    async def fetch(self, http: Http) -> Any:
        headers = {"Accept": "application/json"}
        key = self.credential("CUDO_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return await http.get_json(MACHINE_TYPES_URL, headers=headers)

    def _decimal(self, item: dict[str, Any], key: str, where: str, *, required: bool = False) -> tuple[float | None, dict[str, str]]:
        """``{"value": "0.52"}`` -> (0.52, {}); (None, {}) when an optional price is absent; a
        value that is no number -> (None, extra naming it) so the offer is quarantined with it."""
        price = item.get(key)
        if price is None and not required:
            return None, {}
        if not isinstance(price, dict) or price.get("value") is None:  # not {"value": ...}: quarantined with it
            missing = "is missing" if price is None else f"holds {shown(price)}, not {{'value': ...}}"
            return None, {UNREADABLE_PRICE: f"price field {field_path(where, key)} {missing}"}
        return read_price(price, "value", at=field_path(where, key))

    def _extra_price(self, item: dict[str, Any], key: str, where: str) -> float | None:
        """A unit price kept in extra: a number or ``None`` (never fails or quarantines the offer)."""
        return self._decimal(item, key, where)[0]

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if isinstance(raw, dict):
            machine_types = require(raw, "machineTypes", provider=self.name, kind=list)
        elif isinstance(raw, list):
            machine_types = raw
        else:
            raise ParseError(f"{self.name}: payload should be {{'machineTypes': [...]}}, got {type(raw).__name__}")
        if not machine_types:
            raise ParseError(f"{self.name}: machineTypes is empty")
        offers: list[ScrapedOffer] = []
        seen: set[tuple[str, str]] = set()
        for index, item in enumerate(machine_types):
            if not isinstance(item, dict):
                raise ParseError(f"{self.name}: machineTypes[{index}] should be an object, got {type(item).__name__}")
            where = f"machineTypes[{index}]"
            data_center = require(item, "dataCenterId", provider=self.name, kind=str)
            machine_type = require(item, "machineType", provider=self.name, kind=str)
            where = f"{where} ({machine_type} in {data_center})"
            gpu_model = item.get("gpuModel")
            gpu_model_id = item.get("gpuModelId")
            if "gpuModel" not in item and "gpuModelId" not in item:
                raise ParseError(f"{self.name}: {where} has no 'gpuModel'")
            if not (isinstance(gpu_model, str) and gpu_model.strip()):
                continue  # a CPU-only machine type
            price, bad_price = self._decimal(item, "gpuPriceHr", field_path("machineTypes", index), required=True)
            if not price and not bad_price:
                continue  # 0: the GPU is not sold here
            sku = f"{machine_type}:{gpu_model_id or gpu_model}"
            if (sku, data_center) in seen:
                continue
            seen.add((sku, data_center))
            gpu_price = item.get("gpuPriceHr")
            currency = gpu_price.get("currency") if isinstance(gpu_price, dict) else None
            currency = currency.upper() if isinstance(currency, str) and len(currency) == 3 else "USD"
            country_match = _COUNTRY_PREFIX.match(data_center)
            max_free = item.get("maxGpuFree")
            available = max_free > 0 if isinstance(max_free, (int, float)) and not isinstance(max_free, bool) else None
            # GPUs of this type free in the data center (none when no host has one free)
            free = (free_count(item.get("totalGpuFree")) or None) if available else (0 if available is False else None)
            extra = {
                "gpu_component_only": True,
                "gpu_model_id": gpu_model_id,
                "machine_type": machine_type,
                "cpu_model": item.get("cpuModel"),
                "price_per_vcpu_hour": self._extra_price(item, "vcpuPriceHr", where),
                "price_per_memory_gib_hour": self._extra_price(item, "memoryGibPriceHr", where),
                "price_per_storage_gib_hour": self._extra_price(item, "minStorageGibPriceHr", where),
                "price_per_ipv4_hour": self._extra_price(item, "ipv4PriceHr", where),
                "min_vcpu_per_gpu": item.get("minVcpuPerGpu"),
                "max_vcpu_per_gpu": item.get("maxVcpuPerGpu"),
                "gpus_free": max_free,
                "gpus_free_total": item.get("totalGpuFree"),
                "renewable_energy": item.get("renewableEnergy"),
            }
            offers.append(
                self.offer(
                    sku=sku,
                    gpu_raw=gpu_model.strip(),
                    gpu_count=1,
                    price_per_hour=price,
                    kind="on_demand",
                    region=data_center,
                    country=country_match.group(1).upper() if country_match else None,
                    currency=currency,
                    available=available,
                    available_count=free,
                    extra={**{k: v for k, v in extra.items() if v is not None}, **bad_price},
                )
            )
        if not offers:
            raise ParseError(f"{self.name}: no machine type has a priced GPU")
        return offers
