"""Thunder Compute: on-demand GPU prices from the schema.org ``Product`` data of its pricing page.

Called: ``GET https://www.thundercompute.com/pricing`` once per run, after checking robots.txt;
no key. The page embeds its price list as JSON-LD (``<script type="application/ld+json">``): one
``Product`` per GPU offer, its ``name`` the offer as the page prints it ("NVIDIA A100 80GB
On-demand", "NVIDIA H100 80GB (PCIe) On-demand", "1-8 x H100 PCIe NVLink"; the shape shown by
the MIT-licensed thatkavish/OpenComputePrices collector and data of March 2026) and ``offers``
an ``Offer`` (or a list of them, or an ``AggregateOffer`` with ``lowPrice``) with ``price``,
``priceCurrency`` and ``availability`` (a schema.org item availability URL). JSON-LD blocks may
be one object, a list, or an ``@graph``; non-``Product`` items (Organization, FAQ) are skipped.

Each product is an ``on_demand`` offer of one GPU: prices are per GPU-hour (billed by the
minute). A name starting with a count range ("1-8 x H100 ...") is rentable with 1 to 8 GPUs:
the offer stays one GPU, and the range's top is ``extra["max_gpu_count"]`` (the
``per_gpu_limit_field``). The words after the GPU that name the offer rather than the chip
("On-demand") and an "NVLink" bridge are kept out of ``gpu_raw`` (``extra["nvlink"]`` says so);
the sku is the full product name. Stock: ``InStock``/``LimitedAvailability`` -> available,
``OutOfStock``/``SoldOut``/``Discontinued`` -> not, ``PreOrder``/``PreSale``/``BackOrder`` ->
not yet, with ``extra["coming_soon"]``; a product without a price is listed with
``price_per_hour=None``.

No JSON-LD, or no ``Product`` in it -> ``ParseError("thundercompute: ...")``. A product whose
price is not a number quarantines that offer only.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    read_price,
)
from scrapers.html import page_soup, slug

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

PRICING_URL = "https://www.thundercompute.com/pricing"
_RANGE_RE = re.compile(r"^\s*(\d+)\s*(?:-|–|to)\s*(\d+)\s*[x×]\s*", re.IGNORECASE)
_MODE_RE = re.compile(r"\s*\b(?:on[\s-]?demand|prototyping|production)\b\s*$", re.IGNORECASE)
_NVLINK_RE = re.compile(r"\s*\bnvlink\b\s*", re.IGNORECASE)
_IN_STOCK = ("instock", "limitedavailability", "onlineonly", "instoreonly")
_OUT = ("outofstock", "soldout", "discontinued")
_SOON = ("preorder", "presale", "backorder")


def _items(node: Any) -> list[Any]:
    """Every JSON-LD item of a block: the block itself, a list's members, an ``@graph``'s members."""
    if isinstance(node, list):
        return [item for member in node for item in _items(member)]
    if isinstance(node, dict) and isinstance(node.get("@graph"), list):
        return _items(node["@graph"])
    return [node]


class ThundercomputeScraper(Scraper):
    name: ClassVar[str] = "thundercompute"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Thunder Compute"
    homepage: ClassVar[str] = "https://www.thundercompute.com/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML page, schema.org Product JSON-LD)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = "reference: the page shape as thatkavish/OpenComputePrices reads it (structure only, own values)"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    per_gpu_limit_field: ClassVar[str] = "max_gpu_count"
    caveats: ClassVar[str] = (
        "JSON-LD Product offers of the pricing page, per GPU-hour (billed per minute); a '1-8 x' product is "
        "one GPU with its 8-GPU limit; stock from the offer's schema.org availability"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        products = self._products(doc)
        if not products:
            raise ParseError(f"{self.name}: the page's JSON-LD ('application/ld+json') has no Product")
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for index, product in enumerate(products):
            offer = self._product_offer(product, index)
            if offer.sku in seen:
                continue  # the same product in two blocks
            seen.add(offer.sku)
            offers.append(offer)
        return offers

    def _products(self, doc: BeautifulSoup) -> list[dict[str, Any]]:
        scripts = doc.find_all("script", attrs={"type": re.compile(r"application/ld\+json", re.IGNORECASE)})
        if not scripts:
            raise ParseError(f"{self.name}: the page has no JSON-LD ('application/ld+json' script)")
        products = []
        for script in scripts:
            try:
                block = json.loads(script.string or script.get_text() or "")
            except ValueError:
                continue  # one malformed block does not hide the others
            for item in _items(block):
                kind = item.get("@type") if isinstance(item, dict) else None
                if kind == "Product" or (isinstance(kind, list) and "Product" in kind):
                    products.append(item)
        return products

    def _product_offer(self, product: dict[str, Any], index: int) -> ScrapedOffer:
        at = field_path("Product", index)
        name = product.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ParseError(f"{self.name}: {at} has no 'name'")
        name = " ".join(name.split())
        gpu = name
        extra: dict[str, Any] = {"per_gpu": True, "product": name}
        m = _RANGE_RE.match(gpu)
        if m is not None:
            extra["max_gpu_count"] = int(m.group(2))
            gpu = gpu[m.end():]
        else:
            extra["gpu_count_unstated"] = True
        gpu = _MODE_RE.sub("", gpu)
        if _NVLINK_RE.search(gpu):
            extra["nvlink"] = True
            gpu = _NVLINK_RE.sub(" ", gpu)
        gpu = gpu.strip() or name

        offer = product.get("offers")
        if isinstance(offer, list):
            offer = next((o for o in offer if isinstance(o, dict)), None)
        if not isinstance(offer, dict):
            raise ParseError(f"{self.name}: {at} ({name!r}) has no 'offers' object")
        availability = str(offer.get("availability") or "").rsplit("/", 1)[-1].lower()
        key = "lowPrice" if "price" not in offer and "lowPrice" in offer else "price"
        if key not in offer and availability in _SOON:
            price, bad = None, {}  # announced, not priced yet
        else:
            price, bad = read_price(offer, key, at=field_path(at, "offers"))
        extra.update(bad)
        currency = offer.get("priceCurrency")
        currency = currency.strip().upper() if isinstance(currency, str) and len(currency.strip()) == 3 else "USD"
        available: bool | None = None
        if availability in _IN_STOCK:
            available = True
        elif availability in _OUT:
            available = False
        elif availability in _SOON:
            available, extra["coming_soon"] = False, availability
        if availability:
            extra["availability"] = availability
        return self.offer(
            sku=slug(name),
            gpu_raw=gpu,
            gpu_count=1,
            price_per_hour=price,
            kind="on_demand",
            currency=currency,
            available=available,
            extra=extra,
        )
