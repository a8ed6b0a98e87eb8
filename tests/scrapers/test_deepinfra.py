"""DeepInfra: the GPU table of the pricing page (reference fixture: our own values in its shape)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.deepinfra import PRICING_URL, DeepinfraScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

PAGE = "deepinfra/pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestDeepinfra(ProviderContract):
    scraper_cls = DeepinfraScraper
    named_offer = NamedOffer("A100", 1, "on_demand", "", 0.85)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 5

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            page().replace(">Memory<", ">VRAM<"),  # the GPU table's columns renamed
            page().replace(">GPU<", ">Accelerator<"),
            re.sub(r"<b>\$[\d.]+</b>", "<b>ask</b>", page()),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("<b>$1.99</b>", "<b>n/a?</b>")]

    def test_h100_per_gpu_hour(self, offers: list[ScrapedOffer]) -> None:
        h100 = by_sku(offers)["h100-80gb"]
        assert (h100.gpu_raw, h100.gpu_count, h100.gpu_memory_gb, h100.kind, h100.price_per_hour, h100.currency) == (
            "H100", 1, 80, "on_demand", 1.99, "USD")
        assert h100.extra["per_gpu"] and h100.extra["gpu_count_unstated"] and h100.extra["section"] == "Custom LLMs"
        assert h100.region == "" and h100.available is None

    def test_coming_soon_row_is_listed_without_a_price(self, offers: list[ScrapedOffer]) -> None:
        b300 = by_sku(offers)["b300-288gb"]
        assert b300.price_per_hour is None and b300.available is False and b300.extra["coming_soon"] == "Coming soon"
        assert UNREADABLE_PRICE not in b300.extra

    def test_only_the_gpu_table_is_read(self, offers: list[ScrapedOffer]) -> None:
        assert set(by_sku(offers)) == {"a100-80gb", "h100-80gb", "h200-141gb", "b200-180gb", "b300-288gb"}

    def test_the_catalog_resolves_the_names_with_their_memory(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.sku: resolve_gpu(o.gpu_raw, o.gpu_memory_gb) for o in offers} == {
            "a100-80gb": "A100-SXM-80GB", "h100-80gb": "H100-SXM", "h200-141gb": "H200", "b200-180gb": "B200",
            "b300-288gb": "B300"}

    def test_one_unreadable_price_quarantines_that_offer(self) -> None:
        scraper = DeepinfraScraper(env={})
        offers = scraper.readable(scraper.parse(page().replace("<b>$1.99</b>", "<b>n/a?</b>")))
        assert [o.sku for o in offers if o.extra.get(UNREADABLE_PRICE)] == ["h100-80gb"]


def test_fetch_is_one_page_get() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    assert run_fetch(DeepinfraScraper(env={}), httpx.MockTransport(handler)) == page()
    assert str(sent[-1].url) == PRICING_URL


def test_needs_no_credentials() -> None:
    DeepinfraScraper(env={}).check_credentials()
    assert DeepinfraScraper.credentials == () and DeepinfraScraper.optional_credentials == ()


def test_a_repeated_row_counts_once_and_a_conflicting_one_is_an_error() -> None:
    import pytest

    from scrapers.base import ParseError

    html = page()
    row_at = html.rindex("<tr", 0, html.index(">A100<"))
    row = html[row_at:html.index("</tr>", row_at) + 5]
    assert "A100" in row
    assert len(DeepinfraScraper(env={}).parse(html.replace(row, row + row))) == 5
    with pytest.raises(ParseError, match="deepinfra: layout changed: two different prices for 'A100'"):
        DeepinfraScraper(env={}).parse(html.replace(row, row + row.replace("$0.85", "$0.95")))
