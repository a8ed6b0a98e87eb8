"""Lambda (lambda.ai): on-demand GPU instance prices read from the public pricing page.

Called: ``GET https://lambda.ai/pricing`` once per run, after checking robots.txt; no auth.
(Lambda's JSON API, ``cloud.lambda.ai/api/v1/instance-types``, needs an API key and no real
recording of it exists, so the public page is the source.) The module is ``lambda_`` because
``lambda`` is a Python keyword; the provider name is ``"lambda"``.

Extracted, for each instance row: the GPU name as printed (``gpu_raw``), the GPU count, VRAM per
GPU, vCPUs, RAM and storage of the whole instance, and the on-demand price. The page prints
the price **per GPU-hour**; ``price_per_hour`` is the whole instance (per-GPU price x count),
and the per-GPU figure is kept in ``extra["price_per_gpu_hour"]``. No region, no spot, no
availability on the page.

What the parser relies on (what a reader of the page sees, never the generated
``_pricingTable_z1nfw_13``-style class names):

* the "Instances pricing" tables: every ``<table>`` whose header row has a ``VRAM`` column and a
  ``PRICE`` column (today "VRAM/GPU", "vCPUs", "RAM", "STORAGE", "PRICE/GPU/HR*"). A price
  header that names the GPU ("PRICE/GPU/HR") means per GPU; one that does not ("PRICE/HR") means
  per instance; a price cell that says "/GPU" also means per GPU;
* rows: ``tr[data-plan]`` (the attribute is the plan's GPU name; the first cell's text if absent),
  cells found by the header's column index. A badge beside the name ("New", "Popular", "Coming
  soon": its own element in the name cell, or a trailing word) is not part of the name, so
  neither ``gpu_raw`` nor the offer id changes when Lambda adds or drops it (it is kept in
  ``extra["badge"]``);
* the GPU count: the tab the table sits in (``[role=tabpanel]`` labelled by a ``[role=tab]``
  reading "8x", "4x", "2x", "1x"); a plan name starting "8x ..." wins. When such tabs exist, only
  the tables inside them are read; without tabs, every table above must name its counts.

No pricing table, no rows or no count -> ``ParseError("lambda: layout changed: ...")``. A price
cell that holds no price ("soon", empty) quarantines that row's offer with the column and plan
named, the other rows are kept (every row so: a ``ParseError`` naming the column).
"Contact sales" -> ``price_per_hour=None``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapers.base import Http, ScrapedOffer, Scraper
from scrapers.html import (
    body_rows,
    cell_field,
    header_cells,
    header_index,
    hourly,
    layout_changed,
    norm_label,
    page_soup,
    parse_gb,
    parse_number,
    read_money,
    slug,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://lambda.ai/pricing"
_COUNT_RE = re.compile(r"^\s*(\d+)\s*x\b", re.IGNORECASE)
#: Marketing badges printed in or beside the plan name; never part of a GPU name.
_BADGES = ("new", "popular", "most popular", "coming soon", "limited", "limited availability", "sold out", "beta")
_BADGE_RE = re.compile(rf"\s*[-(\[]?\b({'|'.join(re.escape(b) for b in _BADGES)})\b[)\]]?\s*$", re.IGNORECASE)


def _plan_and_badge(tr: Tag, name_cell: Tag) -> tuple[str, str | None]:
    """The plan name of a row without any badge, and the badge ("New") if one was printed."""
    badges = [text_of(el) for el in name_cell.find_all(True) if text_of(el).lower() in _BADGES]
    attr = tr.get("data-plan")
    if attr:
        plan = str(attr).strip()
    else:
        plan = text_of(name_cell)
        for badge in badges:
            plan = re.sub(rf"\s*\b{re.escape(badge)}\b\s*", " ", plan).strip()
    m = _BADGE_RE.search(plan)
    while m and m.start() > 0:
        badges.append(m.group(1))
        plan = plan[: m.start()].strip()
        m = _BADGE_RE.search(plan)
    return plan, (badges[0] if badges else None)


class LambdaScraper(Scraper):
    name = "lambda"
    segment = "neocloud"
    display_name = "Lambda"
    homepage = "https://lambda.ai"
    endpoint = f"GET {PRICING_URL} (HTML page)"
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = "reference: the 2026 shape of a Wayback capture of the pricing page (structure only, own values)"
    kinds = ("on_demand",)
    caveats = "read from the public pricing page; listed price is per GPU-hour plus applicable sales tax, shown here for the whole instance"

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    # --- parsing ----------------------------------------------------------------------

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        tables = [t for t in doc.find_all("table") if self._is_pricing_table(t)]
        if not tables:
            raise layout_changed(self.name, "no pricing table with 'VRAM' and 'PRICE' columns")
        # With "8x/4x/2x/1x" tabs, only the tables in them are the instance tables (others on the
        # page, e.g. cluster offers, are not read); without tabs every such table must name counts.
        in_tabs = [t for t in tables if self._tab_count(doc, t) is not None]
        tables = in_tabs or tables
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for table in tables:
            offers.extend(self._parse_table(doc, table, seen))
        if not offers:
            raise layout_changed(self.name, "the pricing tables have no instance rows")
        return offers

    @staticmethod
    def _is_pricing_table(table: Tag) -> bool:
        headers = [norm_label(h) for h in header_cells(table)]
        return any("vram" in h for h in headers) and any("price" in h for h in headers)

    def _parse_table(self, doc: Tag, table: Tag, seen: set[str]) -> list[ScrapedOffer]:
        headers = header_cells(table)
        price_label = next(h for h in headers if "price" in norm_label(h))
        price_is_per_gpu = "gpu" in norm_label(price_label)
        col = header_index(table, "VRAM", "vCPUs", "RAM", "STORAGE", price_label, provider=self.name)
        tab_count = self._tab_count(doc, table)
        rows = body_rows(table)
        if not rows:
            raise layout_changed(self.name, f"the {price_label!r} table has no rows")
        offers = []
        for cells in rows:
            tr = cells[0].parent
            if len(cells) <= max(col.values()):
                raise layout_changed(self.name, f"row {text_of(tr)!r} has {len(cells)} cells, headers are {headers}")
            plan, badge = _plan_and_badge(tr, cells[0])
            if not plan:
                raise layout_changed(self.name, f"row {text_of(tr)!r} names no plan")
            count = tab_count
            m = _COUNT_RE.match(plan)
            if m:  # "8x NVIDIA H100" names its own count
                count = int(m.group(1))
                plan = plan[m.end() :].strip()
            if count is None:
                raise layout_changed(self.name, f"no GPU count for {plan!r} (no '8x'-style tab or prefix)")

            price_text = text_of(cells[col[price_label]])
            # a cell that is no price quarantines this row, not the page (a blank one too: the
            # page prints no "not offered" here)
            money, bad = read_money(price_text, cell_field(price_label, plan), required=True)
            extra: dict[str, Any] = {"badge": badge} if badge else {}
            extra.update(bad)
            price: float | None = None
            if money is not None and money.amount is not None:
                unit_price = hourly(money, assume="hour")
                per_gpu = price_is_per_gpu or money.per_gpu
                price = round(unit_price * count, 6) if per_gpu else round(unit_price, 6)
                extra["price_per_gpu_hour"] = round(unit_price, 6) if per_gpu else round(unit_price / count, 6)
                if money.is_from:
                    extra["price_from"] = True
                if money.amount_max is not None:
                    top = hourly(replace(money, amount=money.amount_max), assume="hour")
                    extra["price_max_per_hour"] = round(top * count, 6) if per_gpu else round(top, 6)
            elif money is not None:
                extra["contact_sales"] = True
            storage = text_of(cells[col["STORAGE"]])
            if storage:
                extra["storage"] = storage

            memory = parse_gb(text_of(cells[col["VRAM"]])) or parse_number(text_of(cells[col["VRAM"]]))
            sku = slug(f"{count}x {plan} {memory:g}gb" if memory else f"{count}x {plan}")
            if sku in seen:
                raise layout_changed(self.name, f"two rows for the same instance {sku!r}")
            seen.add(sku)
            offers.append(
                self.offer(
                    sku=sku,
                    gpu_raw=plan,
                    gpu_count=count,
                    gpu_memory_gb=memory,
                    vcpus=parse_number(text_of(cells[col["vCPUs"]])),
                    ram_gb=parse_gb(text_of(cells[col["RAM"]])) or parse_number(text_of(cells[col["RAM"]])),
                    price_per_hour=price,
                    currency=money.currency if money is not None else "USD",
                    kind="on_demand",
                    extra=extra,
                )
            )
        return offers

    @staticmethod
    def _tab_count(doc: Tag, table: Tag) -> int | None:
        """The "8x"-style tab label of the tab panel around ``table``, as a GPU count."""
        panel = table.find_parent(attrs={"role": "tabpanel"})
        if panel is None:
            return None
        label = ""
        labelled_by = panel.get("aria-labelledby")
        if labelled_by:
            tab = doc.find(id=str(labelled_by))
            label = text_of(tab)
        if not label and panel.get("id"):
            tab = doc.find(attrs={"role": "tab", "aria-controls": str(panel.get("id"))})
            label = text_of(tab)
        m = _COUNT_RE.match(label)
        return int(m.group(1)) if m else None
