"""TensorDock v2 /locations: GPU prices per location (REFERENCE fixture: our own values in the structure
OpenComputePrices' MIT collector reads), the request (keyless, the optional key as Bearer)."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.tensordock import LOCATIONS_URL, TensordockScraper, location_of
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch
from tests.scrapers.requests_helpers import (
    assert_only_optional_credential,
    assert_optional_key_sent_as_bearer,
)
from tracker.pipeline.replay import BUNDLED_RECORDINGS

# REFERENCE (our own values): the bundled replay recording itself, read in place.
REFERENCE = BUNDLED_RECORDINGS / "tensordock" / "locations_2026_reference.json"
CHICAGO = "3f6c2a1e-5b7d-4c11-9a2e-0d4b8e7f1a20"
FRANKFURT = "9b0e7d4c-2a81-4f36-b5c9-6e1f0a3d8b72"


def payload() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text())


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestTensordock(ProviderContract):
    scraper_cls = TensordockScraper
    named_offer = NamedOffer("NVIDIA GeForce RTX 4090 PCIe 24GB", 1, "on_demand", "Chicago, Illinois, United States", 0.37)
    handmade = True  # a reference fixture (the real shape, our own values), not a real recording
    min_offers = 4

    def load_raw(self) -> Any:
        return payload()

    def broken_payloads(self) -> list[Any]:
        no_price = payload()
        for location in no_price["data"]["locations"]:
            for gpu in location["gpus"]:
                del gpu["price_per_hr"]
        text_price = payload()
        for location in text_price["data"]["locations"]:
            for gpu in location["gpus"]:
                gpu["price_per_hr"] = "0.37"
        no_gpus = payload()
        del no_gpus["data"]["locations"][0]["gpus"]
        no_name = payload()
        del no_name["data"]["locations"][1]["gpus"][0]["v0Name"]
        unpriced = payload()
        for location in unpriced["data"]["locations"]:
            for gpu in location["gpus"]:
                gpu["price_per_hr"] = 0
        return [
            {},
            {"data": {}},
            {"data": {"locations": []}},
            {"data": {"locations": {"chicago": {}}}},
            {"hostnodes": {}},  # the v0 answer
            [],
            no_price,
            text_price,
            no_gpus,
            no_name,
            unpriced,
        ]

    def bad_offer_payloads(self) -> list[Any]:
        negative = payload()
        negative["data"]["locations"][0]["gpus"][0]["price_per_hr"] = -0.37
        return [negative]

    def test_rtx_4090_in_chicago(self, offers: list[ScrapedOffer]) -> None:
        o = by_sku(offers)[f"{CHICAGO}:geforcertx4090-pcie-24gb"]
        assert (o.gpu_raw, o.gpu_count, o.kind, o.price_per_hour, o.currency) == (
            "NVIDIA GeForce RTX 4090 PCIe 24GB", 1, "on_demand", 0.37, "USD")
        assert (o.region, o.country, o.gpu_memory_gb, o.available) == ("Chicago, Illinois, United States", None, 24.0, True)
        assert o.vcpus is None and o.ram_gb is None  # the VM size is the renter's choice
        assert o.extra["gpu_component_only"] is True and o.extra["max_gpus"] == 4
        assert (o.extra["price_per_vcpu_hour"], o.extra["price_per_ram_gb_hour"], o.extra["price_per_storage_gb_hour"]) == (0.003, 0.002, 5e-05)
        assert (o.extra["max_vcpus"], o.extra["max_ram_gb"], o.extra["tier"], o.extra["dedicated_ip"]) == (32, 128, 3, True)
        assert o.extra["location_id"] == CHICAGO

    def test_every_priced_gpu_of_every_location(self, offers: list[ScrapedOffer]) -> None:
        assert sorted(by_sku(offers)) == sorted([
            f"{CHICAGO}:geforcertx4090-pcie-24gb", f"{CHICAGO}:h100-sxm5-80gb",
            f"{FRANKFURT}:a100-pcie-80gb", f"{FRANKFURT}:l40s-pcie-48gb",
        ])  # the RTX A6000 priced 0 is not offered; Manassas lists no GPU
        h100 = by_sku(offers)[f"{CHICAGO}:h100-sxm5-80gb"]
        assert (h100.gpu_raw, h100.price_per_hour, h100.gpu_memory_gb, h100.extra["max_gpus"]) == ("NVIDIA H100 SXM5 80GB", 2.25, 80.0, 8)
        a100 = by_sku(offers)[f"{FRANKFURT}:a100-pcie-80gb"]
        assert (a100.region, a100.country, a100.price_per_hour) == ("Frankfurt, Hesse, DE", "DE", 1.1)

    def test_max_count_zero_is_unavailable(self, offers: list[ScrapedOffer]) -> None:
        l40s = by_sku(offers)[f"{FRANKFURT}:l40s-pcie-48gb"]
        assert (l40s.price_per_hour, l40s.available, l40s.extra["max_gpus"]) == (0.89, False, 0)

    def test_no_display_name_keeps_the_v0_name(self) -> None:
        raw = payload()
        del raw["data"]["locations"][0]["gpus"][0]["displayName"]
        o = by_sku(TensordockScraper(env={}).parse(raw))[f"{CHICAGO}:geforcertx4090-pcie-24gb"]
        assert (o.gpu_raw, o.gpu_memory_gb) == ("geforcertx4090-pcie-24gb", 24.0)

    def test_an_unreadable_price_names_its_field(self) -> None:
        raw = copy.deepcopy(payload())
        raw["data"]["locations"][1]["gpus"][0]["price_per_hr"] = "call us"
        bad = [o for o in TensordockScraper(env={}).parse(raw) if UNREADABLE_PRICE in o.extra]
        assert [o.extra[UNREADABLE_PRICE] for o in bad] == [
            "price field data.locations[1].gpus[0].price_per_hr holds 'call us', not a number"
        ]


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ({"city": "Chicago", "stateprovince": "Illinois", "country": "United States"}, ("Chicago, Illinois, United States", None)),
        ({"city": "Oslo", "stateprovince": "", "country": "no"}, ("Oslo, no", "NO")),
        (None, ("", None)),
    ],
)
def test_location_of(location: Any, expected: tuple[str, str | None]) -> None:
    assert location_of(location) == expected


def test_fetch_gets_the_v2_locations_without_a_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=payload())

    raw = run_fetch(TensordockScraper(env={}), httpx.MockTransport(handler))
    [request] = seen
    assert (request.method, str(request.url)) == ("GET", LOCATIONS_URL)
    assert LOCATIONS_URL == "https://dashboard.tensordock.com/api/v2/locations"
    assert "authorization" not in request.headers
    assert len(TensordockScraper(env={}).parse(raw)) == 4


def test_fetch_sends_the_optional_key_as_bearer() -> None:
    assert_optional_key_sent_as_bearer(TensordockScraper, "TENSORDOCK_API_KEY", "td-123", payload())


def test_needs_no_credentials() -> None:
    assert_only_optional_credential(TensordockScraper, "TENSORDOCK_API_KEY")


def test_the_legacy_v0_marketplace_is_no_longer_asked() -> None:
    assert "marketplace.tensordock.com" not in TensordockScraper.endpoint
    assert TensordockScraper.allowed_hosts() == ("dashboard.tensordock.com",)
    assert TensordockScraper.retired is None
