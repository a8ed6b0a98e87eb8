"""Nebius AI Cloud: the public price page https://nebius.com/prices (HTML, no auth).

What is called
    ``GET https://nebius.com/prices`` once per run, after checking robots.txt (disallowed ->
    ``RobotsDisallowed``: the run is skipped). No credentials.

What is extracted
    The GPU price tables: one offer per GPU product and price column. "On-demand, GPU-hour" ->
    ``on_demand``; "Preemptible, GPU-hour" or "Spot price, GPU-hour" -> ``spot`` (preemptible VMs
    are Nebius' interruptible tier; the 2026 page has them in a table of their own).
    A column announcing a future price ("GPU-hour (Effective October 1, 2026)") is not an offer of
    its own: its price and date go into the on-demand offer's ``extra`` as
    ``announced_price_per_hour`` and ``announced_effective`` ("2026-10-01"), and the normalise
    stage stores whichever price is in effect at the observation time. Prices are **per GPU-hour**, so each offer is one GPU
    (``gpu_count=1``) at the per-GPU price, with ``extra["price_basis"] = "per GPU-hour"``; the
    vCPUs/RAM columns are the per-GPU share Nebius lists next to it. Cells read:

    - "$2.15" -> that price; "from $0.90" -> the lower bound, ``extra["price_from"] = True``
      (and ranged vCPU/RAM cells "16-192" keep their lower end plus the printed range in ``extra``);
    - "$3.85 - $4.10" -> the lower end, the upper one in ``extra["price_max_per_hour"]``;
    - "Contact us" -> the offer is listed without a price (``price_per_hour=None``);
    - "––" / "-" / empty -> that tier is not offered: no offer;
    - anything else ("TBD") -> that offer is quarantined with the column and item named
      ("price field 'On-demand, GPU-hour' of 'NVIDIA HGX H100' holds 'TBD', not a price"), and so
      is an on-demand offer whose announced price cannot be read; the other offers are kept
      (every one so: a ``ParseError`` naming the column).

    "NVIDIA L40S with Intel CPU" keeps the full item text as ``sku`` and ``gpu_raw = "NVIDIA L40S"``
    with ``extra["cpu"] = "Intel"``. No region is printed (``region=""``).

Selectors relied on (by visible text, never by the generated ``pc-*`` class names)
    * the header row: the element whose direct children read "Item", ... and at least one price
      header ("On-demand", "Preemptible" or "Spot price", matched case-insensitively). Only tables
      whose price headers all say "GPU" (per GPU-hour) are read: the CPU-only and other tables
      share the layout;
    * optional "vCPUs" and "RAM" header columns; the name is the "Item" column (else the first);
    * data rows: the elements after the header row, inside the nearest ancestor holding any, with
      the header row's own tag and ``class`` attribute (read from the page, not hard-coded), each
      with as many cells as the header; an item repeated with the same cells counts once, with
      different ones -> ``ParseError``. Hidden markup (``is_hidden``) is not read.
    No such header or no rows -> ``ParseError("nebius: layout changed: ...")``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import Http, ScrapedOffer, Scraper
from scrapers.html import (
    cell_field,
    children,
    hourly,
    is_blank,
    is_tag,
    layout_changed,
    norm_label,
    page_soup,
    parse_number,
    read_money,
    visible_text,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICES_URL = "https://nebius.com/prices"

#: (header label fragment, kind) of the price columns.
_PRICE_COLUMNS: tuple[tuple[str, str], ...] = (("on demand", "on_demand"), ("preemptible", "spot"), ("spot price", "spot"))
_PRICE_HEADER_RE = re.compile(r"on[\s\-‐–]*demand|preemptible|spot\s+price", re.IGNORECASE)
_EFFECTIVE_RE = re.compile(r"effective\s+(?:from\s+)?([A-Z][a-z]+\.?\s+\d{1,2},?\s+\d{4})", re.IGNORECASE)
_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_WITH_CPU_RE = re.compile(r"^(?P<gpu>.+?)\s+with\s+(?P<cpu>.+?)\s+CPU$", re.IGNORECASE)
_MAX_CLIMB = 6



def _column(headers: list[str], fragment: str) -> int | None:
    for i, h in enumerate(headers):
        if fragment in norm_label(h):
            return i
    return None


def _price_columns(headers: list[str]) -> list[tuple[int, str]]:
    """(column index, kind) of the price columns (one per column); ``_header_rows`` guarantees one."""
    cols: list[tuple[int, str]] = []
    for fragment, kind in _PRICE_COLUMNS:
        i = _column(headers, fragment)
        if i is not None and all(i != j for j, _ in cols) and _effective_date(headers[i]) is None:
            cols.append((i, kind))
    return cols


def _effective_date(label: str) -> str | None:
    """ISO date of an "Effective October 1, 2026" header, else ``None``."""
    m = _EFFECTIVE_RE.search(label)
    if not m:
        return None
    parts = re.findall(r"[A-Za-z]+|\d+", m.group(1))
    month = _MONTHS.get(parts[0][:3].lower()) if len(parts) == 3 else None
    if month is None:
        return None
    day, year = int(parts[1]), int(parts[2])
    return f"{year:04d}-{month:02d}-{day:02d}" if 1 <= day <= 31 else None


def _announced_columns(headers: list[str]) -> list[tuple[int, str]]:
    """(column index, ISO date) of the columns announcing a price from a future date."""
    return [(i, d) for i, h in enumerate(headers) if "gpu" in norm_label(h) and (d := _effective_date(h))]


def _header_rows(doc: Tag) -> list[tuple[Tag, list[str]]]:
    """Every element whose direct children are the GPU price table's header cells."""
    found: list[tuple[Tag, list[str]]] = []
    for text in doc.find_all(string=_PRICE_HEADER_RE):
        node = text.parent
        for _ in range(_MAX_CLIMB):
            if not is_tag(node):
                break
            cells = children(node)
            if len(cells) >= 3:
                headers = [visible_text(c) for c in cells]
                if _price_columns(headers) and "item" in (norm_label(h) for h in headers):
                    if all(node is not seen for seen, _ in found):
                        found.append((node, headers))
                    break
            node = node.parent
    return found


def _data_rows(header: Tag) -> list[list[Tag]]:
    """Rows shaped like ``header`` (same tag and class) that follow it in its table."""
    cls = header.get("class")
    container = header.parent
    for _ in range(_MAX_CLIMB):
        if not is_tag(container):
            break
        rows = [el for el in container.find_all(header.name) if el is not header and el.get("class") == cls]
        if rows:
            return [children(r) for r in rows]
        container = container.parent
    return []


class NebiusScraper(Scraper):
    name: ClassVar[str] = "nebius"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Nebius"
    homepage: ClassVar[str] = "https://nebius.com"
    endpoint: ClassVar[str] = f"GET {PRICES_URL} (HTML price page)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "recording"
    checked_by: ClassVar[str] = "recording: a Wayback capture of the pricing page"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "spot")
    caveats: ClassVar[str] = (
        "scraped from the public price page; prices are per GPU-hour (one-GPU offers), "
        "preemptible is recorded as spot, 'from' prices are lower bounds, no region"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICES_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        candidates = _header_rows(doc)
        if not candidates:
            raise layout_changed(self.name, "no price table with an 'Item' and an 'On-demand', 'Preemptible' or 'Spot price' column")
        # CPU-only and other tables share the layout; the GPU ones price per "GPU-hour".
        tables = [(h, cols) for h, cols in candidates if all("gpu" in norm_label(cols[i]) for i, _ in _price_columns(cols))]
        if not tables:
            seen_headers = [cols for _, cols in candidates]
            raise layout_changed(self.name, f"no price table per 'GPU-hour' (tables seen: {seen_headers})")
        offers: list[ScrapedOffer] = []
        seen: dict[tuple[tuple[str, ...], str], list[str]] = {}
        for header, headers in tables:
            offers.extend(self._parse_table(header, headers, seen))
        if not offers:
            raise layout_changed(self.name, "the GPU price table lists no priced or 'Contact us' item")
        return offers

    def _parse_table(
        self, header: Tag, headers: list[str], seen: dict[tuple[tuple[str, ...], str], list[str]]
    ) -> list[ScrapedOffer]:
        price_cols = _price_columns(headers)
        announced = _announced_columns(headers)
        name_col = _column(headers, "item")
        name_col = 0 if name_col is None else name_col
        cpu_col = _column(headers, "vcpu")
        ram_col = _column(headers, "ram")
        rows = _data_rows(header)
        if not rows:
            raise layout_changed(self.name, f"the price table {headers} has no rows")
        offers: list[ScrapedOffer] = []
        for cells in rows:
            if len(cells) != len(headers):
                texts = [visible_text(c) for c in cells]
                raise layout_changed(self.name, f"row {texts} has {len(cells)} cells, header has {len(headers)}")
            texts = [visible_text(c) for c in cells]
            item = texts[name_col]
            if not item:
                raise layout_changed(self.name, "a price-table row has no item name")
            key = (tuple(headers), item)
            if key in seen:
                if seen[key] != texts:
                    raise layout_changed(self.name, f"item {item!r} is listed twice with different prices")
                continue  # the same row again (e.g. a second rendering of the table)
            seen[key] = texts
            gpu_raw, extra = item, {"price_basis": "per GPU-hour"}
            m = _WITH_CPU_RE.match(item)
            if m:
                gpu_raw = m.group("gpu")
                extra["cpu"] = m.group("cpu")
            vcpus = self._spec(cells, cpu_col, "vcpus", extra)
            ram = self._spec(cells, ram_col, "ram_gb", extra)
            for col, kind in price_cols:
                cell = texts[col]
                if is_blank(cell):
                    continue
                # no price in the cell: this offer is quarantined with the column named, not the page
                money, bad = read_money(cell, cell_field(headers[col], item))
                fields = dict(extra)
                if kind == "on_demand":
                    fields.update(self._announced(texts, headers, announced, item))
                fields.update(bad)
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
                offers.append(
                    self.offer(
                        sku=item,
                        gpu_raw=gpu_raw,
                        gpu_count=1,
                        price_per_hour=price,
                        currency=money.currency if money is not None else "USD",
                        kind=kind,
                        vcpus=vcpus,
                        ram_gb=ram,
                        extra=fields,
                    )
                )
        return offers

    def _announced(self, texts: list[str], headers: list[str], announced: list[tuple[int, str]], item: str) -> dict[str, Any]:
        """The price announced for a later date beside the current one, as ``extra`` fields."""
        if len(announced) > 1:
            raise layout_changed(self.name, f"more than one announced-price column: {[headers[i] for i, _ in announced]}")
        for col, date in announced:
            cell = texts[col]
            if is_blank(cell):
                return {"announced_effective": date, "announced_not_offered": True}
            # the price this offer will have: unreadable, the offer is quarantined with the column named
            money, bad = read_money(cell, cell_field(headers[col], item))
            if money is None or bad:
                return {"announced_effective": date, **bad}
            if money.contact_sales:
                return {"announced_effective": date, "announced_contact_sales": True}
            out: dict[str, Any] = {"announced_effective": date, "announced_price_per_hour": hourly(money),
                                   "announced_currency": money.currency}
            if money.is_from:
                out["announced_price_from"] = True
            return out
        return {}

    @staticmethod
    def _spec(cells: list[Tag], col: int | None, key: str, extra: dict[str, Any]) -> float | None:
        """A vCPU/RAM cell: "16" -> 16; a range "16-192" -> 16, with the range kept in ``extra``."""
        if col is None:
            return None
        text = visible_text(cells[col])
        if re.search(r"\d\s*[-–]\s*\d", text):
            extra[f"{key}_range"] = text
        return parse_number(text)
