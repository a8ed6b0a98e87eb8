"""Modal (modal.com): serverless per-GPU prices read from the public pricing page.

Called: ``GET https://modal.com/pricing`` once per run, after checking robots.txt; no auth.

Extracted: one offer per GPU listed under "GPU Tasks": the GPU name as printed (``gpu_raw``,
e.g. "Nvidia A100, 80 GB"), the memory when the name states it, and the price. Modal bills
serverless GPU time **per second** (the page prints "$0.000694 / sec"); ``price_per_hour`` is
that x 3600 (a price printed per hour is taken as is), and the printed figure is kept in
``extra``. Modal attaches GPUs to containers one by one, so ``gpu_count`` is 1. CPU cores and
memory are billed on top ("CPU" and "Memory" line items, not emitted): ``extra
["gpu_component_only"] = True``. No region, no spot, no availability on the page.

What the parser relies on (what a reader of the page sees; never the generated
``svelte-1hbrymp``-style class names):

* the section label: an element whose whole text is "GPU Tasks" (or "GPU", "GPUs", "GPU pricing");
* the GPU rows: the ``div.line-item`` elements after that label, up to the next ``<hr>`` (which
  separates "CPU" and "Memory");
* in each row: the price is the ``.price`` element (else the ``<p>`` that holds a currency amount),
  read as text with its unit ("$0.001736 / sec"); the name is the first other ``<p>``.

No "GPU Tasks" label or no line items under it -> ``ParseError("modal: layout changed: ...")``.
A price without a readable amount or time unit quarantines that GPU with the section and item
named ("price field 'GPU Tasks' of 'Nvidia H100' holds 'soon', not a price"); the other GPUs are
kept (every one so: a ``ParseError`` naming it). "Contact sales" -> ``price_per_hour=None``.

What the server sends, what is proven and what is not
    The only real capture (the bundled recording) is a browser's DOM taken *after* a script
    clicked the page's "Per hour | Per second" toggle, not the bytes the server sends. What it
    does show about the server's answer:

    * the page is a SvelteKit page rendered on the server: the GPU line items sit inside
      Svelte's server-render block markers (``<!--[-->`` ... ``<!--]-->``), which only
      server-side rendering writes, so the items are in the HTML a plain GET receives, with no
      browser and no script run;
    * there is no embedded data to read instead: in the full capture (the recording keeps only
      the pricing block) the page's start-up script hands the client ``data: [null,null,null]``
      (no ``load`` data), so the prices are compiled into the page itself, and the printed line
      items are the only place they are;
    * the toggle changes only the printed unit: the captured state prints per second
      ("$0.001097 / sec"); the other prints per hour. The parser reads either (a test proves
      it on the recording turned to its per-hour form), converting per second x 3600.

    Unproven until a plain GET of the page is recorded: which unit the server's initial state
    prints (probably per hour, since the capturing script clicked to get per second, so a live
    price may be rounded to cents: $3.95 where the per-second figure gives $3.9492), and that
    the served HTML has no further wrapper around the "GPU Tasks" list that this parser's
    landmarks (the label, ``div.line-item``, ``.price``) would miss. A run that meets either
    fails with ``layout changed`` rather than storing wrong prices.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from scrapers.base import Http, ScrapedOffer, Scraper, unreadable
from scrapers.html import (
    cell_field,
    hourly,
    is_tag,
    layout_changed,
    page_soup,
    parse_gb,
    read_money,
    slug,
    text_of,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://modal.com/pricing"
_SECTION_RE = re.compile(r"^\s*GPUs?(?:\s+(?:tasks|pricing|compute))?\s*$", re.IGNORECASE)


def _has_class(tag: Tag, name: str) -> bool:
    return name in (tag.get("class") or [])


class ModalScraper(Scraper):
    name = "modal"
    segment = "neocloud"
    display_name = "Modal"
    homepage = "https://modal.com"
    endpoint = f"GET {PRICING_URL} (HTML page)"
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = "reference: the shape of the pricing page as a browser rendered it, via United-Compute/gpu-price-tracker (structure only, own values)"
    kinds = ("on_demand",)
    caveats = (
        "serverless, billed per second per GPU (converted to per hour); CPU cores and memory are billed on top; "
        "proven on a browser capture of the page, not yet on what a plain GET receives (see the scraper's docstring)"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    # --- parsing ----------------------------------------------------------------------

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        label = self._gpu_section_label(doc)
        items = self._line_items_after(label)
        if not items:
            raise layout_changed(self.name, f"no GPU line items under {text_of(label)!r}")
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for item in items:
            offer = self._offer(item, text_of(label))
            if offer.sku in seen:
                raise layout_changed(self.name, f"two GPU line items named {offer.gpu_raw!r}")
            seen.add(offer.sku)
            offers.append(offer)
        return offers

    def _gpu_section_label(self, doc: Tag) -> Tag:
        for tag in doc.find_all(["p", "h2", "h3", "h4", "h5", "div", "span"]):
            if _SECTION_RE.match(text_of(tag)) and tag.find_next(class_="line-item") is not None:
                return tag
        raise layout_changed(self.name, "no 'GPU Tasks' price section")

    @staticmethod
    def _line_items_after(label: Tag) -> list[Tag]:
        """``div.line-item`` elements in the label's following siblings, up to the next ``<hr>``."""
        node: Tag | None = label
        # Climb while the label has no following element (e.g. a <span> inside a heading).
        while node is not None and node.find_next_sibling() is None:
            node = node.parent if is_tag(node.parent) else None
        if node is None:
            return []
        items: list[Tag] = []
        for sib in node.find_next_siblings():
            if sib.name == "hr" or (sib.name in ("p", "h2", "h3", "h4", "h5") and not sib.find(class_="line-item")):
                break
            if _has_class(sib, "line-item"):
                items.append(sib)
            else:
                items.extend(sib.find_all(class_="line-item"))
        return items

    def _offer(self, item: Tag, section: str) -> ScrapedOffer:
        price_el = item.find(class_="price")
        paragraphs = [p for p in item.find_all("p") if p is not price_el]
        if price_el is None:  # no .price any more: the paragraph that holds an amount
            # (read_money, not parse_money: "$1e999" is no amount here, not an error)
            priced = [p for p in paragraphs if (m := read_money(text_of(p), "")[0]) is not None and m.amount is not None]
            if not priced:
                raise layout_changed(self.name, f"GPU line item {text_of(item)!r} has no price")
            price_el = priced[-1]
            paragraphs = [p for p in paragraphs if p is not price_el]
        if not paragraphs or not text_of(paragraphs[0]):
            raise layout_changed(self.name, f"GPU line item {text_of(item)!r} has no name")
        name = text_of(paragraphs[0])
        price_text = text_of(price_el)
        # no price, or no time unit to it: this GPU is quarantined with the item named, not the page
        where = cell_field(section, name)
        money, bad = read_money(price_text, where, required=True)
        if money is not None and money.amount is not None and money.per is None:
            bad = unreadable("price", where, price_text, "no time unit")
        extra: dict[str, Any] = {"gpu_component_only": True, "serverless": True, **bad}
        price: float | None = None
        if money is None:
            pass
        elif money.amount is None:
            extra["contact_sales"] = True
        elif money.per is not None:
            price = round(hourly(money, assume=None), 6)
            extra[f"price_per_{money.per}"] = money.amount
            if money.is_from:
                extra["price_from"] = True
        return self.offer(
            sku=slug(name),
            gpu_raw=name,
            gpu_count=1,
            gpu_memory_gb=parse_gb(name),
            price_per_hour=price,
            currency=money.currency if money is not None else "USD",
            kind="on_demand",
            extra=extra,
        )
