"""CoreWeave pricing-page scraper: recorded page (real Wayback excerpt, 2023), requests, layout changes."""

from __future__ import annotations

import re

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.coreweave import PRICING_URL, CoreweaveScraper
from tests.conftest import load_text
from tests.scrapers.contract import ProviderContract
from tests.scrapers.page_requests import fetch_with, page_requests
from tracker.errors import RobotsDisallowed

# Real-transcribed excerpt of the Wayback capture 20230921194906 of coreweave.com/gpu-cloud-pricing,
# its cut-off last row removed (see the comment at the top of the file); not handmade.
PAGE = "coreweave/coreweave_gpu_cloud_pricing_2023-09-21_excerpt_trimmed.html"


def page() -> str:
    return load_text(PAGE)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


def without_price_table(html: str) -> str:
    return re.sub(r'<div class="table-body">.*', "", html, flags=re.S)


class TestCoreweave(ProviderContract):
    scraper_cls = CoreweaveScraper
    min_offers = 12

    def load_raw(self) -> str:
        return page()

    def broken_payloads(self) -> list[object]:
        html = page()
        return [
            without_price_table(html),  # price table removed
            html.replace("GPU Component<br/>Cost Per Hour", "Price"),  # price header gone
            html.replace("table-body-row", "tbr"),  # rows gone
            html.replace(' data-product="a40"', ""),  # a row without its product link
            re.sub(r'(data-product="a40".*?</div>)<div class="w-col w-col-2"><div>48</div></div>', r"\1", html),  # a cell gone
            "",
            b"bytes",
            re.sub(r"<strong>\$[\d.]+</strong>", "<strong>TBA</strong>", html),  # every price cell unreadable
        ]

    def bad_offer_payloads(self) -> list[object]:
        return [page().replace("<strong>$4.25</strong>", "<strong>TBA</strong>")]  # one row's price unreadable

    def test_known_offers(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) == 12
        h100 = by_sku(offers)["hgx-h100"]
        assert h100.gpu_raw == "NVIDIA HGX H100"
        assert h100.gpu_count == 1
        assert h100.kind == "on_demand" and h100.region == ""
        assert h100.gpu_memory_gb == 80
        assert h100.price_per_hour == pytest.approx(4.76)  # "$4.76" + a "Reserve Now" link in the cell
        assert h100.currency == "USD"
        assert h100.extra["gpu_component_only"] is True
        assert h100.extra["max_vcpus_per_gpu"] == 48 and h100.extra["max_ram_gb_per_gpu"] == 256
        assert h100.vcpus is None and h100.ram_gb is None

    def test_more_rows(self, offers: list[ScrapedOffer]) -> None:
        skus = by_sku(offers)
        assert (skus["nvidia-a100-80gb"].gpu_raw, skus["nvidia-a100-80gb"].price_per_hour) == ("A100 80GB NVLINK", 2.21)
        assert (skus["a100-40gb-pcie"].gpu_memory_gb, skus["a100-40gb-pcie"].price_per_hour) == (40, 2.06)
        a4000 = skus["rtx-a4000"]
        assert (a4000.gpu_raw, a4000.gpu_memory_gb, a4000.price_per_hour) == ("RTX A4000", 16, 0.61)
        assert a4000.extra["max_vcpus_per_gpu"] == 36 and a4000.extra["max_ram_gb_per_gpu"] == 128
        assert skus["quadro-rtx-4000"].price_per_hour == pytest.approx(0.24)
        assert all(o.extra["gpu_component_only"] is True for o in offers)

    def test_caveat_says_component_price(self) -> None:
        assert "GPU component" in CoreweaveScraper.caveats and "billed separately" in CoreweaveScraper.caveats

    def test_contact_sales_is_listed_without_price(self) -> None:
        html = page().replace("<strong>$4.25</strong>", "<strong>Contact Sales</strong>")
        h100 = by_sku(CoreweaveScraper(env={}).parse(html))["h100-pcie"]
        assert h100.price_per_hour is None and h100.extra["contact_sales"] is True

    def test_an_unreadable_price_quarantines_its_row_naming_the_column(self) -> None:
        offers = by_sku(CoreweaveScraper(env={}).parse(page().replace("<strong>$4.25</strong>", "<strong>TBA</strong>")))
        h100 = offers["h100-pcie"]
        assert h100.price_per_hour is None
        assert h100.extra[UNREADABLE_PRICE] == "price field 'GPU Component Cost Per Hour' of 'NVIDIA H100 PCIe' holds 'TBA', not a price"
        assert len(offers) == 12 and offers["hgx-h100"].price_per_hour == pytest.approx(4.76)

    def test_removed_price_table_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^coreweave: layout changed: no table body"):
            CoreweaveScraper(env={}).parse(without_price_table(page()))

    def test_truncated_row_says_layout_changed(self) -> None:
        # The shared sample as recorded ends inside a row (name only): never taken as an offer.
        html = page() + '<div class="table-body-row last w-row"><div class="table-body-left w-col w-col-4"><a data-product="tesla-v100-nvlink" href="#">Tesla V100 NVLINK</a>'
        with pytest.raises(ParseError, match=r"^coreweave: layout changed: row 'Tesla V100 NVLINK' has 1 cells"):
            CoreweaveScraper(env={}).parse(html)


def test_fetch_gets_the_page_once_with_a_browser_user_agent() -> None:
    raw, sent = fetch_with(CoreweaveScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nAllow: /\n")
    assert raw == page()
    pages = page_requests(sent, PRICING_URL)
    assert len(pages) == 1
    assert pages[0].method == "GET" and str(pages[0].url) == "https://www.coreweave.com/gpu-cloud-pricing"
    assert pages[0].headers["User-Agent"].startswith("Mozilla/5.0")


def test_fetch_refuses_what_robots_txt_disallows() -> None:
    with pytest.raises(RobotsDisallowed, match=r"coreweave: robots\.txt .*disallows"):
        fetch_with(CoreweaveScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /gpu-cloud-pricing\n")


def test_needs_no_credentials() -> None:
    scraper = CoreweaveScraper(env={})
    assert scraper.credentials == ()
    scraper.check_credentials()
