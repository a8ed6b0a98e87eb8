"""Together AI: GPU cluster prices (on-demand and reserved, per GPU-hour) from its pricing page.

Called: ``GET https://www.together.ai/pricing`` once per run, after checking robots.txt; no key.

What the parser relies on (what a reader of the page sees, never Webflow's class names):

* sections headed by an ``<h2>``; only tables under the heading that names **GPU clusters** are
  read. The "Dedicated Inference" table prices managed model endpoints on dedicated GPUs, a
  serving product rather than a GPU rental, and is not collected (it would also give each GPU a
  second, higher "on-demand" price);
* tables whose header has a **Hardware** column and an **on-demand** column; a table hidden by
  the markup (Webflow's ``hide`` wrapper holds a stale copy) is skipped. The header may span two
  rows ("ON-Demand" over "Pay as you go"; "Reserved" over "7-30 days", "31-90 days", "91-180
  days", "181+ days"): each column's label is its header cells top to bottom, colspans and
  rowspans expanded;
* rows: the first cell is the GPU as printed ("NVIDIA HGX H100", from several ``<span>``s), the
  other cells are read by column (a body cell spanning columns counts for each).

Prices are per GPU-hour ("All prices are per GPU per hour"), and the page states no GPU count
per rental (clusters are sold by the node): each offer is one GPU (``gpu_count`` 1) with
``extra["per_gpu"]`` and ``extra["gpu_count_unstated"]``. "—" means not offered (no offer);
"Contact us"/"Contact sales" is an offer listed without a price. Reserved columns are day bands:
``term_months`` is the band's longest commitment in whole months (30 days -> 1, 90 -> 3,
180 -> 6); an open band ("181+ days") is its shortest commitment rounded up (7), with the band in
``extra["term_days"]``. No region, no availability on the page.

No GPU clusters table, no on-demand column or no rows -> ``ParseError("together: layout
changed: ...")``. A price cell that is no price quarantines that offer; the rest are kept.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import REFERENCE_CAPTURE, Http, ScrapedOffer, Scraper
from scrapers.html import (
    cell_field,
    hourly,
    is_blank,
    is_hidden,
    layout_changed,
    norm_label,
    page_soup,
    read_money,
    slug,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://www.together.ai/pricing"
_DAYS_RE = re.compile(r"(\d+)\s*(?:-|–|to)\s*(\d+)\s*days?|(\d+)\s*\+\s*days?", re.IGNORECASE)
_NOT_OFFERED = {"—", "–", "-", "n/a", ""}


def _grid(rows: list[list[Tag]]) -> list[list[Tag | None]]:
    """The cells of ``rows`` laid out on a grid: a cell with ``colspan``/``rowspan`` fills every
    position it covers, so column ``i`` of each grid row is the cell a reader sees there."""
    grid: list[list[Tag | None]] = []
    pending: dict[tuple[int, int], Tag] = {}
    for r, cells in enumerate(rows):
        line: list[Tag | None] = []
        col = 0
        queue = list(cells)
        while queue or (r, col) in pending:
            if (r, col) in pending:
                line.append(pending.pop((r, col)))
                col += 1
                continue
            cell = queue.pop(0)
            span = _span(cell, "colspan")
            down = _span(cell, "rowspan")
            for c in range(col, col + span):
                line.append(cell)
                for below in range(r + 1, r + down):
                    pending[(below, c)] = cell
            col += span
        grid.append(line)
    return grid


def _span(cell: Tag, attr: str) -> int:
    try:
        return max(1, min(int(str(cell.get(attr) or 1)), 50))
    except ValueError:
        return 1


def _cells(tr: Tag) -> list[Tag]:
    return [c for c in tr.find_all(["td", "th"], recursive=False)]


class TogetherScraper(Scraper):
    name: ClassVar[str] = "together"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Together AI (GPU clusters)"
    homepage: ClassVar[str] = "https://www.together.ai/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = REFERENCE_CAPTURE
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "reserved")
    caveats: ClassVar[str] = (
        "GPU clusters table only (dedicated inference endpoints are not GPU rentals); prices per GPU-hour, "
        "one GPU per offer (no count printed); reserved day bands mapped to whole months"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        tables = []
        for table in doc.find_all("table"):
            heading = table.find_previous("h2")
            if heading is None or "cluster" not in norm_label(text_of(heading)) or is_hidden(table):
                continue
            tables.append(table)
        if not tables:
            raise layout_changed(self.name, "no visible table under a 'GPU Clusters' heading")
        offers: list[ScrapedOffer] = []
        for table in tables:
            offers.extend(self._table_offers(table))
        if not offers:
            raise layout_changed(self.name, "the GPU clusters tables list no priced or contact-sales GPU")
        return offers

    def _labels(self, table: Tag) -> list[str]:
        thead = table.find("thead")
        if thead is None:
            raise layout_changed(self.name, "a GPU clusters table has no header")
        rows = [cells for tr in thead.find_all("tr") if (cells := _cells(tr))] or [_cells(thead)]
        grid = _grid(rows)
        width = max(len(line) for line in grid)
        labels = []
        for col in range(width):
            seen: list[str] = []
            for line in grid:
                cell = line[col] if col < len(line) else None
                text = text_of(cell)
                if text and text not in seen:
                    seen.append(text)
            labels.append(" / ".join(seen))
        return labels

    def _column_kind(self, label: str) -> tuple[str, int, dict[str, Any]] | None:
        """(kind, term months, extra) a column's label names, or ``None`` for the name column."""
        text = norm_label(label)
        if text.startswith("hardware"):
            return None
        if "on demand" in text or "hourly" in text:
            return "on_demand", 0, {}
        if "reserved" in text:
            m = _DAYS_RE.search(label)
            if m is None:
                return "reserved", 0, {"term_unstated": True}
            if m.group(3):
                low = int(m.group(3))
                return "reserved", math.ceil(low / 30), {"term_days": f"{low}+"}
            low, high = int(m.group(1)), int(m.group(2))
            return "reserved", max(1, math.ceil(high / 30)), {"term_days": f"{low}-{high}"}
        raise layout_changed(self.name, f"unknown price column {label!r}")

    def _table_offers(self, table: Tag) -> list[ScrapedOffer]:
        labels = self._labels(table)
        if not labels or not norm_label(labels[0]).startswith("hardware"):
            return []  # not a GPU price table
        columns = [(i, label, self._column_kind(label)) for i, label in enumerate(labels)]
        columns = [(i, label, k) for i, label, k in columns if k is not None]
        if not any(k[0] == "on_demand" for _, _, k in columns):
            raise layout_changed(self.name, f"a GPU clusters table has no on-demand column (columns: {labels})")
        rows = []
        for tr in table.find_all("tr"):
            if tr.find_parent("thead") is not None:
                continue
            cells = _cells(tr)
            if any(c.name == "td" for c in cells):
                rows.append(cells)
        if not rows:
            raise layout_changed(self.name, "a GPU clusters table has no rows")
        offers = []
        for line in _grid(rows):
            name_cell = line[0]
            gpu = " ".join(name_cell.stripped_strings) if name_cell is not None else ""
            gpu = re.sub(r"\s+", " ", gpu).strip()
            if not gpu:
                raise layout_changed(self.name, "a GPU clusters row names no hardware")
            for i, label, (kind, term, term_extra) in columns:
                cell = line[i] if i < len(line) else None
                text = text_of(cell)
                if text.lower() in _NOT_OFFERED or is_blank(text):
                    continue  # not offered
                money, bad = read_money(text, cell_field(label, gpu), required=True)
                extra: dict[str, Any] = {"per_gpu": True, "gpu_count_unstated": True, "column": label, **term_extra, **bad}
                price = None
                if money is not None and money.amount is not None:
                    price = round(hourly(money, assume="hour"), 6)
                elif money is not None:
                    extra["contact_sales"] = True
                term_slug = f":{term_extra.get('term_days', term)}d" if kind == "reserved" else ""
                offers.append(
                    self.offer(
                        sku=f"{slug(gpu)}{term_slug}",
                        gpu_raw=gpu,
                        gpu_count=1,
                        price_per_hour=price,
                        kind=kind,
                        term_months=term if kind == "reserved" else 0,
                        currency=money.currency if money is not None else "USD",
                        extra=extra,
                    )
                )
        return offers
