"""Hot Aisle: the plan cards of its pricing page (a reference fixture: the real 2026 structure, our own values)."""

from __future__ import annotations

from typing import Any

import pytest

from scrapers.base import ParseError, ScrapedOffer
from scrapers.hotaisle import PRICING_URL, HotaisleScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)

PAGE = "hotaisle/pricing_reference.html"  # the replay recording: the one copy


def page(old: str, new: str, count: int = 1) -> str:
    html = load_recording_text(PAGE)
    assert old in html
    return html.replace(old, new, count)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestHotaisle(ProviderContract):
    scraper_cls = HotaisleScraper
    named_offer = NamedOffer("MI300x", 1, "on_demand", "", 2.89)
    handmade = True  # a reference fixture: the real structure with our own values
    min_offers = 5

    def load_raw(self) -> Any:
        return load_recording_text(PAGE)

    def broken_payloads(self) -> list[Any]:
        return [
            "<html><body><h1>Pricing</h1><p>$2.89/GPU/hr</p></body></html>",  # no card
            page(">VM</p>", ">Virtual machine</p>", 3).replace(">Bare metal</p>", ">Metal</p>"),  # kickers renamed
            page("<span>1x</span>", "<span>one</span>"),  # count span gone
            page('text-muted-foreground">MI300x</span>', 'text-muted-foreground">Instinct</span>'),  # chip gone
            page("bare metal, one-month minimum", "bare metal"),  # the commitment term is gone
            page('<h2 class="mb-2 font-bold text-2xl text-foreground">', '<h3 class="x">', 4).replace("</h2>", "</h3>"),
            "",
            {"cards": []},
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page("$3.95/GPU/hr", "TBA")]

    def test_small_vm_is_one_mi300x_on_demand(self, offers: list[ScrapedOffer]) -> None:
        small = by_sku(offers)["vm:small:MI300X:1x"]
        assert (small.gpu_raw, small.gpu_count, small.kind, small.region, small.currency) == ("MI300x", 1, "on_demand", "", "USD")
        assert small.price_per_hour == 2.89 and small.extra["price_per_gpu_hour"] == 2.89

    def test_a_card_with_two_node_sizes_gives_two_whole_instance_offers(self, offers: list[ScrapedOffer]) -> None:
        by = by_sku(offers)
        two, four = by["vm:medium:MI300X:2x"], by["vm:medium:MI300X:4x"]
        assert (two.gpu_count, two.price_per_hour) == (2, 5.78)
        assert (four.gpu_count, four.price_per_hour) == (4, 11.56)
        assert two.price_per_gpu_hour == four.price_per_gpu_hour == 2.89

    def test_bare_metal_is_a_one_month_commitment(self, offers: list[ScrapedOffer]) -> None:
        large = by_sku(offers)["bare-metal:large:MI300X:8x"]
        assert (large.kind, large.term_months, large.gpu_count) == ("reserved", 1, 8)
        assert large.price_per_hour == pytest.approx(8 * 3.29) and large.extra["commitment"] == "one-month minimum"

    def test_mi355x_card(self, offers: list[ScrapedOffer]) -> None:
        mi355x = by_sku(offers)["vm:mi355x:MI355X:1x"]
        assert (mi355x.gpu_raw, mi355x.gpu_count, mi355x.kind, mi355x.price_per_hour) == ("MI355X", 1, "on_demand", 3.95)

    def test_hero_prices_and_the_grandfathered_rate_are_not_offers(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) == 5
        assert all(o.extra["price_per_gpu_hour"] != 1.89 for o in offers)  # existing customers only

    def test_a_coming_soon_card_is_listed_without_a_price(self) -> None:
        offers = by_sku(HotaisleScraper(env={}).parse(page("$3.95/GPU/hr", "Coming soon")))
        soon = offers["vm:mi355x:MI355X:1x"]
        assert soon.price_per_hour is None and soon.extra["listed_without_price"] is True
        assert "unreadable_price" not in soon.extra

    def test_the_catalog_resolves_every_chip(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {resolve_gpu(o.gpu_raw) for o in offers} == {"MI300X", "MI355X"}

    def test_a_changed_layout_is_a_clear_parse_error(self) -> None:
        with pytest.raises(ParseError, match=r"hotaisle: layout changed: .*one-month minimum"):
            HotaisleScraper(env={}).parse(page("bare metal, one-month minimum", "bare metal"))


def test_fetch_reads_robots_then_the_page_once() -> None:
    assert_fetches_page_once(HotaisleScraper(env={}), PRICING_URL, load_recording_text(PAGE))


def test_fetch_respects_robots() -> None:
    assert_refused_by_robots(HotaisleScraper(env={}), PRICING_URL, load_recording_text(PAGE), "User-agent: *\nDisallow: /pricing\n")


def test_needs_no_credentials() -> None:
    HotaisleScraper(env={}).check_credentials()
    assert HotaisleScraper.credentials == () and HotaisleScraper.optional_credentials == ()
