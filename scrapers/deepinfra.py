"""DeepInfra: dedicated GPU prices (per GPU-hour) from the GPU table of its pricing page.

Called: ``GET https://deepinfra.com/pricing`` once per run, after checking robots.txt; no key.

What the parser relies on (what a reader of the page sees, never the generated ``mui-style-*``
class names): every table whose header names a **GPU** column, a **Memory** column and a
**Price** column; today one, in the "Custom LLMs" section (dedicated GPUs running the user's own
model, billed by the minute for uptime). The page's other tables (inference tiers priced as
"1.5x base price", account tiers, per-token model prices) have no GPU column and are not read.
The nearest heading above the table is kept in ``extra["section"]``.

Each row: the GPU as printed ("H100"), its memory ("80GB", also in the sku, since DeepInfra
names the GPU without its variant), and a price such as "$2.20 / GPU-hour": an ``on_demand``
offer of one GPU (``gpu_count`` 1, ``extra["per_gpu"]``; the page states no count, multi-GPU
setups are priced per GPU). A price cell that says "Coming soon" (or "soon", "TBA") is a GPU
announced without a price: an offer with ``price_per_hour=None``, ``available=False`` and
``extra["coming_soon"]``. "Contact us" is an offer without a price; "-" is not offered. No
region or stock on the page.

No GPU table, or one without rows -> ``ParseError("deepinfra: layout changed: ...")``. Any other
price text quarantines that offer only.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from scrapers.base import REFERENCE_CAPTURE, PageScraper, ScrapedOffer
from scrapers.html import (
    cell_field,
    gpu_table_rows,
    hourly_price,
    is_blank,
    printed_once,
    slug,
    text_of,
)

PRICING_URL = "https://deepinfra.com/pricing"
_COMING_RE = re.compile(r"^\s*(?:coming\s+soon|soon|tba|tbd|pre[\s-]?order)\s*$", re.IGNORECASE)


class DeepinfraScraper(PageScraper):
    name: ClassVar[str] = "deepinfra"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "DeepInfra (dedicated GPUs)"
    homepage: ClassVar[str] = "https://deepinfra.com/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    pricing_url: ClassVar[str] = PRICING_URL
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = REFERENCE_CAPTURE
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    caveats: ClassVar[str] = (
        "GPU table of the pricing page (dedicated GPUs for custom models, billed per minute of uptime), "
        "per GPU-hour, one GPU per offer; coming-soon rows listed without a price"
    )

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        offers: list[ScrapedOffer] = []
        seen: dict[str, float | None] = {}
        for row in gpu_table_rows(self.name, raw, "GPU", "Memory", "Price"):
            cells, col, gpu, memory = row.cells, row.col, row.gpu, row.memory_gb
            heading = row.table.find_previous(["h2", "h3", "h4"])
            section = text_of(heading) if heading is not None else ""
            text = text_of(cells[col["Price"]])
            if is_blank(text):
                continue  # not offered
            extra: dict[str, Any] = {"per_gpu": True, "gpu_count_unstated": True}
            if section:
                extra["section"] = section
            price: float | None = None
            available: bool | None = None
            currency = "USD"
            if _COMING_RE.match(text):
                extra["coming_soon"] = text
                available = False
            else:
                price, currency, read = hourly_price(text, cell_field("Price", gpu))
                extra.update(read)
            sku = slug(f"{gpu} {memory:g}gb" if memory else gpu)
            if not printed_once(seen, sku, price, self.name, f"{gpu!r} {text_of(cells[col['Memory']])!r}"):
                continue
            offers.append(
                self.offer(
                    sku=sku,
                    gpu_raw=gpu,
                    gpu_count=1,
                    gpu_memory_gb=memory,
                    price_per_hour=price,
                    kind="on_demand",
                    currency=currency,
                    available=available,
                    extra=extra,
                )
            )
        return offers
