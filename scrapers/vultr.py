"""Vultr GPU plans from the public plan listings of the Vultr API v2.

Requests (no auth needed to list plans):

* ``GET https://api.vultr.com/v2/plans?type=all&per_page=500``: instance plans; Cloud GPU plans
  have ``type`` "vcg" and ``gpu_type`` ("NVIDIA_A100"), ``gpu_vram_gb`` (VRAM of the whole plan,
  which can be a slice of one GPU), sometimes ``gpu_count`` (a number or a fraction string "1/20").
* ``GET https://api.vultr.com/v2/plans-metal?per_page=500``: bare-metal plans; the GPU model and
  count are only in ``id`` ("vbm-112c-2048gb-8-h100-gpu"; "vbm-72c-480gb-gh200-gpu" means one).

Both page with a cursor: ``meta.links.next`` is sent back as ``cursor=`` until it is empty (at most
``MAX_PAGES`` pages each). ``fetch`` returns ``{"plans": [page, ...], "plans_metal": [page, ...]}``.

Prices: ``hourly_cost`` is the hourly rate (``monthly_cost`` is the monthly cap: 730 x hourly for
cloud plans and 672 x hourly for bare metal in the samples) and ``hourly_cost_preemptible``, where
present and non-zero, is a ``spot`` offer. Prices are for the whole plan. A GPU plan whose
``hourly_cost`` is missing (or either price is no number or negative) gives offers that are
quarantined with the field named; the other plans are kept.

Regions: one offer per entry of ``locations[]`` (Vultr's location code, e.g. "ewr"), because the
API lists where each plan can be deployed; a plan with no location cannot be deployed anywhere
and is skipped. Fractional Cloud GPU plans get a fractional ``gpu_count``: ``gpu_count`` from the
API when given, else ``gpu_vram_gb`` / the GPU model's full memory (``_GPU_MEMORY_GB``); for a
model not in that table ``gpu_count`` is 1 and ``extra["gpu_count_assumed"]`` is set.
"""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import (
    FetchError,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    names_in,
    positive,
    read_price,
    require,
)

API = "https://api.vultr.com/v2"
PLANS_URL = f"{API}/plans"
METAL_URL = f"{API}/plans-metal"
PER_PAGE = 500
MAX_PAGES = 20

#: Full memory of one GPU of each model Vultr rents (by the model token of ``gpu_type``/``id``),
#: used to turn a plan's VRAM into a GPU count. Vultr's A100s are the 80 GB cards (their 1/20
#: slice has 4 GB, their 4-GPU plan "vcg-a100-96c-896g-320vram" 320 GB).
_GPU_MEMORY_GB: dict[str, float] = {
    "A16": 16,
    "A40": 48,
    "A100": 80,
    "L40": 48,
    "L40S": 48,
    "H100": 80,
    "H200": 141,
    "GH200": 96,
    "B200": 192,
    "MI300X": 192,
    "MI325X": 256,
    "MI355X": 288,
}
_VENDORS = ("NVIDIA", "AMD", "INTEL")
_METAL_GPU = re.compile(r"-(?:(?P<count>\d+)-)?(?P<model>[a-z0-9]+)-gpu$", re.IGNORECASE)
_VCG_ID = re.compile(r"^vcg-(?P<model>[a-z0-9]+)-.*?(?:-(?P<vram>\d+)vram)?$", re.IGNORECASE)


def model_token(name: str) -> str:
    """``"NVIDIA_A100_PCIE"`` -> ``"A100"``; ``"h100"`` -> ``"H100"``."""
    parts = [p for p in re.split(r"[_\s-]+", name.strip().upper()) if p]
    if len(parts) > 1 and parts[0] in _VENDORS:
        parts = parts[1:]
    return parts[0] if parts else ""


def _count_value(value: Any) -> float | None:
    """``gpu_count`` as the API may give it: 2, 0.5 or "1/20"."""
    if isinstance(value, str) and (m := re.fullmatch(r"\s*(\d{1,9})\s*/\s*(\d{1,9})\s*", value)):
        num, den = int(m[1]), int(m[2])
        return round(num / den, 4) if num and den else None
    return positive(value, strings=True)


class VultrScraper(Scraper):
    name = "vultr"
    segment = "neocloud"
    display_name = "Vultr"
    homepage = "https://www.vultr.com/pricing/#cloud-gpu"
    endpoint = "GET https://api.vultr.com/v2/plans?type=all&per_page=500 and GET /v2/plans-metal?per_page=500"
    source_kind = "api"
    fixture_kind = "handmade"
    checked_by = "public client: dstackai/gpuhunt (the plans API and its test fixture)"
    kinds = ("on_demand", "spot")
    caveats = (
        "hourly rate up to a monthly cap; Cloud GPU plans can be a fraction of one GPU (fractional gpu_count); "
        "spot is bare metal's preemptible price"
    )

    async def fetch(self, http: Http) -> dict[str, list[Any]]:
        return {
            "plans": await self._pages(http, PLANS_URL, {"type": "all", "per_page": str(PER_PAGE)}),
            "plans_metal": await self._pages(http, METAL_URL, {"per_page": str(PER_PAGE)}),
        }

    async def _pages(self, http: Http, url: str, params: dict[str, str]) -> list[Any]:
        pages: list[Any] = []
        cursors: set[str] = set()
        query = dict(params)
        for _ in range(MAX_PAGES):
            page = await http.get_json(url, params=query)
            pages.append(page)
            links = ((page.get("meta") or {}).get("links") or {}) if isinstance(page, dict) else {}
            cursor = links.get("next") if isinstance(links, dict) else None
            if not cursor or not isinstance(cursor, str):
                return pages
            if cursor in cursors:
                raise FetchError(f"{self.name}: {url.rsplit('/', 1)[-1]} returned the same next cursor twice")
            cursors.add(cursor)
            query = {**params, "cursor": cursor}
        raise FetchError(f"{self.name}: {url.rsplit('/', 1)[-1]} did not end after {MAX_PAGES} pages")

    # -- parse --------------------------------------------------------------------------------
    def parse(self, raw: Any) -> list[ScrapedOffer]:
        plans = self._items(raw, "plans")
        metal = self._items(raw, "plans_metal")
        if not plans and not metal:
            raise ParseError(f"{self.name}: both plans and plans_metal are empty")
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for where, plan in plans:
            offers.extend(self._plan_offers(plan, where, metal=False, seen=seen))
        for where, plan in metal:
            offers.extend(self._plan_offers(plan, where, metal=True, seen=seen))
        if not offers:
            raise ParseError(
                f"{self.name}: no GPU plan with a location among {len(plans)} plans and {len(metal)} metal plans"
            )
        return offers

    def _items(self, raw: Any, key: str) -> list[tuple[str, Any]]:
        """(where, item) of every item of every page under ``key``, ``where`` its path in ``raw``."""
        pages = require(raw, key, provider=self.name)
        paged = isinstance(pages, list)
        items: list[tuple[str, Any]] = []
        for p, page in enumerate(pages if paged else [pages]):
            at = field_path(key, p) if paged else key
            listed = require(page, key, provider=self.name, kind=list, at=at)
            items.extend((field_path(at, key, i), item) for i, item in enumerate(listed))
        return items

    def _gpu(self, plan: dict[str, Any], plan_id: str, metal: bool) -> tuple[str, float, float | None, bool] | None:
        """(gpu_raw, gpu_count, per-GPU memory, count_assumed) or ``None`` for a CPU plan."""
        gpu_type = plan.get("gpu_type")
        vram = plan.get("gpu_vram_gb")
        vram = positive(vram)
        api_count = _count_value(plan.get("gpu_count"))
        from_id: re.Match[str] | None = None
        if metal:
            from_id = _METAL_GPU.search(plan_id)
        elif plan_id.lower().startswith("vcg-") or plan.get("type") in ("vcg", "vdm"):
            from_id = _VCG_ID.match(plan_id)
        if not gpu_type and from_id is None:
            return None
        raw = gpu_type if isinstance(gpu_type, str) and gpu_type.strip() else (from_id["model"] if from_id else "")
        if not raw:
            return None
        full = _GPU_MEMORY_GB.get(model_token(raw))
        if metal and from_id is not None and api_count is None:
            api_count = float(from_id["count"]) if from_id["count"] else 1.0
        if vram is None and from_id is not None and "vram" in from_id.re.groupindex and from_id["vram"]:
            vram = float(from_id["vram"])
        if api_count is not None:
            count, assumed = api_count, False
        elif vram is not None and full:
            count, assumed = round(vram / full, 4), False
        else:
            count, assumed = 1.0, True
        memory = full if full else (round(vram / count, 2) if vram is not None and not assumed else None)
        return raw, count, memory, assumed

    def _plan_offers(self, plan: Any, where: str, *, metal: bool, seen: set[str]) -> list[ScrapedOffer]:
        if not isinstance(plan, dict):
            raise ParseError(f"{self.name}: {where} should be an object, got {type(plan).__name__}")
        plan_id = require(plan, "id", provider=self.name, kind=str, at=where)
        gpu = self._gpu(plan, plan_id, metal)
        if gpu is None or plan_id in seen:
            return []
        seen.add(plan_id)
        gpu_raw, count, memory, assumed = gpu
        # 0 or null: not offered; missing (on demand), no number or negative: that offer alone is
        # quarantined with the field named
        (hourly, bad_hourly), (spot, bad_spot) = (
            read_price(plan, key, at=where) if required or key in plan else (None, {})
            for key, required in (("hourly_cost", True), ("hourly_cost_preemptible", False))
        )
        hourly, spot = (hourly or None) if not bad_hourly else hourly, (spot or None) if not bad_spot else spot
        locations = require(plan, "locations", provider=self.name, kind=list)
        vcpus = plan.get("cpu_threads") if metal else plan.get("vcpu_count")
        ram_mb = plan.get("ram")
        extra: dict[str, Any] = {"plan_type": plan.get("type"), "monthly_cost": plan.get("monthly_cost")}
        if isinstance(plan.get("gpu_vram_gb"), (int, float)):
            extra["gpu_vram_gb"] = plan["gpu_vram_gb"]
        if assumed:
            extra["gpu_count_assumed"] = True
        common: dict[str, Any] = {
            "sku": plan_id,
            "gpu_raw": gpu_raw,
            "gpu_count": count,
            "gpu_memory_gb": memory,
            "vcpus": positive(vcpus),
            "ram_gb": round(ram_mb / 1024, 2) if (ram_mb := positive(ram_mb)) else None,
            "currency": "USD",
            "extra": extra,
        }
        offers: list[ScrapedOffer] = []
        for location in names_in(locations, field_path(where, "locations"), provider=self.name):
            if hourly is not None or bad_hourly:
                offers.append(self.offer(region=location, kind="on_demand", price_per_hour=hourly,
                                         **{**common, "extra": {**extra, **bad_hourly}}))
            if spot is not None or bad_spot:
                offers.append(self.offer(region=location, kind="spot", price_per_hour=spot, **{**common, "extra": {**extra, **bad_spot}}))
        return offers

