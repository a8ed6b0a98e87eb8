"""Voltage Park on-demand H100 prices from its dashboard's public bare-metal locations API.

Request: ``GET https://cloud-api.voltagepark.com/api/v1/bare-metal/locations`` (no auth, no
cookies: the logged-out variant the dashboard itself calls). One page today: the envelope is
``{"results": [...], "total_result_count": n, "has_previous": bool, "has_next": bool}``. The
page parameter is undocumented, so ``fetch`` does not guess one: when ``has_next`` is true it
fails with ``FetchError`` rather than store a partial price list, and ``parse`` checks that
``total_result_count`` equals the rows it got.

Each row is one location (``id`` is an opaque UUID, used as ``region`` because it is the only
location key the API gives) with ``specs_per_node`` (``gpu_model`` such as
``"h100-sxm5-80gb"``, ``gpu_count`` per node, CPU, RAM, storage) and two prices per GPU-hour as
decimal strings: ``gpu_price_ethernet`` and ``gpu_price_infiniband``. They are two networking
options of the same on-demand product (Ethernet vs InfiniBand), so both are ``on_demand``
offers, under the skus ``"<gpu_model>:ethernet"`` and ``"<gpu_model>:infiniband"``.

Per GPU: the prices are per GPU-hour (the dashboard multiplies them by the GPU count; the
provider's own pages print prices "/GPU/hour"), so each offer has ``gpu_count`` 1 and the node's
specs go to ``extra``. The payload has no currency field; it is USD (the provider's dollar
prints match the Ethernet figure). ``gpu_count_ethernet`` / ``gpu_count_infiniband`` are free
GPUs, kept as ``available`` (>0), ``available_count`` and in ``extra``; they never gate the price. A row with a new
``gpu_price_*`` key raises ``ParseError``: a price tier this parser does not know would
otherwise be dropped silently.
"""

from __future__ import annotations

from typing import Any

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

URL = "https://cloud-api.voltagepark.com/api/v1/bare-metal/locations"
#: (price key, free-GPU count key, network label used in the sku)
NETWORKS = (
    ("gpu_price_ethernet", "gpu_count_ethernet", "ethernet"),
    ("gpu_price_infiniband", "gpu_count_infiniband", "infiniband"),
)
_PRICE_KEYS = frozenset(key for key, _, _ in NETWORKS)


class VoltageparkScraper(Scraper):
    name = "voltagepark"
    segment = "neocloud"
    display_name = "Voltage Park"
    homepage = "https://www.voltagepark.com/pricing"
    endpoint = "GET https://cloud-api.voltagepark.com/api/v1/bare-metal/locations"
    per_gpu_limit_field = "node_gpu_count"
    kinds = ("on_demand",)
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = "reference: the 2026 shape of an anonymous locations answer shown by getcomputable/gpu-index (structure only, own values)"
    caveats = (
        "reference fixture (real 2026 shape, own values); prices are per GPU (gpu_count 1; nodes have 8 GPUs); Ethernet and InfiniBand are two offers; "
        "region is Voltage Park's opaque location id; USD by the provider's own prints (no currency field)"
    )

    async def fetch(self, http: Http) -> Any:
        page = await http.get_json(URL, headers={"Accept": "application/json"})
        if isinstance(page, dict) and page.get("has_next"):
            raise FetchError(f"{self.name}: locations has a next page; paging is not supported, refusing a partial list")
        return page

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        results = require(raw, "results", provider=self.name, kind=list)
        total = require(raw, "total_result_count", provider=self.name, kind=int)
        if total != len(results):
            raise ParseError(f"{self.name}: total_result_count is {total} but the page has {len(results)} rows")
        if not results:
            raise ParseError(f"{self.name}: locations lists no location")
        offers: list[ScrapedOffer] = []
        for index, row in enumerate(results):
            offers.extend(self._row_offers(row, index))
        return offers

    def _need(self, obj: dict[str, Any], key: str, where: str, kind: type) -> Any:
        """``obj[key]`` of type ``kind``, or a ParseError saying where it is missing."""
        value = obj.get(key)
        if not isinstance(value, kind):
            what = "has no" if value is None else f"has a {type(value).__name__} for"
            raise ParseError(f"{self.name}: {where} {what} {key!r} ({kind.__name__} expected)")
        return value

    def _row_offers(self, row: Any, index: int) -> list[ScrapedOffer]:
        if not isinstance(row, dict):
            raise ParseError(f"{self.name}: results[{index}] should be an object, got {type(row).__name__}")
        location = self._need(row, "id", f"results[{index}]", str)
        unknown = sorted(k for k in row if k.startswith("gpu_price") and k not in _PRICE_KEYS)
        if unknown:
            raise ParseError(f"{self.name}: location {location} has unknown price field(s) {unknown}")
        specs = self._need(row, "specs_per_node", f"location {location}", dict)
        gpu_model = self._need(specs, "gpu_model", f"location {location} specs_per_node", str).strip()
        if not gpu_model:
            raise ParseError(f"{self.name}: location {location} has an empty specs_per_node.gpu_model")
        extra_common = {
            "per_gpu": True,
            "location_id": location,
            "node_gpu_count": specs.get("gpu_count"),
            "node_cpu_model": specs.get("cpu_model"),
            "node_cpu_count": specs.get("cpu_count"),
            "node_ram_gb": specs.get("ram_gb"),
            "node_storage_gb": specs.get("storage_gb"),
        }
        offers = []
        for price_key, count_key, network in NETWORKS:
            # missing, no number or negative: this offer is quarantined, the others are kept
            price, bad = read_price(row, price_key, at=field_path("results", index))
            free = row.get(count_key)
            free = free if isinstance(free, int) and not isinstance(free, bool) and free >= 0 else None
            offers.append(
                self.offer(
                    sku=f"{gpu_model}:{network}",
                    gpu_raw=gpu_model,
                    gpu_count=1,
                    price_per_hour=price,
                    kind="on_demand",
                    region=location,
                    currency="USD",
                    available=None if free is None else free > 0,
                    available_count=free,
                    extra={**extra_common, "network": network, "free_gpus": free, **bad},
                )
            )
        return offers

