"""fal: the Serverless & Compute GPU table (reference fixture: our own values in its shape)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.fal import PRICING_URL, FalScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)

PAGE = "fal/pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


class TestFal(ProviderContract):
    scraper_cls = FalScraper
    named_offer = NamedOffer("B300", 1, "on_demand", "", 7.95)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 6

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            page().replace(">List Price<", ">Price<"),  # the GPU table's price column renamed
            page().replace(">VRAM<", ">Memory<"),
            re.sub(r"\$[\d.]+/h", "TBA", page()),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("$4.25/h", "soon", 1)]

    @staticmethod
    def row_of(offer: Any) -> str:
        return f"{offer.sku}:{offer.kind}"

    def test_h100_list_price_per_gpu_and_as_low_as(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "kind"))
        h100 = by[("h100-80gb", "on_demand")]
        assert (h100.gpu_raw, h100.gpu_count, h100.gpu_memory_gb, h100.price_per_hour, h100.currency) == ("H100", 1, 80, 3.99, "USD")
        assert h100.extra["per_gpu"] is True and h100.region == ""
        low = by[("h100-80gb", "reserved")]
        assert low.price_per_hour == 1.79 and low.term_months == 0 and low.extra["term_unstated"] is True

    def test_a_dash_is_not_offered_and_model_prices_are_not_gpus(self, offers: list[ScrapedOffer]) -> None:
        a100 = [o for o in offers if o.sku == "a100-40gb"]
        assert [(o.kind, o.price_per_hour) for o in a100] == [("on_demand", 0.99)]
        assert not [o for o in offers if "video" in o.sku.lower() or o.price_per_hour == 0.05]

    def test_a_per_second_price_is_converted_to_per_hour(self) -> None:
        offers = FalScraper(env={}).parse(page().replace("$3.99/h", "$0.001/s"))
        assert index_offers(offers, ("sku", "kind"))[("h100-80gb", "on_demand")].price_per_hour == 3.6

    def test_the_catalog_resolves_the_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.gpu_raw: resolve_gpu(o.gpu_raw, o.gpu_memory_gb) for o in offers} == {
            "B300": "B300", "B200": "B200", "H200": "H200", "H100": "H100-SXM", "A100": "A100-SXM-40GB",
            "RTX PRO 6000": "RTX-PRO-6000"}

    def test_one_unreadable_price_quarantines_that_offer(self) -> None:
        scraper = FalScraper(env={})
        offers = scraper.readable(scraper.parse(page().replace("$4.25/h", "soon", 1)))
        assert [(o.sku, o.kind) for o in offers if o.extra.get(UNREADABLE_PRICE)] == [("b300-288gb", "reserved")]


def test_fetch_is_one_page_get() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    assert run_fetch(FalScraper(env={}), httpx.MockTransport(handler)) == page()
    assert str(sent[-1].url) == PRICING_URL


def test_needs_no_credentials() -> None:
    FalScraper(env={}).check_credentials()
    assert FalScraper.credentials == () and FalScraper.optional_credentials == ()


def test_a_repeated_row_counts_once_and_a_conflicting_one_is_an_error() -> None:
    import pytest

    from scrapers.base import ParseError

    html = page()
    start = html.index("<tr", html.index("<tbody"))
    row = html[start:html.index("</tr>", start) + 5]
    assert len(FalScraper(env={}).parse(html.replace(row, row + row))) == len(FalScraper(env={}).parse(html))
    with pytest.raises(ParseError, match="fal: layout changed: two different prices for 'List Price' of 'B300'"):
        FalScraper(env={}).parse(html.replace(row, row + row.replace("$7.95/h", "$7.99/h")))
