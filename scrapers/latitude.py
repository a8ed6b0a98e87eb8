"""Latitude.sh: bare-metal GPU server plans read from the Next.js flight data of its pricing page.

Called: ``GET https://www.latitude.sh/pricing`` once per run, after checking robots.txt; no auth.
The page's data travels in ``self.__next_f.push([1, "<chunk>"])`` scripts (see
``scrapers._nextjs``); in that stream a ``"plansData"`` object holds the
plan catalogue: lists (``"servers"``...) of ``{"id", "type": "plans", "attributes": {"slug",
"name", "specs": {"cpu", "memory", "drives", "nics", "gpu"}, "regions": [...]}}``. The parser
decodes that object as JSON (no HTML parser, no pattern over the text).

Read per plan: ``specs.gpu`` (``count``, ``type``, ``vram_per_gpu``; an empty or null ``gpu`` is a
CPU server and is skipped), the CPU cores and the memory total. Per region (``name``: "United
States", "Brazil"...): ``stock_level`` ("high", "medium", "low", "unavailable") and ``pricing``,
one ``{"hour", "month", "year"}`` per currency. Prices are for the whole server (all its GPUs).

* ``hour`` -> ``on_demand``; ``month`` -> ``reserved`` with ``term_months`` 1, stored at the month
  over Latitude's 730 hours (the month price is kept in ``extra``). The year price is kept in
  ``extra`` only (its terms are not printed beside it).
* USD only: the page also prints BRL list prices (set by Latitude, not converted); they are
  kept in ``extra["brl"]`` and never stored as prices.
* A null or 0 price means that term is not offered in that region: no offer (a region with
  neither is skipped). ``available`` is ``stock_level != "unavailable"``; the stock level (``extra["stock"]``) and the
  sites with stock (``locations.in_stock``) go to ``extra``.

No flight data, no ``plansData``, no plan list, or no GPU plan at all -> ``ParseError``; a
non-empty ``gpu`` object without a count or type, or a GPU plan whose regions are not a list ->
``ParseError`` (a GPU plan would otherwise vanish). A plan listed twice is read once.
"""

from __future__ import annotations

import json
from typing import Any

from scrapers._nextjs import flight_stream
from scrapers.base import (
    REFERENCE_CAPTURE,
    STOCK_LEVEL,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    dig,
    number,
    positive,
    shown,
)
from scrapers.html import layout_changed
from tracker.kinds import HOURS_PER_MONTH

PRICING_URL = "https://www.latitude.sh/pricing"
_MARKER = '"plansData":'


class LatitudeScraper(Scraper):
    name = "latitude"
    segment = "neocloud"
    display_name = "Latitude.sh"
    homepage = "https://www.latitude.sh/pricing"
    endpoint = "GET https://www.latitude.sh/pricing (public page, Next.js flight data 'plansData')"
    hosts = ("latitude.sh",)  #: the bare domain too, should the page be served or redirected there
    kinds = ("on_demand", "reserved")
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = REFERENCE_CAPTURE
    caveats = "reference fixture (real 2026 shape, own values); bare-metal GPU servers (whole server); monthly price as reserved (1 month, /730 h); USD only (BRL list prices kept aside)"

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        plans = self._plans(flight_stream(self.name, raw))
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        gpu_plans = 0
        for plan in plans:
            attrs = plan.get("attributes") if isinstance(plan, dict) else None
            if not isinstance(attrs, dict) or not isinstance(attrs.get("slug"), str):
                raise ParseError(f"{self.name}: a plan has no attributes.slug: {shown(plan)}")
            slug = attrs["slug"]
            gpu = dig(attrs, "specs", "gpu")
            if not gpu:  # {} or null: a CPU server
                continue
            if slug in seen:
                continue
            seen.add(slug)
            gpu_plans += 1
            offers.extend(self._plan_offers(slug, attrs, gpu))
        if not gpu_plans:
            raise ParseError(f"{self.name}: 'plansData' lists no GPU plan ({len(plans)} plans)")
        return offers

    def _plans(self, stream: str) -> list[Any]:
        """Every plan object of every ``plansData`` in the stream (flight data may repeat it)."""
        decoder = json.JSONDecoder()
        plans: list[Any] = []
        found = False
        for text in (stream, stream.replace('\\"', '"').replace("\\\\", "\\")):
            start = text.find(_MARKER)
            while start != -1:
                found = True
                try:
                    data, _ = decoder.raw_decode(text, start + len(_MARKER))
                except ValueError:
                    raise layout_changed(self.name, "'plansData' is not a JSON object") from None
                if not isinstance(data, dict):
                    raise layout_changed(self.name, f"'plansData' should be an object, got {type(data).__name__!r}")
                plans.extend(p for v in data.values() if isinstance(v, list) for p in v)
                start = text.find(_MARKER, start + 1)
            if found:
                break
        if not found:
            raise layout_changed(self.name, "no 'plansData' in the page's flight data")
        if not plans:
            raise layout_changed(self.name, "'plansData' holds no plan list")
        return plans

    def _plan_offers(self, slug: str, attrs: dict[str, Any], gpu: Any) -> list[ScrapedOffer]:
        count = number(dig(gpu, "count"))
        gpu_type = dig(gpu, "type")
        if not isinstance(gpu, dict) or count is None or count < 1 or not isinstance(gpu_type, str) or not gpu_type.strip():
            raise ParseError(f"{self.name}: plan {slug!r} has a GPU spec without a count and type: {shown(gpu)}")
        regions = attrs.get("regions")
        if not isinstance(regions, list):
            raise ParseError(f"{self.name}: GPU plan {slug!r} has no 'regions' list")
        cores = number(dig(attrs, "specs", "cpu", "cores"))
        sockets = number(dig(attrs, "specs", "cpu", "count")) or 1
        common = {
            "gpu_raw": gpu_type.strip(),
            "gpu_count": int(count),
            "gpu_memory_gb": positive(gpu.get("vram_per_gpu")),
            "vcpus": cores * sockets if cores else None,
            "ram_gb": positive(dig(attrs, "specs", "memory", "total")),
            "currency": "USD",
        }
        offers = []
        for i, region in enumerate(regions):
            name = dig(region, "name")
            if not isinstance(name, str) or not name.strip():
                raise ParseError(f"{self.name}: plan {slug!r} regions[{i}] has no 'name'")
            usd = dig(region, "pricing", "USD")
            stock = dig(region, "stock_level")
            extra = {
                "plan": attrs.get("name"),
                STOCK_LEVEL: stock,
                "in_stock_sites": dig(region, "locations", "in_stock"),
                "brl": dig(region, "pricing", "BRL"),
                "year_price": dig(usd, "year"),
                "interconnect": gpu.get("interconnect"),
            }
            available = None if not isinstance(stock, str) else stock.lower() != "unavailable"
            hour, month = number(dig(usd, "hour")), number(dig(usd, "month"))
            if hour:
                offers.append(self.offer(**common, sku=slug, region=name.strip(), price_per_hour=hour, kind="on_demand",
                                         available=available, extra=extra))
            if month:
                offers.append(self.offer(**common, sku=slug, region=name.strip(), price_per_hour=round(month / HOURS_PER_MONTH, 6),
                                         kind="reserved", term_months=1, available=available,
                                         extra={**extra, "price_per_month": month, "commitment": "one month"}))
        return offers
