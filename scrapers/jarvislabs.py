"""JarvisLabs GPU prices from the ``server_meta`` API of each regional backend.

Request: ``GET https://<host>/misc/server_meta`` with ``Authorization: Bearer $JARVISLABS_TOKEN``,
for every regional API host JarvisLabs runs: ``backendprod``, ``backendn``, ``backendc`` and
``backendeu`` under ``.jarvislabs.net`` (gpuhunt maps india-01, india-noida-01 and europe-01 to
prod, n and eu; ``backendc`` is presumably the Chennai region -- not confirmed). Every host must answer: a failing host fails the run rather than silently
dropping its regions. Rows are merged over hosts; the first host listing a (GPU type, workload,
region, kind) wins.

Keys relied on: ``server_meta[]`` rows with ``gpu_type`` ("A100-80GB"), ``region``,
``price_per_hour`` and ``spot_price`` (USD **per GPU-hour**; null = no such offer), ``vram`` (GB per
GPU, a string), ``cpus_per_gpu``, ``ram_per_gpu``, ``num_gpus`` (max GPUs per machine, a string),
``num_free_devices`` / ``effective_num_free_devices`` / ``spot_num_free_devices`` and
``workload_type`` ("vm", "container" or null for older VM rows). ``cpu_meta`` (CPU-only machines)
is ignored.

Offers: one per row and kind, priced for a single-GPU machine (``gpu_count=1``, so
``price_per_hour`` is the per-GPU price; larger machines scale linearly up to ``num_gpus``, kept in
``extra["max_gpus"]``). ``sku`` is the GPU type, plus ``/container`` or ``/vm`` when the row names its
workload type. ``available`` is whether free devices of that kind are reported.
"""

from __future__ import annotations

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

HOSTS = (
    "https://backendprod.jarvislabs.net",
    "https://backendn.jarvislabs.net",
    "https://backendc.jarvislabs.net",
    "https://backendeu.jarvislabs.net",
)
SERVER_META_PATH = "/misc/server_meta"


def _number(value: Any) -> float | None:
    """Numbers and numeric strings ("24", "8") -> float; anything else -> None."""
    return number(value, strings=True)


class JarvislabsScraper(Scraper):
    name = "jarvislabs"
    display_name = "JarvisLabs"
    homepage = "https://jarvislabs.ai"
    endpoint = "GET https://backend{prod,n,c,eu}.jarvislabs.net/misc/server_meta"
    hosts = ("backendprod.jarvislabs.net", "backendn.jarvislabs.net", "backendc.jarvislabs.net", "backendeu.jarvislabs.net")
    source_kind = "api"
    fixture_kind = "handmade"
    credentials = ("JARVISLABS_TOKEN",)
    per_gpu_limit_field = "max_gpus"
    kinds = ("on_demand", "spot")
    caveats = "price is per GPU-hour for a 1-GPU machine (scales linearly to max_gpus); storage extra"

    async def fetch(self, http: Http) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.credential('JARVISLABS_TOKEN')}"}
        return {"hosts": {host: await http.get_json(host + SERVER_META_PATH, headers=headers) for host in HOSTS}}

    @staticmethod
    def _price(row: dict[str, Any], key: str, where: str) -> tuple[float | None, dict[str, str]]:
        """(price, extra): 0 means not offered; a value that is no number is kept for quarantine."""
        price, bad = read_price(row.get(key), at=field_path(where, key))
        return (None if price == 0 else price), bad

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        hosts = require(raw, "hosts", provider=self.name, kind=dict)
        if not hosts:
            raise ParseError(f"{self.name}: no server_meta response from any host")
        offers: dict[tuple[str, str, str], ScrapedOffer] = {}
        rows_seen = 0
        for host, payload in hosts.items():
            rows = require(payload, "server_meta", provider=self.name, kind=list)
            rows_seen += len(rows)
            for i, row in enumerate(rows):
                gpu_type = require(row, "gpu_type", provider=self.name, kind=str)
                region = require(row, "region", provider=self.name, kind=str)
                workload = row.get("workload_type")
                sku = f"{gpu_type}/{workload}" if workload else gpu_type
                free = _number(row.get("effective_num_free_devices"))
                if free is None:
                    free = _number(row.get("num_free_devices"))
                spot_free = _number(row.get("spot_num_free_devices"))
                extra = {
                    k: v
                    for k, v in (
                        ("max_gpus", _number(row.get("num_gpus"))),
                        ("workload_type", workload),
                        ("free_gpus", free),
                        ("spot_free_gpus", spot_free),
                    )
                    if v is not None
                }
                for kind, key, available in (
                    ("on_demand", "price_per_hour", free),
                    ("spot", "spot_price", spot_free),
                ):
                    price, bad_price = self._price(row, key, field_path('hosts', host, 'server_meta', i))
                    if (price is None and not bad_price) or (sku, region, kind) in offers:
                        continue
                    offers[(sku, region, kind)] = self.offer(
                        sku=sku,
                        gpu_raw=gpu_type,
                        gpu_count=1,
                        gpu_memory_gb=_number(row.get("vram")),
                        vcpus=_number(row.get("cpus_per_gpu")),
                        ram_gb=_number(row.get("ram_per_gpu")),
                        kind=kind,
                        price_per_hour=price,
                        region=region,
                        country="IN" if region.startswith("india-") else None,
                        available=None if available is None else available > 0,
                        extra={**extra, **bad_price},
                    )
        if not rows_seen:
            raise ParseError(f"{self.name}: server_meta is empty on every host")
        return list(offers.values())
