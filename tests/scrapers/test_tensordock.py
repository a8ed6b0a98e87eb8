"""TensorDock: host node GPU component prices (handmade sample) and the live request shape."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import ScrapedOffer
from scrapers.tensordock import HOSTNODES_URL, TensordockScraper, location_of
from tests.conftest import load_json
from tests.scrapers.contract import ProviderContract, run_fetch

# HANDMADE (see its "_handmade" note): the one 'specs' object of gpuhunt's tensordock test
# fixture, wrapped in the documented {"success", "hostnodes": {id: {specs, location}}} shape
# with a placeholder host node id and location. No real recording of this endpoint exists.
HANDMADE = "tensordock/tensordock_hostnodes_handmade.json"
NODE = "handmade-hostnode-0001"


def payload() -> dict[str, Any]:
    return load_json(HANDMADE)


class TestTensordock(ProviderContract):
    scraper_cls = TensordockScraper
    handmade = True  # the sample is handmade, not a recorded response

    def load_raw(self) -> Any:
        return payload()

    def broken_payloads(self) -> list[Any]:
        no_price = payload()
        del no_price["hostnodes"][NODE]["specs"]["gpu"]["l40-pcie-48gb"]["price"]
        text_price = payload()
        text_price["hostnodes"][NODE]["specs"]["gpu"]["l40-pcie-48gb"]["price"] = "1.05"
        no_specs = payload()
        del no_specs["hostnodes"][NODE]["specs"]
        no_gpu = payload()
        del no_gpu["hostnodes"][NODE]["specs"]["gpu"]
        cpu_only = payload()
        cpu_only["hostnodes"][NODE]["specs"]["gpu"] = {}
        return [
            {},
            {"success": True, "hostnodes": {}},
            {"success": True, "hostnodes": []},
            {"success": False, "error": "Internal error"},
            [],
            no_price,
            text_price,
            no_specs,
            no_gpu,
            cpu_only,
        ]

    def test_l40_component_price(self, offers: list[ScrapedOffer]) -> None:
        [o] = offers
        assert o.sku == f"{NODE}:l40-pcie-48gb"
        assert (o.gpu_raw, o.gpu_count, o.kind, o.price_per_hour) == ("l40-pcie-48gb", 1, "on_demand", 1.05)
        assert o.gpu_memory_gb == 48.0
        assert (o.region, o.country, o.currency) == ("Handmade City, Handmade Region, Handmade Country", None, "USD")
        assert o.available is True
        assert o.vcpus is None and o.ram_gb is None  # the VM size is the renter's choice
        assert o.extra["gpu_component_only"] is True
        assert o.extra["gpus_free"] == 8
        assert o.extra["price_per_vcpu_hour"] == 0.003
        assert o.extra["price_per_ram_gb_hour"] == 0.002
        assert o.extra["price_per_storage_gb_hour"] == 5e-05
        assert o.extra["cpu_type"] == "Intel Xeon Platinum 8352Y"

    def test_every_gpu_model_of_every_node(self) -> None:
        # Test-built variant of the handmade sample: a second node, and a second model with none free.
        raw = payload()
        node = raw["hostnodes"][NODE]
        node["specs"]["gpu"]["geforcertx4090-pcie-24gb"] = {"amount": 0, "price": 0.35, "vram": 24}
        node["specs"]["gpu"]["v100-pcie-16gb"] = {"amount": 2, "price": 0, "vram": 16}  # 0 = not offered
        other = copy.deepcopy(node)
        other["location"] = {"city": "Chicago", "region": "Illinois", "country": "US"}
        raw["hostnodes"]["second-node"] = other
        offers = TensordockScraper(env={}).parse(raw)
        assert sorted(o.sku for o in offers) == sorted(
            f"{n}:{g}" for n in (NODE, "second-node") for g in ("l40-pcie-48gb", "geforcertx4090-pcie-24gb")
        )
        rtx = next(o for o in offers if o.sku == "second-node:geforcertx4090-pcie-24gb")
        assert (rtx.price_per_hour, rtx.available, rtx.gpu_memory_gb) == (0.35, False, 24.0)
        assert (rtx.region, rtx.country) == ("Chicago, Illinois, US", "US")


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ({"city": "Chicago", "region": "Illinois", "country": "United States"}, ("Chicago, Illinois, United States", None)),
        ({"city": "Oslo", "region": "", "country": "no"}, ("Oslo, no", "NO")),
        (None, ("", None)),
    ],
)
def test_location_of(location: Any, expected: tuple[str, str | None]) -> None:
    assert location_of(location) == expected


def test_fetch_gets_all_hostnodes_without_auth() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=payload())

    raw = run_fetch(TensordockScraper(env={}), httpx.MockTransport(handler))
    [request] = seen
    assert request.method == "GET"
    assert str(request.url) == HOSTNODES_URL  # no filter query: every host node
    assert "authorization" not in request.headers
    assert len(TensordockScraper(env={}).parse(raw)) == 1


def test_needs_no_credentials() -> None:
    scraper = TensordockScraper(env={})
    scraper.check_credentials()
    assert scraper.credentials == ()
