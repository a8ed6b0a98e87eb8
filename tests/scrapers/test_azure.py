"""Azure Retail Prices scraper: parse the recorded GPU items, page through NextPageLink.

The items are real (tests/fixtures/azure/README.md: ``azure_retail_prices_gpu_items_projected_2026.json``, 83 GPU VM
rows with 7 fields each, transcribed from ewyluda/gpu-price-index). That file has no envelope,
so the tests wrap it in the envelope of the real raw response
``azure_retail_prices_raw_standard_d2s_v3_eastus.json`` (a non-GPU size). Not handmade.
"""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from scrapers.azure import (
    API_VERSION,
    MAX_PAGES,
    PRICE_FILTER,
    PRICES_URL,
    AzureScraper,
)
from scrapers.base import FetchError, ScrapedOffer
from tests.conftest import load_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

GPU_ITEMS = "azure/azure_retail_prices_gpu_items_projected_2026.json"
RAW_D2S = "azure/azure_retail_prices_raw_standard_d2s_v3_eastus.json"


def envelope(items: list[dict[str, Any]], next_link: str | None = None) -> dict[str, Any]:
    """A page with the real envelope keys of the raw D2s_v3 response around ``items``."""
    page = {k: v for k, v in load_json(RAW_D2S).items() if k not in ("Items", "NextPageLink", "Count")}
    return {**page, "Items": items, "NextPageLink": next_link, "Count": len(items)}


def gpu_pages() -> list[dict[str, Any]]:
    items = load_json(GPU_ITEMS)
    half = len(items) // 2
    return [envelope(items[:half], f"{PRICES_URL}?$skip=1000"), envelope(items[half:])]


def find(offers: list[ScrapedOffer], sku: str, region: str, kind: str) -> ScrapedOffer:
    matches = [o for o in offers if (o.sku, o.region, o.kind) == (sku, region, kind)]
    assert len(matches) == 1, (sku, region, kind, matches)
    return matches[0]


class TestAzure(ProviderContract):
    scraper_cls = AzureScraper
    named_offer = NamedOffer("Standard_NC80adis_H100_v5", 2, "spot", "germanywestcentral", 3.63)
    handmade = False  # real items (real-transcribed), envelope taken from another real response
    min_offers = 40

    def load_raw(self) -> Any:
        return gpu_pages()

    def broken_payloads(self) -> list[Any]:
        items = load_json(GPU_ITEMS)
        no_region = copy.deepcopy(items[:3])
        del no_region[2]["armRegionName"]
        monthly = copy.deepcopy(items[:3])
        for item in monthly:
            item["unitOfMeasure"] = "1/Month"
        return [
            [],  # no pages at all
            {"value": items},  # a different envelope
            [{"Items": None, "NextPageLink": None}],
            [envelope([])],  # no items where GPU prices are expected
            [load_json(RAW_D2S)],  # a real page, but no GPU size in it
            [envelope(no_region)],
            [envelope(monthly)],
            "not json pages",
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        items = load_json(GPU_ITEMS)
        no_price = copy.deepcopy(items[:3])
        del no_price[1]["retailPrice"]
        string_price = copy.deepcopy(items[:3])
        string_price[0]["retailPrice"] = "98.32"
        return [
            [envelope(no_price)],
            [envelope(string_price)],
        ]

    # --- values read from the recording ---------------------------------------------------

    def test_nd_h100_v5_on_demand_eastus(self, offers: list[ScrapedOffer]) -> None:
        o = find(offers, "Standard_ND96isr_H100_v5", "eastus", "on_demand")
        assert o.price_per_hour == pytest.approx(98.32)
        assert o.currency == "USD"
        assert (o.gpu, o.gpu_count, o.gpu_raw) == ("H100-SXM", 8, "Standard_ND96isr_H100_v5")
        assert o.price_per_gpu_hour == pytest.approx(12.29)
        assert o.country == "US"
        assert o.term_months == 0

    def test_spot_and_low_priority_are_both_spot_but_distinct(self, offers: list[ScrapedOffer]) -> None:
        spot = find(offers, "Standard_NC40ads_H100_v5", "uaenorth", "spot")
        low = find(offers, "Standard_NC40ads_H100_v5:low-priority", "uaenorth", "spot")
        on_demand = find(offers, "Standard_NC40ads_H100_v5", "uaenorth", "on_demand")
        assert spot.price_per_hour == pytest.approx(1.844304)
        assert low.price_per_hour == pytest.approx(1.996)
        assert on_demand.price_per_hour == pytest.approx(9.98)
        assert spot.extra["tier"] == "spot" and low.extra["tier"] == "low_priority"
        assert {o.gpu for o in (spot, low, on_demand)} == {"H100-NVL"}
        assert low.gpu_raw == "Standard_NC40ads_H100_v5"

    def test_windows_rows_are_dropped(self, offers: list[ScrapedOffer]) -> None:
        # southcentralus NC80adis_H100_v5 is only listed with a Windows productName (20.44/h).
        assert not [o for o in offers if o.sku == "Standard_NC80adis_H100_v5" and o.region == "southcentralus"]
        assert all("windows" not in str(o.extra["product_name"]).lower() for o in offers)
        # westus2 H200 Spot exists only as a Windows row.
        assert not [o for o in offers if o.sku == "Standard_ND96isr_H200_v5" and o.region == "westus2"]

    def test_catalog_gives_gpu_model_and_count(self, offers: list[ScrapedOffer]) -> None:
        by_sku = {o.gpu_raw: (o.gpu, o.gpu_count) for o in offers}
        assert by_sku["Standard_NC24ads_A100_v4"] == ("A100-PCIe-80GB", 1)
        assert by_sku["Standard_NC96ads_A100_v4"] == ("A100-PCIe-80GB", 4)
        assert by_sku["Standard_ND96asr_v4"] == ("A100-SXM-40GB", 8)
        assert by_sku["Standard_ND96amsr_A100_v4"] == ("A100-SXM-80GB", 8)
        assert by_sku["Standard_ND96isr_H200_v5"] == ("H200", 8)
        assert by_sku["Standard_ND96isr_MI300X_v5"] == ("MI300X", 8)
        assert by_sku["Standard_NC80adis_H100_v5"] == ("H100-NVL", 2)

    def test_usgov_region_is_kept_with_its_code(self, offers: list[ScrapedOffer]) -> None:
        o = find(offers, "Standard_ND96asr_v4", "usgovvirginia", "on_demand")
        assert o.price_per_hour == pytest.approx(34.003)

    def test_every_linux_row_of_the_recording_becomes_one_offer(self, offers: list[ScrapedOffer]) -> None:
        linux = [i for i in load_json(GPU_ITEMS) if "windows" not in i["productName"].lower()]
        assert len(offers) == len(linux) == 53

    # --- parse rules on real rows ------------------------------------------------------------

    def test_unknown_gpu_series_is_kept_without_a_guess(self) -> None:
        item = dict(load_json(GPU_ITEMS)[18])  # ND96isr_H100_v5 eastus on-demand, Linux
        item["armSkuName"] = "Standard_NV12s_v3"  # a real M60 size, not in the instance table
        (o,) = AzureScraper(env={}).parse([envelope([item])])
        assert o.gpu is None and o.gpu_raw == "Standard_NV12s_v3"
        assert o.gpu_count == 0 and o.extra["gpu_count_unknown"] is True

    def test_fractional_nvads_a10_v5_from_the_table(self) -> None:
        item = dict(load_json(GPU_ITEMS)[18])
        item["armSkuName"] = "Standard_NV6ads_A10_v5"
        (o,) = AzureScraper(env={}).parse([envelope([item])])
        assert o.gpu == "A10"
        assert o.gpu_count == pytest.approx(1 / 6)

    def test_zero_price_meter_is_not_an_offer(self) -> None:
        items = load_json(GPU_ITEMS)
        westus3, eastus = dict(items[16]), dict(items[18])  # ND96isr_H100_v5 on-demand, Linux
        westus3["retailPrice"] = 0
        offers = AzureScraper(env={}).parse([envelope([westus3, eastus])])
        assert [(o.sku, o.region) for o in offers] == [("Standard_ND96isr_H100_v5", "eastus")]

    def test_full_raw_items_use_their_currency_and_sku_name(self) -> None:
        # The raw D2s_v3 page has every field; relabel its Linux rows as a GPU size to check
        # skuName-based tier detection and currencyCode on complete items.
        page = load_json(RAW_D2S)
        for item in page["Items"]:
            item["armSkuName"] = "Standard_NC24ads_A100_v4"
        offers = AzureScraper(env={}).parse([page])
        assert {(o.sku, o.kind, o.price_per_hour) for o in offers} == {
            ("Standard_NC24ads_A100_v4", "on_demand", 0.096),
            ("Standard_NC24ads_A100_v4", "spot", 0.018816),
            ("Standard_NC24ads_A100_v4:low-priority", "spot", 0.019),
        }
        assert {o.currency for o in offers} == {"USD"}

    def test_duplicate_meters_keep_one_offer_and_record_the_other_price(self) -> None:
        item = dict(load_json(GPU_ITEMS)[18])
        twin = {**item, "retailPrice": 99.0}
        (o,) = AzureScraper(env={}).parse([envelope([twin, item])])
        assert o.price_per_hour == pytest.approx(98.32)
        assert o.extra["other_meter_prices"] == [99.0]

    # --- requests ---------------------------------------------------------------------------

    def test_fetch_sends_the_filter_and_follows_next_page_link(self) -> None:
        pages = gpu_pages()
        link = f"https://prices.azure.com:443/api/retail/prices?api-version={API_VERSION}&$filter={quote(PRICE_FILTER)}&$skip=1000"
        pages[0]["NextPageLink"] = link
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            body = pages[1] if request.url.params.get("$skip") == "1000" else pages[0]
            return httpx.Response(200, json=body)

        scraper = AzureScraper(env={})
        scraper.page_interval_s = 0
        raw = run_fetch(scraper, httpx.MockTransport(handler))
        assert len(seen) == 2
        first, second = seen
        assert first.method == second.method == "GET"
        assert (first.url.scheme, first.url.host, first.url.path) == ("https", "prices.azure.com", "/api/retail/prices")
        assert first.url.params["$filter"] == PRICE_FILTER
        assert first.url.params["api-version"] == API_VERSION
        assert "$skip" not in first.url.params
        assert second.url.params["$skip"] == "1000"
        assert second.url.params["$filter"] == PRICE_FILTER
        assert "authorization" not in first.headers
        assert raw == pages
        assert len(scraper.parse(raw)) == 53

    def test_filter_selects_gpu_series_linux_consumption(self) -> None:
        assert "serviceName eq 'Virtual Machines'" in PRICE_FILTER
        assert "priceType eq 'Consumption'" in PRICE_FILTER
        assert "contains(productName, 'Windows') eq false" in PRICE_FILTER
        for series in ("NC", "ND", "NG", "NV"):
            assert f"contains(armSkuName, 'Standard_{series}')" in PRICE_FILTER

    def test_page_cap_refuses_a_partial_result(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            skip = int(request.url.params.get("$skip", "0")) + 1000
            return httpx.Response(200, json=envelope(load_json(GPU_ITEMS)[:1], f"{PRICES_URL}?$skip={skip}"))

        scraper = AzureScraper(env={})
        scraper.page_interval_s = 0
        with pytest.raises(FetchError, match=f"azure: more than {MAX_PAGES} pages"):
            run_fetch(scraper, httpx.MockTransport(handler))

    def test_next_page_link_must_stay_on_prices_azure_com(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=envelope(load_json(GPU_ITEMS)[:1], "https://evil.example/api/retail/prices?$skip=1"))

        with pytest.raises(FetchError, match="azure: refusing a next-page link to https://evil.example/api/retail/prices: it leaves"):
            run_fetch(AzureScraper(env={}), httpx.MockTransport(handler))

    def test_http_error_is_a_fetch_error_without_the_query(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(400, json={"Error": "bad filter"})

        with pytest.raises(FetchError) as err:
            run_fetch(AzureScraper(env={}), httpx.MockTransport(handler))
        assert "prices.azure.com/api/retail/prices" in str(err.value)
        assert "filter" not in str(err.value)

    def test_needs_no_credentials(self) -> None:
        scraper = AzureScraper(env={})
        assert scraper.credentials == ()
        scraper.check_credentials()  # does not raise

    def test_recording_pages_are_valid_json_with_the_real_envelope(self) -> None:
        from tracker.pipeline.replay import BUNDLED_RECORDINGS

        for name in ("prices_page1.json", "prices_page2.json"):
            page = json.loads((BUNDLED_RECORDINGS / "azure" / name).read_text())
            assert set(page) == {"BillingCurrency", "CustomerEntityId", "CustomerEntityType", "Items", "NextPageLink", "Count"}
            assert page["Count"] == len(page["Items"])
