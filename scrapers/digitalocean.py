"""DigitalOcean GPU Droplet prices: the public pricing documentation without a token, the API with one.

One source per run, never both (so no offer is counted twice):

* **No token (the default)**: ``GET https://docs.digitalocean.com/products/droplets/details/pricing/``
  once, after checking robots.txt. The page is static HTML (no script renders its prices): under
  the section headings "On-Demand GPU Droplet Pricing" and "Spot GPU Droplet Pricing" it prints a
  ``<table>`` with the columns "GPU" and "Price", a row per Droplet plan: "NVIDIA H100" (one GPU)
  or "NVIDIA H100 (8x)" (eight), "$... per hour" for the whole Droplet. The section heading
  (the ``h2`` before the table) gives the kind; the "Contract GPU Droplet Pricing" table (priced
  per contract, "after contacting sales") and any other section are not read. ``sku`` is the row
  name as printed ("NVIDIA H100 (8x)"), ``gpu_raw`` the name without the count and without a
  variant after a comma ("NVIDIA B300, air-cooled" -> "NVIDIA B300", the variant kept in
  ``extra["variant"]``). The page names no region and no vCPUs or RAM. A price cell that holds
  no price quarantines that row with the column, row and section named; "contact sales" is
  listed without a price. No such table, or none under an on-demand or spot heading ->
  ``ParseError("digitalocean: layout changed: ...")``.

  Why this page and not the marketing page ``www.digitalocean.com/pricing/gpu-droplets``: that
  one has no public 2026 capture to prove a parser on, and its last public capture (a 2025
  Wayback excerpt) shows server-rendered cards with generated class names that mix a
  struck-through list price, a promotional price ("$3.39/GPU/hour*") and a 12-month reserved
  price per GPU for one plan; the documentation page prints one price per plan and kind in a
  plain HTML table, has a public 2026 capture (named in the bundled recording's manifest), and is
  where the API documentation sends readers for GPU Droplet list prices.

* **With ``DIGITALOCEAN_TOKEN`` set** (regions, slugs, vCPUs, RAM, availability):
  ``GET https://api.digitalocean.com/v2/sizes?per_page=200`` with ``Authorization: Bearer <token>``
  (a read-only personal access token is enough), following ``links.pages.next`` (a full URL)
  until there is none (at most ``MAX_PAGES`` pages). ``fetch`` returns the list of page objects
  ``{"sizes": [...], "links": {...}, "meta": {...}}``. Extracted: sizes with a ``gpu_info``
  object (CPU sizes have none): ``slug`` (sku, e.g. "gpu-h100x8-640gb"), ``gpu_info.model``
  (gpu_raw as given, e.g. "nvidia_h100", "amd_mi300x"), ``gpu_info.count``, ``gpu_info.vram
  {amount, unit}`` (VRAM of all the GPUs together, divided by the count for the per-GPU memory),
  ``vcpus``, ``memory`` (MiB), ``price_hourly`` (USD for the whole Droplet), ``available`` and
  ``regions[]``. One offer per region slug ("nyc1"); a size with no region cannot be created
  anywhere and is skipped, as is a size whose ``price_hourly`` is 0/null. A size whose
  ``price_hourly`` or ``gpu_info.count`` is missing, no number or negative is quarantined with the
  field named; the other sizes are kept. The API lists on-demand sizes only.

  The two sources name plans differently (the API's slug per region, the page's printed name
  without a region), so a store that switches source sees one set of offers end and the other
  begin. Replay always reads the page (its recording is the page).
"""

from __future__ import annotations

import re
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
    unreadable,
)

PRICING_URL = "https://docs.digitalocean.com/products/droplets/details/pricing/"
SIZES_URL = "https://api.digitalocean.com/v2/sizes"
#: "NVIDIA H100 (8x)": a plan of 8 GPUs; no "(Nx)" means one.
_COUNT_SUFFIX = re.compile(r"^(?P<name>.*?)\s*\(\s*(?P<count>\d+)\s*x\s*\)\s*$", re.IGNORECASE)
_ON_DEMAND = re.compile(r"\bon[\s\-‐–]*demand\b", re.IGNORECASE)
_SPOT = re.compile(r"\bspot\b", re.IGNORECASE)
PER_PAGE = 200
MAX_PAGES = 20
_UNIT_TO_GB = {"gib": 1.0, "gb": 1.0, "mib": 1 / 1024, "mb": 1 / 1024, "tib": 1024.0, "tb": 1024.0}


class DigitaloceanScraper(Scraper):
    name = "digitalocean"
    segment = "neocloud"
    display_name = "DigitalOcean"
    homepage = "https://www.digitalocean.com/pricing/gpu-droplets"
    endpoint = (
        f"GET {PRICING_URL} (HTML tables, no key); with DIGITALOCEAN_TOKEN: "
        "GET https://api.digitalocean.com/v2/sizes?per_page=200"
    )
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = "reference: the shape of DigitalOcean's public Droplet pricing page (own values)"
    optional_credentials = ("DIGITALOCEAN_TOKEN",)
    kinds = ("on_demand", "spot")
    caveats = (
        "GPU Droplets only (not the AMD Developer Cloud); price includes the boot and scratch disks; without a token "
        "from the pricing documentation (on-demand and spot, no region), with one from the API (on-demand per region)"
    )

    def keyed(self) -> bool:
        """Whether this run reads the API: a token set, and not a replay (whose recording is the page)."""
        return not self.replay and bool(self.env.get("DIGITALOCEAN_TOKEN"))

    async def fetch(self, http: Http) -> Any:
        if not self.keyed():
            return await http.get_page(PRICING_URL)
        return await self._fetch_api(http)

    async def _fetch_api(self, http: Http) -> list[Any]:
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
        if isinstance(raw, (str, bytes)):
            return self._parse_page(raw)
        return self._parse_api(raw)

    # --- the pricing documentation page ------------------------------------------------------

    def _parse_page(self, raw: str | bytes) -> list[ScrapedOffer]:
        from scrapers.html import (
            body_rows,
            find_tables,
            header_index,
            layout_changed,
            page_soup,
            text_of,
        )

        doc = page_soup(self.name, raw)
        tables = find_tables(doc, "GPU", "Price")
        if not tables:
            raise layout_changed(self.name, "no GPU price table (columns 'GPU' and 'Price')")
        offers: dict[tuple[str, str], ScrapedOffer] = {}
        sections: list[str] = []
        for table in tables:
            heading = table.find_previous("h2")
            section = text_of(heading).removesuffix("public").strip() if heading is not None else ""
            sections.append(section or "(no heading)")
            kind = "spot" if _SPOT.search(section) else "on_demand" if _ON_DEMAND.search(section) else None
            if kind is None:
                continue  # contract pricing ("after contacting sales") or another section
            col = header_index(table, "GPU", "Price", provider=self.name)
            for row in body_rows(table):
                cells = [text_of(c) for c in row]
                if len(cells) <= max(col.values()) or not cells[col["GPU"]]:
                    raise layout_changed(self.name, f"a row of {section!r} has no GPU name or price cell: {cells}")
                offer = self._page_offer(cells[col["GPU"]], cells[col["Price"]], kind, section)
                key = (offer.sku, offer.kind)
                if key in offers:
                    if offers[key].price_per_hour != offer.price_per_hour:
                        raise layout_changed(self.name, f"{offer.sku!r} is listed twice with different {kind} prices")
                    continue
                offers[key] = offer
        if not offers:
            raise layout_changed(self.name, f"no 'GPU' | 'Price' table under an on-demand or spot heading (headings: {', '.join(map(repr, sections))})")
        return list(offers.values())

    def _page_offer(self, name: str, text: str, kind: str, section: str) -> ScrapedOffer:
        from scrapers.html import hourly, read_money

        match = _COUNT_SUFFIX.match(name)
        base, count = (match.group("name"), int(match.group("count")[:5])) if match else (name, 1)
        gpu_raw, _, variant = (part.strip() for part in base.partition(","))
        where = f"'Price' of {name!r} in {section!r}"
        money, bad = read_money(text, where, required=True)
        if not 0 < count <= 1024:  # "(0x)" or a count no Droplet has: this row is quarantined
            count, bad = 0, unreadable("GPU count", f"'GPU' of {name!r} in {section!r}", name, "not a plausible count")
        extra: dict[str, Any] = {"price_basis": "per Droplet-hour", "source": "pricing documentation"}
        if variant:
            extra["variant"] = variant
        price: float | None = None
        if money is None and re.search(r"\bcontact", text, re.IGNORECASE):
            bad, extra["contact_sales"] = {}, True  # "Per contract after contacting sales"
        elif money is not None and money.amount is None:
            extra["contact_sales"] = True
        elif money is not None:
            price = round(hourly(money, assume="hour"), 6)
        return self.offer(
            sku=name,
            gpu_raw=gpu_raw or base,
            gpu_count=count,
            kind=kind,
            price_per_hour=price,
            currency=money.currency if money is not None else "USD",
            extra={**extra, **bad},
        )

    # --- the API -----------------------------------------------------------------------------

    def _parse_api(self, raw: Any) -> list[ScrapedOffer]:
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
