"""DigitalOcean GPU Droplet prices from the DigitalOcean API v2 sizes list.

Request: ``GET https://api.digitalocean.com/v2/sizes?per_page=200`` with
``Authorization: Bearer <DIGITALOCEAN_TOKEN>`` (a read-only personal access token is enough),
following ``links.pages.next`` (a full URL) until there is none (at most ``MAX_PAGES`` pages).
``fetch`` returns the list of page objects ``{"sizes": [...], "links": {...}, "meta": {...}}``.

What is extracted: sizes with a ``gpu_info`` object (CPU sizes have none): ``slug`` (sku, e.g.
"gpu-h100x8-640gb"), ``gpu_info.model`` (gpu_raw as given, e.g. "nvidia_h100", "amd_mi300x"),
``gpu_info.count``, ``gpu_info.vram {amount, unit}`` (VRAM of all the GPUs together, divided by the
count for the per-GPU memory), ``vcpus``, ``memory`` (MiB), ``price_hourly`` (USD for the whole
Droplet), ``available`` and ``regions[]``. One offer per region slug ("nyc1"); a size with no
region cannot be created anywhere and is skipped, as is a size whose ``price_hourly`` is 0/null.
A size whose ``price_hourly`` or ``gpu_info.count`` is missing, no number or negative is quarantined
with the field named; the other sizes are kept.
"""

from __future__ import annotations

from typing import Any

from scrapers.base import (
    FetchError,
    Http,
    MissingCredentials,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    names_in,
    positive,
    read_count,
    read_price,
    require,
)

SIZES_URL = "https://api.digitalocean.com/v2/sizes"
PER_PAGE = 200
MAX_PAGES = 20
_UNIT_TO_GB = {"gib": 1.0, "gb": 1.0, "mib": 1 / 1024, "mb": 1 / 1024, "tib": 1024.0, "tb": 1024.0}


class DigitaloceanScraper(Scraper):
    name = "digitalocean"
    display_name = "DigitalOcean"
    homepage = "https://www.digitalocean.com/pricing/gpu-droplets"
    endpoint = "GET https://api.digitalocean.com/v2/sizes?per_page=200"
    source_kind = "api"
    fixture_kind = "handmade"
    credentials = ("DIGITALOCEAN_TOKEN",)
    kinds = ("on_demand",)
    caveats = "GPU Droplets only (not the AMD Developer Cloud); price includes the boot and scratch disks"

    async def fetch(self, http: Http) -> list[Any]:
        token = self.credential("DIGITALOCEAN_TOKEN")
        if not token:
            raise MissingCredentials(self.name, self.credentials)
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        pages: list[Any] = []
        url = SIZES_URL
        params: dict[str, str] | None = {"per_page": str(PER_PAGE)}
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await http.get_json(url, params=params, headers=headers)
            pages.append(page)
            next_url = _next_page(page)
            if not next_url:
                return pages
            if next_url in seen:
                raise FetchError(f"{self.name}: /v2/sizes returned the same next page twice")
            seen.add(next_url)
            # the next link carries page and per_page; it must stay on the API host (it gets the token)
            url, params = http.same_origin(next_url, SIZES_URL), None
        raise FetchError(f"{self.name}: /v2/sizes did not end after {MAX_PAGES} pages")

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        pages = raw if isinstance(raw, list) else [raw]
        sizes: list[Any] = []
        places: list[str] = []  # where each size sits in the payload
        for p, page in enumerate(pages):
            listed = require(page, "sizes", provider=self.name, kind=list)
            sizes.extend(listed)
            places.extend(field_path("payload", p, "sizes", i) if isinstance(raw, list) else field_path("sizes", i) for i in range(len(listed)))
        if not sizes:
            raise ParseError(f"{self.name}: the sizes list is empty")
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for index, size in enumerate(sizes):
            if not isinstance(size, dict):
                raise ParseError(f"{self.name}: a size should be an object, got {type(size).__name__}")
            gpu_info = size.get("gpu_info")
            if not gpu_info:
                continue
            slug = require(size, "slug", provider=self.name, kind=str)
            if slug in seen:
                continue
            seen.add(slug)
            offers.extend(self._size_offers(size, slug, gpu_info, places[index]))
        if not offers:
            raise ParseError(f"{self.name}: no priced GPU size with a region among {len(sizes)} sizes")
        return offers

    def _size_offers(self, size: dict[str, Any], slug: str, gpu_info: Any, at: str) -> list[ScrapedOffer]:
        if not isinstance(gpu_info, dict):
            raise ParseError(f"{self.name}: size {slug} gpu_info should be an object")
        model = require(gpu_info, "model", provider=self.name, kind=str)
        # a count or price that is missing, no number or negative quarantines this size, not the run
        count, bad = read_count(gpu_info, "count", at=field_path(at, "gpu_info"), zero=False, strings=False)
        price, bad_price = read_price(size, "price_hourly", at=at, strings=False)
        bad = bad or bad_price
        regions = require(size, "regions", provider=self.name, kind=list)
        if (not price and not bad) or not regions:
            return []  # not sold (no price) or not creatable anywhere
        memory_mb = positive(size.get("memory"))
        available = size.get("available")
        extra: dict[str, Any] = {"description": size.get("description"), "price_monthly": size.get("price_monthly"), **bad}
        return [
            self.offer(
                sku=slug,
                region=region,
                gpu_raw=model,
                gpu_count=count,
                gpu_memory_gb=_per_gpu_memory(gpu_info.get("vram"), count),
                vcpus=positive(size.get("vcpus")),
                ram_gb=round(memory_mb / 1024, 2) if memory_mb else None,
                price_per_hour=price,
                currency="USD",
                available=available if isinstance(available, bool) else None,
                extra=extra,
            )
            for region in names_in(regions, f"size {slug} regions", provider=self.name)
        ]


def _per_gpu_memory(vram: Any, count: float) -> float | None:
    """``{"amount": 640, "unit": "gib"}`` for 8 GPUs -> 80."""
    if not isinstance(vram, dict) or not count:
        return None
    amount = positive(vram.get("amount"))
    factor = _UNIT_TO_GB.get(str(vram.get("unit", "gib")).lower())
    if amount is None or factor is None:
        return None
    return round(amount * factor / count, 2)


def _next_page(page: Any) -> str | None:
    if not isinstance(page, dict):
        return None
    links = page.get("links")
    pages = links.get("pages") if isinstance(links, dict) else None
    nxt = pages.get("next") if isinstance(pages, dict) else None
    return nxt if isinstance(nxt, str) and nxt else None
