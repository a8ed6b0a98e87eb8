"""Hyperstack pricing-page scraper: the recorded page (REAL, a saved 2026-09-28 copy) and the request it makes."""

from __future__ import annotations

import re

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.hyperstack import PRICING_URL, HyperstackScraper
from tests.conftest import load_text
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.page_edits import replaced
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)

PAGE = "hyperstack/hyperstack_gpu_pricing_page_2026-09-28.html"


def by_key(offers: list[ScrapedOffer]) -> dict[tuple[str, str], ScrapedOffer]:
    return {(o.sku, o.kind): o for o in offers}


def _replaced(old: str, new: str) -> str:
    return replaced(load_text(PAGE), old, new)


def _replaced_all(old: str, new: str) -> str:
    page = load_text(PAGE)
    assert old in page
    return page.replace(old, new)


class TestHyperstack(ProviderContract):
    scraper_cls = HyperstackScraper
    named_offer = NamedOffer("NVIDIA H200 SXM", 1, "on_demand", "", 3.99)
    min_offers = 30  # 13 on-demand + 12 reservation + 5 spot on the recorded page

    def load_raw(self) -> str:
        return load_text(PAGE)

    def broken_payloads(self) -> list[str]:
        return [
            "",
            "<html><body><h1>GPU pricing</h1><p>Coming soon</p></body></html>",
            _replaced_all("GPU Model", "Accelerator"),  # no list has a 'GPU Model' column any more
            _replaced("Pricing Per Hour", "Notes"),  # the on-demand list lost its price column
            re.sub(r"\$\d+\.\d+", "Ask us", load_text(PAGE)),  # every price unreadable
            _replaced("On-Demand GPU", "Flexible GPU"),  # the on-demand list's title changed
        ]

    def bad_offer_payloads(self) -> list[str]:
        return [_replaced("$3.99", "Ask us")]  # one row's price unreadable

    def test_counts_per_kind(self, offers: list[ScrapedOffer]) -> None:
        kinds = [o.kind for o in offers]
        assert (kinds.count("on_demand"), kinds.count("reserved"), kinds.count("spot")) == (13, 12, 5)
        assert len(offers) == 30
        assert not [o for o in offers if o.sku.startswith("n1-cpu")]  # the CPU list is not GPU offers

    def test_on_demand_values(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        h200 = o[("NVIDIA H200 SXM", "on_demand")]
        assert (h200.gpu_raw, h200.gpu_count, h200.price_per_hour, h200.currency) == ("NVIDIA H200 SXM", 1, 3.99, "USD")
        assert (h200.gpu_memory_gb, h200.vcpus, h200.ram_gb, h200.region) == (141, 22, 225, "")
        assert h200.extra["price_basis"] == "per GPU-hour"
        b300 = o[("NVIDIA B300", "on_demand")]
        assert (b300.gpu_raw, b300.price_per_hour, b300.gpu_memory_gb) == ("NVIDIA B300", 7.40, 288)
        assert o[("NVIDIA A4000", "on_demand")].price_per_hour == 0.15

    def test_h100_and_a100_without_sxm_are_pcie_cards(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        nvlink = o[("NVIDIA H100 NVLink", "on_demand")]
        assert (nvlink.gpu_raw, nvlink.price_per_hour, nvlink.extra["interconnect"]) == ("NVIDIA H100 PCIe", 2.60, "NVLink")
        plain = o[("NVIDIA H100", "on_demand")]
        assert (plain.gpu_raw, plain.price_per_hour) == ("NVIDIA H100 PCIe", 2.50)
        assert "interconnect" not in plain.extra
        assert o[("NVIDIA A100 NVLink", "on_demand")].gpu_raw == "NVIDIA A100 PCIe"
        assert o[("NVIDIA A100", "spot")].gpu_raw == "NVIDIA A100 PCIe"
        assert o[("NVIDIA H100 SXM", "on_demand")].gpu_raw == "NVIDIA H100 SXM"
        assert o[("NVIDIA A100 SXM", "on_demand")].gpu_raw == "NVIDIA A100 SXM"
        assert o[("NVIDIA H100 PCIe", "spot")].gpu_raw == "NVIDIA H100 PCIe"

    def test_reservation_prices_are_reserved_offers_with_no_stated_term(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        h100 = o[("NVIDIA H100 SXM", "reserved")]
        assert (h100.price_per_hour, h100.term_months, h100.gpu_count) == (2.72, 0, 1)
        assert h100.extra["term_unstated"] is True and h100.extra["price_from"] is True
        assert o[("NVIDIA B200", "reserved")].price_per_hour == 5.10
        assert ("NVIDIA B300", "reserved") not in o  # the reservation list has no B300 row

    def test_reservation_and_spot_rows_take_vram_from_the_on_demand_row_of_the_same_card(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        spot_a100 = o[("NVIDIA A100", "spot")]
        assert (spot_a100.gpu_memory_gb, spot_a100.extra["gpu_memory_from"]) == (80, "on-demand list")
        assert o[("NVIDIA H100 PCIe", "spot")].gpu_memory_gb == 80  # on-demand "NVIDIA H100" is the same card
        assert o[("NVIDIA B200", "reserved")].gpu_memory_gb == 192
        assert (o[("NVIDIA B200", "reserved")].vcpus, o[("NVIDIA B200", "reserved")].ram_gb) == (None, None)
        assert "gpu_memory_from" not in o[("NVIDIA B200", "on_demand")].extra

    def test_spot_values(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        assert o[("NVIDIA H100 PCIe", "spot")].price_per_hour == 2.00
        assert o[("NVIDIA RTX Pro 6000 SE", "spot")].price_per_hour == 1.48
        assert o[("NVIDIA A6000", "spot")].price_per_hour == 0.40

    def test_price_with_leading_nbsp_is_read(self) -> None:
        page = _replaced("$3.20", "&nbsp;$3.20")
        assert by_key(HyperstackScraper(env={}).parse(page))[("NVIDIA H100 SXM", "on_demand")].price_per_hour == 3.20

    def test_unreadable_price_quarantines_its_row_naming_the_column_and_the_list(self) -> None:
        o = by_key(HyperstackScraper(env={}).parse(_replaced("$3.99", "Ask us")))
        h200 = o[("NVIDIA H200 SXM", "on_demand")]
        assert h200.price_per_hour is None
        assert h200.extra[UNREADABLE_PRICE] == (
            "price field 'Pricing Per Hour' of 'NVIDIA H200 SXM' in 'On-Demand GPU Pricing' holds 'Ask us', not a price"
        )
        assert len(o) == 30 and o[("NVIDIA B300", "on_demand")].price_per_hour == 7.40

    def test_every_reservation_price_unreadable_is_a_parse_error_though_the_other_lists_read(self) -> None:
        page = load_text(PAGE)
        start, end = page.index("<span>Reservation</span> Pricing"), page.index("<span>Spot VM</span> Pricing")
        assert start < end
        spoiled = page[:start] + re.sub(r"\$\d+\.\d+", "Ask us", page[start:end]) + page[end:]
        with pytest.raises(ParseError, match=r"^hyperstack: no reserved offer is readable \(12 priced\): price field .* in 'Reservation Pricing'"):
            HyperstackScraper(env={}).readable(HyperstackScraper(env={}).parse(spoiled))

    def test_needs_no_credentials(self) -> None:
        HyperstackScraper(env={}).check_credentials()
        assert HyperstackScraper.credentials == () and HyperstackScraper.optional_credentials == ()


def test_fetch_gets_the_pricing_page_once_with_a_browser_user_agent() -> None:
    raw = assert_fetches_page_once(HyperstackScraper(env={}), PRICING_URL, load_text(PAGE))
    assert len(HyperstackScraper(env={}).parse(raw)) == 30


def test_fetch_refuses_when_robots_txt_disallows() -> None:
    assert_refused_by_robots(HyperstackScraper(env={}), PRICING_URL, load_text(PAGE), robots="User-agent: *\nDisallow: /gpu-pricing\n")
