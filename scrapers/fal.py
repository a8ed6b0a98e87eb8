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

from scrapers.base import Http, ScrapedOffer, Scraper
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
    read_money,
    slug,
    text_of,
)

PRICING_URL = "https://fal.ai/pricing"


class FalScraper(Scraper):
    name: ClassVar[str] = "fal"
    display_name: ClassVar[str] = "fal (Serverless & Compute)"
    homepage: ClassVar[str] = "https://fal.ai/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = "reference: the 2026 shape of getcomputable/gpu-index's observatory capture (structure only, own values)"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "reserved")
    caveats: ClassVar[str] = (
        "GPU table of the pricing page, per GPU-hour: list price as on-demand, 'as low as' as reserved "
        "with no stated term; no region"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        tables = find_tables(doc, "GPU", "VRAM", "List Price")
        if not tables:
            raise layout_changed(self.name, "no table with 'GPU', 'VRAM' and 'List Price' columns")
        offers: list[ScrapedOffer] = []
        seen: dict[tuple[str, str], float | None] = {}
        for table in tables:
            col = header_index(table, "GPU", "VRAM", "List Price", provider=self.name)
            low_col = column_index(table, "As low as")
            rows = body_rows(table)
            if not rows:
                raise layout_changed(self.name, "the GPU table has no rows")
            for cells in rows:
                if len(cells) <= max(col.values()):
                    raise layout_changed(self.name, f"row {text_of(cells[0])!r} has {len(cells)} cells")
                gpu = text_of(cells[col["GPU"]])
                if not gpu:
                    raise layout_changed(self.name, "a GPU row names no GPU")
                memory = parse_gb(text_of(cells[col["VRAM"]]))
                columns = [("List Price", col["List Price"], "on_demand")]
                if low_col is not None:
                    columns.append(("As low as", low_col, "reserved"))
                for label, index, kind in columns:
                    text = text_of(cells[index]) if index < len(cells) else ""
                    if is_blank(text):
                        continue  # not offered
                    money, bad = read_money(text, cell_field(label, gpu), required=True)
                    extra: dict[str, Any] = {"per_gpu": True, "column": label, **bad}
                    if kind == "reserved":
                        extra["term_unstated"] = True
                    price = None
                    if money is not None and money.amount is not None:
                        price = round(hourly(money, assume="hour"), 6)
                    elif money is not None:
                        extra["contact_sales"] = True
                    sku = slug(f"{gpu} {memory:g}gb" if memory else gpu)
                    if (sku, kind) in seen:  # a row repeated with the same price: one offer
                        if seen[(sku, kind)] != price:
                            raise layout_changed(self.name, f"two different {label!r} prices for {gpu!r}")
                        continue
                    seen[(sku, kind)] = price
                    offers.append(
                        self.offer(
                            sku=sku,
                            gpu_raw=gpu,
                            gpu_count=1,
                            gpu_memory_gb=memory,
                            price_per_hour=price,
                            kind=kind,
                            currency=money.currency if money is not None else "USD",
                            extra=extra,
                        )
                    )
        if not offers:
            raise layout_changed(self.name, "the GPU table lists no price")
        return offers
