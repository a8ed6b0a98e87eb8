"""fal: GPU prices of its "Serverless & Compute" table (per GPU-hour) from the pricing page.

Called: ``GET https://fal.ai/pricing`` once per run, after checking robots.txt; no key.

What the parser relies on (what a reader of the page sees, never the Tailwind classes): the
table whose header has a **GPU** column, a **VRAM** column and a **List Price** column (an
**As low as** column is optional). Other tables of the page (model API prices by output unit:
"Model", "Unit", "Price") have no GPU column and are not read. Each row: the GPU as printed
("H100", "RTX PRO 6000"; the icon's alt text is not read), its VRAM ("80GB"), and prices such as
"$3.99/h" (a per-second price, "$0.0011/s", is converted to per hour).

Each row is priced per GPU, for one GPU (fal's serverless and compute machines are billed per
GPU; ``gpu_count`` 1, ``extra["per_gpu"]``). "List Price" is the ``on_demand`` offer. "As low
as" is fal's lowest price for committed or volume use, with no term printed: a ``reserved``
offer with ``extra["term_unstated"]`` (so it never stands in for the on-demand price). "-" or an
empty cell is not offered; "Contact sales" is an offer without a price. No region or stock.

No such table, or one without rows -> ``ParseError("fal: layout changed: ...")``. A price cell
that is no price quarantines that offer only.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scrapers.base import REFERENCE_CAPTURE, PageScraper, ScrapedOffer
from scrapers.html import (
    cell_field,
    column_index,
    gpu_table_rows,
    hourly_price,
    is_blank,
    layout_changed,
    printed_once,
    slug,
    text_of,
)

PRICING_URL = "https://fal.ai/pricing"


class FalScraper(PageScraper):
    name: ClassVar[str] = "fal"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "fal (Serverless & Compute)"
    homepage: ClassVar[str] = "https://fal.ai/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    pricing_url: ClassVar[str] = PRICING_URL
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = REFERENCE_CAPTURE
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "reserved")
    caveats: ClassVar[str] = (
        "GPU table of the pricing page, per GPU-hour: list price as on-demand, 'as low as' as reserved "
        "with no stated term; no region"
    )

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        offers: list[ScrapedOffer] = []
        seen: dict[tuple[str, str], float | None] = {}
        for row in gpu_table_rows(self.name, raw, "GPU", "VRAM", "List Price"):
            cells, gpu, memory = row.cells, row.gpu, row.memory_gb
            columns = [("List Price", row.col["List Price"], "on_demand")]
            low_col = column_index(row.table, "As low as")
            if low_col is not None:
                columns.append(("As low as", low_col, "reserved"))
            for label, index, kind in columns:
                text = text_of(cells[index]) if index < len(cells) else ""
                if is_blank(text):
                    continue  # not offered
                price, currency, read = hourly_price(text, cell_field(label, gpu))
                extra: dict[str, Any] = {"per_gpu": True, "column": label, **read}
                if kind == "reserved":
                    extra["term_unstated"] = True
                sku = slug(f"{gpu} {memory:g}gb" if memory else gpu)
                if not printed_once(seen, (sku, kind), price, self.name, f"{label!r} of {gpu!r}"):
                    continue
                offers.append(
                    self.offer(
                        sku=sku,
                        gpu_raw=gpu,
                        gpu_count=1,
                        gpu_memory_gb=memory,
                        price_per_hour=price,
                        kind=kind,
                        currency=currency,
                        extra=extra,
                    )
                )
        if not offers:
            raise layout_changed(self.name, "the GPU table lists no price")
        return offers
