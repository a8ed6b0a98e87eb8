"""Hyperstack: the public GPU pricing page https://www.hyperstack.cloud/gpu-pricing (HTML, no auth).

What is called
    ``GET https://www.hyperstack.cloud/gpu-pricing`` once per run, after checking robots.txt
    (disallowed -> ``RobotsDisallowed``: the run is skipped). No credentials.

What is extracted
    Every price list whose header row starts with a "GPU Model" column. The list's kind comes
    from the title above it: "On-Demand GPU Pricing" -> ``on_demand``, "Spot VM Pricing" ->
    ``spot``, "Reservation Pricing" -> ``reserved``. Lists with other titles (CPU, storage,
    token pricing) have no "GPU Model" column or are left alone; a page without the on-demand
    list raises ``ParseError("hyperstack: layout changed: ...")``.

    The price column is the first header after "GPU Model" that names a price ("Pricing Per
    Hour", "Starting from", "Spot VM"). Prices are USD **per GPU-hour** (the on-demand list gives
    vCPUs and RAM "per GPU"), so each row is a one-GPU offer (``gpu_count=1``) with
    ``extra["price_basis"] = "per GPU-hour"``. A cell that is not a price quarantines that row's
    offer with the column, model and list named; the other rows are kept (every row so: a
    ``ParseError`` naming the column).

    Reservation prices are "Starting from" figures and the page names no term: they are
    ``reserved`` offers with ``term_months=0``, ``extra["term_unstated"] = True`` and
    ``extra["price_from"] = True`` (the lowest reservation rate, term agreed per contract).

    Names: the model cell is the ``sku`` ("NVIDIA H100 NVLink"). Hyperstack lists its SXM cards
    as "... SXM"; an H100 or A100 named without "SXM" ("NVIDIA H100", "NVIDIA H100 NVLink",
    "NVIDIA A100 NVLink") is the PCIe card (NVLink there is a bridge between PCIe cards), so
    ``gpu_raw`` says "PCIe" ("NVIDIA H100 PCIe") and ``extra["interconnect"] = "NVLink"`` keeps
    the bridge. Other names pass through unchanged. "VRAM (GB)", "Max pCPUs per GPU" and
    "Max RAM (GB) per GPU" fill ``gpu_memory_gb``, ``vcpus`` and ``ram_gb`` where the list has them;
    the reservation and spot lists print no VRAM, so their offers take it from the on-demand row
    with the same ``gpu_raw`` (``extra["gpu_memory_from"] = "on-demand list"``), which tells the
    catalog an 80 GB A100 from a 40 GB one. No region is printed.

Selectors relied on (visible text and document structure, no class names)
    * a header row: an element whose first direct child reads "GPU Model" and that has at
      least one more child;
    * rows: the direct children of the header row's next sibling, each with as many child
      elements as the header has cells;
    * the title: the nearest heading (``h1``-``h6``) before the header row.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import Http, ScrapedOffer, Scraper, unreadable
from scrapers.html import (
    cell_field,
    children,
    hourly,
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

PRICING_URL = "https://www.hyperstack.cloud/gpu-pricing"

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_PRICE_HEADER_RE = re.compile(r"pric|starting|from|spot|per hour|\$", re.IGNORECASE)
#: Models whose SXM version Hyperstack names "... SXM": without it, the row is the PCIe card.
_PCIE_UNLESS_SXM = ("H100", "A100")



def _kind_of(title: str) -> tuple[str, int] | None:
    """(kind, term_months) a list title stands for; ``None`` for lists that are not GPU prices."""
    text = norm_label(title)
    if "spot" in text:
        return ("spot", 0)
    if "reserv" in text:
        return ("reserved", 0)
    if "on demand" in text and "gpu" in text:
        return ("on_demand", 0)
    return None


def _header_rows(doc: Tag) -> list[Tag]:
    found: list[Tag] = []
    for text in doc.find_all(string=re.compile(r"^\s*GPU\s+Model\s*$", re.IGNORECASE)):
        node = text.parent
        while is_tag(node) and node.parent is not None:
            parent = node.parent
            cells = children(parent)
            if len(cells) >= 2 and cells[0] is node:
                if all(parent is not seen for seen in found):
                    found.append(parent)
                break
            node = parent
    return found


def _gpu_raw(model: str) -> tuple[str, dict[str, Any]]:
    """``gpu_raw`` and extra fields for a model cell (see the module docstring)."""
    words = model.split()
    upper = [w.upper() for w in words]
    extra: dict[str, Any] = {}
    if any(tok in upper for tok in _PCIE_UNLESS_SXM) and "SXM" not in upper and "PCIE" not in upper:
        if "NVLINK" in upper:
            extra["interconnect"] = "NVLink"
        kept = [w for w in words if w.upper() != "NVLINK"]
        return " ".join([*kept, "PCIe"]), extra
    return model, extra


def _memory_from_on_demand(offers: list[ScrapedOffer]) -> list[ScrapedOffer]:
    """Reservation and spot lists print no VRAM: take it from the on-demand row of the same card."""
    memory = {o.gpu_raw: o.gpu_memory_gb for o in offers if o.kind == "on_demand" and o.gpu_memory_gb is not None}
    return [
        replace(o, gpu_memory_gb=memory[o.gpu_raw], extra={**o.extra, "gpu_memory_from": "on-demand list"})
        if o.gpu_memory_gb is None and o.gpu_raw in memory
        else o
        for o in offers
    ]


class HyperstackScraper(Scraper):
    name: ClassVar[str] = "hyperstack"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Hyperstack"
    homepage: ClassVar[str] = "https://www.hyperstack.cloud"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "recording"
    checked_by: ClassVar[str] = "recording: a saved copy of the pricing page, via ewyluda/gpu-price-index"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "spot", "reserved")
    caveats: ClassVar[str] = (
        "scraped from the public pricing page; prices are per GPU-hour (one-GPU offers); "
        "reservation prices are 'starting from' rates with no term printed (term_months 0); no region"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        offers: list[ScrapedOffer] = []
        kinds_seen: set[str] = set()
        for header in _header_rows(doc):
            heading = header.find_previous(_HEADINGS)
            title = visible_text(heading) if heading is not None else ""
            kind = _kind_of(title)
            if kind is None:
                continue
            kinds_seen.add(kind[0])
            offers.extend(self._parse_list(header, title, *kind))
        if "on_demand" not in kinds_seen:
            raise layout_changed(self.name, "no 'On-Demand GPU Pricing' list with a 'GPU Model' column")
        return _memory_from_on_demand(offers)

    def _parse_list(self, header: Tag, title: str, kind: str, term: int) -> list[ScrapedOffer]:
        headers = [visible_text(c) for c in children(header)]
        labels = [norm_label(h) for h in headers]
        price_col = next((i for i, label in enumerate(labels) if i and _PRICE_HEADER_RE.search(label)), None)
        if price_col is None:
            raise layout_changed(self.name, f"the {title!r} list has no price column (headers {labels})")
        spec_cols = {
            "gpu_memory_gb": next((i for i, label in enumerate(labels) if "vram" in label), None),
            "vcpus": next((i for i, label in enumerate(labels) if "cpu" in label and "per gpu" in label), None),
            "ram_gb": next((i for i, label in enumerate(labels) if label.startswith("max ram") and "per gpu" in label), None),
        }
        body = header.find_next_sibling()
        rows = children(body) if is_tag(body) else []
        if not rows:
            raise layout_changed(self.name, f"the {title!r} list has no rows")
        offers: list[ScrapedOffer] = []
        for row in rows:
            cells = children(row)
            if len(cells) != len(labels):
                raise layout_changed(self.name, f"a row of {title!r} has {len(cells)} cells, the header {len(labels)}")
            model = visible_text(cells[0])
            if not model:
                continue  # an empty spacer row
            cell = visible_text(cells[price_col])
            # no price in the cell (none is "Contact sales" here): this row is quarantined with the
            # list's column named, the others are kept
            where = f"{cell_field(headers[price_col], model)} in {title!r}"
            money, bad = read_money(cell, where, required=True)
            if money is not None and money.amount is None:  # "Contact sales": no price to list here
                money, bad = None, unreadable("price", where, cell, "not a price")
            gpu_raw, extra = _gpu_raw(model)
            extra.update(bad)
            extra["price_basis"] = "per GPU-hour"
            if kind == "reserved":
                extra.update(term_unstated=True, price_from=True)
            specs = {key: parse_number(visible_text(cells[i])) if i is not None else None for key, i in spec_cols.items()}
            offers.append(
                self.offer(
                    sku=model,
                    gpu_raw=gpu_raw,
                    gpu_count=1,
                    price_per_hour=hourly(money) if money is not None else None,
                    currency=money.currency if money is not None else "USD",
                    kind=kind,
                    term_months=term,
                    extra=extra,
                    **specs,
                )
            )
        return offers
