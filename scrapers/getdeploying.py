"""GetDeploying: the per-GPU price tables of https://getdeploying.com (HTML, no auth), an aggregator.

What is called
    ``GET https://getdeploying.com/gpus/<slug>`` for each GPU page in ``GPU_PAGES`` (after checking
    robots.txt: disallowed -> ``RobotsDisallowed``, the run is skipped). No credentials.

What is extracted
    Each page lists the clouds that rent that GPU, one row per instance and billing option. The
    table is found by its header cells: "Provider", "GPUs", "Billing" and a price column,
    "$/GPU/h" (per GPU-hour) or, without one, "Total/h" (the whole instance); "VRAM", "vCPUs"
    and "RAM" are read when present. None -> ``ParseError("getdeploying: layout changed: ...")``.

    GetDeploying is an aggregator: every row is another cloud's price. It is stored under
    ``getdeploying`` with the cloud it names in ``extra["via"]`` (our provider name where we
    have one: "Lambda Labs" -> ``lambda``, "Vast.ai" -> ``vastai``), so market figures count a
    cloud we also collect directly once (``tracker.analysis.aggregators``). The sku is
    ``<via>:<GPU cell>``; rows of one page still sharing an identity are numbered by price.

    * GPU cell "8x H100 SXM5": 8 GPUs of "H100 SXM5" (a cloud's instance type in parentheses
      after it goes to ``extra["instance_type"]``); without a "Nx" count the row is read as
      one GPU at its per-GPU price (``extra["gpu_count_stated"] = False``), and with only a
      "Total/h" price it cannot be split, so it is quarantined (the reason names the cell).
    * "VRAM" is the instance's, divided by the count for ``gpu_memory_gb``; a slice (VRAM below
      the whole card) is left for the catalog to report unmapped.
    * "Billing": "Spot", "Preemptible" or "Interruptible" -> spot; "On-Demand" or "Pay-as-you-go"
      -> on demand ("No term commitments" is not a commitment); "Reserved"/"contract"/"commit" -> reserved with the printed term ("6-month", "(1yr)"), else ``term_unstated``;
      anything else on demand. The billing text is kept in ``extra["billing"]``.
    * A price cell with no price ("Contact sales") lists the offer without one; text that is no
      price quarantines that row alone. No region is printed.
"""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    numbered_by_price,
    unreadable,
)
from scrapers.html import (
    body_rows,
    cell_field,
    column_index,
    find_tables,
    hourly,
    layout_changed,
    page_soup,
    parse_gb,
    parse_number,
    read_money,
    text_of,
)

BASE_URL = "https://getdeploying.com/gpus/"
#: The GPU pages read, by slug (each page is one GPU model's table of clouds).
GPU_PAGES = ("nvidia-h100", "nvidia-h200", "nvidia-a100", "amd-mi300x")
#: GetDeploying's cloud names (lower-cased, without spaces and punctuation) that are not ours.
VIA_ALIASES = {"lambdalabs": "lambda", "lambdacloud": "lambda", "googlecloud": "gcp", "oraclecloud": "oci",
               "amazonwebservices": "aws", "microsoftazure": "azure", "ovh": "ovhcloud", "akamai": "linode",
               "akamaicloud": "linode", "vast": "vastai"}
_INSTANCE = re.compile(r"\s*\(([^()]+)\)\s*$")
_COUNT = re.compile(r"^\s*(\d+)\s*[x×]\s*", re.IGNORECASE)
_SPOT = re.compile(r"spot|preemptible|interruptible", re.IGNORECASE)
_ON_DEMAND = re.compile(r"on[\s-]*demand|pay[\s-]*as[\s-]*you[\s-]*go", re.IGNORECASE)
_RESERVED = re.compile(r"reserv|contract|commit", re.IGNORECASE)
_TERM = re.compile(r"(\d+)\s*-?\s*(years?|yrs?|y|months?|mos?)\b", re.IGNORECASE)


def via_name(display: str) -> str:
    """Our provider name for a cloud GetDeploying names ("Lambda Labs" -> ``lambda``)."""
    key = re.sub(r"[^a-z0-9]", "", display.lower().replace("sponsored", ""))
    return VIA_ALIASES.get(key, key)


def billing_kind(text: str) -> tuple[str, int, dict[str, Any]]:
    """(kind, term_months, extra) of a billing cell."""
    if _SPOT.search(text):
        return "spot", 0, {}
    if _ON_DEMAND.search(text):  # "On-Demand ... No term commitments."
        return "on_demand", 0, {}
    if _RESERVED.search(text):
        m = _TERM.search(text)
        if m is None:
            return "reserved", 0, {"term_unstated": True}
        n = int(m.group(1))
        return "reserved", n * 12 if m.group(2).lower().startswith("y") else n, {}
    return "on_demand", 0, {}


class GetdeployingScraper(Scraper):
    name = "getdeploying"
    segment = "marketplace"
    display_name = "GetDeploying (aggregator)"
    homepage = "https://getdeploying.com"
    endpoint = "GET https://getdeploying.com/gpus/<gpu> (HTML pages: " + ", ".join(GPU_PAGES) + ")"
    source_kind = "page"
    fixture_kind = "handmade"
    checked_by = "public client: thatkavish/OpenComputePrices collectors/getdeploying.py (MIT) reads this table; our fixture is handmade around its columns, unproven against the live site"
    kinds = ("on_demand", "spot", "reserved")
    caveats = (
        "aggregator: every row is another cloud's price, stored under getdeploying with that cloud as 'via' "
        "(counted as the cloud's in market figures where we collect it directly); per-GPU prices times the "
        "printed GPU count; reserved terms as printed; no region"
    )

    async def fetch(self, http: Http) -> dict[str, str]:
        return {slug: await http.get_page(BASE_URL + slug) for slug in GPU_PAGES}

    def _row(self, cells: list[str], col: dict[str, int], slug: str) -> ScrapedOffer | None:
        def cell(label: str) -> str:
            i = col.get(label)
            return cells[i] if i is not None and i < len(cells) else ""

        cloud, detail = cell("Provider"), cell("GPUs")
        if not cloud:
            return None
        via = via_name(cloud)
        m = _COUNT.match(detail)
        count = float(m.group(1)) if m else 1.0
        gpu_raw = (detail[m.end():] if m else detail).strip()
        kind, term, extra = billing_kind(cell("Billing"))
        extra = {**extra, "via": via, "provider_name": cloud, "billing": cell("Billing"), "page": slug}
        if itype := _INSTANCE.search(gpu_raw):  # "H200 (a3-ultragpu-8g)": the cloud's instance type
            gpu_raw, extra["instance_type"] = gpu_raw[:itype.start()].strip(), itype.group(1)
        gpu_raw = gpu_raw or slug.split("-", 1)[-1].upper()
        if m is None:
            extra["gpu_count_stated"] = False
        where = cell_field("$/GPU/h" if "$/GPU/h" in col else "Total/h", f"{cloud} {detail}".strip())
        money, bad = read_money(cell("$/GPU/h") if "$/GPU/h" in col else cell("Total/h"), where)
        if money is None and not bad:
            return None  # not offered
        price: float | None = None
        if money is not None and money.amount is not None:
            price = hourly(money) * count if "$/GPU/h" in col else hourly(money)
            if "$/GPU/h" not in col and m is None:
                price, bad = None, unreadable("GPU count", cell_field("GPUs", cloud), detail, "no count beside a whole-instance price")
        vram = parse_gb(cell("VRAM")) if "VRAM" in col else None
        return self.offer(
            sku=f"{via}:{detail or gpu_raw}", gpu_raw=gpu_raw, gpu_count=count, price_per_hour=price, kind=kind,
            term_months=term, gpu_memory_gb=vram / count if vram else None, vcpus=parse_number(cell("vCPUs")) or None,
            ram_gb=parse_gb(cell("RAM")) if "RAM" in col else None, extra={**extra, **bad},
        )

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, dict) or not raw:
            raise ParseError(f"{self.name}: payload should map GPU pages to their HTML, got {type(raw).__name__}")
        offers: list[ScrapedOffer] = []
        for slug, html in sorted(raw.items(), key=lambda kv: str(kv[0])):
            if not isinstance(html, (str, bytes)) or not html.strip():
                raise ParseError(f"{self.name}: payload page {slug!s} should be its HTML text, got {type(html).__name__}")
            doc = page_soup(self.name, html)
            tables = [t for t in find_tables(doc, "Provider", "GPUs", "Billing")
                      if column_index(t, "$/GPU/h") is not None or column_index(t, "Total/h") is not None]
            if not tables:
                raise layout_changed(self.name, f"page {slug} has no table with 'Provider', 'GPUs', 'Billing' and a "
                                                "'$/GPU/h' or 'Total/h' column")
            for table in tables:
                col = {label: i for label in ("Provider", "GPUs", "Billing", "$/GPU/h", "Total/h", "VRAM", "vCPUs", "RAM")
                       if (i := column_index(table, label)) is not None}
                for row in body_rows(table):
                    offer = self._row([text_of(c) for c in row], col, slug)
                    if offer is not None:
                        offers.append(offer)
        return numbered_by_price(offers)
