"""Hyperbolic: the anonymous on-demand rental-options API (real 2026 recording, trimmed) and its request."""

from __future__ import annotations

import copy
from typing import Any

from scrapers.base import ScrapedOffer
from scrapers.hyperbolic import URL, HyperbolicScraper
from tests.conftest import load_json
from tests.scrapers.contract import ProviderContract, index_offers
from tests.scrapers.requests_helpers import json_fetch

# Real: getcomputable/gpu-index tests/fixtures/observatory/hyperbolic/rental_options.json @ f78dffff,
# 13 options, only the supplier-cost key dropped (README.md).
OPTIONS = "hyperbolic/hyperbolic_rental_options_2026_trimmed.json"


def options(index: int = 0, **changes: Any) -> list[dict[str, Any]]:
    """The recording with option ``index``'s keys replaced."""
    raw = load_json(OPTIONS)
    raw[index].update(copy.deepcopy(changes))
    return raw


def without(key: str, index: int = 0) -> list[dict[str, Any]]:
    raw = load_json(OPTIONS)
    raw[index].pop(key)
    return raw


class TestHyperbolic(ProviderContract):
    scraper_cls = HyperbolicScraper
    min_offers = 13

    def load_raw(self) -> Any:
        return load_json(OPTIONS)

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            [],
            {"options": load_json(OPTIONS)},
            ["h100"],
            without("gpuType"),
            without("region"),
            without("enabled"),
            options(gpuType=" "),
            options(enabled="yes"),
            options(spotCostPerHourCents=199),  # a new price tier must not be dropped silently
            options(1, region="us-east-1", gpuType="h100", costPerHourCents=300),  # two prices for one option
            [dict(o, enabled=False) for o in load_json(OPTIONS)],
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        return [
            without("costPerHourCents"),
            without("gpuCount"),
            options(costPerHourCents="319"),
            options(gpuCount=0),
            options(gpuCount=1.5),
        ]

    def by(self, offers: list[ScrapedOffer]) -> dict[tuple[Any, ...], ScrapedOffer]:
        return index_offers(offers, ("sku", "region"))

    def test_single_h100_vm_whole_option_price(self, offers: list[ScrapedOffer]) -> None:
        o = self.by(offers)[("h100-sxm5-1x-virtual-machine-ethernet-normal", "us-east-1")]
        assert (o.gpu_raw, o.gpu_count, o.kind, o.currency) == ("h100 sxm5", 1, "on_demand", "USD")
        assert o.price_per_hour == 3.19  # costPerHourCents 319
        assert (o.vcpus, o.ram_gb) == (20, 240)
        assert o.available is None  # no totalAvailable: unknown, not zero
        assert o.extra["cpu_model"] == "Intel Xeon Platinum" and o.extra["storage_gb"] == 720
        assert self.by(offers)[("h100-sxm5-1x-virtual-machine-ethernet-normal", "ca-east-3")].price_per_hour == 4.85

    def test_eight_gpu_bare_metal_price_is_for_the_node(self, offers: list[ScrapedOffer]) -> None:
        o = self.by(offers)[("h100-sxm5-8x-bare-metal-infiniband", "uk-southeast-3")]
        assert o.gpu_count == 8 and o.price_per_hour == 25.52  # costPerHourCents 2552 for 8 GPUs
        assert o.price_per_gpu_hour == 3.19
        assert (o.vcpus, o.ram_gb) == (96, 2000)  # bare metal gives cpuCount, not vcpuCount
        assert o.extra["machine_type"] == "bare-metal" and o.extra["connection_type"] == "infiniband"

    def test_pcie_h100_with_stock_and_h200s(self, offers: list[ScrapedOffer]) -> None:
        by = self.by(offers)
        pcie = by[("h100-pcie-1x-virtual-machine-ethernet-normal", "ca-east-1")]
        assert (pcie.gpu_raw, pcie.price_per_hour, pcie.available) == ("h100 pcie", 2.75, True)
        assert pcie.extra["total_available"] == 2
        assert by[("h200-sxm5-8x-virtual-machine-ethernet-normal", "eu-north-5")].price_per_hour == 31.92
        assert by[("h100-sxm5-8x-virtual-machine-ethernet-rocev2", "eu-north-4")].extra["ethernet_variant"] == "rocev2"

    def test_supplier_cost_is_never_the_price(self) -> None:
        raw = options(providerCostPerHourCents=111)
        o = self.by(HyperbolicScraper(env={}).parse(raw))[("h100-sxm5-1x-virtual-machine-ethernet-normal", "us-east-1")]
        assert o.price_per_hour == 3.19
        assert "111" not in repr(dict(o.extra))

    def test_disabled_options_give_no_offer(self) -> None:
        offers = HyperbolicScraper(env={}).parse(options(0, enabled=False))
        assert len(offers) == 12
        assert ("h100-sxm5-1x-virtual-machine-ethernet-normal", "us-east-1") not in self.by(offers)

    def test_the_catalog_resolves_every_recorded_name(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {o.gpu_raw: resolve_gpu(o.gpu_raw) for o in offers} == {
            "h100 sxm5": "H100-SXM",
            "h100 pcie": "H100-PCIe",
            "h200 sxm5": "H200",
        }


def test_fetch_is_one_anonymous_get() -> None:
    raw, sent = json_fetch(HyperbolicScraper(env={}), load_json(OPTIONS))
    assert [(r.method, str(r.url)) for r in sent] == [("GET", URL)]
    assert sent[0].content == b"" and "authorization" not in sent[0].headers
    assert raw == load_json(OPTIONS)


def test_needs_no_credentials() -> None:
    HyperbolicScraper(env={}).check_credentials()
    assert HyperbolicScraper.credentials == () and HyperbolicScraper.optional_credentials == ()
