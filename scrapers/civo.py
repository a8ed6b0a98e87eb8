"""Civo: GPU instance prices (on-demand and commitment) from the tables of its pricing page.

Called: ``GET https://www.civo.com/pricing`` once per run, after checking robots.txt; no key.

What the parser relies on (what a reader of the page sees):

* GPU tables: every ``<table>`` with the columns **Size**, **RAM**, **vCPU** and **On-demand**
  (a **Commitment** column is optional) whose Size cells name the GPUs of the size, as
  "1 x NVIDIA L40S - 48GB" (count, ``x``, GPU as printed). Tables of CPU-only instances print no
  GPU there and are not read;
* a price cell prints the hourly price ("$1.29 per hour") and the same price per month
  ("$941.70 per month"), one of them hidden by the page's Hourly/Monthly toggle: the hourly
  figure is read (the monthly one is the same price times 730, not another plan);
* the Commitment cell holds one hourly/monthly pair per term, each in an element whose id
  names the term ("6_months", ... "36_months", the values of the table's "Commitment - N
  months" selector); all terms are read, whichever the selector shows.

Prices are for the whole instance. On-demand -> ``on_demand``; each commitment term ->
``reserved`` with that ``term_months``. A count printed as a fraction ("1/2 x", "0.5 x": a
shared slice of one GPU) is kept as that fractional ``gpu_count`` with ``extra["fractional"]``,
never rounded up to a whole GPU. "Contact us" is an offer without a price; "-" or an empty cell
is not offered. No region or stock on the page.

No GPU table, or a GPU table without rows -> ``ParseError("civo: layout changed: ...")``. A price
cell that holds no price quarantines that offer only.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import REFERENCE_CAPTURE, PageScraper, ScrapedOffer
from scrapers.html import (
    body_rows,
    cell_field,
    column_index,
    find_tables,
    header_index,
    hourly,
    is_blank,
    layout_changed,
    page_soup,
    parse_gb,
    parse_number,
    read_money,
    slug,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://www.civo.com/pricing"
_DETAIL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\d+\s*/\s*\d+)\s*[x×]\s*(.+?)\s*$", re.IGNORECASE)
_TERM_RE = re.compile(r"^(\d+)[_-]?months?$", re.IGNORECASE)
_PER_HOUR_RE = re.compile(r"per\s+hour|/\s*h(?:ou)?r\b", re.IGNORECASE)


def _count(text: str) -> float:
    if "/" in text:
        return float(Fraction(text.replace(" ", "")))
    return float(text)


def _hourly_text(node: Tag) -> str:
    """The hourly figure printed in ``node``: the innermost element printing something beside
    "per hour" ("$1.29 per hour"; never the monthly figure next to it), else the node's whole
    text (a "Contact us" or "-" cell)."""

    def says_hourly(el: Tag) -> bool:
        text = text_of(el)
        return bool(_PER_HOUR_RE.search(text) and _PER_HOUR_RE.sub("", text).strip())

    for el in node.find_all(True):
        if says_hourly(el) and not any(says_hourly(child) for child in el.find_all(True)):
            return text_of(el)
    return text_of(node)


class CivoScraper(PageScraper):
    name: ClassVar[str] = "civo"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Civo"
    homepage: ClassVar[str] = "https://www.civo.com/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    pricing_url: ClassVar[str] = PRICING_URL
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = REFERENCE_CAPTURE
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "reserved")
    caveats: ClassVar[str] = (
        "GPU tables of the pricing page: whole-instance hourly prices, on demand and per commitment term "
        "(6-36 months as reserved); no region on the page"
    )

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        offers: list[ScrapedOffer] = []
        seen: dict[tuple[str, int], float | None] = {}
        gpu_tables = 0
        for table in find_tables(doc, "Size", "RAM", "vCPU", "On-demand"):
            rows = body_rows(table)
            size_col = header_index(table, "Size", provider=self.name)["Size"]
            if not any(_DETAIL_RE.match(self._detail(cells[size_col])) for cells in rows if len(cells) > size_col):
                continue  # a CPU-only table
            gpu_tables += 1
            offers.extend(self._table_offers(table, rows, seen))
        if not gpu_tables:
            raise layout_changed(self.name, "no table with 'Size', 'RAM', 'vCPU' and 'On-demand' columns naming 'N x GPU' sizes")
        if not offers:
            raise layout_changed(self.name, "the GPU tables have no priced rows")
        return offers

    @staticmethod
    def _detail(cell: Tag) -> str:
        """The "1 x NVIDIA L40S - 48GB" line of a Size cell (its own element, else the text after the size name)."""
        for el in cell.find_all(True):
            if _DETAIL_RE.match(text_of(el)):
                return text_of(el)
        return text_of(cell)

    def _table_offers(
        self, table: Tag, rows: list[list[Tag]], seen: dict[tuple[str, int], float | None]
    ) -> list[ScrapedOffer]:
        col = header_index(table, "Size", "RAM", "vCPU", "On-demand", provider=self.name)
        commit_col = column_index(table, "Commitment")
        offers = []
        for cells in rows:
            if len(cells) <= max(col.values()):
                raise layout_changed(self.name, f"row {text_of(cells[0])!r} has {len(cells)} cells")
            detail = self._detail(cells[col["Size"]])
            m = _DETAIL_RE.match(detail)
            if m is None:
                raise layout_changed(self.name, f"size {text_of(cells[col['Size']])!r} names no 'N x GPU'")
            count = _count(m.group(1))
            gpu = m.group(2)
            size = text_of(cells[col["Size"]]).replace(detail, "").strip() or detail
            sku = slug(f"{size} {m.group(1)}x {gpu}")
            base: dict[str, Any] = {"size": size}
            if count < 1:
                base["fractional"] = True
            common = {
                "gpu_raw": gpu,
                "gpu_count": int(count) if count.is_integer() else count,
                "gpu_memory_gb": parse_gb(gpu),
                "vcpus": parse_number(text_of(cells[col["vCPU"]])),
                "ram_gb": parse_gb(text_of(cells[col["RAM"]])) or parse_number(text_of(cells[col["RAM"]])),
            }
            priced: list[tuple[str, int, str, Tag]] = [("on_demand", 0, "On-demand", cells[col["On-demand"]])]
            if commit_col is not None and commit_col < len(cells):
                for el in cells[commit_col].find_all(id=_TERM_RE):
                    term = int(_TERM_RE.match(str(el.get("id"))).group(1))  # type: ignore[union-attr]
                    priced.append(("reserved", term, f"Commitment {term} months", el))
            for kind, term, label, node in priced:
                text = _hourly_text(node)
                if is_blank(text):
                    continue  # not offered
                money, bad = read_money(text, cell_field(label, f"{size} {detail}"), required=True)
                extra = {**base, **bad}
                price = None
                if money is not None and money.amount is not None:
                    price = round(hourly(money, assume="hour"), 6)
                elif money is not None:
                    extra["contact_sales"] = True
                if (sku, term) in seen:  # the same table shown twice (compute and Kubernetes): one offer
                    if seen[(sku, term)] != price:
                        raise layout_changed(self.name, f"two different prices for the size {sku!r} ({label})")
                    continue
                seen[(sku, term)] = price
                offers.append(
                    self.offer(
                        sku=sku,
                        price_per_hour=price,
                        kind=kind,
                        term_months=term,
                        currency=money.currency if money is not None else "USD",
                        extra=extra,
                        **common,
                    )
                )
        return offers
