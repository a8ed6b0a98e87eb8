"""Voltage Park: the anonymous bare-metal locations API (a reference fixture: the real 2026 shape, our own values)
and its request."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, ScrapedOffer
from scrapers.voltagepark import URL, VoltageparkScraper
from tests.conftest import load_recording_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch
from tests.scrapers.requests_helpers import json_fetch

# Reference: the shape of getcomputable/gpu-index tests/fixtures/observatory/voltagepark/locations.json
# @ 055204ad, our own two locations (made-up ids); no value copied (README.md).
LOCATIONS = "voltagepark/voltagepark_bare_metal_locations_reference_2026-12-03.json"  # the replay recording: the one copy
LOCATION = "5e0c2b7a-91d4-4f3e-b6a8-2c7d0e94f1a3"  # InfiniBand GPUs free, Ethernet none
SECOND = "b71f4d08-3c6e-4a92-8e15-d9a0f6c2e7b4"  # Ethernet GPUs free, InfiniBand none


def locations(**changes: Any) -> dict[str, Any]:
    """The fixture with the first location row's keys replaced."""
    raw = load_recording_json(LOCATIONS)
    raw["results"][0].update(changes)
    return raw


def without(key: str) -> dict[str, Any]:
    raw = load_recording_json(LOCATIONS)
    raw["results"][0].pop(key)
    return raw


class TestVoltagepark(ProviderContract):
    scraper_cls = VoltageparkScraper
    named_offer = NamedOffer(
        "h100-sxm5-80gb", 1, "on_demand", "5e0c2b7a-91d4-4f3e-b6a8-2c7d0e94f1a3", 2.09, "USD", sku="h100-sxm5-80gb:ethernet")
    handmade = True  # a reference fixture: the real shape with our own values
    min_offers = 4

    def load_raw(self) -> Any:
        return load_recording_json(LOCATIONS)

    def broken_payloads(self) -> list[Any]:
        row = load_recording_json(LOCATIONS)["results"][0]
        return [
            {},
            {"results": [], "total_result_count": 0},
            {"results": [row]},  # no total_result_count
            {"results": [row], "total_result_count": 2},  # rows this page does not hold
            load_recording_json(LOCATIONS) | {"total_result_count": 1},  # more rows than it says
            {"results": {"id": LOCATION}, "total_result_count": 1},
            [row],
            {"results": ["h100"], "total_result_count": 1},
            without("specs_per_node"),
            without("id"),
            locations(specs_per_node={"gpu_count": 8}),
            locations(specs_per_node={"gpu_model": "  "}),
            locations(gpu_price_spot="1.59"),  # a new price tier must not be dropped silently
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        return [
            without("gpu_price_infiniband"),
            locations(gpu_price_ethernet="two oh nine"),
            locations(gpu_price_ethernet=True),
        ]

    def by_sku(self, offers: list[ScrapedOffer], region: str = LOCATION) -> dict[str, ScrapedOffer]:
        """The offers of one location by sku."""
        return {o.sku: o for o in offers if o.region == region}

    def test_ethernet_and_infiniband_h100_per_gpu(self, offers: list[ScrapedOffer]) -> None:
        assert {o.region for o in offers} == {LOCATION, SECOND}
        by = self.by_sku(offers)
        assert set(by) == {"h100-sxm5-80gb:ethernet", "h100-sxm5-80gb:infiniband"}
        ethernet, infiniband = by["h100-sxm5-80gb:ethernet"], by["h100-sxm5-80gb:infiniband"]
        assert ethernet.price_per_hour == 2.09 and infiniband.price_per_hour == 2.59  # decimal strings "2.09"/"2.59"
        for o in (ethernet, infiniband):
            assert (o.gpu_raw, o.gpu_count, o.kind, o.currency) == ("h100-sxm5-80gb", 1, "on_demand", "USD")
            assert o.region == LOCATION and o.extra["per_gpu"] is True
            assert o.vcpus is None and o.ram_gb is None  # node specs are for 8 GPUs: kept in extra only
            assert (o.extra["node_gpu_count"], o.extra["node_cpu_count"], o.extra["node_ram_gb"]) == (8, 112, 2048)
            assert o.extra["node_cpu_model"] == "Intel Xeon Platinum 8480+" and o.extra["node_storage_gb"] == 30720
        assert (ethernet.extra["network"], infiniband.extra["network"]) == ("ethernet", "infiniband")
        # free GPUs per network: gpu_count_ethernet 0, gpu_count_infiniband 16
        assert (ethernet.available, ethernet.extra["free_gpus"]) == (False, 0)
        assert (infiniband.available, infiniband.extra["free_gpus"]) == (True, 16)

    def test_the_second_location_has_its_own_prices_and_stock(self, offers: list[ScrapedOffer]) -> None:
        by = self.by_sku(offers, SECOND)
        ethernet, infiniband = by["h100-sxm5-80gb:ethernet"], by["h100-sxm5-80gb:infiniband"]
        assert (ethernet.price_per_hour, ethernet.available, ethernet.extra["free_gpus"]) == (2.15, True, 8)
        assert (infiniband.price_per_hour, infiniband.available, infiniband.extra["free_gpus"]) == (2.65, False, 0)
        assert (ethernet.extra["node_cpu_model"], ethernet.extra["node_cpu_count"], ethernet.extra["node_ram_gb"]) == (
            "AMD EPYC 9454", 96, 1536)

    def test_free_gpus_make_an_offer_available(self) -> None:
        offers = self.by_sku(VoltageparkScraper(env={}).parse(locations(gpu_count_ethernet=4, gpu_count_infiniband=0)))
        assert offers["h100-sxm5-80gb:ethernet"].available is True
        assert offers["h100-sxm5-80gb:infiniband"].available is False

    def test_a_numeric_price_and_a_null_one(self) -> None:
        offers = self.by_sku(VoltageparkScraper(env={}).parse(locations(gpu_price_ethernet=2.09, gpu_price_infiniband=None)))
        assert offers["h100-sxm5-80gb:ethernet"].price_per_hour == 2.09
        assert offers["h100-sxm5-80gb:infiniband"].price_per_hour is None  # listed without a price

    def test_the_catalog_resolves_the_recorded_name(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {resolve_gpu(o.gpu_raw) for o in offers} == {"H100-SXM"}


def test_fetch_is_one_anonymous_get() -> None:
    raw, sent = json_fetch(VoltageparkScraper(env={}), load_recording_json(LOCATIONS))
    assert [(r.method, str(r.url)) for r in sent] == [("GET", URL)]
    assert sent[0].content == b"" and "authorization" not in sent[0].headers and "cookie" not in sent[0].headers
    assert raw == load_recording_json(LOCATIONS)


def test_a_second_page_fails_the_fetch_instead_of_a_partial_list() -> None:
    page = load_recording_json(LOCATIONS) | {"has_next": True, "total_result_count": 3}
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=page)

    with pytest.raises(FetchError, match="voltagepark: locations has a next page"):
        run_fetch(VoltageparkScraper(env={}), httpx.MockTransport(handler))
    assert len(sent) == 1


def test_needs_no_credentials() -> None:
    VoltageparkScraper(env={}).check_credentials()
    assert VoltageparkScraper.credentials == () and VoltageparkScraper.optional_credentials == ()


