"""GMI Cloud: GPU cards of the pricing page (reference fixture: our own values in its shape)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.gmicloud import PRICING_URL, GmicloudScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

PAGE = "gmicloud/pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestGmicloud(ProviderContract):
    scraper_cls = GmicloudScraper
    named_offer = NamedOffer("NVIDIA GB200", 1, "on_demand", "", 7.6)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 5

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            b"   ",
            page().replace("/GPU-hour", "/month"),  # no per-GPU-hour price: no card
            page().replace("<h3", "<h4").replace("</h3>", "</h4>"),  # cards lost their headings
            re.sub(r"from \$[\d.]+", "from TBA", page()),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("from $2.45", "TBA")]

    def test_h100_card_is_a_starting_price_per_gpu(self, offers: list[ScrapedOffer]) -> None:
        h100 = by_sku(offers)["nvidia-h100-gpu"]
        assert (h100.gpu_raw, h100.gpu_count, h100.kind, h100.price_per_hour, h100.currency) == (
            "NVIDIA H100 GPU", 1, "on_demand", 1.95, "USD")
        assert h100.extra["price_from"] is True and h100.extra["per_gpu"] and h100.extra["gpu_count_unstated"]
        assert h100.available is True and h100.region == ""

    def test_limited_availability_is_recorded_as_limited_stock(self, offers: list[ScrapedOffer]) -> None:
        b200 = by_sku(offers)["nvidia-b200-gpu"]
        assert b200.price_per_hour == 3.85 and b200.available is True and b200.extra["stock"] == "limited"

    def test_pre_order_card_is_listed_without_a_price_and_not_available(self, offers: list[ScrapedOffer]) -> None:
        gb300 = by_sku(offers)["nvidia-gb300"]
        assert gb300.price_per_hour is None and gb300.available is False and gb300.extra["coming_soon"] == "Pre order"
        assert UNREADABLE_PRICE not in gb300.extra

    def test_feature_headings_and_json_ld_are_not_cards(self, offers: list[ScrapedOffer]) -> None:
        assert set(by_sku(offers)) == {"nvidia-gb200", "nvidia-gb300", "nvidia-h100-gpu", "nvidia-h200", "nvidia-b200-gpu"}

    def test_sold_out_label_makes_the_card_unavailable(self) -> None:
        offers = GmicloudScraper(env={}).parse(page().replace("Limited Availability", "Sold out"))
        assert by_sku(offers)["nvidia-b200-gpu"].available is False

    def test_a_card_printed_twice_counts_once(self) -> None:
        html = page()
        first = html.index('<div class="border-border-dark')
        end = html.index("</div></div></div>", first) + len("</div></div></div>")
        doubled = html[:end] + html[first:end] + html[end:]
        assert len(GmicloudScraper(env={}).parse(doubled)) == 5

    def test_the_catalog_resolves_the_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.sku: resolve_gpu(o.gpu_raw) for o in offers} == {
            "nvidia-gb200": "GB200", "nvidia-gb300": "GB300", "nvidia-h100-gpu": "H100-SXM", "nvidia-h200": "H200",
            "nvidia-b200-gpu": "B200"}


def test_fetch_is_one_page_get() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    assert run_fetch(GmicloudScraper(env={}), httpx.MockTransport(handler)) == page()
    assert str(sent[-1].url) == PRICING_URL and "authorization" not in sent[-1].headers


def test_needs_no_credentials() -> None:
    GmicloudScraper(env={}).check_credentials()
    assert GmicloudScraper.credentials == () and GmicloudScraper.optional_credentials == ()
