"""CoreWeave: on-demand GPU component prices read from the public GPU cloud pricing page.

Called: ``GET https://www.coreweave.com/gpu-cloud-pricing`` once per run, after checking
robots.txt; no auth. (No public price API; the bundled recording is a 2023 Wayback capture.)

Extracted, per GPU row: the GPU name as printed (``gpu_raw``, e.g. "NVIDIA HGX H100"), the
page's product slug as ``sku`` ("hgx-h100"), VRAM per GPU, and the price of **one GPU per hour**
(``gpu_count`` 1). On this page the price is the *GPU component* only: vCPUs and RAM are chosen
and billed apart, so every offer carries ``extra["gpu_component_only"] = True`` and the caveat
says so; the row's vCPU and RAM figures are the most one GPU may be paired with, kept as
``extra["max_vcpus_per_gpu"]`` / ``extra["max_ram_gb_per_gpu"]`` (``vcpus``/``ram_gb`` stay
``None``). No region, spot or availability on the page.

What the parser relies on (Webflow designer class names, not generated hashes):

* the price column's header text "GPU Component Cost Per Hour" (matched loosely: "GPU component"
  and "per hour");
* the first ``.table-body`` after that header, and its ``.table-body-row`` rows;
* in a row: ``a[data-product]`` (text = GPU name, attribute = sku) in the first cell, then the
  cells VRAM (GB), max vCPUs, max RAM (GB), and last the price cell, read as printed ("$4.76",
  trailing "Reserve Now" link text ignored). The recorded excerpt starts inside the header row,
  so only the price header is there to match; the three spec cells are read by position.

No price header, no table body or rows, or a row without a product link or with too few cells
-> ``ParseError("coreweave: layout changed: ...")``. A price cell holding no price ("TBA", empty)
quarantines that row's offer with the column and GPU named; the other rows are kept (every row
so: a ``ParseError`` naming the column). "Contact sales" -> ``price_per_hour=None``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from scrapers.base import Http, ScrapedOffer, Scraper
from scrapers.html import (
    cell_field,
    hourly,
    is_comment,
    is_document,
    is_tag,
    layout_changed,
    norm_label,
    page_soup,
    parse_gb,
    parse_money,
    parse_number,
    read_money,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://www.coreweave.com/gpu-cloud-pricing"
#: The price column as quarantine reasons name it.
PRICE_COLUMN = "GPU Component Cost Per Hour"
_COMPONENT_RE = re.compile(r"gpu\s+component", re.IGNORECASE)
_PRICE_HEADER_RE = re.compile(r"gpu component.*per hour")


def _has_class(tag: Tag, name: str) -> bool:
    return name in (tag.get("class") or [])


def _reads_as_money(text: str) -> bool:
    try:
        return parse_money(text) is not None
    except ValueError:  # "$1e999": read (and quarantined) by read_money
        return False


class CoreweaveScraper(Scraper):
    name = "coreweave"
    display_name = "CoreWeave"
    homepage = "https://www.coreweave.com"
    endpoint = f"GET {PRICING_URL} (HTML page)"
    source_kind = "page"
    fixture_kind = "recording"
    kinds = ("on_demand",)
    caveats = "GPU component price only, per GPU: vCPUs and RAM are billed separately"

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    # --- parsing ----------------------------------------------------------------------

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        header = self._price_header(doc)
        body = header.find_next(lambda t: is_tag(t) and _has_class(t, "table-body"))
        if body is None:
            raise layout_changed(self.name, "no table body after the 'GPU Component Cost Per Hour' header")
        rows = [r for r in body.find_all("div") if _has_class(r, "table-body-row")]
        if not rows:
            raise layout_changed(self.name, "the 'GPU Component Cost Per Hour' table has no rows")
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for row in rows:
            offer = self._offer(row)
            if offer.sku in seen:
                raise layout_changed(self.name, f"two rows for product {offer.sku!r}")
            seen.add(offer.sku)
            offers.append(offer)
        return offers

    def _price_header(self, doc: Tag) -> Tag:
        """The element reading "GPU Component Cost Per Hour" (the words may sit in sibling nodes)."""
        for text in doc.find_all(string=_COMPONENT_RE):
            if is_comment(text):
                continue
            node = text.parent
            for _ in range(3):  # the text node's element, or a close ancestor holding "Cost Per Hour" too
                if not is_tag(node) or is_document(node):
                    break
                if _PRICE_HEADER_RE.search(norm_label(text_of(node))):
                    return node
                node = node.parent
        raise layout_changed(self.name, "no 'GPU Component Cost Per Hour' price column")

    def _offer(self, row: Tag) -> ScrapedOffer:
        link = row.find("a", attrs={"data-product": True})
        if not is_tag(link) or not text_of(link) or not str(link.get("data-product") or "").strip():
            raise layout_changed(self.name, f"row {text_of(row)!r} has no product link (a[data-product])")
        name = text_of(link)
        sku = str(link.get("data-product")).strip()
        cells = row.find_all("div", recursive=False)
        if len(cells) < 5:
            raise layout_changed(self.name, f"row {name!r} has {len(cells)} cells, expected name, VRAM, vCPUs, RAM, price")
        vram, vcpus, ram, price_cell = cells[1], cells[2], cells[3], cells[-1]
        # The price as printed: the first text with an amount ("$4.76"), not the "Reserve Now" link.
        strings = list(price_cell.stripped_strings)
        price_text = next((t for t in strings if _reads_as_money(t)), strings[0] if strings else "")
        # no price in the cell: this row is quarantined with the column named, the others are kept
        where = cell_field(PRICE_COLUMN, name)
        money, bad = read_money(price_text, where, required=True)
        extra: dict[str, Any] = {"gpu_component_only": True, **bad}
        price: float | None = None
        if money is None:
            pass
        elif money.amount is None:
            extra["contact_sales"] = True
        else:
            price = round(hourly(money, assume="hour"), 6)  # the header says "Cost Per Hour"
            if money.is_from:
                extra["price_from"] = True
        max_vcpus = parse_number(text_of(vcpus))
        max_ram = parse_gb(text_of(ram)) or parse_number(text_of(ram))
        if max_vcpus is not None:
            extra["max_vcpus_per_gpu"] = max_vcpus
        if max_ram is not None:
            extra["max_ram_gb_per_gpu"] = max_ram
        return self.offer(
            sku=sku,
            gpu_raw=name,
            gpu_count=1,
            gpu_memory_gb=parse_gb(text_of(vram)) or parse_number(text_of(vram)),
            price_per_hour=price,
            currency=money.currency if money is not None else "USD",
            kind="on_demand",
            extra=extra,
        )
