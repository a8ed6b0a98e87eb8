"""GMI Cloud: GPU cards (starting price per GPU-hour, availability) from its pricing page.

Called: ``GET https://www.gmicloud.ai/en/pricing`` once per run, after checking robots.txt; no key.

What the parser relies on (what a reader of the page sees; the Tailwind class names are not
used): each GPU is a card whose ``<h3>`` names the GPU ("NVIDIA H100 GPU") and which prints a
price with a per-GPU-hour unit ("from $2.00" beside "/GPU-hour"); a short status label in the
card ("AVAILABLE NOW", "Limited Availability", "Sold out") says its stock. Other ``<h3>``s on the
page (feature blurbs, FAQ) have no per-GPU-hour price and are not cards. Cards hidden by the
markup are skipped, and a card repeated verbatim (a mobile copy) counts once.

Each card is one ``on_demand`` offer of one GPU (``gpu_count`` 1: the page prints no count),
``extra["per_gpu"]`` and ``extra["gpu_count_unstated"]``; "from $X" is the starting price
(``extra["price_from"]``). Stock: "available now" -> ``available=True``; "limited" ->
``available=True`` with ``extra["stock"] = "limited"``; "sold out" -> ``available=False``.
A card whose price says "Pre order" or "Coming soon" is a GPU announced without a price: an offer
with ``price_per_hour=None``, ``available=False`` and ``extra["coming_soon"]``. "Contact sales"
is an offer without a price. No region on the page.

No GPU card at all -> ``ParseError("gmicloud: layout changed: ...")``. A card whose price is
neither a price nor one of the phrases above quarantines that card's offer only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import REFERENCE_CAPTURE, STOCK_LEVEL, PageScraper, ScrapedOffer
from scrapers.html import (
    cell_field,
    hourly,
    is_hidden,
    layout_changed,
    page_soup,
    read_money,
    slug,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://www.gmicloud.ai/en/pricing"
_UNIT_RE = re.compile(r"/\s*GPU[\s-]*(?:hour|hr|h)\b", re.IGNORECASE)
_COMING_RE = re.compile(r"\b(?:pre[\s-]?order|coming\s+soon|waitlist|join\s+the\s+wait)", re.IGNORECASE)
_STATUS_RE = re.compile(r"^(?:available(?: now)?|limited(?: availability)?|sold out|out of stock|coming soon|new)$", re.IGNORECASE)


class GmicloudScraper(PageScraper):
    name: ClassVar[str] = "gmicloud"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "GMI Cloud"
    homepage: ClassVar[str] = "https://www.gmicloud.ai/en/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    pricing_url: ClassVar[str] = PRICING_URL
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = REFERENCE_CAPTURE
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    caveats: ClassVar[str] = (
        "starting ('from') price per GPU-hour of each GPU card, one GPU per offer (no count printed); "
        "stock from the card's label; pre-order cards listed without a price"
    )

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        offers: list[ScrapedOffer] = []
        seen: dict[str, tuple[Any, ...]] = {}
        for heading in doc.find_all("h3"):
            card = heading.parent
            if card is None or is_hidden(heading):
                continue
            price_text = self._price_text(heading)
            if price_text is None:
                continue  # not a GPU card
            gpu = text_of(heading)
            if not gpu:
                raise layout_changed(self.name, "a GPU card's <h3> is empty")
            offer = self._card_offer(card, heading, gpu, price_text)
            key = (offer.price_per_hour, offer.available, price_text)
            if offer.sku in seen:
                if seen[offer.sku] != key:
                    raise layout_changed(self.name, f"two different cards for {gpu!r}")
                continue  # the same card printed twice
            seen[offer.sku] = key
            offers.append(offer)
        if not offers:
            raise layout_changed(self.name, "no GPU card (an <h3> with a '/GPU-hour' price beside it)")
        return offers

    @staticmethod
    def _price_text(heading: Tag) -> str | None:
        """The text of the card's price line: the first element after the heading that prints a
        per-GPU-hour unit, or ``None`` when the heading is no GPU card's."""
        for sibling in heading.find_next_siblings():
            text = text_of(sibling)
            if _UNIT_RE.search(text):
                return text
        return None

    def _card_offer(self, card: Tag, heading: Tag, gpu: str, price_text: str) -> ScrapedOffer:
        status = ""
        for el in card.find_all(True, recursive=False):
            if el is heading:
                continue
            text = text_of(el)
            if _STATUS_RE.match(text):
                status = text
                break
        extra: dict[str, Any] = {"per_gpu": True, "gpu_count_unstated": True}
        if status:
            extra["status"] = status
        low = status.lower()
        available: bool | None = None
        if low.startswith("available"):
            available = True
        elif low.startswith("limited"):
            available, extra[STOCK_LEVEL] = True, "limited"
        elif low in ("sold out", "out of stock"):
            available = False

        price: float | None = None
        currency = "USD"
        amount_text = _UNIT_RE.sub("", price_text).strip()
        if _COMING_RE.search(amount_text):
            extra["coming_soon"] = amount_text
            available = False
        else:
            money, bad = read_money(amount_text, cell_field("price", gpu), required=True)
            extra.update(bad)
            if money is not None and money.amount is not None:
                price = round(hourly(money, assume="hour"), 6)
                currency = money.currency
                if money.is_from:
                    extra["price_from"] = True
            elif money is not None:
                extra["contact_sales"] = True
        return self.offer(
            sku=slug(gpu),
            gpu_raw=gpu,
            gpu_count=1,
            price_per_hour=price,
            kind="on_demand",
            currency=currency,
            available=available,
            extra=extra,
        )
