"""DataCrunch (now Verda) public products page: the instance price table.

Request: ``GET https://datacrunch.io/products`` (redirects followed), once per run, no auth, after
checking ``robots.txt`` allows it (``RobotsDisallowed``, a skipped run, otherwise). The same company's authenticated API
is the ``verda`` scraper; this page needs no credentials and adds the *dynamic* price.

Selectors (human-readable only; the page's CSS classes are generated and change per build):

* the price table = every ``<table>`` whose header cells read "Instance name" and "On demand
  price" (an excerpt without a ``<table>`` tag works too: the element around the loose ``<th>``
  cells); none -> ``ParseError("datacrunch: layout changed: ...")``;
* columns located by header text: "Instance name" ("1B200.30V"), "GPU model" ("B200 SXM6 180GB"),
  "GPU" (count), "On demand price" (required); "CPU" (vCPUs), "RAM" (GB), "VRAM" (GB, whole
  instance), "P2P", "Dynamic price", "Spot price" (used when present);
* prices such as "$3.64/h" are per **whole instance** and read with ``scrapers.html.parse_money``
  (unit converted to per hour; "–"/empty = not offered; "Contact sales" = listed without price).

Offers per row: ``on_demand`` (sku = instance name), ``spot`` (sku = instance name), and the
dynamic price as a separate ``on_demand`` offer with sku ``"<instance>/dynamic"`` and
``extra={"pricing": "dynamic"}`` (DataCrunch re-prices those daily; fixed-price and dynamic
instances are both on-demand, so they are kept apart by sku rather than dropped). The page names
no region. A row repeated in several tables is kept once.
"""

from __future__ import annotations

from typing import Any

from scrapers.base import Http, ParseError, ScrapedOffer, Scraper
from scrapers.html import (
    body_rows,
    column_index,
    find_tables,
    header_index,
    hourly,
    layout_changed,
    page_soup,
    parse_money,
    parse_number,
    text_of,
)

URL = "https://datacrunch.io/products"
REQUIRED = ("Instance name", "GPU model", "GPU", "On demand price")
OPTIONAL = ("CPU", "RAM", "VRAM", "P2P", "Dynamic price", "Spot price")


class DatacrunchScraper(Scraper):
    name = "datacrunch"
    display_name = "DataCrunch (pricing page)"
    homepage = "https://datacrunch.io"
    endpoint = "GET https://datacrunch.io/products"
    source_kind = "page"
    fixture_kind = "recording"
    #: datacrunch.io redirects to verda.com since the rename
    domains = ("datacrunch.io", "verda.com")
    kinds = ("on_demand", "spot")
    caveats = (
        "scraped from the public products page (no region); dynamic prices are separate on-demand "
        "offers with sku '<type>/dynamic'; same company as the verda API scraper"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(URL, follow_redirects=True)

    def _price(self, cell: str, count: float, where: str) -> tuple[bool, float | None]:
        """(listed, price per hour for the instance) from one price cell."""
        money = parse_money(cell)
        if money is None:
            if cell.strip(" -–—"):
                raise ParseError(f"{self.name}: {where}: unreadable price {cell!r}")
            return False, None  # "–" or empty: not offered
        if money.amount is None:
            return True, None  # "Contact sales"
        try:
            price = hourly(money)
        except ValueError as exc:
            raise ParseError(f"{self.name}: {where}: {exc}") from None
        return True, price * count if money.per_gpu else price

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        tables = find_tables(doc, "Instance name", "On demand price")
        if not tables:
            raise layout_changed(self.name, "no price table with 'Instance name' and 'On demand price' headers")
        offers: dict[tuple[str, str], ScrapedOffer] = {}
        for table in tables:
            col = header_index(table, *REQUIRED, provider=self.name)
            for label in OPTIONAL:
                i = column_index(table, label)
                if i is not None:
                    col[label] = i
            for row in body_rows(table):
                cells = [text_of(c) for c in row]
                if len(cells) <= max(col[label] for label in REQUIRED):
                    continue  # a section title or note row spanning the table
                instance = cells[col["Instance name"]]
                if not instance:
                    continue
                where = f"row {instance!r}"
                count = parse_number(cells[col["GPU"]])
                if count is None:
                    raise ParseError(f"{self.name}: {where}: GPU count {cells[col['GPU']]!r} is not a number")
                gpu_model = cells[col["GPU model"]]
                if not gpu_model:
                    raise ParseError(f"{self.name}: {where}: empty GPU model")

                def cell(label: str) -> str | None:
                    i = col.get(label)
                    return cells[i] if i is not None and i < len(cells) else None

                vram = parse_number(cell("VRAM"))
                p2p = cell("P2P")
                common = {
                    "gpu_raw": gpu_model,
                    "gpu_count": count,
                    "gpu_memory_gb": vram / count if vram and count else None,
                    "vcpus": parse_number(cell("CPU")),
                    "ram_gb": parse_number(cell("RAM")),
                }
                for label, sku, kind, extra in (
                    ("On demand price", instance, "on_demand", {}),
                    ("Dynamic price", f"{instance}/dynamic", "on_demand", {"pricing": "dynamic"}),
                    ("Spot price", instance, "spot", {}),
                ):
                    text = cell(label)
                    if text is None:
                        continue
                    listed, price = self._price(text, count, f"{where} {label!r}")
                    if not listed or (sku, kind) in offers:
                        continue
                    if p2p and p2p != "/":
                        extra = {**extra, "p2p": p2p}
                    offers[(sku, kind)] = self.offer(sku=sku, kind=kind, price_per_hour=price, extra=extra, **common)
        if not offers:
            raise layout_changed(self.name, "the 'Instance name' price table has no priced instance rows")
        return list(offers.values())
