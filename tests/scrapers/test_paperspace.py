"""Paperspace pricing-page scraper: the recorded page (a real Wayback excerpt) and the request it makes."""

from __future__ import annotations

from typing import Any

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.html import is_hidden, soup, visible_text
from scrapers.paperspace import PRICING_URL, PaperspaceScraper
from tests.conftest import load_text
from tests.scrapers.contract import ProviderContract
from tests.scrapers.page_edits import replaced, without
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)

PAGE = "paperspace/paperspace_pricing_page_2024-01-23_excerpt.html"
H100_NOTE = "*$2.24/hour pricing is for a 3-year commitment. On-demand pricing for H100 is $6.00/hour ($8.96) under our special promo price."


def _edited(*selectors: str) -> str:
    """The recorded page with the elements matching ``selectors`` removed (the tests may use class names)."""
    return without(load_text(PAGE), *selectors)


def _replaced(old: str, new: str) -> str:
    return replaced(load_text(PAGE), old, new)


def by_key(offers: list[ScrapedOffer]) -> dict[tuple[str, str], ScrapedOffer]:
    return {(o.sku, o.kind): o for o in offers}


class TestPaperspace(ProviderContract):
    scraper_cls = PaperspaceScraper
    min_offers = 12

    def load_raw(self) -> str:
        return load_text(PAGE)

    def broken_payloads(self) -> list[str]:
        return [
            "",
            "<html><body><h1>Pricing</h1><p>Paperspace is now part of DigitalOcean.</p></body></html>",
            _edited("div.instance-container-flex"),  # the visible cards gone (only the hidden stale ones left)
            _replaced("<p>*$2.24/hour pricing", "<p>$2.24/hour pricing"),  # the "*" footnote gone
            _replaced("is for a 3-year commitment. On-demand", "is a promotion. On-demand"),
            _replaced("On-demand pricing for H100 is", "On-demand pricing for H200 is"),
            # stale duplicates no longer hidden: the same machine twice with different contents
            _replaced('class="instance-container hide w-row"', 'class="instance-container w-row"'),
        ]

    def bad_offer_payloads(self) -> list[str]:
        return [_replaced('<h1 class="instance-price-2">0.76</h1>', '<h1 class="instance-price-2">TBD</h1>')]

    @staticmethod
    def row_of(offer: Any) -> str:
        """The card: its multi-GPU variants ("A4000x4") are priced from it."""
        return offer.sku.removesuffix(f"x{offer.gpu_count:g}") if offer.gpu_count > 1 else offer.sku

    def test_hidden_stale_cards_and_prices_are_not_counted(self, offers: list[ScrapedOffer]) -> None:
        skus = [o.sku for o in offers]
        assert skus.count("P4000") == 1  # a hidden duplicate P4000 card exists on the page
        assert skus.count("V100") == 1
        assert all(o.price_per_hour != 3.09 for o in offers)  # the hidden stale H100 price
        names = {o.sku for o in offers if o.gpu_count == 1}
        assert names == {"H100", "A100-80G", "A4000", "A6000", "V100", "A5000", "P6000", "RTX5000", "P5000", "RTX4000", "P4000", "M4000"}

    def test_h100_card_price_is_a_commitment_and_on_demand_comes_from_the_footnote(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        reserved = o[("H100", "reserved")]
        assert (reserved.term_months, reserved.price_per_hour, reserved.gpu_count) == (36, 2.24, 1)
        assert (reserved.gpu_raw, reserved.vcpus, reserved.ram_gb) == ("NVIDIA HGX H100", 20, 256)
        on_demand = o[("H100", "on_demand")]
        assert (on_demand.price_per_hour, on_demand.currency, on_demand.term_months) == (6.00, "USD", 0)
        assert on_demand.extra["price_source"] == "footnote"
        assert on_demand.extra["footnote"] == H100_NOTE
        eight = o[("H100x8", "on_demand")]
        assert (eight.gpu_count, eight.price_per_hour, eight.vcpus, eight.ram_gb) == (8, 48.0, 160, 2048)
        assert ("H100x2", "on_demand") not in o  # only "8x" is listed

    def test_a100_has_only_its_commitment_price(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        a100 = o[("A100-80G", "reserved")]
        assert (a100.term_months, a100.price_per_hour, a100.gpu_raw, a100.gpu_memory_gb) == (36, 1.15, "NVIDIA A100", 80)
        assert ("A100-80G", "on_demand") not in o  # the page prints no on-demand A100-80G price
        assert o[("A100-80Gx4", "reserved")].price_per_hour == pytest.approx(4.60)

    def test_plain_cards(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        a4000 = o[("A4000", "on_demand")]
        assert (a4000.gpu_raw, a4000.gpu_count, a4000.price_per_hour, a4000.vcpus, a4000.ram_gb) == ("NVIDIA A4000", 1, 0.76, 8, 45)
        v100 = o[("V100", "on_demand")]
        assert (v100.gpu_raw, v100.gpu_memory_gb, v100.price_per_hour, v100.region) == ("V100", 16, 2.30, "")
        a6000x4 = o[("A6000x4", "on_demand")]
        assert (a6000x4.gpu_count, a6000x4.price_per_hour, a6000x4.extra["derived"]) == (4, pytest.approx(7.56), "multiplied")
        assert [x.sku for x in offers if x.sku.startswith("M4000")] == ["M4000"]  # "Multi-GPU types: none"
        assert len(offers) == 36  # H100 and A100-80G: 4 each; nine cards x (1, 2, 4); M4000

    def test_without_the_multiply_rule_only_single_gpu_machines_are_priced(self) -> None:
        page = load_text(PAGE).replace("Multiply the specs and price of each type above by the number of GPUs.", "")
        offers = PaperspaceScraper(env={}).parse(page)
        assert all(o.gpu_count == 1 for o in offers)
        assert by_key(offers)[("A4000", "on_demand")].extra["multi_gpu"] == "2x 4x"

    def test_an_unreadable_card_price_quarantines_that_card_naming_it(self) -> None:
        offers = PaperspaceScraper(env={}).parse(_replaced('<h1 class="instance-price-2">0.76</h1>', '<h1 class="instance-price-2">TBD</h1>'))
        bad = {o.sku: o for o in offers if UNREADABLE_PRICE in o.extra}
        assert set(bad) == {"A4000", "A4000x2", "A4000x4"}  # the card and the variants priced from it
        assert {o.extra[UNREADABLE_PRICE] for o in bad.values()} == {"price field of card 'A4000' holds '$ TBD / hour', not a price"}
        assert all(o.price_per_hour is None for o in bad.values())
        assert len(offers) == 36 and by_key(offers)[("A6000", "on_demand")].price_per_hour == 1.89

    def test_removed_price_cards_say_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^paperspace: layout changed: "):
            PaperspaceScraper(env={}).parse(_edited("div.instance-container-flex"))

    def test_unhidden_stale_duplicates_are_an_error(self) -> None:
        page = _replaced('class="instance-container hide w-row"', 'class="instance-container w-row"')
        with pytest.raises(ParseError, match="paperspace: layout changed: machine 'P4000' is shown twice"):
            PaperspaceScraper(env={}).parse(page)

    def test_missing_footnote_is_an_error(self) -> None:
        with pytest.raises(ParseError, match=r"paperspace: layout changed: H100 price .* has no '\*' footnote"):
            PaperspaceScraper(env={}).parse(_replaced("<p>*$2.24/hour pricing", "<p>$2.24/hour pricing"))

    def test_needs_no_credentials(self) -> None:
        PaperspaceScraper(env={}).check_credentials()

    def test_an_unreadable_footnote_on_demand_price_quarantines_that_offer_not_the_run(self) -> None:
        """A fuzzed "$1e308" in the footnote used to raise from parse_money and fail the whole run."""
        page = _replaced("On-demand pricing for H100 is $6.00/hour", "On-demand pricing for H100 is $1e308/hour")
        scraper = PaperspaceScraper(env={})
        offers = scraper.readable(scraper.parse_payload(page))
        bad = {(o.sku, o.kind): o for o in offers if UNREADABLE_PRICE in o.extra}
        assert set(bad) == {("H100", "on_demand"), ("H100x8", "on_demand")}
        assert {o.extra[UNREADABLE_PRICE] for o in bad.values()} == {
            "price field of the on-demand footnote for 'H100' holds '$1e308/hour', not a price"
        }
        assert all(o.price_per_hour is None for o in bad.values())
        keys = by_key(offers)
        assert keys[("H100", "reserved")].price_per_hour == 2.24
        assert keys[("A4000", "on_demand")].price_per_hour == 0.76
        assert len(offers) == 36

    def test_an_unreadable_commitment_footnote_price_quarantines_that_card_not_the_run(self) -> None:
        page = _replaced("<p>**$1.15/hour pricing", "<p>**$1e308/hour pricing")
        scraper = PaperspaceScraper(env={})
        offers = scraper.readable(scraper.parse_payload(page))
        bad = {o.sku for o in offers if UNREADABLE_PRICE in o.extra}
        assert bad == {"A100-80G", "A100-80Gx2", "A100-80Gx4", "A100-80Gx8"}
        assert by_key(offers)[("H100", "reserved")].price_per_hour == 2.24


def test_retired_with_the_date_and_the_evidence() -> None:
    retired = PaperspaceScraper.retired
    assert retired is not None
    assert retired.on.isoformat() == "2026-12-03"
    assert "redirects to digitalocean.com" in retired.reason and "digitalocean provider" in retired.reason


def test_the_module_does_not_import_the_html_parser_itself() -> None:
    import ast
    from pathlib import Path

    import scrapers.paperspace as module

    top = ast.parse(Path(module.__file__).read_text()).body
    names = {alias.name.split(".")[0] for node in top if isinstance(node, (ast.Import, ast.ImportFrom))
             for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert not names & {"bs4", "lxml", "httpx"}


def test_hidden_markup_helpers() -> None:
    doc = soup(
        '<div><p id="a" class="x hide">1</p><p id="b" style="display: none">2</p>'
        '<p id="c" hidden>3</p><p id="d">4 <span class="w-condition-invisible">5</span></p></div>'
    )
    assert [is_hidden(doc.find(id=i)) for i in "abcd"] == [True, True, True, False]
    assert visible_text(doc.find("div")) == "4"


def test_fetch_gets_the_pricing_page_once_with_a_browser_user_agent() -> None:
    raw = assert_fetches_page_once(PaperspaceScraper(env={}), PRICING_URL, load_text(PAGE), robots="User-agent: *\nAllow: /\n")
    assert PaperspaceScraper(env={}).parse(raw)


def test_fetch_refuses_when_robots_txt_disallows() -> None:
    assert_refused_by_robots(PaperspaceScraper(env={}), PRICING_URL, load_text(PAGE), robots="User-agent: *\nDisallow: /pricing\n")
