"""CoreWeave: whole-instance on-demand and spot prices from the public pricing page, per region.

Called: ``GET https://www.coreweave.com/pricing`` once per run, after checking robots.txt; no
auth. (Since 2025 the prices live there; the 2023 page ``/gpu-cloud-pricing`` priced a GPU
*component* per GPU, with vCPUs and RAM billed apart, and is no longer what the site serves.)

Extracted: the "On-demand GPU instances" section prints one table per region, each after a label
"REGION: NORTH AMERICA" / "REGION: EUROPE". A row is one instance type: its GPU model (the name
``gpu_raw``, e.g. "NVIDIA HGX H100"; the row's ``data-product`` slug is the ``sku``), its GPU count
("8", or "4^1": a count with a footnote marker, read as 4), VRAM per GPU (GB), vCPUs, system RAM
(GB), local storage (TB, kept in ``extra``), and two prices **per hour for the whole instance**:
"On-Demand Price (Per Hour)" -> ``on_demand``, "Spot Price (Per Hour)" -> ``spot``. The region is
the label's text ("North America", "Europe"); one offer per row, region and kind.
"Contact sales" in a price cell -> listed without a price (``price_per_hour=None``,
``extra["contact_sales"]``); "N/A" or an empty cell -> not offered in that kind. The North
American table has a further "Inference Single GPU Price" column: a serverless-inference price
of one GPU, not an instance price, so it is not read.

What the parser relies on (Webflow designer class names, not generated hashes, plus visible text):

* a table is a ``.table-v2`` whose header (``.table-v2-header``) cells (``.table-header-text``)
  read "GPU Model", "GPU Count" and "On-Demand Price" (required) and "VRAM", "vCPUs",
  "System RAM", "Local Storage", "Spot Price" (optional), matched by their words;
* its region: the nearest text before the table reading "Region: <name>" (a page with several
  tables must label each; a single unlabelled table gets region ``""``);
* its rows: the ``.table-row-v2`` elements; in each, the direct children of the row's
  ``.table-grid`` that are ``.table-v2-cell`` cells, in header order (the row also repeats its
  name and prices in ``.table-cell-column`` blocks for small screens: never read), and the
  model's ``h3[data-product]`` in the first cell.

No such table, a table without rows, a row without its model heading or with fewer cells than
headers, or a row listed twice in one region with different prices ->
``ParseError("coreweave: layout changed: ...")``. A price cell that holds no price ("TBA")
quarantines that offer with the column and model named; the other offers are kept (every offer
of a kind so: a ``ParseError`` naming the column).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from scrapers.base import REFERENCE_CAPTURE, Http, ScrapedOffer, Scraper, unreadable
from scrapers.html import (
    cell_field,
    children,
    hourly,
    is_blank,
    layout_changed,
    norm_label,
    page_soup,
    parse_number,
    read_money,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://www.coreweave.com/pricing"
_REGION_RE = re.compile(r"^\s*region\s*:\s*(\S.*?)\s*$", re.IGNORECASE)
#: "4^1": a count followed by a footnote marker (rendered as a superscript by the page's script).
_FOOTNOTE_RE = re.compile(r"\^\S*$")
#: Header label -> the words that find it (every word in the normalised header text).
_COLUMNS: dict[str, tuple[str, ...]] = {
    "GPU Model": ("gpu", "model"),
    "GPU Count": ("gpu", "count"),
    "On-Demand Price": ("on demand", "price"),
    "Spot Price": ("spot", "price"),
    "VRAM": ("vram",),
    "vCPUs": ("vcpus",),
    "System RAM": ("system ram",),
    "Local Storage": ("local storage",),
}
_REQUIRED = ("GPU Model", "GPU Count", "On-Demand Price")
_PRICES = (("On-Demand Price", "on_demand"), ("Spot Price", "spot"))
#: More GPUs than any instance has: a count read as larger is no count.
_MAX_GPUS = 1024


def _has_class(tag: Tag, name: str) -> bool:
    return name in (tag.get("class") or [])


def _children_with(tag: Tag, name: str) -> list[Tag]:
    return [c for c in children(tag) if _has_class(c, name)]


def _columns(headers: list[str]) -> dict[str, int]:
    """Index of every known column in ``headers`` (first match per label)."""
    found: dict[str, int] = {}
    for label, words in _COLUMNS.items():
        for i, header in enumerate(headers):
            text = norm_label(header)
            if all(w in text for w in words) and i not in found.values():
                found[label] = i
                break
    return found


def _region_of(table: Tag) -> str | None:
    """The "Region: <name>" label nearest before ``table``, title-cased, or None."""
    label = table.find_previous(string=_REGION_RE)
    if label is None:
        return None
    match = _REGION_RE.match(str(label))
    return match.group(1).title() if match else None


class CoreweaveScraper(Scraper):
    name = "coreweave"
    segment = "neocloud"
    display_name = "CoreWeave"
    homepage = "https://www.coreweave.com"
    endpoint = f"GET {PRICING_URL} (HTML page)"
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = REFERENCE_CAPTURE
    kinds = ("on_demand", "spot")
    caveats = (
        "whole-instance prices per hour (GPU count per row), one table per region (North America, Europe); "
        "'Contact sales' rows are listed without a price"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    # --- parsing ----------------------------------------------------------------------

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        tables = [(t, h, c) for t in doc.find_all(class_="table-v2") if (c := _columns(h := self._headers(t)))
                  and all(label in c for label in _REQUIRED)]
        if not tables:
            raise layout_changed(self.name, "no price table with 'GPU Model', 'GPU Count' and 'On-Demand Price' headers")
        offers: dict[tuple[str, str, str], ScrapedOffer] = {}
        for n, (table, headers, columns) in enumerate(tables):
            region = _region_of(table)
            if region is None:
                if len(tables) > 1:
                    raise layout_changed(self.name, f"price table {n + 1} of {len(tables)} has no 'Region:' label")
                region = ""
            rows = [r for r in table.find_all(class_="table-row-v2")]
            if not rows:
                raise layout_changed(self.name, f"no rows ('.table-row-v2') in the price table of region {region!r}")
            for row in rows:
                for offer in self._offers(row, headers, columns, region):
                    key = (offer.sku, offer.region, offer.kind)
                    if key in offers:
                        if offers[key].price_per_hour != offer.price_per_hour:
                            raise layout_changed(self.name, f"{offer.sku!r} is listed twice in {region!r} with different {offer.kind} prices")
                        continue
                    offers[key] = offer
        if not offers:
            raise layout_changed(self.name, "the price tables list no priced or 'Contact sales' instance")
        return list(offers.values())

    @staticmethod
    def _headers(table: Tag) -> list[str]:
        header = table.find(class_="table-v2-header")
        if header is None:
            return []
        return [text_of(h) for h in header.find_all(class_="table-header-text")]

    def _offers(self, row: Tag, headers: list[str], columns: dict[str, int], region: str) -> list[ScrapedOffer]:
        grid = row.find(class_="table-grid")
        cells = _children_with(grid, "table-v2-cell") if grid is not None else []
        heading = cells[0].find(attrs={"data-product": True}) if cells else None
        if heading is None or not text_of(heading):
            raise layout_changed(self.name, f"a row has no model heading (h3[data-product]): {text_of(row)[:60]!r}")
        model = text_of(heading)
        sku = str(heading.get("data-product") or "").strip() or model
        if len(cells) < len(headers):
            raise layout_changed(self.name, f"row {model!r} has {len(cells)} cells for {len(headers)} headers")

        def cell(label: str) -> str | None:
            i = columns.get(label)
            return text_of(cells[i]) if i is not None else None

        count_text = _FOOTNOTE_RE.sub("", cell("GPU Count") or "").strip()
        count = parse_number(count_text)
        if count is not None and not 0 < count <= _MAX_GPUS:
            count = None  # 0, negative, or no plausible count (1e400): this row is quarantined
        bad_count = {} if count else unreadable("GPU count", cell_field("GPU Count", model), cell("GPU Count") or "")
        storage = parse_number(cell("Local Storage"))
        common: dict[str, Any] = {
            "sku": sku,
            "gpu_raw": model,
            "gpu_count": count if count and count > 0 else 0.0,
            "gpu_memory_gb": parse_number(cell("VRAM")),
            "vcpus": parse_number(cell("vCPUs")),
            "ram_gb": parse_number(cell("System RAM")),
            "region": region,
        }
        offers: list[ScrapedOffer] = []
        for label, kind in _PRICES:
            text = cell(label)
            if text is None or is_blank(text):
                continue  # the column is absent, or "N/A": not offered in this kind
            where = cell_field(headers[columns[label]], model)
            money, bad = read_money(text, where)
            extra: dict[str, Any] = {"price_basis": "per instance-hour"}
            if storage is not None:
                extra["local_storage_tb"] = storage
            price: float | None = None
            if money is not None and money.amount is None:
                extra["contact_sales"] = True
            elif money is not None:
                price = round(hourly(money, assume="hour"), 6)  # the header says "(Per Hour)"
            offers.append(self.offer(kind=kind, price_per_hour=price, currency=money.currency if money else "USD",
                                     extra={**extra, **(bad_count or bad)}, **common))
        return offers
