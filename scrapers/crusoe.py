"""Crusoe Cloud: the public pricing page https://www.crusoe.ai/cloud/pricing (HTML, no auth).

What is called
    ``GET https://www.crusoe.ai/cloud/pricing`` once per run, after checking robots.txt (disallowed ->
    ``RobotsDisallowed``: the run is skipped). No credentials. The bare domain ``crusoe.ai``
    answers 301 to ``www.crusoe.ai``, so the page is asked for at ``www`` directly (one request,
    not a redirect per run); the allowed hosts are ``www.crusoe.ai`` alone (from ``homepage`` and
    ``endpoint``).

What is extracted
    The "GPU instances pricing" list: one offer per GPU model and price column. Columns are
    recognised by their header text: "On-demand" -> ``on_demand``, "Current spot" (anything
    with "spot") -> ``spot``, and reserved/commitment columns that print a term ("1-year
    reserved", "6 month commit") -> ``reserved`` with ``term_months``; a commitment column
    without a term is ignored (it cannot be recorded as a kind). Cells read:

    - "$3.90/GPU-hr" -> that price **per GPU-hour**: one offer per GPU (``gpu_count=1``) with
      ``extra["price_basis"] = "per GPU-hour"``. A price that does not say per GPU is
      quarantined (the reason names the column and model), since recording an 8-GPU node's
      price as one GPU's would be wrong by 8x;
    - "from $X" / "$X - $Y" -> the lower end, with ``extra["price_from"]`` / ``extra["price_max_per_hour"]``;
    - "Contact sales" -> the offer is listed **without a price** (``price_per_hour=None``,
      ``extra["contact_sales"] = True``), never as 0;
    - empty / "-" -> not offered in that column: no offer; anything else ("TBA") -> that offer
      is quarantined with the column and model named, the others are kept (every offer so: a
      ``ParseError`` naming the column).

    The model heading ("NVIDIA H100") plus its tags ("80GB", "HGX") give ``sku`` =
    "NVIDIA H100 80GB HGX", ``gpu_raw`` = "NVIDIA H100 HGX" (the form factor helps tell SXM from
    PCIe), ``gpu_memory_gb`` = 80 and ``extra["form_factor"]``. No region is printed.

Selectors relied on (visible text and document structure, not Webflow's class names)
    * the header row: an element whose direct children read "GPU model", "On-demand",
      "Current spot" (a column saying "GPU" plus an "On-demand" column; tables without a GPU
      column, e.g. CPU instances, are skipped);
    * rows: each visible heading (``h1``-``h6``) after the header row, inside the nearest
      ancestor that holds any; the row is the heading's nearest ancestor with as many child
      elements as the header has cells and the heading in its first one. Rows continue while
      they have the first row's tag and ``class`` (read from the page), so a later section's
      title ends the list; a heading inside a list item shaped like the others but without
      price cells raises ``ParseError``;
    * hidden elements (``is_hidden``: Webflow's ``w-condition-invisible``, ``hide``, inline
      ``display:none``) are skipped and their text ignored.
    No such header or no rows -> ``ParseError("crusoe: layout changed: ...")``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import Http, ScrapedOffer, Scraper, unreadable
from scrapers.html import (
    cell_field,
    children,
    hourly,
    is_blank,
    is_hidden,
    is_tag,
    is_text,
    layout_changed,
    norm_label,
    page_soup,
    parse_gb,
    read_money,
    visible_text,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://www.crusoe.ai/cloud/pricing"

_HEADING_RE = re.compile(r"^h[1-6]$")
_ON_DEMAND_RE = re.compile(r"on[\s\-‐–]*demand", re.IGNORECASE)
_TERM_RE = re.compile(r"(\d+)\s*[-‐– ]?\s*(years?|yrs?|months?|mos?)\b", re.IGNORECASE)
_RESERVED_RE = re.compile(r"reserv|commit|contract|\bterm\b|\d+\s*[-‐– ]?\s*(?:years?|yrs?|months?|mos?)\b", re.IGNORECASE)
_MAX_CLIMB = 6



def _inside(el: Tag, ancestor: Tag) -> bool:
    return any(p is ancestor for p in el.parents)


def _column_kind(label: str) -> tuple[str, int] | None:
    """(kind, term_months) a header label stands for, or ``None`` for non-price columns."""
    text = norm_label(label)
    if "spot" in text:
        return ("spot", 0)
    if _ON_DEMAND_RE.search(label):
        return ("on_demand", 0)
    if _RESERVED_RE.search(text):
        m = _TERM_RE.search(text)
        if m:
            n = int(m.group(1))
            return ("reserved", n * 12 if m.group(2).lower().startswith("y") else n)
        return ("reserved", 0)  # no term printed: ignored by the parser
    return None


def _header_rows(doc: Tag) -> list[tuple[Tag, list[str]]]:
    """Elements whose direct children are a GPU price table's header cells."""
    found: list[tuple[Tag, list[str]]] = []
    for text in doc.find_all(string=_ON_DEMAND_RE):
        node = text.parent
        for _ in range(_MAX_CLIMB):
            if not is_tag(node):
                break
            cells = children(node)
            if len(cells) >= 2:
                headers = [visible_text(c) for c in cells]
                if any(_ON_DEMAND_RE.search(h) and len(h) < 40 for h in headers):
                    if any("gpu" in norm_label(h) and _column_kind(h) is None for h in headers) and not is_hidden(node):
                        if all(node is not seen for seen, _ in found):
                            found.append((node, headers))
                    break
            node = node.parent
    return found


def _headings_after(header: Tag, container: Tag) -> Iterator[Tag]:
    for el in header.next_elements:
        if not is_tag(el):
            continue
        if not _inside(el, container):
            return
        if _HEADING_RE.match(el.name) and not _inside(el, header) and not is_hidden(el):
            yield el


def _row_of(heading: Tag, width: int, container: Tag) -> Tag | None:
    """The heading's nearest ancestor with ``width`` child elements, the heading in the first."""
    node = heading.parent
    while is_tag(node) and node is not container:
        cells = children(node)
        if len(cells) == width and (cells[0] is heading or _inside(heading, cells[0])):
            return node
        node = node.parent
    return None


def _rows(header: Tag, width: int) -> list[tuple[Tag, Tag]]:
    """(heading, row) pairs of the list that follows ``header``."""
    container = header.parent
    for _ in range(_MAX_CLIMB):
        if not is_tag(container):
            return []
        headings = list(_headings_after(header, container))
        if headings:
            break
        container = container.parent
    else:
        return []
    rows: list[tuple[Tag, Tag]] = []
    shape: tuple[str, Any] | None = None
    item_shape: tuple[str, Any] | None = None
    for heading in headings:
        row = _row_of(heading, width, container)
        if row is None:
            if item_shape is not None and any((p.name, p.get("class")) == item_shape for p in heading.parents):
                # a model inside a list item like the others, but without its price cells
                raise layout_changed("crusoe", f"the row of {visible_text(heading)!r} has no price cells")
            if rows:
                break  # the next section's title: the list is over
            return []
        if shape is None:
            shape = (row.name, row.get("class"))
            if is_tag(row.parent) and len(children(row.parent)) == 1:
                item_shape = (row.parent.name, row.parent.get("class"))  # a wrapper per row (a list item)
        elif (row.name, row.get("class")) != shape:
            break
        rows.append((heading, row))
    return rows


def _tags(cell: Tag, heading: Tag) -> list[str]:
    """Visible short texts of the name cell other than the heading ("80GB", "HGX")."""
    out: list[str] = []
    for s in cell.find_all(string=True):
        if not is_text(s) or not is_tag(s.parent):
            continue
        if s.parent is heading or _inside(s.parent, heading) or s.parent.name in ("svg", "script", "style") or is_hidden(s.parent):
            continue
        if any(p.name == "svg" for p in s.parents):
            continue
        text = " ".join(str(s).split())
        if text:
            out.append(text)
    return out


class CrusoeScraper(Scraper):
    name: ClassVar[str] = "crusoe"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Crusoe Cloud"
    homepage: ClassVar[str] = "https://www.crusoe.ai"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = "reference: the 2025 shape of a Wayback capture of the pricing page (structure only, own values)"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "spot", "reserved")
    caveats: ClassVar[str] = (
        "scraped from the public pricing page; prices are per GPU-hour (one-GPU offers); "
        "'Contact sales' models are listed without a price; no region"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        tables = _header_rows(doc)
        if not tables:
            raise layout_changed(self.name, "no GPU price table with 'GPU model' and 'On-demand' columns")
        offers: list[ScrapedOffer] = []
        seen: dict[tuple[str, str, int], float | None] = {}
        for header, headers in tables:
            offers.extend(self._parse_table(header, headers, seen))
        if not offers:
            raise layout_changed(self.name, "the GPU price table lists no priced or 'Contact sales' model")
        return offers

    def _parse_table(
        self, header: Tag, headers: list[str], seen: dict[tuple[str, str, int], float | None]
    ) -> list[ScrapedOffer]:
        columns: list[tuple[int, tuple[str, int]]] = []
        for i, label in enumerate(headers):
            kind = _column_kind(label)
            if kind is None or (kind[0] == "reserved" and kind[1] == 0):
                continue  # the model column, or a commitment column that prints no term
            columns.append((i, kind))
        rows = _rows(header, len(headers))
        if not rows:
            raise layout_changed(self.name, f"no GPU rows follow the price header {headers}")
        offers: list[ScrapedOffer] = []
        for heading, row in rows:
            cells = children(row)
            model = visible_text(heading)
            if not model:
                raise layout_changed(self.name, "a GPU row has an empty model heading")
            tags = _tags(cells[0], heading)
            memory = next((gb for t in tags if (gb := parse_gb(t)) is not None), None)
            form = [t for t in tags if parse_gb(t) is None]
            sku = " ".join([model, *tags])
            extra: dict[str, Any] = {"price_basis": "per GPU-hour"}
            if form:
                extra["form_factor"] = " ".join(form)
            for i, (kind, term) in columns:
                cell = visible_text(cells[i])
                if is_blank(cell):
                    continue
                # no price, or one that no longer says per GPU (an 8-GPU node's price is no one
                # GPU's): this offer is quarantined with the column named, the others are kept
                where = cell_field(headers[i], sku)
                money, bad = read_money(cell, where)
                if money is not None and money.amount is not None and not money.per_gpu and not bad:
                    bad = unreadable("price", where, cell, "not per GPU")
                fields = {**extra, **bad}
                price: float | None = None
                if money is None:
                    pass
                elif money.contact_sales:
                    fields["contact_sales"] = True
                else:
                    price = hourly(money)
                    if money.is_from:
                        fields["price_from"] = True
                    if money.amount_max is not None and money.amount:
                        fields["price_max_per_hour"] = round(money.amount_max * price / money.amount, 6)
                key = (sku, kind, term)
                if key in seen:
                    if seen[key] != price:
                        raise layout_changed(self.name, f"{sku!r} is listed twice with different {kind} prices")
                    continue
                seen[key] = price
                offers.append(
                    self.offer(
                        sku=sku,
                        gpu_raw=" ".join([model, *form]),
                        gpu_count=1,
                        gpu_memory_gb=memory,
                        price_per_hour=price,
                        currency=money.currency if money is not None else "USD",
                        kind=kind,
                        term_months=term,
                        extra=fields,
                    )
                )
        return offers
