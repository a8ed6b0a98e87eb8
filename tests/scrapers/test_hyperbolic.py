"""Hyperbolic: the anonymous on-demand rental-options API (a reference fixture: the real 2026 shape, our own
values) and its request."""

from __future__ import annotations

import copy
from typing import Any

from scrapers.base import ScrapedOffer
from scrapers.hyperbolic import URL, HyperbolicScraper
from tests.conftest import load_recording_json
from tests.scrapers.contract import NamedOffer, ProviderContract, index_offers
from tests.scrapers.requests_helpers import json_fetch

# Reference: the shape of getcomputable/gpu-index tests/fixtures/observatory/hyperbolic/rental_options.json
# @ f78dffff, our own 13 options (one disabled); no value copied (README.md).
OPTIONS = "hyperbolic/hyperbolic_rental_options_reference_2026-12-03.json"  # the replay recording: the one copy
VM_1X = "h100-sxm5-1x-virtual-machine-ethernet-normal"


def options(index: int = 0, **changes: Any) -> list[dict[str, Any]]:
    """The fixture with option ``index``'s keys replaced."""
    raw = load_recording_json(OPTIONS)
    raw[index].update(copy.deepcopy(changes))
    return raw


def without(key: str, index: int = 0) -> list[dict[str, Any]]:
    raw = load_recording_json(OPTIONS)
    raw[index].pop(key)
    return raw


class TestHyperbolic(ProviderContract):
    scraper_cls = HyperbolicScraper
    named_offer = NamedOffer("h100 sxm5", 2, "on_demand", "eu-central-2", 6.68)
    handmade = True  # a reference fixture: the real shape with our own values
    min_offers = 12

    def load_raw(self) -> Any:
        return load_recording_json(OPTIONS)

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            [],
            {"options": load_recording_json(OPTIONS)},
            ["h100"],
            without("gpuType"),
            without("region"),
            without("enabled"),
            options(gpuType=" "),
            options(enabled="yes"),
            options(spotCostPerHourCents=199),  # a new price tier must not be dropped silently
            options(1, gpuType="h100", costPerHourCents=300),  # two prices for one option
            [dict(o, enabled=False) for o in load_recording_json(OPTIONS)],
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        return [
            without("costPerHourCents"),
            without("gpuCount"),
            options(costPerHourCents="289"),
            options(gpuCount=0),
            options(gpuCount=1.5),
        ]

    def by(self, offers: list[ScrapedOffer]) -> dict[tuple[Any, ...], ScrapedOffer]:
        return index_offers(offers, ("sku", "region"))

    def test_single_h100_vm_whole_option_price(self, offers: list[ScrapedOffer]) -> None:
        o = self.by(offers)[(VM_1X, "us-central-1")]
        assert (o.gpu_raw, o.gpu_count, o.kind, o.currency, o.region) == ("h100 sxm5", 1, "on_demand", "USD", "us-central-1")
        assert o.price_per_hour == 2.89  # costPerHourCents 289
        assert (o.vcpus, o.ram_gb) == (24, 200)
        assert o.available is None  # no totalAvailable: unknown, not zero
        assert o.extra["cpu_model"] == "AMD EPYC 9454" and o.extra["storage_gb"] == 800
        assert self.by(offers)[(VM_1X, "eu-central-2")].price_per_hour == 3.42

    def test_eight_gpu_bare_metal_price_is_for_the_node(self, offers: list[ScrapedOffer]) -> None:
        o = self.by(offers)[("h100-sxm5-8x-bare-metal-infiniband", "us-central-1")]
        assert (o.gpu_raw, o.gpu_count, o.kind) == ("h100 sxm5", 8, "on_demand")
        assert o.price_per_hour == 23.12  # costPerHourCents 2312 for 8 GPUs
        assert o.price_per_gpu_hour == 2.89
        assert (o.vcpus, o.ram_gb) == (112, 1920)  # bare metal gives cpuCount, not vcpuCount
        assert o.extra["machine_type"] == "bare-metal" and o.extra["connection_type"] == "infiniband"
        assert o.extra["ethernet_variant"] is None

    def test_two_and_four_gpu_options(self, offers: list[ScrapedOffer]) -> None:
        by = self.by(offers)
        two = by[("h100-sxm5-2x-virtual-machine-ethernet-normal", "eu-central-2")]
        assert (two.gpu_count, two.price_per_hour, two.price_per_gpu_hour, two.vcpus) == (2, 6.68, 3.34, 56)
        four = by[("h100-sxm5-4x-virtual-machine-ethernet-normal", "ap-northeast-1")]
        assert (four.gpu_count, four.price_per_hour, four.price_per_gpu_hour) == (4, 12.44, 3.11)
        assert four.extra["cpu_model"] == "Intel(R) Xeon(R) Gold 6448Y"

    def test_pcie_h100_with_stock_and_h200s(self, offers: list[ScrapedOffer]) -> None:
        by = self.by(offers)
        pcie = by[("h100-pcie-1x-virtual-machine-ethernet-normal", "ca-central-1")]
        assert (pcie.gpu_raw, pcie.price_per_hour, pcie.available) == ("h100 pcie", 2.49, True)
        assert pcie.extra["total_available"] == 3
        h200 = by[("h200-sxm5-1x-virtual-machine-ethernet-normal", "us-central-1")]
        assert (h200.gpu_raw, h200.price_per_hour, h200.available) == ("h200 sxm5", 3.79, False)  # totalAvailable 0
        metal = by[("h200-sxm5-8x-bare-metal-infiniband", "us-west-2")]
        assert (metal.price_per_hour, metal.available, metal.extra["total_available"]) == (29.52, True, 1)
        assert by[("h200-sxm5-8x-virtual-machine-ethernet-normal", "eu-west-1")].price_per_hour == 30.96
        assert by[("h100-sxm5-8x-virtual-machine-ethernet-rocev2", "eu-central-2")].extra["ethernet_variant"] == "rocev2"

    def test_supplier_cost_is_never_the_price(self) -> None:
        raw = options(providerCostPerHourCents=111)
        o = self.by(HyperbolicScraper(env={}).parse(raw))[(VM_1X, "us-central-1")]
        assert o.price_per_hour == 2.89
        assert "111" not in repr(dict(o.extra))

    def test_disabled_options_give_no_offer(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) == 12  # 13 options, the H200 in us-west-2 is disabled
        assert ("h200-sxm5-1x-virtual-machine-ethernet-normal", "us-west-2") not in self.by(offers)
        fewer = HyperbolicScraper(env={}).parse(options(0, enabled=False))
        assert len(fewer) == 11 and (VM_1X, "us-central-1") not in self.by(fewer)
        enabled = HyperbolicScraper(env={}).parse(options(3, enabled=True))
        assert self.by(enabled)[("h200-sxm5-1x-virtual-machine-ethernet-normal", "us-west-2")].price_per_hour == 4.15

    def test_the_catalog_resolves_every_recorded_name(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.gpu_raw: resolve_gpu(o.gpu_raw) for o in offers} == {
            "h100 sxm5": "H100-SXM",
            "h100 pcie": "H100-PCIe",
            "h200 sxm5": "H200",
        }


def test_fetch_is_one_anonymous_get() -> None:
    raw, sent = json_fetch(HyperbolicScraper(env={}), load_recording_json(OPTIONS))
    assert [(r.method, str(r.url)) for r in sent] == [("GET", URL)]
    assert sent[0].content == b"" and "authorization" not in sent[0].headers
    assert raw == load_recording_json(OPTIONS)


def test_needs_no_credentials() -> None:
    HyperbolicScraper(env={}).check_credentials()
    assert HyperbolicScraper.credentials == () and HyperbolicScraper.optional_credentials == ()


