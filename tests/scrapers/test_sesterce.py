"""Sesterce: the console's offer book from the Next.js flight data (reference fixture: our own values in its shape)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.sesterce import COMPUTE_URL, SesterceScraper, flight_text
from tests.conftest import load_recording_text
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)

PAGE = "sesterce/compute_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


def with_offers(change: Any) -> str:
    """The page with its filteredOffers list passed through ``change`` and written back as flight data."""
    html = page()
    stream = flight_text(html)
    line = next(part for part in stream.split("\n") if part.startswith("1b:"))
    tree = json.loads(line[3:])
    props = tree[1][3]
    props["filteredOffers"] = change(props["filteredOffers"])
    old = json.dumps([1, line + "\n"], separators=(",", ":"))
    new = json.dumps([1, "1b:" + json.dumps(tree, separators=(",", ":")) + "\n"], separators=(",", ":"))
    assert old in html
    return html.replace(old, new)


def set_field(index: int, key: str, value: Any) -> Any:
    def change(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        items[index][key] = value
        return items
    return change


class TestSesterce(ProviderContract):
    scraper_cls = SesterceScraper
    named_offer = NamedOffer("H200 SXM5", 8, "on_demand", "helsinki-finland-1", 27.52)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 8

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            {"filteredOffers": []},
            "<html><body><h1>GPU Cloud</h1></body></html>",  # no flight data
            page().replace("filteredOffers", "offersList"),
            with_offers(lambda items: {"count": len(items)}),
            with_offers(lambda items: [i for i in items if i["gpuName"] == "CPU"]),  # no GPU offer
            with_offers(lambda items: [{**i, "hourlyPrice": "ask"} for i in items]),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [with_offers(set_field(0, "hourlyPrice", "ask"))]

    def test_h100_sxm_on_demand_and_spot_per_region_with_stock(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers)
        od = by[("H100_sxm5@AZ_17", "austin-usa-1", "on_demand")]
        assert (od.gpu_raw, od.gpu_count, od.gpu_memory_gb, od.price_per_hour, od.currency) == ("H100 SXM5", 1, 80, 2.39, "USD")
        assert (od.vcpus, od.ram_gb, od.country, od.available) == (24, 200, "US", True)
        assert od.extra["sesterce_cloud"] == "AZ_17" and od.extra["deployment_type"] == "vm"
        assert by[("H100_sxm5@AZ_17", "austin-usa-1", "spot")].price_per_hour == 1.49
        gone = by[("H100_sxm5@AZ_17", "us-midwest-2", "on_demand")]
        assert gone.available is False and gone.country is None

    def test_whole_instance_price_and_memory_per_gpu(self, offers: list[ScrapedOffer]) -> None:
        h200 = index_offers(offers)[("H200x8@AZ_31", "helsinki-finland-1", "on_demand")]
        assert h200.gpu_count == 8 and h200.price_per_hour == 27.52 and h200.price_per_gpu_hour == 3.44
        assert h200.gpu_memory_gb == 141  # vRamGB 1128 over 8 GPUs

    def test_interconnect_tells_the_h100_variants_apart(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        resolved = {o.sku: resolve_gpu(o.gpu_raw, o.gpu_memory_gb) for o in offers}
        assert resolved == {"H200x8@AZ_31": "H200", "H100@AZ_12": "H100-PCIe", "H100_sxm5@AZ_17": "H100-SXM",
                            "A100_sxm4_80Gx8@AZ_17": "A100-SXM-80GB", "RTXPro6000x8@AZ_12": "RTX-PRO-6000",
                            "L40Sx2@AZ_05": "L40S"}

    def test_cpu_only_offers_are_left_out_and_no_spot_without_its_flag(self, offers: list[ScrapedOffer]) -> None:
        assert not [o for o in offers if o.sku.startswith("cpu")]
        assert {o.sku for o in offers if o.kind == "spot"} == {"H100_sxm5@AZ_17"}

    def test_an_offer_without_availability_is_one_offer_of_unknown_region(self) -> None:
        offers = SesterceScraper(env={}).parse(with_offers(set_field(5, "availability", [])))
        l40s = [o for o in offers if o.sku == "L40Sx2@AZ_05"]
        assert len(l40s) == 1 and l40s[0].region == "" and l40s[0].available is None and l40s[0].extra["regions_unstated"]

    def test_one_unreadable_price_quarantines_that_offer(self) -> None:
        scraper = SesterceScraper(env={})
        offers = scraper.readable(scraper.parse(with_offers(set_field(0, "hourlyPrice", "ask"))))
        assert {o.sku for o in offers if o.extra.get(UNREADABLE_PRICE)} == {"H200x8@AZ_31"}


def test_fetch_is_one_page_get() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    assert run_fetch(SesterceScraper(env={}), httpx.MockTransport(handler)) == page()
    assert str(sent[-1].url) == COMPUTE_URL and "x-api-key" not in sent[-1].headers


def test_needs_no_credentials() -> None:
    SesterceScraper(env={}).check_credentials()
    assert SesterceScraper.credentials == () and SesterceScraper.optional_credentials == ()
