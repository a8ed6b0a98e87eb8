"""gpu.ai: every GPU offer of its public pricing API, page by page.

Request: ``GET https://api.gpu.ai/v1/pricing?limit=200&include_unavailable=true``, no auth (the
API's OpenAPI document declares no security for it). The answer is ``{"data": [...],
"next_cursor": str | null}``; while ``next_cursor`` is a string, the next page is the same
request with ``&cursor=<next_cursor>``. ``include_unavailable=true`` brings the sold-out rows
(``available`` 0) into the book, so a sold-out offer reads as unavailable instead of delisted.
At most ``MAX_PAGES`` pages are read (200 rows each; the book held about 300 rows in 2026).

``fetch`` returns ``{"pages": [page, ...], "incomplete": reason | None}``. The first page must
answer (else the run fails); a later page that fails, a cursor that does not move, or the page
limit reached with a cursor left makes the answer partial: ``parse`` then returns
``PartialOffers`` with that reason, so the offers not seen are unknown, never delisted. ``parse``
also takes one page as the API sends it (a page with a ``next_cursor`` left is partial too).

Each row is one offer: ``gpu_type`` ("h100_sxm", "a100_80gb", "rtx_pro_6000": the GPU as
written), ``gpu_count``, ``price_per_hour`` (USD for the WHOLE configuration, all its GPUs; the
schema says so and has no currency field: the site prints dollars), ``region``, ``tier``
(``on_demand`` / ``spot``), ``capacity_class`` (``secure`` / ``community``, with its boolean twin
``community``; an empty class falls back to the boolean), ``available`` (units of the configuration free now: ``available_count`` is that times ``gpu_count``),
``offering_id`` (the offer's stable id: its sku), ``cpu_cores``, ``ram_gb``, ``storage_gb``.
Kinds: ``spot`` rows are ``spot``; on-demand rows are ``community`` on community capacity and
``on_demand`` on secure capacity (the marketplace's two classes, as RunPod's are read).

A page that is not ``{"data": list, "next_cursor": ...}``, a row that is not an object or has no
``gpu_type``, or a ``tier`` / ``capacity_class`` this parser does not know -> ``ParseError``. A
row's own price or GPU count unreadable (a row without a GPU count cannot be priced per GPU) -> that
offer is quarantined. A fractional ``gpu_count`` (a slice of one GPU) stays fractional, marked
``fractional_gpu``; a MIG slice's ``gpu_type`` is left to the catalog, which never reads it as a
whole GPU. An offer id seen on two
pages (the book moved between requests) is read once.
"""

from __future__ import annotations

from typing import Any

from scrapers.base import (
    REFERENCE_CAPTURE,
    FetchError,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    free_count,
    number,
    paged_result,
    positive,
    read_count,
    read_price,
    shown,
)

URL = "https://api.gpu.ai/v1/pricing"
LIMIT = 200
#: Pages read at most (a runaway cursor stops here, and the answer says it is partial).
MAX_PAGES = 20
TIERS = ("on_demand", "spot")
CAPACITY_CLASSES = ("secure", "community", "")


class GpuaiScraper(Scraper):
    name = "gpuai"
    segment = "marketplace"
    display_name = "gpu.ai"
    homepage = "https://gpu.ai"
    endpoint = "GET https://api.gpu.ai/v1/pricing?limit=200&include_unavailable=true (keyless JSON, next_cursor pages)"
    kinds = ("on_demand", "community", "spot")
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = REFERENCE_CAPTURE
    caveats = (
        "reference fixture (real 2026 shape, own values); marketplace book: one offer per listed configuration (whole-configuration price); community capacity as "
        "community, secure as on-demand; sold-out rows kept as unavailable; USD by the site's prints (no currency field)"
    )

    async def fetch(self, http: Http) -> Any:
        pages: list[Any] = []
        cursor: str | None = None
        incomplete: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": LIMIT, "include_unavailable": "true"}
            if cursor is not None:
                params["cursor"] = cursor
            try:
                page = await http.get_json(URL, params=params, headers={"Accept": "application/json"})
            except FetchError as exc:
                if not pages:
                    raise
                incomplete = f"page {len(pages) + 1} did not answer ({exc})"
                break
            pages.append(page)
            following = page.get("next_cursor") if isinstance(page, dict) else None
            if not isinstance(following, str) or not following:
                break
            if following == cursor:
                incomplete = f"next_cursor did not move after page {len(pages)}"
                break
            if len(pages) >= MAX_PAGES:
                incomplete = f"still paging after {MAX_PAGES} pages"
                break
            cursor = following
        return {"pages": pages, "incomplete": incomplete}

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if isinstance(raw, dict) and "pages" in raw:
            pages, incomplete = raw["pages"], raw.get("incomplete")
            if not isinstance(pages, list) or not pages:
                raise ParseError(f"{self.name}: payload.pages holds no pricing page")
            names = [field_path("pages", i) for i in range(len(pages))]
        else:
            pages, incomplete, names = [raw], None, ["payload"]
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for where, page in zip(names, pages):
            for offer in self._page_offers(page, where):
                if offer.sku not in seen:
                    seen.add(offer.sku)
                    offers.append(offer)
        last = pages[-1]
        if incomplete is None and isinstance(last.get("next_cursor"), str) and last["next_cursor"]:
            incomplete = f"the last page read ({len(pages)}) still has a next_cursor"
        return paged_result(self.name, offers, incomplete, "payload holds no offer (every data list is empty)")

    def _page_offers(self, page: Any, where: str) -> list[ScrapedOffer]:
        if not isinstance(page, dict):
            raise ParseError(f"{self.name}: {where} should be an object, got {type(page).__name__}")
        data = page.get("data")
        if not isinstance(data, list):
            raise ParseError(f"{self.name}: {where} has no 'data' list")
        if "next_cursor" not in page:
            raise ParseError(f"{self.name}: {where} has no 'next_cursor' (paging changed)")
        cursor = page["next_cursor"]
        if cursor is not None and not isinstance(cursor, str):
            raise ParseError(f"{self.name}: {where} next_cursor should be a string or null, got {shown(cursor)}")
        return [self._row_offer(row, field_path(where, "data", i)) for i, row in enumerate(data)]

    def _row_offer(self, row: Any, at: str) -> ScrapedOffer:
        if not isinstance(row, dict):
            raise ParseError(f"{self.name}: {at} should be an object, got {type(row).__name__}")
        gpu_type = row.get("gpu_type")
        if not isinstance(gpu_type, str) or not gpu_type.strip():
            raise ParseError(f"{self.name}: {at}.gpu_type should be a non-empty string, got {shown(gpu_type)}")
        tier = row.get("tier")
        if tier not in TIERS:
            raise ParseError(f"{self.name}: {at}.tier is {shown(tier)}, not one of {', '.join(TIERS)}")
        capacity = row.get("capacity_class", "")
        community = row.get("community")
        if capacity not in CAPACITY_CLASSES:
            raise ParseError(f"{self.name}: {at}.capacity_class is {shown(capacity)}, not secure or community")
        if not capacity:
            if not isinstance(community, bool):
                raise ParseError(f"{self.name}: {at} states neither capacity_class nor community")
            capacity = "community" if community else "secure"
        kind = "spot" if tier == "spot" else ("community" if capacity == "community" else "on_demand")
        price, bad = read_price(row, "price_per_hour", at=at, strings=False)
        count, bad_count = read_count(row, "gpu_count", at=at, zero=False, strings=False)
        region = row.get("region") if isinstance(row.get("region"), str) else ""
        offering = row.get("offering_id")
        sku = offering.strip() if isinstance(offering, str) and offering.strip() else (
            f"{gpu_type}:{row.get('gpu_count')}x:{region}:{capacity}:{row.get('deployment_type')}")
        free = row.get("available")
        free = int(free) if number(free) is not None and free >= 0 else None
        return self.offer(
            sku=sku,
            gpu_raw=gpu_type.strip(),
            gpu_count=count if not bad_count else 1,
            price_per_hour=price,
            kind=kind,
            region=region,
            currency="USD",
            vcpus=positive(row.get("cpu_cores")),
            ram_gb=positive(row.get("ram_gb")),
            available=None if free is None else free > 0,
            available_count=None if free is None or bad_count else free_count(free, count),
            extra={
                "available_count": free,
                "capacity_class": capacity,
                **({"fractional_gpu": True} if not bad_count and count != int(count) else {}),
                "tier": tier,
                "deployment_type": row.get("deployment_type"),
                "instant_boot": row.get("instant_boot"),
                "storage_gb": row.get("storage_gb"),
                **bad,
                **bad_count,
            },
        )
