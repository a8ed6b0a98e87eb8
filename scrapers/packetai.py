"""packet.ai: the machine-readable price feed the provider publishes for price aggregators.

Request: ``GET https://raw.githubusercontent.com/KavSh890/packet.ai-Pricing/main/product_detail.json``
(no auth). The provider maintains that file for aggregators (it offered it to gpuhunt in
dstackai/gpuhunt#261 as "a machine-readable pricing feed that is updated regularly"). Shape:
``{"on_demand": [row, ...], "monthly": [row, ...]}``; a row has ``gpu_type`` ("NVIDIA B200"),
``gpu_count``, ``plan_type`` ("dynamic" / "dedicated"), ``vram_gb`` / ``ram_gb`` (the whole
instance), ``vcpu``, ``storage_gb``, ``region`` ("Los Angeles, US (LA-1)", "TBC"),
``stock_status`` ("in_stock", "out_of_stock", "launching_soon") and its price:

* on-demand rows: ``price_per_gpu_hour_usd``. The feed's current form prints it per GPU (the
  same figure on the 1x, 2x, 4x and 8x rows of one plan); an earlier form printed the whole
  instance in that field (the 2x row at twice the 1x row). The parser tells the two apart per GPU
  model and plan: when every multi-GPU row of a plan costs exactly its count times the plan's 1x
  row, the figures are whole-instance prices; otherwise they are per GPU, as the field says.
  ``price_per_hour`` is always the whole instance, the per-GPU figure kept in ``extra``;
* monthly rows: ``price_per_month_usd`` for the whole instance and ``effective_hourly_usd`` (that
  month at 730 hours). They are a one-month commitment: ``reserved`` with ``term_months`` 1 at the
  effective hourly price (derived as month / 730 when only the month is given);
* ``launching_soon`` rows have no price (``null``): listed without a price (never 0) and
  unavailable. ``available`` is True for ``in_stock``, False otherwise; the status is kept (``extra["stock"]``).

Plans "dynamic" and "dedicated" are separate on-demand products (sku ``<gpu>:<plan>:<n>x``). A row
without a GPU count is read as one GPU at the per-GPU price, marked ``gpu_count_unstated``; a
fractional count (a slice of one GPU) stays fractional, marked ``fractional_gpu``, never a whole GPU.
The feed is in USD (its field names say so). Not an object, no ``on_demand`` list, a list-valued
section this parser does not know (a new price tier would be dropped silently), a row that is not
an object or has no ``gpu_type`` -> ``ParseError``; a row's own unreadable price -> quarantined.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from scrapers.base import (
    STOCK_LEVEL,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    number,
    positive,
    read_price,
    shown,
)
from tracker.kinds import HOURS_PER_MONTH

URL = "https://raw.githubusercontent.com/KavSh890/packet.ai-Pricing/main/product_detail.json"
SECTIONS = ("on_demand", "monthly")
STOCK = {"in_stock": True, "out_of_stock": False, "launching_soon": False, "sold_out": False}
_COUNTRY_RE = re.compile(r",\s*([A-Z]{2})\b")
#: Country words in the feed that are not ISO 3166 codes.
_ISO = {"UK": "GB"}


class PacketaiScraper(Scraper):
    name = "packetai"
    segment = "marketplace"
    display_name = "packet.ai"
    homepage = "https://packet.ai/pricing"
    endpoint = "GET https://raw.githubusercontent.com/KavSh890/packet.ai-Pricing/main/product_detail.json (the provider's feed)"
    kinds = ("on_demand", "reserved")
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = "reference: the shape of the provider's published feed KavSh890/packet.ai-Pricing (own values)"
    caveats = (
        "reference fixture (real 2026 shape, own values); the provider's own aggregator feed; monthly plans as reserved (1 month) at their effective hourly price; "
        "'launching soon' rows listed without a price"
    )

    async def fetch(self, http: Http) -> Any:
        return await http.get_json(URL, headers={"Accept": "application/json"})

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, dict):
            raise ParseError(f"{self.name}: payload should be the feed object, got {type(raw).__name__}")
        unknown = sorted(k for k, v in raw.items() if isinstance(v, list) and k not in SECTIONS)
        if unknown:
            raise ParseError(f"{self.name}: the feed has section(s) this parser does not read: {unknown}")
        if not isinstance(raw.get("on_demand"), list) or not raw["on_demand"]:
            raise ParseError(f"{self.name}: the feed has no 'on_demand' list")
        monthly = raw.get("monthly", [])
        if not isinstance(monthly, list):
            raise ParseError(f"{self.name}: 'monthly' should be a list, got {type(monthly).__name__}")
        on_demand = [self._row(r, field_path("on_demand", i)) for i, r in enumerate(raw["on_demand"])]
        whole_groups = self._whole_instance_groups(on_demand)
        offers: list[ScrapedOffer] = []
        seen: set[tuple[str, str, str]] = set()
        for row, at in on_demand:
            offers.append(self._on_demand(row, at, whole_groups))
        for i, r in enumerate(monthly):
            row, at = self._row(r, field_path("monthly", i))
            offers.append(self._monthly(row, at))
        unique = []
        for o in offers:
            key = (o.sku, o.region, o.kind)
            if key not in seen:
                seen.add(key)
                unique.append(o)
        return unique

    def _row(self, row: Any, at: str) -> tuple[dict[str, Any], str]:
        if not isinstance(row, dict):
            raise ParseError(f"{self.name}: {at} should be an object, got {type(row).__name__}")
        gpu = row.get("gpu_type")
        if not isinstance(gpu, str) or not gpu.strip():
            raise ParseError(f"{self.name}: {at}.gpu_type should be a non-empty string, got {shown(gpu)}")
        return row, at

    @staticmethod
    def _count(row: dict[str, Any]) -> float | None:
        """The row's GPU count (a fraction for a slice of one GPU), or None when it states none."""
        count = number(row.get("gpu_count"))
        return (int(count) if count == int(count) else count) if count is not None and count > 0 else None

    def _whole_instance_groups(self, rows: list[tuple[dict[str, Any], str]]) -> set[tuple[str, str]]:
        """(gpu_type, plan_type) groups whose ``price_per_gpu_hour_usd`` figures are whole-instance
        prices: every multi-GPU row is its count times the group's 1x price (to the cent)."""
        groups: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
        for row, _ in rows:
            count, price = self._count(row), number(row.get("price_per_gpu_hour_usd"))
            if count is not None and price is not None and price > 0:
                groups[(row["gpu_type"], str(row.get("plan_type")))].append((count, price))
        whole = set()
        for key, prices in groups.items():
            singles = {p for n, p in prices if n == 1}
            multi = [(n, p) for n, p in prices if n > 1]
            if len(singles) == 1 and multi:
                single = singles.pop()
                if all(abs(p - n * single) <= 0.011 for n, p in multi):
                    whole.add(key)
        return whole

    def _common(self, row: dict[str, Any], section: str) -> dict[str, Any]:
        count = self._count(row)
        gpu = row["gpu_type"].strip()
        plan = str(row.get("plan_type") or "standard")
        region = row.get("region") if isinstance(row.get("region"), str) and row["region"].strip() else ""
        country = _COUNTRY_RE.search(region)
        status = row.get("stock_status")
        vram = positive(row.get("vram_gb"))
        return {
            "sku": f"{gpu}:{plan}:{count if count else '?'}x",
            "gpu_raw": gpu,
            "gpu_count": count or 1,
            "region": region.strip(),
            "country": _ISO.get(country.group(1), country.group(1)) if country else None,
            "gpu_memory_gb": vram / count if vram and count else None,
            "vcpus": positive(row.get("vcpu")),
            "ram_gb": positive(row.get("ram_gb")),
            "currency": "USD",
            "available": STOCK.get(status) if isinstance(status, str) else None,
            "extra": {
                "plan_type": plan,
                STOCK_LEVEL: status,
                "storage_gb": row.get("storage_gb"),
                "section": section,
                **({"gpu_count_unstated": True} if count is None else {}),
                **({"fractional_gpu": True} if count is not None and count != int(count) else {}),
                **({"launching_soon": True} if status == "launching_soon" else {}),
            },
        }

    def _on_demand(self, row: dict[str, Any], at: str, whole_groups: set[tuple[str, str]]) -> ScrapedOffer:
        common = self._common(row, "on_demand")
        figure, bad = read_price(row, "price_per_gpu_hour_usd", at=at, strings=False)
        count = common["gpu_count"]
        whole_instance = (row["gpu_type"], str(row.get("plan_type"))) in whole_groups
        if figure is None or bad:
            price, per_gpu = figure, None
        elif whole_instance:
            price, per_gpu = figure, round(figure / count, 6)
        else:
            price, per_gpu = round(figure * count, 6), figure
        extra = {**common.pop("extra"), "price_per_gpu_hour": per_gpu, "price_basis": "instance" if whole_instance else "per GPU", **bad}
        if price is None and not bad:
            extra["listed_without_price"] = True
        return self.offer(**common, price_per_hour=price, kind="on_demand", extra=extra)

    def _monthly(self, row: dict[str, Any], at: str) -> ScrapedOffer:
        common = self._common(row, "monthly")
        hourly, bad = read_price(row, "effective_hourly_usd", at=at, strings=False)
        month, bad_month = read_price(row, "price_per_month_usd", at=at, strings=False)
        extra = {**common.pop("extra"), "price_per_month": month, "commitment": "one month"}
        if hourly is None and not bad and month is not None and not bad_month:
            hourly, extra["effective_hourly_derived"] = round(month / HOURS_PER_MONTH, 6), True
        elif hourly is None and not bad:
            bad = bad_month
        if hourly is None and not bad:
            extra["listed_without_price"] = True
        return self.offer(**common, price_per_hour=hourly, kind="reserved", term_months=1, extra={**extra, **bad})
