"""Compute Pulse: the per-GPU listing books of compute-pulse.com's keyless API, an aggregator.

Request: ``GET https://compute-pulse.com/api/listings?gpu=<slug>&limit=200&offset=<n>`` for each GPU
of ``GPU_SLUGS`` (no auth; the API publishes an OpenAPI document at ``/openapi.json``). The answer
is ``{"data": [...], "page": {"total", "limit", "offset", "next_offset"}, "meta": {...},
"links": {...}}``; while ``page.next_offset`` is a number past the current offset, the next page is
the same request at that offset. At most ``MAX_PAGES`` pages per GPU are read: a book longer than
that (or a page that fails after the first, or an offset that does not move) makes the answer
partial (``PartialOffers``), so the listings not read are unknown, never delisted.

Compute Pulse is an aggregator: every row is its observation of another cloud's public price
(``provider``: "Vast.ai", "Hyperstack"...). It is stored under ``computepulse`` with that cloud in
``extra["via"]`` (our provider name where we have one), so market figures count a cloud we also
collect directly once (``tracker.analysis.aggregators``).

The envelope is checked before any price is read: ``meta.price_unit`` must be "USD per GPU hour"
(the only warrant for reading ``price_per_gpu_hour`` as USD per GPU-hour) and
``meta.catalog_status`` "live_or_cached" (its documented "seed_fallback" is canned data, not an
observation); otherwise ``ParseError``. Per row: ``provider``, ``gpu_model`` ("H100", "RTX4090")
with ``gpu_variant`` ("SXM", "PCIe") and ``vram_gb`` (the GPU as printed, for the catalog),
``gpu_count`` (the instance's GPUs), ``price_per_gpu_hour`` (USD per GPU-hour, the aggregator's;
the instance's price is it times the count), ``billing_type`` (``on_demand``, ``spot``,
``reserved`` with its term from ``min_duration_hours`` when stated, ``monthly``: a one-month
commitment at its hourly price; ``custom`` terms are no comparable hourly price and are left out),
``region``, ``available`` (``null``: unknown), ``currency`` with ``price_native`` (a price the
provider quotes in another currency is stored in that currency, the aggregator's USD figure kept
in ``extra``), ``vcpus``, ``ram_gb``, ``source_url``, ``verification_level``.

Listing ids are reassigned when the aggregator refreshes its book (about hourly), so an offer's sku
is what the row says of itself: ``<via>:<gpu_model>[ <variant>]:<count>x``; rows alike but for the
price (a marketplace's many hosts) are numbered by price. A row without a provider or GPU model, or
a ``billing_type`` this parser does not know, -> ``ParseError``; a row's own price or GPU count
unreadable -> that offer is quarantined. A fractional ``gpu_count`` (a slice of one GPU) stays
fractional, marked ``fractional_gpu``.
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
    number,
    numbered_by_price,
    paged_result,
    positive,
    read_count,
    read_price,
    require_text,
    shown,
    unreadable,
)

URL = "https://compute-pulse.com/api/listings"
#: The GPU books read, by Compute Pulse's slug.
GPU_SLUGS = ("nvidia-h100", "nvidia-h200", "nvidia-b200", "nvidia-a100", "nvidia-l40s", "nvidia-rtx-4090", "amd-mi300x")
LIMIT = 200
#: Pages read at most per GPU (the H100 book held about 1,000 listings in 2026).
MAX_PAGES = 8
PRICE_UNIT = "USD per GPU hour"
LIVE_STATUS = "live_or_cached"
#: billing_type -> (kind, months); ``None``: a term this parser leaves out.
BILLING: dict[str, tuple[str, int] | None] = {"on_demand": ("on_demand", 0), "spot": ("spot", 0),
                                               "reserved": ("reserved", 0), "monthly": ("reserved", 1), "custom": None}
#: Compute Pulse's provider names (lower-cased, letters and digits) that are not ours.
VIA_ALIASES = {"vastai": "vastai", "lambdalabs": "lambda", "lambdacloud": "lambda", "datacrunch": "verda",
               "googlecloud": "gcp", "oraclecloud": "oci", "amazonwebservices": "aws", "microsoftazure": "azure",
               "ovh": "ovhcloud", "akamai": "linode", "digitaloceangradient": "digitalocean"}
#: Hours in a month of a reserved term (``min_duration_hours`` 8640 is twelve months).
HOURS_PER_TERM_MONTH = 720


def via_name(display: str) -> str:
    """Our provider name for a cloud Compute Pulse names ("Vast.ai" -> ``vastai``)."""
    key = re.sub(r"[^a-z0-9]", "", display.lower())
    return VIA_ALIASES.get(key, key)


class ComputepulseScraper(Scraper):
    name = "computepulse"
    segment = "marketplace"
    display_name = "Compute Pulse (aggregator)"
    homepage = "https://compute-pulse.com"
    endpoint = "GET https://compute-pulse.com/api/listings?gpu=<slug>&limit=200&offset=<n> (keyless JSON, paged)"
    kinds = ("on_demand", "spot", "reserved")
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = ("reference: the 2026 shape of getcomputable/gpu-index's observatory capture of /api/listings "
                  "(structure only, own values)")
    caveats = (
        "reference fixture (real 2026 shape, own values); aggregator: every row is its observation of another "
        "cloud's public price, stored under computepulse with that cloud as 'via' (counted as the cloud's in market "
        "figures where we collect it directly); per-GPU prices times the listed count; a quote in another currency "
        "stays in it; monthly plans as reserved (1 month); custom terms left out; books past "
        f"{MAX_PAGES} pages are partial"
    )

    async def fetch(self, http: Http) -> Any:
        books: dict[str, list[Any]] = {}
        incomplete: list[str] = []
        for slug in GPU_SLUGS:
            pages: list[Any] = []
            offset = 0
            while True:
                params: dict[str, str | int] = {"gpu": slug, "limit": LIMIT, "offset": offset}
                try:
                    page = await http.get_json(URL, params=params, headers={"Accept": "application/json"})
                except FetchError as exc:
                    if not pages and not books:
                        raise
                    incomplete.append(f"{slug} page {len(pages) + 1} did not answer ({exc})")
                    break
                pages.append(page)
                following = page.get("page", {}).get("next_offset") if isinstance(page, dict) else None
                if not isinstance(following, int) or isinstance(following, bool):
                    break
                if following <= offset:
                    incomplete.append(f"{slug}: next_offset did not move past {offset}")
                    break
                if len(pages) >= MAX_PAGES:
                    incomplete.append(f"{slug}: still paging after {MAX_PAGES} pages")
                    break
                offset = following
            if pages:
                books[slug] = pages
        return {"books": books, "incomplete": "; ".join(incomplete) or None}

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, dict) or not isinstance(raw.get("books"), dict) or not raw["books"]:
            raise ParseError(f"{self.name}: payload should map GPU slugs to their listing pages, got {shown(raw)}")
        offers: list[ScrapedOffer] = []
        for slug, pages in sorted(raw["books"].items(), key=lambda kv: str(kv[0])):
            if not isinstance(pages, list) or not pages:
                raise ParseError(f"{self.name}: payload.books.{slug} holds no listing page")
            for i, page in enumerate(pages):
                offers += self._page_offers(page, field_path("books", str(slug), i))
        offers = numbered_by_price(offers)
        return paged_result(self.name, offers, raw.get("incomplete"), "payload holds no listing (every data list is empty)")

    def _page_offers(self, page: Any, where: str) -> list[ScrapedOffer]:
        if not isinstance(page, dict):
            raise ParseError(f"{self.name}: {where} should be an object, got {type(page).__name__}")
        meta = page.get("meta")
        if not isinstance(meta, dict):
            raise ParseError(f"{self.name}: {where} has no 'meta' object")
        if meta.get("price_unit") != PRICE_UNIT:
            raise ParseError(f"{self.name}: {where}.meta.price_unit is {shown(meta.get('price_unit'))}, not {PRICE_UNIT!r}")
        if meta.get("catalog_status") != LIVE_STATUS:
            raise ParseError(f"{self.name}: {where}.meta.catalog_status is {shown(meta.get('catalog_status'))}, "
                             f"not {LIVE_STATUS!r} (canned fallback data is no observation)")
        data = page.get("data")
        if not isinstance(data, list):
            raise ParseError(f"{self.name}: {where} has no 'data' list")
        if not isinstance(page.get("page"), dict):
            raise ParseError(f"{self.name}: {where} has no 'page' object (paging changed)")
        return [o for i, row in enumerate(data) if (o := self._row_offer(row, field_path(where, "data", i))) is not None]


    def _row_offer(self, row: Any, at: str) -> ScrapedOffer | None:
        if not isinstance(row, dict):
            raise ParseError(f"{self.name}: {at} should be an object, got {type(row).__name__}")
        cloud = require_text(row, "provider", provider=self.name, at=at)
        model = require_text(row, "gpu_model", provider=self.name, at=at)
        billing = require_text(row, "billing_type", provider=self.name, at=at)
        if billing not in BILLING:
            raise ParseError(f"{self.name}: {field_path(at, 'billing_type')} is {billing!r}, not one of {', '.join(BILLING)}")
        term = BILLING[billing]
        if term is None:
            return None  # bespoke terms: no comparable hourly price
        kind, months = term
        extra: dict[str, Any] = {"billing_type": billing}
        if billing == "monthly":
            extra["monthly_plan"] = True
        elif kind == "reserved":
            hours = positive(row.get("min_duration_hours"))
            if hours:
                months = max(1, round(hours / HOURS_PER_TERM_MONTH))
            else:
                extra["term_unstated"] = True
        count, bad = read_count(row, "gpu_count", at=at, zero=False, strings=False)
        currency = row.get("currency")
        native = number(row.get("price_native"))
        if isinstance(currency, str) and re.fullmatch(r"[A-Z]{3}", currency) and currency != "USD" and native:
            per_gpu, bad_price = read_price(row, "price_native", at=at, strings=False)
            extra["aggregator_usd_per_gpu_hour"] = number(row.get("price_per_gpu_hour"))
        else:
            currency = "USD"
            per_gpu, bad_price = read_price(row, "price_per_gpu_hour", at=at, required=True, strings=False)
        if per_gpu == 0:
            per_gpu, bad_price = None, unreadable("price", field_path(at, "price_per_gpu_hour"), 0, "a zero price")
        bad = bad or bad_price
        if not bad and count != int(count):
            extra["fractional_gpu"] = True  # a slice of one GPU: never stored as a whole one
        via = via_name(cloud)
        variant = row.get("gpu_variant") if isinstance(row.get("gpu_variant"), str) else ""
        name = f"{model} {variant}".strip()
        vram = positive(row.get("vram_gb"))
        region = row.get("region") if isinstance(row.get("region"), str) and row["region"] != "unspecified" else ""
        available = row.get("available")
        return self.offer(
            sku=f"{via}:{name}:{int(count) if not bad and count == int(count) else count}x",
            gpu_raw=name,
            gpu_count=count if not bad else 1,
            price_per_hour=None if per_gpu is None else round(per_gpu * (count if count > 0 else 1), 6),
            kind=kind,
            term_months=months,
            region=region,
            currency=currency,
            gpu_memory_gb=vram,
            vcpus=positive(row.get("vcpus")),
            ram_gb=positive(row.get("ram_gb")),
            available=available if isinstance(available, bool) else None,
            extra={
                "via": via,
                "provider_name": cloud,
                "price_per_gpu_hour": per_gpu,
                "interconnect": row.get("interconnect"),
                "source_kind": row.get("source_kind"),
                "source_url": row.get("source_url"),
                "verification_level": row.get("verification_level"),
                "listed_at": row.get("fetched_at"),
                **extra,
                **bad,
            },
        )
