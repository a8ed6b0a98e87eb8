"""Hot Aisle: AMD Instinct GPU prices read from the plan cards of its public pricing page.

Called: ``GET https://hotaisle.xyz/pricing`` once per run, after checking robots.txt; no auth.
The page is server-rendered (Astro). Its prices are printed **per GPU-hour** ("$2.99/GPU/hr"),
in dollars, with no region.

What the parser relies on (what a reader sees, never the utility class names):

* a plan card: an element holding a kicker paragraph that reads exactly "VM" or "Bare metal"
  (the hero section above the cards repeats the prices under "Virtual machines" and "8x bare
  metal": those are not cards and are not read, so no price is counted twice), a plan name in an
  ``<h2>`` ("Small", "Medium", "Large"), a count span ("1x", "2x & 4x", "8x") right before a
  chip span ("MI300x", "MI355X"), and one "$D.DD/GPU/hr" print;
* "VM" cards are the self-serve on-demand rate (``on_demand``); a "Bare metal" card must say
  "one-month minimum": it is a one-month commitment (``reserved``, ``term_months`` 1), stored at
  its printed hourly rate. A bare-metal card that no longer states its term is a ``ParseError``
  (its commitment would otherwise be guessed);
* a card naming several node sizes ("2x & 4x") gives one offer per size; the whole-instance price
  is the per-GPU price times the count (the per-GPU print stays in ``extra``);
* a card with its chip but no price and a "coming soon"/"contact" word is listed without a price
  (``price_per_hour`` None, never 0); any other card without a price print is quarantined.

Not read: the "grandfathered at $x/GPU/hr" line (existing customers only, not for sale), and the
JSON-LD offer catalogue (it names services without prices). No card, or a card without its
name, count or chip -> ``ParseError("hotaisle: layout changed: ...")``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from scrapers.base import REFERENCE_CAPTURE, Http, ScrapedOffer, Scraper, unreadable
from scrapers.html import layout_changed, page_soup, text_of

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://hotaisle.xyz/pricing"
#: Kicker text of a plan card -> (kind, term in months).
KICKERS = {"vm": ("on_demand", 0), "bare metal": ("reserved", 1)}
_CHIP_RE = re.compile(r"^\s*(MI\d{3}[A-Z]?)\s*$", re.IGNORECASE)
_COUNTS_RE = re.compile(r"^\s*\d+\s*x(?:\s*(?:&|and|,|/)\s*\d+\s*x)*\s*$", re.IGNORECASE)
_PRICE_RE = re.compile(r"\$\s*(\d+(?:\.\d+)?)\s*/\s*GPU\s*/\s*h(?:ou)?r", re.IGNORECASE)
_COMMITMENT_RE = re.compile(r"\bone[- ]month minimum\b", re.IGNORECASE)
_UNPRICED_RE = re.compile(r"\b(coming soon|contact|waitlist|request access)\b", re.IGNORECASE)


class HotaisleScraper(Scraper):
    name = "hotaisle"
    segment = "neocloud"
    display_name = "Hot Aisle"
    homepage = "https://hotaisle.xyz/pricing"
    endpoint = "GET https://hotaisle.xyz/pricing (public page, plan cards)"
    kinds = ("on_demand", "reserved")
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = REFERENCE_CAPTURE
    caveats = (
        "reference fixture (real 2026 shape, own values); AMD Instinct only; prices printed per GPU-hour, shown for the whole VM or node; bare metal is a "
        "one-month minimum (reserved, 1 month); no region on the page"
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        kickers = [p for p in doc.find_all("p") if text_of(p).lower() in KICKERS]
        if not kickers:
            raise layout_changed(self.name, "no plan card (a 'VM' or 'Bare metal' kicker)")
        offers: list[ScrapedOffer] = []
        for kicker in kickers:
            offers.extend(self._card_offers(kicker))
        return offers

    def _card(self, kicker: Tag) -> Tag:
        """The smallest element around the kicker that also holds the plan name (``<h2>``)."""
        for parent in kicker.parents:
            if parent.find("h2") is not None:
                return parent
        raise layout_changed(self.name, f"the {text_of(kicker)!r} card has no plan name (<h2>)")

    def _chip(self, card: Tag, where: str) -> tuple[str, list[int]]:
        """(chip as printed, node sizes) from the count span right before the chip span."""
        for span in card.find_all("span"):
            chip = _CHIP_RE.match(text_of(span))
            if not chip:
                continue
            before = span.find_previous_sibling("span")
            label = text_of(before)
            if before is None or not _COUNTS_RE.match(label):
                raise layout_changed(self.name, f"{where}: no GPU count ('1x', '2x & 4x') before the chip {chip.group(1)!r}")
            return chip.group(1), [int(n) for n in re.findall(r"(\d+)\s*x", label, re.IGNORECASE)]
        raise layout_changed(self.name, f"{where}: no chip span (MI300X, MI355X...)")

    def _card_offers(self, kicker: Tag) -> list[ScrapedOffer]:
        kicker_text = text_of(kicker)
        kind, term = KICKERS[kicker_text.lower()]
        card = self._card(kicker)
        plan = text_of(card.find("h2"))
        where = f"{kicker_text} card {plan!r}"
        chip, counts = self._chip(card, where)
        text = text_of(card)
        if kind == "reserved" and not _COMMITMENT_RE.search(text):
            raise layout_changed(self.name, f"{where} no longer states its 'one-month minimum' term")
        prices = {float(m.group(1)) for m in _PRICE_RE.finditer(text)}
        per_gpu: float | None = None
        bad: dict[str, str] = {}
        if len(prices) == 1:
            per_gpu = prices.pop()
        elif prices:
            bad = unreadable("price", f"'$/GPU/hr' of {where}", sorted(prices), "several prices on one card")
        elif not _UNPRICED_RE.search(text):
            bad = unreadable("price", f"'$/GPU/hr' of {where}")
        offers = []
        for count in counts:
            offers.append(
                self.offer(
                    sku=f"{kicker_text.lower().replace(' ', '-')}:{plan.lower()}:{chip.upper()}:{count}x",
                    gpu_raw=chip,
                    gpu_count=count,
                    price_per_hour=None if per_gpu is None else round(per_gpu * count, 6),
                    kind=kind,
                    term_months=term,
                    currency="USD",
                    extra={
                        "plan": plan,
                        "card": kicker_text,
                        "price_per_gpu_hour": per_gpu,
                        "node_sizes": counts,
                        **({"commitment": "one-month minimum"} if term else {}),
                        **({"listed_without_price": True} if per_gpu is None and not bad else {}),
                        **bad,
                    },
                )
            )
        return offers
