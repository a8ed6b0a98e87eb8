"""TensorPool: its own card of the pricing page (reference fixture: our own values in its shape)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.tensorpool import PRICING_URL, TensorpoolScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

PAGE = "tensorpool/pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestTensorpool(ProviderContract):
    scraper_cls = TensorpoolScraper
    named_offer = NamedOffer("B200 SXM", 1, "on_demand", "", 4.79)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 5

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            page().replace(">TensorPool</h3>", ">TP</h3>"),  # the own card's heading is gone
            page().replace("GPU COSTS / HR", "PRICES"),
            re.sub(r"<strong>\$[\d.]+</strong>", "<strong>ask</strong>", page()),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("<strong>$2.89</strong>", "<strong>soon</strong>", 1)]

    def test_own_h100_price_not_a_competitors(self, offers: list[ScrapedOffer]) -> None:
        h100 = by_sku(offers)["h100-sxm"]
        assert (h100.gpu_raw, h100.gpu_count, h100.kind, h100.price_per_hour, h100.currency) == ("H100 SXM", 1, "on_demand", 1.89, "USD")
        assert h100.extra["per_gpu"] and h100.extra["gpu_count_unstated"] and h100.region == ""
        assert not {3.1, 12.0, 5.1, 17.0} & {o.price_per_hour for o in offers}  # Lambda's and "Traditional Clouds'" columns

    def test_cpu_and_not_offered_lines_are_left_out(self, offers: list[ScrapedOffer]) -> None:
        assert set(by_sku(offers)) == {"b200-sxm", "h200-sxm", "b300-sxm", "h100-sxm", "l40s"}

    def test_a_card_without_its_list_is_not_replaced_by_the_comparison_around_it(self) -> None:
        html = page().replace("GPU COSTS / HR</h4>", "NOTHING</h4>", 1)  # the TensorPool card is the first card
        with pytest.raises(ParseError, match="tensorpool: layout changed: no 'TensorPool' card"):
            TensorpoolScraper(env={}).parse(html)

    def test_the_catalog_resolves_the_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.sku: resolve_gpu(o.gpu_raw) for o in offers} == {
            "b200-sxm": "B200", "h200-sxm": "H200", "b300-sxm": "B300", "h100-sxm": "H100-SXM", "l40s": "L40S"}

    def test_one_unreadable_price_quarantines_that_line(self) -> None:
        scraper = TensorpoolScraper(env={})
        offers = scraper.readable(scraper.parse(page().replace("<strong>$2.89</strong>", "<strong>soon</strong>", 1)))
        assert [o.sku for o in offers if o.extra.get(UNREADABLE_PRICE)] == ["h200-sxm"]


def test_fetch_is_one_page_get() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    assert run_fetch(TensorpoolScraper(env={}), httpx.MockTransport(handler)) == page()
    assert str(sent[-1].url) == PRICING_URL


def test_needs_no_credentials() -> None:
    TensorpoolScraper(env={}).check_credentials()
    assert TensorpoolScraper.credentials == () and TensorpoolScraper.optional_credentials == ()
