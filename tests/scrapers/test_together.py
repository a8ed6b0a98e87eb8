"""Together AI: GPU cluster prices from the pricing page (reference fixture: our own values in its shape)."""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.together import PRICING_URL, TogetherScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)

PAGE = "together/pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


class TestTogether(ProviderContract):
    scraper_cls = TogetherScraper
    named_offer = NamedOffer("NVIDIA HGX H100", 1, "on_demand", "", 3.79)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 10

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            {"html": page()},
            page().replace("GPU Clusters", "Compute"),  # the section heading is gone
            page().replace("ON-Demand", "Flexible").replace(">Hourly<", ">Flex<"),  # no on-demand column
            re.sub(r"\$\d+\.\d+", "soon", page()),  # every price cell unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("$4.89", "soon", 1)]

    @staticmethod
    def row_of(offer: Any) -> str:
        return offer.sku

    def test_h100_on_demand_and_reserved_bands_per_gpu(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "kind", "term_months"))
        od = by[("nvidia-hgx-h100", "on_demand", 0)]
        assert (od.gpu_raw, od.gpu_count, od.price_per_hour, od.currency, od.region) == ("NVIDIA HGX H100", 1, 3.79, "USD", "")
        assert od.extra["per_gpu"] is True and od.extra["gpu_count_unstated"] is True
        assert by[("nvidia-hgx-h100:7-30d", "reserved", 1)].price_per_hour == 3.49
        assert by[("nvidia-hgx-h100:31-90d", "reserved", 3)].price_per_hour == 3.29
        band = by[("nvidia-hgx-h100:91-180d", "reserved", 6)]
        assert band.price_per_hour == 3.05 and band.extra["term_days"] == "91-180"
        open_band = by[("nvidia-hgx-h100:181+d", "reserved", 7)]
        assert open_band.price_per_hour is None and open_band.extra["contact_sales"] is True

    def test_dedicated_inference_and_the_hidden_copy_are_not_read(self, offers: list[ScrapedOffer]) -> None:
        assert {o.price_per_hour for o in offers if o.sku == "nvidia-hgx-h100"} == {3.79}  # not the endpoint's 5.25
        assert 8.75 not in {o.price_per_hour for o in offers}
        assert len([o for o in offers if o.sku == "nvidia-hgx-h100" and o.kind == "on_demand"]) == 1

    def test_not_offered_dash_gives_no_offer_and_contact_us_spans_the_reserved_bands(self, offers: list[ScrapedOffer]) -> None:
        gb200 = [o for o in offers if o.gpu_raw == "NVIDIA GB200 NVL72"]
        assert {o.kind for o in gb200} == {"reserved"}  # "—" on demand: not offered
        assert sorted(o.term_months for o in gb200) == [1, 3, 6, 7]
        assert all(o.price_per_hour is None and o.extra["contact_sales"] for o in gb200)

    def test_the_catalog_resolves_the_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.gpu_raw: resolve_gpu(o.gpu_raw) for o in offers} == {
            "NVIDIA HGX H100": "H100-SXM", "NVIDIA HGX H200": "H200", "NVIDIA HGX B200": "B200",
            "NVIDIA GB200 NVL72": "GB200", "NVIDIA HGX B300": "B300"}

    def test_a_price_that_is_no_price_quarantines_that_offer(self) -> None:
        scraper = TogetherScraper(env={})
        offers = scraper.readable(scraper.parse(page().replace("$4.89", "soon", 1)))
        bad = [o for o in offers if o.extra.get(UNREADABLE_PRICE)]
        assert [o.sku for o in bad] == ["nvidia-hgx-h200"] and "H200" in bad[0].extra[UNREADABLE_PRICE]


def test_fetch_is_one_page_get() -> None:
    import httpx

    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    raw = run_fetch(TogetherScraper(env={}), httpx.MockTransport(handler))
    assert raw == page() and str(sent[-1].url) == PRICING_URL and "authorization" not in sent[-1].headers


def test_needs_no_credentials() -> None:
    TogetherScraper(env={}).check_credentials()
    assert TogetherScraper.credentials == () and TogetherScraper.optional_credentials == ()
