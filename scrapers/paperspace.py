"""Paperspace (DigitalOcean): the public pricing page https://www.paperspace.com/pricing (HTML, no auth).

RETIRED (see ``PaperspaceScraper.retired``), on this evidence:

* the page no longer serves Paperspace's prices: ``www.paperspace.com/pricing`` redirects to
  ``digitalocean.com`` (our allow-list refuses the hop, so a live run has failed on it), where the
  former Paperspace machines are sold as DigitalOcean GPU Droplets, which the ``digitalocean``
  provider collects (one offer would otherwise be counted under two providers);
* the only 2026 public client still pointed at it (thatkavish/OpenComputePrices, March 2026, MIT)
  calls the page "heavily JS-rendered" and has no reader of its own for it: it tries a
  ``__NEXT_DATA__`` script, JSON-LD ``Product`` blocks, price-like strings in scripts and finally
  "GPU name near a $" text, in turn, i.e. no embedded data shape is publicly known;
* the newest capture we have is a 2024 Wayback excerpt; no 2026 capture of the served page exists
  in public to build a reader (or a reference fixture) on.

dstack's gpuhunt never read Paperspace. The parser below stays, so the stored history and the
2024 recording remain readable and replayable.

What is called
    ``GET https://www.paperspace.com/pricing`` once per run, after checking robots.txt (disallowed
    -> ``RobotsDisallowed``: the run is skipped). No credentials.

What is extracted
    The "On-Demand Compute" GPU machine cards. Each card has a name heading ("H100", "A100-80G",
    "A4000"), a price "$ 2.24* / hour" for the one-GPU machine, a spec list ("NVIDIA HGX H100 GPU"
    or "16 GB GPU", "256 GB RAM", "20 vCPU") and "Multi-GPU types: 2x 4x 8x".

    - The card price is per machine-hour; ``kind=on_demand`` unless a footnote says otherwise.
    - **Footnotes**: a price with asterisks ("2.24*", "1.15**") is explained by the paragraph that
      starts with the same asterisks. "...pricing is for a 3-year commitment" makes the card price
      ``reserved`` with ``term_months=36``; "On-demand pricing for H100 is $6.00/hour" adds the
      ``on_demand`` offer that appears **only** in the footnote (the footnote text is kept in
      ``extra["footnote"]``). A starred price whose footnote is missing or says neither -> ``ParseError``.
    - **Multi-GPU**: when the page says "Multiply the specs and price of each type above by the
      number of GPUs", each "Nx" variant becomes its own offer ``<name>xN`` (``gpu_count=N``, price,
      vCPUs and RAM times N, ``extra["derived"] = "multiplied"``); without that sentence only the
      one-GPU machine is priced and the variants are kept in ``extra["multi_gpu"]``.
    - ``gpu_raw`` is the spec line's GPU name without " GPU" ("NVIDIA HGX H100", "NVIDIA A4000"),
      else the card name ("V100", "P5000"); ``gpu_memory_gb`` from "16 GB GPU" or a name like
      "A100-80G". No region is printed.

Selectors relied on (visible text, not Webflow's class names)
    * a price: a short visible text "/ hour" (or "$0.76/hour") whose nearest ancestor, within three
      levels, reads as a price;
    * its card: the nearest ancestor of the price holding a visible heading (``h1``-``h6``) outside
      the price: that heading is the machine name; specs are the card's visible ``li`` items; the
      multi-GPU variants follow the visible label "Multi-GPU types:";
    * footnotes: visible text starting with "*", "**", ...
    * **hidden markup is skipped** (``is_hidden``: Webflow's ``hide`` class, ``display:none``,
      ``hidden``): the page keeps stale duplicate cards and a stale "3.09" H100 price hidden.
      A machine shown twice with identical contents counts once; twice with different contents
      -> ``ParseError``.
    No visible priced card -> ``ParseError("paperspace: layout changed: ...")``. A card whose "$ … /
    hour" amount cannot be read ("$ TBD / hour") quarantines that card's offers with the card
    named ("price field of card 'A4000' holds ..."); the other cards are kept (every card so: a
    ``ParseError``). Such a price outside any card is a layout change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar

from scrapers.base import Http, Retired, ScrapedOffer, Scraper, unreadable
from scrapers.html import (
    Money,
    hourly,
    is_hidden,
    is_tag,
    is_text,
    layout_changed,
    norm_label,
    page_soup,
    parse_money,
    read_money,
    visible_text,
)

if TYPE_CHECKING:
    from bs4 import Tag

PRICING_URL = "https://www.paperspace.com/pricing"

_HEADING_RE = re.compile(r"^h[1-6]$")
_HOUR_TEXT_RE = re.compile(r"(?:/|\bper\b)\s*(?:hour|hr|h)\b", re.IGNORECASE)
_STARS_RE = re.compile(r"\d\s*(\*+)")
_FOOTNOTE_START_RE = re.compile(r"^\s*(\*+)(?!\*)")
_TERM_RE = re.compile(r"(\d+)\s*[-‐– ]?\s*(years?|yrs?|months?)\s+(?:commitment|commit|term|contract|reservation)", re.IGNORECASE)
_ON_DEMAND_RE = re.compile(
    r"on[\s\-‐–]*demand\s+pric\w*\s+for\s+(?P<name>.+?)\s+is\s+(?P<price>\S*\s*\d[\d.,]*\s*(?:/|per)\s*(?:hour|hr|h)\b)",
    re.IGNORECASE,
)
_MULTIPLY_RE = re.compile(r"multiply\s+the\s+specs\s+and\s+price", re.IGNORECASE)
_MULTI_LABEL_RE = re.compile(r"multi[\s\-‐–]*gpu\s+types?\s*:?", re.IGNORECASE)
_MAX_SHORT = 40


@dataclass
class _Card:
    name: str
    price_text: str
    money: Money | None
    stars: str
    specs: list[str]
    multi: list[int] = field(default_factory=list)
    #: ``{UNREADABLE_PRICE: reason}`` when the card's price cannot be taken (its offers are quarantined)
    bad: dict[str, str] = field(default_factory=dict)

    def signature(self) -> tuple[Any, ...]:
        return (self.price_text, tuple(self.specs), tuple(self.multi))


def _inside(el: Tag, ancestor: Tag) -> bool:
    return any(p is ancestor for p in el.parents)


def _price_wraps(doc: Tag) -> list[tuple[Tag, str]]:
    """(element, its text) of every visible short "… / hour" price, readable or not: an element
    reading "$ … / hour" whose amount cannot be read is returned too (its card quarantines it)."""
    found: list[tuple[Tag, str]] = []
    for s in doc.find_all(string=_HOUR_TEXT_RE):
        if not is_text(s) or len(s.strip()) > _MAX_SHORT or is_hidden(s.parent):
            continue
        node, pricey = s.parent, None
        for _ in range(3):
            if not is_tag(node):
                break
            text = visible_text(node)
            if len(text) > _MAX_SHORT:
                break
            try:
                money = parse_money(text)
            except ValueError:  # "$1e999 / hour": no price, read (and quarantined) by its card
                money = None
            if money is not None and money.amount is not None:
                pricey = (node, text)
                break
            if re.search(r"[$€£]", text):
                pricey = (node, text)
            node = node.parent
        # "$ … / hour" whose amount cannot be read counts too; a bare "per hour" label is no price
        if pricey is not None and all(pricey[0] is not seen for seen, _ in found):
            found.append(pricey)
    return found


def _card_of(wrap: Tag) -> tuple[Tag, Tag] | None:
    """(card, name heading): the nearest ancestor of ``wrap`` with a visible heading outside it."""
    node = wrap.parent
    for _ in range(4):
        if not is_tag(node):
            return None
        for h in node.find_all(_HEADING_RE):
            if not _inside(h, wrap) and h is not wrap and not is_hidden(h) and not _inside(wrap, h):
                return node, h
        node = node.parent
    return None


def _multi(card: Tag) -> list[int]:
    for s in card.find_all(string=_MULTI_LABEL_RE):
        if is_hidden(s.parent):
            continue
        # the variants follow the label: in the label's parent's text ("Multi-GPU types: 2x 4x 8x")
        holder = s.parent.parent if is_tag(s.parent) and is_tag(s.parent.parent) else s.parent
        text = _MULTI_LABEL_RE.split(visible_text(holder), maxsplit=1)[-1]
        counts = sorted({int(n) for n in re.findall(r"(\d+)\s*[x×]", text, re.IGNORECASE)})
        if not counts and not re.search(r"\bnone\b|^\s*$|[-–—]", text, re.IGNORECASE):
            raise layout_changed("paperspace", f"cannot read the multi-GPU variants {text!r}")
        return [n for n in counts if n > 1]
    return []


def _footnotes(doc: Tag) -> dict[str, str]:
    """Visible footnote paragraphs by their asterisks ("*" -> "*$2.24/hour pricing is ...")."""
    notes: dict[str, str] = {}
    for s in doc.find_all(string=_FOOTNOTE_START_RE):
        if is_hidden(s.parent) or not is_tag(s.parent):
            continue
        text = visible_text(s.parent)
        m = _FOOTNOTE_START_RE.match(text)
        if m and len(text) > len(m.group(1)) + 5:
            notes.setdefault(m.group(1), text)
    return notes


def _spec_number(specs: list[str], pattern: str) -> float | None:
    for spec in specs:
        m = re.search(pattern, spec, re.IGNORECASE)
        if m:
            return float(m.group(1))
    return None


class PaperspaceScraper(Scraper):
    name: ClassVar[str] = "paperspace"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Paperspace"
    homepage: ClassVar[str] = "https://www.paperspace.com"
    endpoint: ClassVar[str] = f"GET {PRICING_URL} (HTML pricing page)"
    source_kind: ClassVar[str] = "page"
    fixture_kind: ClassVar[str] = "recording"
    checked_by: ClassVar[str] = "recording: a Wayback capture of the pricing page"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "reserved")
    caveats: ClassVar[str] = (
        "scraped from the public pricing page; starred card prices are 3-year commitments, the H100 "
        "on-demand price comes from a footnote, multi-GPU prices are the page's 'multiply by N' rule; no region"
    )

    retired: ClassVar[Retired | None] = Retired(
        date(2026, 12, 3),
        "www.paperspace.com/pricing now redirects to digitalocean.com, which sells the former Paperspace "
        "GPUs as GPU Droplets (collected by the digitalocean provider); no public 2026 capture shows "
        "prices in what the Paperspace page serves",
    )

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        doc = page_soup(self.name, raw)
        cards = self._cards(doc)
        if not cards:
            raise layout_changed(self.name, "no visible machine card with a '$ … / hour' price")
        notes = _footnotes(doc)
        on_demand_notes = self._on_demand_notes(notes, cards)
        multiply = bool(_MULTIPLY_RE.search(visible_text(doc)))
        offers: list[ScrapedOffer] = []
        for card in cards.values():
            offers.extend(self._offers(card, notes, on_demand_notes.get(norm_label(card.name)), multiply))
        return offers

    def _on_demand_notes(self, notes: dict[str, str], cards: dict[str, _Card]) -> dict[str, tuple[Money | None, str, dict[str, str]]]:
        """On-demand prices given only in footnotes ("On-demand pricing for H100 is $6.00/hour"), by
        machine, as (price, footnote, reason): an amount that cannot be read ("$1e308/hour") leaves
        that one offer for quarantine with the footnote named, like an unreadable card price."""
        known = {norm_label(name) for name in cards}
        found: dict[str, tuple[Money | None, str, dict[str, str]]] = {}
        for note in notes.values():
            for m in _ON_DEMAND_RE.finditer(note):
                target = norm_label(m.group("name"))
                if target not in known:
                    raise layout_changed(self.name, f"footnote {note!r} prices an unknown machine {m.group('name')!r}")
                money, bad = read_money(m.group("price"), f"of the on-demand footnote for {m.group('name')!r}")
                if bad:
                    found[target] = (None, note, bad)
                    continue
                if money is None or money.amount is None:
                    raise layout_changed(self.name, f"cannot read the on-demand price in footnote {note!r}")
                found[target] = (money, note, {})
        return found

    def _cards(self, doc: Tag) -> dict[str, _Card]:
        cards: dict[str, _Card] = {}
        for wrap, text in _price_wraps(doc):
            found = _card_of(wrap)
            name = visible_text(found[1]) if found is not None else ""
            # a card whose price cannot be read is quarantined with the card named, not the page
            money, bad = read_money(text, f"of card {name!r}")
            if found is None:
                if money is None or money.amount is None or bad:
                    raise layout_changed(self.name, f"cannot read the price {text!r}")
                continue  # a price outside any machine card (e.g. storage): not a GPU offer
            card_el, _ = found
            if not name:
                raise layout_changed(self.name, f"the card priced {text!r} has an empty name")
            specs = [visible_text(li) for li in card_el.find_all("li") if not is_hidden(li)]
            specs = [s for s in specs if s]
            stars = m.group(1) if (m := _STARS_RE.search(text)) else ""
            card = _Card(name, text, money, stars, specs, _multi(card_el), bad)
            if name in cards:
                if cards[name].signature() != card.signature():
                    raise layout_changed(self.name, f"machine {name!r} is shown twice with different contents")
                continue
            cards[name] = card
        return cards

    def _offers(
        self, card: _Card, notes: dict[str, str], on_demand_note: tuple[Money | None, str, dict[str, str]] | None, multiply: bool
    ) -> list[ScrapedOffer]:
        kind, term = "on_demand", 0
        extra: dict[str, Any] = dict(card.bad)
        if card.stars:
            note = notes.get(card.stars)
            if note is None:
                raise layout_changed(self.name, f"{card.name} price {card.price_text!r} has no {card.stars!r} footnote")
            # the footnote's first sentence repeats the card's price ("*$2.24/hour pricing is for ...")
            first = re.split(r"(?<=[^\d])\.\s", note[len(card.stars) :], maxsplit=1)[0]
            try:
                head = parse_money(first)
            except ValueError:  # "*$1e308/hour pricing is ...": the card's own price is not confirmed
                head = None
                extra.update(unreadable("price", f"of the {card.stars!r} footnote of card {card.name!r}", first.split()[0]))
            if head is not None and head.amount is not None and card.money is not None and not card.bad and head.amount != card.money.amount:
                raise layout_changed(self.name, f"footnote {note!r} does not match {card.name} price {card.price_text!r}")
            term_m = _TERM_RE.search(note)
            if not term_m:
                raise layout_changed(self.name, f"footnote {note!r} no longer says which commitment {card.name}'s price is for")
            n = int(term_m.group(1))
            kind, term = "reserved", n * 12 if term_m.group(2).lower().startswith("y") else n
            extra["footnote"] = note
        variants: list[tuple[str, int, Money | None, dict[str, Any]]] = [(kind, term, card.money, extra)]
        if on_demand_note is not None:
            if kind == "on_demand":
                raise layout_changed(self.name, f"{card.name} has an on-demand card price and one in a footnote")
            money, note, bad = on_demand_note
            variants.append(("on_demand", 0, money, {"footnote": note, "price_source": "footnote", **bad}))

        gpu_line = next((s for s in card.specs if re.search(r"\bGPU\b", s) and not re.match(r"^\s*\d", s)), None)
        gpu_raw = re.sub(r"\s+GPU\s*$", "", gpu_line).strip() if gpu_line else card.name
        memory = _spec_number(card.specs, r"(\d+(?:\.\d+)?)\s*GB\s+GPU")
        if memory is None and (m := re.search(r"-(\d+)\s*GB?$", card.name, re.IGNORECASE)):
            memory = float(m.group(1))
        vcpus = _spec_number(card.specs, r"(\d+(?:\.\d+)?)\s*vCPU")
        ram = _spec_number(card.specs, r"(\d+(?:\.\d+)?)\s*GB\s+RAM")
        counts = [1, *card.multi] if multiply else [1]

        offers: list[ScrapedOffer] = []
        for v_kind, v_term, money, v_extra in variants:
            price = hourly(money) if money is not None and money.amount is not None else None
            for n in counts:
                fields = dict(v_extra)
                if n > 1:
                    fields["derived"] = "multiplied"
                elif card.multi and not multiply:
                    fields["multi_gpu"] = " ".join(f"{c}x" for c in card.multi)
                offers.append(
                    self.offer(
                        sku=card.name if n == 1 else f"{card.name}x{n}",
                        gpu_raw=gpu_raw,
                        gpu_count=n,
                        gpu_memory_gb=memory,
                        vcpus=vcpus * n if vcpus is not None else None,
                        ram_gb=ram * n if ram is not None else None,
                        price_per_hour=round(price * n, 6) if price is not None else None,
                        currency=money.currency if money is not None else "USD",
                        kind=v_kind,
                        term_months=v_term,
                        extra=fields,
                    )
                )
        return offers
