"""TensorPool: on-demand GPU prices (per GPU-hour) from its own column of the pricing page.

Called: ``GET https://tensorpool.dev/pricing`` once per run, after checking robots.txt; no key.

The page compares TensorPool with other clouds (Lambda, "Traditional Clouds"), so most prices on
it are *not* TensorPool's: only the card headed **TensorPool** is read. What the parser relies
on (what a reader sees; Tailwind classes are not used): an ``<h3>`` reading "TensorPool" whose
card has a "GPU COSTS / HR" heading and one line per GPU, "H100 SXM - $1.99" (the price in its
own element). The same figures are repeated in a comparison grid hidden on small screens; the
card is the one source. Lines for "CPU" are not GPUs and are left out; "N/A" is not offered.

Each line is an ``on_demand`` offer of one GPU (``gpu_count`` 1, ``extra["per_gpu"]``,
``extra["gpu_count_unstated"]``: the page prices per GPU-hour and states no count per rental).
"Contact us" is an offer without a price. No region or stock on the page.

No "TensorPool" card, or one without a "GPU COSTS" list or GPU lines ->
``ParseError("tensorpool: layout changed: ...")``. A price that is no price quarantines that line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import REFERENCE_CAPTURE, PageScraper, ScrapedOffer
from scrapers.html import (
    cell_field,
    hourly_price,
    is_blank,
    layout_changed,
    norm_label,
    page_soup,
    slug,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://tensorpool.dev/pricing"
_LINE_RE = re.compile(r"^\s*(?P<name>.+?)\s+[-–—:]\s+(?P<price>.+?)\s*$")
_NOT_GPUS = frozenset({"cpu", "cpus", "storage"})


class TensorpoolScraper(PageScraper):
    name: ClassVar[str] = "tensorpool"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "TensorPool"
    homepage: ClassVar[str] = "https://tensorpool.dev/pricing"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    pricing_url: ClassVar[str] = PRICING_URL
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = REFERENCE_CAPTURE
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    caveats: ClassVar[str] = (
        "TensorPool's own card of a comparison page (other clouds' columns are not read); per GPU-hour, "
        "one GPU per offer"
    )

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        card = self._own_card(doc)
        offers: list[ScrapedOffer] = []
        lines = [el for el in card.find_all(True) if el.find("strong") is not None and el.find(True, recursive=False).name == "strong"]
        for line in lines:
            text = text_of(line)
            m = _LINE_RE.match(text)
            if m is None:
                raise layout_changed(self.name, f"GPU line {text!r} is not 'NAME - $PRICE'")
            gpu, price_text = m.group("name"), text_of(line.find("strong"))
            if norm_label(gpu) in _NOT_GPUS:
                continue
            if is_blank(price_text):
                continue  # "N/A": not offered
            price, currency, read = hourly_price(price_text, cell_field("GPU COSTS / HR", gpu))
            extra: dict[str, Any] = {"per_gpu": True, "gpu_count_unstated": True, **read}
            offers.append(
                self.offer(
                    sku=slug(gpu),
                    gpu_raw=gpu,
                    gpu_count=1,
                    price_per_hour=price,
                    kind="on_demand",
                    currency=currency,
                    extra=extra,
                )
            )
        if not offers:
            raise layout_changed(self.name, "the TensorPool card lists no GPU line ('NAME - $PRICE')")
        skus = [o.sku for o in offers]
        if len(set(skus)) != len(skus):
            raise layout_changed(self.name, "the TensorPool card lists a GPU twice")
        return offers

    def _own_card(self, doc: Tag) -> Tag:
        """The element around the "TensorPool" ``<h3>`` that holds its "GPU COSTS" list."""
        for heading in doc.find_all("h3"):
            if norm_label(text_of(heading)) != "tensorpool":
                continue
            node = heading.parent
            # walk up to the card, never past it: an element holding another card's <h3> is the
            # comparison around all cards, whose price lists are other clouds'
            while node is not None and len(node.find_all("h3")) == 1:
                label = node.find(["h4", "h5", "p"], string=re.compile(r"gpu\s+costs", re.IGNORECASE))
                if label is not None:
                    return node
                node = node.parent
        raise layout_changed(self.name, "no 'TensorPool' card with a 'GPU COSTS / HR' list")
