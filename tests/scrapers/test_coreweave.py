"""CoreWeave pricing-page scraper on a REFERENCE fixture of the 2026 www.coreweave.com/pricing page.

The fixture is the bundled replay recording itself (tracker/recordings/coreweave/): the structure
of a public 2026 capture (named in its manifest), every value invented, so the assertions below
check the mapping (per-region tables, instance prices, GPU counts, spot, contact sales), not
market prices.
"""

from __future__ import annotations

import re

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.coreweave import PRICING_URL, CoreweaveScraper
from tests.scrapers.contract import NamedOffer, ProviderContract, index_offers
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)
from tracker.pipeline.replay import BUNDLED_RECORDINGS, recording_info

PAGE = BUNDLED_RECORDINGS / "coreweave" / "pricing_2026_reference.html"
NA, EU = "North America", "Europe"


def page() -> str:
    return PAGE.read_text()


def europe_only(html: str) -> str:
    """The page without its North American section (the Europe table stays)."""
    return re.sub(r'<div class="section-content"><h5>.*?(?=<div class="section-content pricing-spacing">)', "", html, flags=re.S)


class TestCoreweave(ProviderContract):
    scraper_cls = CoreweaveScraper
    named_offer = NamedOffer("NVIDIA GB200 NVL72", 4, "on_demand", "North America", 40.8)
    handmade = True  # not a real recording: a reference page (the real 2026 shape, invented values)
    min_offers = 15

    def load_raw(self) -> str:
        return page()

    def broken_payloads(self) -> list[object]:
        html = page()
        return [
            "",
            b"bytes",
            "<html><body><h2>Pricing</h2><p>Talk to us</p></body></html>",
            html.replace("On-Demand Price (Per Hour)", "Price"),  # the price header reworded
            html.replace("GPU Count", "GPUs per node"),  # the count header gone
            html.replace("table-row-v2", "table-row-v3"),  # rows gone
            html.replace("REGION: ", ""),  # two tables, no region to tell them apart
            re.sub(r"<div>\$[\d.,]+</div>\n    <a", "<div>TBA</div>\n    <a", html),  # every on-demand price unreadable
        ]

    def bad_offer_payloads(self) -> list[object]:
        return [page().replace("<div>$17.20</div>", "<div>TBA</div>", 1)]  # the L40S on-demand price in North America

    @staticmethod
    def row_of(offer: object) -> str:
        return f"{offer.sku}@{offer.region}"  # type: ignore[attr-defined]

    def test_h100_whole_instance_prices_per_region(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)
        h100 = o[("hgx-h100", NA, "on_demand")]
        assert (h100.gpu_raw, h100.gpu_count, h100.gpu_memory_gb, h100.vcpus, h100.ram_gb) == ("NVIDIA HGX H100", 8, 80, 128, 2048)
        assert (h100.price_per_hour, h100.currency, h100.kind) == (47.60, "USD", "on_demand")
        assert h100.price_per_gpu_hour == pytest.approx(5.95)
        assert h100.extra["price_basis"] == "per instance-hour" and h100.extra["local_storage_tb"] == 61.44
        assert o[("hgx-h100", NA, "spot")].price_per_hour == 18.32
        assert o[("hgx-h100", EU, "on_demand")].price_per_hour == 47.60
        assert o[("hgx-h100", EU, "spot")].price_per_hour == 18.96  # spot differs by region

    def test_regions_come_from_the_table_labels(self, offers: list[ScrapedOffer]) -> None:
        assert {o.region for o in offers} == {NA, EU}
        assert {o.sku for o in offers if o.region == EU} == {"nvidia-gb200-nvl72", "nvidia-b300", "hgx-h100", "hgx-h200"}
        assert ("hgx-h200", NA, "on_demand") not in index_offers(offers)
        h200 = index_offers(offers)[("hgx-h200", EU, "on_demand")]
        assert (h200.gpu_count, h200.gpu_memory_gb, h200.price_per_hour) == (8, 141, 49.10)

    def test_footnoted_count_one_gpu_rows_and_missing_spot(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)
        gb200 = o[("nvidia-gb200-nvl72", NA, "on_demand")]
        assert (gb200.gpu_raw, gb200.gpu_count, gb200.gpu_memory_gb, gb200.price_per_hour) == ("NVIDIA GB200 NVL72", 4, 186, 40.80)
        assert ("nvidia-gb200-nvl72", NA, "spot") not in o  # "N/A": no spot offer
        gh200 = o[("nvidia-gh200", NA, "on_demand")]
        assert (gh200.gpu_count, gh200.vcpus, gh200.ram_gb, gh200.price_per_hour) == (1, 72, 480, 6.10)

    def test_contact_sales_is_listed_without_a_price(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)
        gb300 = o[("nvidia-gb300-nvl72", NA, "on_demand")]
        assert gb300.price_per_hour is None and gb300.extra["contact_sales"] is True
        b300 = o[("nvidia-b300", EU, "on_demand")]
        assert b300.price_per_hour is None and b300.extra["contact_sales"] is True
        assert o[("nvidia-b300", EU, "spot")].price_per_hour == 35.20

    def test_the_inference_column_and_the_small_screen_copies_are_not_offers(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) == 16  # North America: 6 on-demand + 3 spot; Europe: 4 on-demand + 3 spot
        assert not [o for o in offers if o.price_per_hour in (10.20, 8.30, 2.15)]  # inference prices only
        assert not [o for o in offers if o.extra.get("gpu_component_only")]

    def test_an_unreadable_price_quarantines_that_offer_naming_the_column(self) -> None:
        offers = index_offers(CoreweaveScraper(env={}).parse(page().replace("<div>$17.20</div>", "<div>TBA</div>", 1)))
        l40s = offers[("nvidia-l40s", NA, "on_demand")]
        assert l40s.price_per_hour is None
        assert l40s.extra[UNREADABLE_PRICE] == "price field 'On-Demand Price (Per Hour)' of 'NVIDIA L40S' holds 'TBA', not a price"
        assert offers[("nvidia-l40s", NA, "spot")].price_per_hour == 7.44

    def test_one_unlabelled_table_has_no_region(self) -> None:
        offers = CoreweaveScraper(env={}).parse(europe_only(page()).replace("REGION: EUROPE", "All regions"))
        assert {o.region for o in offers} == {""} and len(offers) == 7

    def test_a_missing_count_header_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^coreweave: layout changed: no price table with 'GPU Model', 'GPU Count'"):
            CoreweaveScraper(env={}).parse(page().replace("GPU Count", "GPUs per node"))

    def test_a_row_missing_its_cells_says_layout_changed(self) -> None:
        html = page().replace('<div class="table-v2-cell"><div>$7.44</div></div>', "", 1)
        with pytest.raises(ParseError, match=r"^coreweave: layout changed: row 'NVIDIA L40S' has 8 cells for 9 headers"):
            CoreweaveScraper(env={}).parse(html)

    def test_the_fixture_is_the_labelled_reference_replay_recording(self) -> None:
        info = recording_info("coreweave")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        assert CoreweaveScraper.fixture_kind == "reference" and PAGE.name.endswith("_reference.html")

    def test_needs_no_credentials(self) -> None:
        assert CoreweaveScraper.credentials == ()
        CoreweaveScraper(env={}).check_credentials()


def test_fetch_gets_the_2025_pricing_page_once_with_a_browser_user_agent() -> None:
    assert PRICING_URL == "https://www.coreweave.com/pricing"  # not the 2023 /gpu-cloud-pricing page
    raw = assert_fetches_page_once(CoreweaveScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nAllow: /\n")
    assert CoreweaveScraper(env={}).parse(raw)


def test_fetch_refuses_what_robots_txt_disallows() -> None:
    assert_refused_by_robots(CoreweaveScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /pricing\n")
