"""Thunder Compute: schema.org Product JSON-LD of the pricing page (reference fixture: our own values in its shape)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.thundercompute import PRICING_URL, ThundercomputeScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

PAGE = "thundercompute/pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestThundercompute(ProviderContract):
    scraper_cls = ThundercomputeScraper
    named_offer = NamedOffer("NVIDIA RTX A6000", 1, "on_demand", "", 0.29)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 5

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            page().replace("application/ld+json", "text/plain"),  # no JSON-LD
            page().replace('"Product"', '"Service"'),  # no Product
            page().replace('"price"', '"cost"'),  # every price field renamed
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace('"price": "0.82", "priceSpecification"', '"price": "call", "priceSpecification"')]

    def test_a100_per_gpu_in_stock(self, offers: list[ScrapedOffer]) -> None:
        a100 = by_sku(offers)["nvidia-a100-80gb-on-demand"]
        assert (a100.gpu_raw, a100.gpu_count, a100.kind, a100.price_per_hour, a100.currency) == (
            "NVIDIA A100 80GB", 1, "on_demand", 0.82, "USD")
        assert a100.available is True and a100.extra["per_gpu"] and a100.extra["gpu_count_unstated"]

    def test_a_count_range_is_one_gpu_with_its_limit(self, offers: list[ScrapedOffer]) -> None:
        o = by_sku(offers)["1-8-x-h100-pcie-nvlink"]
        assert (o.gpu_raw, o.gpu_count, o.price_per_hour) == ("H100 PCIe", 1, 2.35)
        assert o.extra["max_gpu_count"] == 8 and o.extra["nvlink"] is True
        assert "gpu_count_unstated" not in o.extra

    def test_a_pre_order_product_without_price_is_coming_soon_not_quarantined(self, offers: list[ScrapedOffer]) -> None:
        h200 = by_sku(offers)["nvidia-h200-on-demand"]
        assert h200.price_per_hour is None and h200.available is False and h200.extra["coming_soon"] == "preorder"
        assert UNREADABLE_PRICE not in h200.extra

    def test_out_of_stock_availability(self) -> None:
        html = page().replace("https://schema.org/InStock", "https://schema.org/OutOfStock", 1)  # the first product
        assert by_sku(ThundercomputeScraper(env={}).parse(html))["nvidia-rtx-a6000-on-demand"].available is False

    def test_products_in_a_graph_and_lists_are_found(self) -> None:
        graph = {"@context": "https://schema.org", "@graph": [
            {"@type": "Product", "name": "NVIDIA L40S On-demand", "offers": {"@type": "Offer", "price": "0.99", "priceCurrency": "USD"}}]}
        html = page().replace("</head>", f'<script type="application/ld+json">{json.dumps(graph)}</script></head>')
        assert by_sku(ThundercomputeScraper(env={}).parse(html))["nvidia-l40s-on-demand"].price_per_hour == 0.99

    def test_the_catalog_resolves_the_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.sku: resolve_gpu(o.gpu_raw) for o in offers} == {
            "nvidia-rtx-a6000-on-demand": "RTX-A6000", "nvidia-a100-80gb-on-demand": "A100-SXM-80GB",
            "nvidia-h100-80gb-pcie-on-demand": "H100-PCIe", "1-8-x-h100-pcie-nvlink": "H100-PCIe",
            "nvidia-h200-on-demand": "H200"}

    def test_one_unreadable_price_quarantines_that_offer(self) -> None:
        scraper = ThundercomputeScraper(env={})
        offers = scraper.readable(scraper.parse(self.bad_offer_payloads()[0]))
        assert [o.sku for o in offers if o.extra.get(UNREADABLE_PRICE)] == ["nvidia-a100-80gb-on-demand"]


def test_fetch_is_one_page_get() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    assert run_fetch(ThundercomputeScraper(env={}), httpx.MockTransport(handler)) == page()
    assert str(sent[-1].url) == PRICING_URL


def test_needs_no_credentials() -> None:
    ThundercomputeScraper(env={}).check_credentials()
    assert ThundercomputeScraper.credentials == () and ThundercomputeScraper.optional_credentials == ()
