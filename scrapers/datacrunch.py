"""DataCrunch (now Verda) public products page: the instance price table. RETIRED.

Retired: DataCrunch renamed itself Verda; ``datacrunch.io/products`` is the page of a site that
no longer exists as such (no capture of it after 2025-08), and Verda's prices, on demand and
spot, are read by the ``verda`` provider (its pricing page without keys, its API with them).
Collecting both would count every Verda offer twice under two names, so this scraper is kept
only so that its stored history stays readable and its recording replays; it is not collected.

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
  A price cell holding text that is no price ("call us") or a GPU count that is no number
  quarantines that row's offers with the column and instance named; the other rows are kept.

Offers per row: ``on_demand`` (sku = instance name), ``spot`` (sku = instance name), and the
dynamic price as a separate ``on_demand`` offer with sku ``"<instance>/dynamic"`` and
``extra={"pricing": "dynamic"}`` (DataCrunch re-prices those daily; fixed-price and dynamic
instances are both on-demand, so they are kept apart by sku rather than dropped). The page names
no region. A row repeated in several tables is kept once.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from scrapers.base import Http, ParseError, Retired, ScrapedOffer, Scraper, unreadable
from scrapers.html import (
    body_rows,
    cell_field,
    column_index,
    find_tables,
    header_index,
    hourly,
    layout_changed,
    page_soup,
    parse_number,
    read_money,
    text_of,
)

URL = "https://datacrunch.io/products"
REQUIRED = ("Instance name", "GPU model", "GPU", "On demand price")
OPTIONAL = ("CPU", "RAM", "VRAM", "P2P", "Dynamic price", "Spot price")


class DatacrunchScraper(Scraper):
    name = "datacrunch"
    segment = "neocloud"
    display_name = "DataCrunch (pricing page)"
    homepage = "https://datacrunch.io"
    endpoint = "GET https://datacrunch.io/products"
    source_kind = "page"
    fixture_kind = "recording"
    checked_by = "recording: a Wayback capture of the pricing page"
    #: datacrunch.io redirects to verda.com since the rename
    hosts = ("verda.com",)
    kinds = ("on_demand", "spot")
    caveats = (
        "retired: DataCrunch is now Verda, read by the verda provider; was scraped from the public products page "
        "(no region), dynamic prices as separate on-demand offers with sku '<type>/dynamic'"
    )
    retired = Retired(
        date(2026, 12, 3),
        "DataCrunch renamed itself Verda and its products page is gone with the old site; "
        "Verda's prices are collected by the verda provider (pricing page without keys, API with them)",
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(URL, follow_redirects=True)

    def _price(self, cell: str, count: float, where: str) -> tuple[bool, float | None, dict[str, str]]:
        """(listed, price per hour for the instance, extra) from one price cell; a cell that holds
        text but no price is listed with ``extra[UNREADABLE_PRICE]`` naming the column and row."""
        money, bad = read_money(cell, where)
        if money is None:
            return bool(bad), None, bad  # "–" or empty: not offered
        if money.amount is None:
            return True, None, {}  # "Contact sales"
        price = hourly(money)
        return True, price * count if money.per_gpu else price, bad

    def price_group(self, offer: ScrapedOffer) -> str:
        """The dynamic prices are a column of their own beside the fixed on-demand ones."""
        return f"{offer.extra['pricing']} {offer.kind}" if offer.extra.get("pricing") else offer.kind

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
                count = parse_number(cells[col["GPU"]])
                # a count that is no number quarantines this row's offers, not the page
                bad_count = unreadable("GPU count", cell_field("GPU", instance), cells[col["GPU"]]) if count is None else {}
                gpu_model = cells[col["GPU model"]]
                if not gpu_model:
                    raise ParseError(f"{self.name}: row {instance!r}: empty GPU model")

                def cell(label: str) -> str | None:
                    i = col.get(label)
                    return cells[i] if i is not None and i < len(cells) else None

                vram = parse_number(cell("VRAM"))
                p2p = cell("P2P")
                common = {
                    "gpu_raw": gpu_model,
                    "gpu_count": count or 0.0,
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
                    listed, price, bad = self._price(text, count or 1.0, cell_field(label, instance))
                    if not listed or (sku, kind) in offers:
                        continue
                    if p2p and p2p != "/":
                        extra = {**extra, "p2p": p2p}
                    extra = {**extra, **(bad_count or bad)}
                    offers[(sku, kind)] = self.offer(sku=sku, kind=kind, price_per_hour=price, extra=extra, **common)
        if not offers:
            raise layout_changed(self.name, "the 'Instance name' price table has no priced instance rows")
        return list(offers.values())
