"""Akamai Cloud (Linode) GPU plans from the public plan list of the Linode API v4 (no auth).

Request
    ``GET https://api.linode.com/v4/linode/types?page=N&page_size=500``. The list pages with
    ``page``/``pages`` in the body; ``fetch`` asks for page 1, then 2.. up to the ``pages`` that
    page 1 announces (more than ``MAX_PAGES`` is a ``FetchError`` before any further request), and
    returns the list of page bodies.

Response
    ``{"data": [{id, label, class, gpus, vcpus, memory (MB), disk, price: {hourly, monthly},
    region_prices: [{id, hourly, monthly}], ...}], "page", "pages", "results"}``. Plans with
    ``gpus`` = 0 (including NETINT video accelerators, which count as ``accelerated_devices``) are
    skipped.

Prices
    ``price.hourly`` is the whole plan's USD price per hour (``monthly`` is the monthly cap). It is
    the price everywhere except the regions in ``region_prices``, which get their own offer with
    that region's hourly price. The default offer has ``region=""``. A GPU plan whose hourly price
    (or ``gpus``) is missing, no number or negative gives offers that are quarantined with the
    field named; the other plans are kept.

Names
    The GPU model is only in the plan id and label: ``g1-gpu-rtx6000-N`` are NVIDIA Quadro RTX 6000
    plans ("Dedicated 32GB + RTX6000 GPU x1"), ``g2-gpu-rtx4000aN-*`` NVIDIA RTX 4000 Ada plans
    ("RTX4000 Ada x1 Small"); ``_GPU_BY_TOKEN`` maps the id's model token, and a token not in it
    keeps the token itself as ``gpu_raw`` (reported as unmapped, never guessed). ``gpu_count`` is
    ``gpus``. The API gives no GPU memory.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Final

from scrapers.base import (
    FetchError,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    positive,
    read_count,
    read_price,
    require,
)

TYPES_URL: Final = "https://api.linode.com/v4/linode/types"
PAGE_SIZE: Final = 500
MAX_PAGES: Final = 10

#: Model token of a GPU plan id (``g1-gpu-<token><count>-...``) -> the card's name.
_GPU_BY_TOKEN: Final[dict[str, str]] = {
    "rtx6000": "NVIDIA Quadro RTX 6000",
    "rtx4000a": "NVIDIA RTX 4000 Ada",
}
_GPU_SEGMENT_RE: Final = re.compile(r"^g\d+-gpu-(?P<segment>[a-z0-9]+)")


def gpu_name(plan_id: str) -> str:
    """``"g1-gpu-rtx6000-2"`` -> ``"NVIDIA Quadro RTX 6000"``, ``"g2-gpu-rtx4000a2-s"`` -> ``"NVIDIA RTX 4000 Ada"``.

    The id segment after ``gpu-`` is the model token, sometimes with the GPU count glued on
    ("rtx4000a2"). A token not in ``_GPU_BY_TOKEN`` is returned as is (never guessed).
    """
    match = _GPU_SEGMENT_RE.match(plan_id)
    if not match:
        return plan_id
    segment = match["segment"]
    without_count = segment.rstrip("0123456789")
    return _GPU_BY_TOKEN.get(segment) or _GPU_BY_TOKEN.get(without_count) or segment


class LinodeScraper(Scraper):
    name: ClassVar[str] = "linode"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Akamai Cloud (Linode)"
    homepage: ClassVar[str] = "https://www.linode.com/pricing/#compute-gpu"
    endpoint: ClassVar[str] = f"GET {TYPES_URL}?page_size=500 (paged)"
    source_kind: ClassVar[str] = "api"
    fixture_kind: ClassVar[str] = "recording"
    checked_by: ClassVar[str] = "recording: a go-vcr cassette of linode/linodego"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    caveats: ClassVar[str] = (
        "hourly rate up to a monthly cap; one offer for the default price (no region) plus one per "
        "region with its own price; GPU model read from the plan id"
    )

    async def fetch(self, http: Http) -> list[Any]:
        pages: list[Any] = []
        page, last = 1, 1
        while page <= last:
            body = await http.get_json(TYPES_URL, params={"page": str(page), "page_size": str(PAGE_SIZE)})
            pages.append(body)
            if page == 1:
                total = body.get("pages") if isinstance(body, dict) else None
                last = total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else 1
                if last > MAX_PAGES:
                    raise FetchError(f"{self.name}: linode/types says it has {last} pages, more than the {MAX_PAGES} allowed")
            page += 1
        return pages

    # -- parse --------------------------------------------------------------------------------
    def parse(self, raw: Any) -> list[ScrapedOffer]:
        pages = raw if isinstance(raw, list) else [raw]
        plans: list[tuple[str, Any]] = []
        for p, body in enumerate(pages):
            at = field_path("payload", p) if isinstance(raw, list) else ""
            data = require(body, "data", provider=self.name, kind=list, at=at)
            plans.extend((field_path(at, "data", i), plan) for i, plan in enumerate(data))
        offers: list[ScrapedOffer] = []
        for where, plan in plans:
            offers.extend(self._plan_offers(plan, where))
        if not offers:
            raise ParseError(f"{self.name}: no GPU plan (gpus > 0) among {len(plans)} entries of data")
        return offers

    def _plan_offers(self, plan: Any, where: str) -> list[ScrapedOffer]:
        if not isinstance(plan, dict):
            raise ParseError(f"{self.name}: {where} should be an object, got {type(plan).__name__}")
        plan_id = require(plan, "id", provider=self.name, kind=str, at=where)
        gpus, bad = read_count(plan, "gpus", at=where, strings=False)
        if not gpus and not bad:
            return []
        prices = require(plan, "price", provider=self.name, kind=dict, at=where)
        hourly, bad_price = read_price(prices, "hourly", at=field_path(where, "price"), required=True, strings=False)
        bad = bad or bad_price  # quarantines this plan's offers, not the run
        memory_mb = positive(plan.get("memory"))
        common: dict[str, Any] = {
            "sku": plan_id,
            "gpu_raw": gpu_name(plan_id),
            "gpu_count": gpus,
            "vcpus": positive(plan.get("vcpus")),
            "ram_gb": round(memory_mb / 1024, 2) if memory_mb else None,
        }
        extra = {"label": plan.get("label"), "class": plan.get("class"), "monthly_price": plan["price"].get("monthly"), **bad}
        offers = [self.offer(price_per_hour=hourly, extra=extra, **common)]
        for i, regional in enumerate(plan.get("region_prices") or []):
            at = field_path(where, "region_prices", i)
            region = require(regional, "id", provider=self.name, kind=str, at=at)
            price, bad_regional = read_price(regional.get("hourly"), at=field_path(at, "hourly"), strings=False)
            if price is not None or bad_regional:
                offers.append(
                    self.offer(region=region, price_per_hour=price,
                               extra={**extra, "monthly_price": regional.get("monthly"), **bad_regional}, **common)
                )
        return offers

