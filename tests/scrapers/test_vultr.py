"""Vultr scraper. The samples are HANDMADE (gpuhunt test literals, see tests/fixtures/vultr/README.md)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError
from scrapers.vultr import METAL_URL, PLANS_URL, VultrScraper, model_token
from tests.conftest import load_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

PLANS = "vultr/vultr_plans_handmade.json"
METAL = "vultr/vultr_plans-metal_handmade.json"


def raw(plans: list[Any] | None = None, metal: list[Any] | None = None) -> dict[str, Any]:
    return {
        "plans": [{"plans": load_json(PLANS)["plans"] if plans is None else plans}],
        "plans_metal": [{"plans_metal": load_json(METAL)["plans_metal"] if metal is None else metal}],
    }


class TestVultr(ProviderContract):
    scraper_cls = VultrScraper
    named_offer = NamedOffer("mi300x", 8, "on_demand", "ord", 17.52)
    handmade = True  # the only Vultr samples are handmade test literals
    min_offers = 7

    def load_raw(self) -> Any:
        return raw()

    def broken_payloads(self) -> list[Any]:
        plans = load_json(PLANS)["plans"]
        no_hourly = copy.deepcopy(plans)
        for p in no_hourly:
            p.pop("hourly_cost")
        no_locations = copy.deepcopy(plans)
        no_locations[0].pop("locations")
        return [
            {},
            {"plans": [{"plans": plans}]},  # plans_metal missing
            {"plans": [{"items": plans}], "plans_metal": [{"plans_metal": []}]},
            {"plans": [{"plans": []}], "plans_metal": [{"plans_metal": []}]},
            {"plans": [{"plans": "x"}], "plans_metal": [{"plans_metal": []}]},
            raw(plans=no_hourly, metal=[]),
            raw(plans=no_locations, metal=[]),
            raw(plans=[{"type": "vcg", "gpu_type": "NVIDIA_A100"}], metal=[]),  # no id
            raw(plans=[{"id": "vc2-1c-1gb", "type": "vc2", "hourly_cost": 0.007, "locations": ["ewr"]}], metal=[]),
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        plans = load_json(PLANS)["plans"]
        text_price = copy.deepcopy(plans)
        text_price[0]["hourly_cost"] = "cheap"
        return [
            raw(plans=text_price, metal=[]),
        ]

    def by(self, offers: list[Any]) -> dict[tuple[str, str, str], Any]:
        return {(o.sku, o.region, o.kind): o for o in offers}

    def test_whole_a100_cloud_gpu(self, offers: list[Any]) -> None:
        o = self.by(offers)[("vcg-a100-12c-120g-80vram", "ewr", "on_demand")]
        assert o.gpu_raw == "NVIDIA_A100"
        assert o.gpu_count == 1
        assert o.gpu_memory_gb == 80
        assert o.price_per_hour == 2.397  # hourly_cost, not monthly_cost (1750 = 730 x hourly)
        assert o.vcpus == 12 and o.ram_gb == 120
        assert o.extra["gpu_vram_gb"] == 80 and o.extra["plan_type"] == "vcg" and o.extra["monthly_cost"] == 1750

    def test_fractional_cloud_gpus(self, offers: list[Any]) -> None:
        by = self.by(offers)
        twentieth = by[("vcg-a100-1c-6g-4vram", "ewr", "on_demand")]
        assert twentieth.gpu_count == 0.05 and twentieth.gpu_memory_gb == 80
        assert twentieth.price_per_hour == 0.123
        half = by[("vcg-a100-6c-60g-40vram", "ewr", "on_demand")]
        assert half.gpu_count == 0.5 and half.price_per_hour == 1.397
        assert half.price_per_gpu_hour == pytest.approx(2.794)

    def test_bare_metal_gpu_from_the_plan_id_with_spot(self, offers: list[Any]) -> None:
        by = self.by(offers)
        h100 = by[("vbm-112c-2048gb-8-h100-gpu", "sea", "on_demand")]
        assert h100.gpu_raw == "h100" and h100.gpu_count == 8 and h100.gpu_memory_gb == 80
        assert h100.price_per_hour == 23.92  # hourly_cost (monthly 16074.24 = 672 x hourly)
        assert h100.vcpus == 224 and h100.ram_gb == 2048
        assert by[("vbm-112c-2048gb-8-h100-gpu", "sea", "spot")].price_per_hour == 18.4
        mi300x = by[("vbm-256c-2048gb-8-mi300x-gpu", "ord", "on_demand")]
        assert mi300x.gpu_raw == "mi300x" and mi300x.gpu_count == 8 and mi300x.price_per_hour == 17.52
        assert by[("vbm-256c-2048gb-8-mi300x-gpu", "ord", "spot")].price_per_hour == 14.72

    def test_no_spot_offer_where_no_preemptible_price(self, offers: list[Any]) -> None:
        assert not [o for o in offers if o.sku.startswith("vcg-") and o.kind == "spot"]
        assert all(o.currency == "USD" and o.gpu is None for o in offers)


class TestPlanShapes:
    def test_one_offer_per_location_and_none_for_an_undeployable_plan(self) -> None:
        plans = load_json(PLANS)["plans"]
        plans[1]["locations"] = ["ewr", "lax", "ewr"]
        plans[2]["locations"] = []
        offers = VultrScraper(env={}).parse(raw(plans=plans, metal=[]))
        assert sorted(o.region for o in offers if o.sku == "vcg-a100-12c-120g-80vram") == ["ewr", "lax"]
        assert not [o for o in offers if o.sku == "vcg-a100-6c-60g-40vram"]

    def test_api_gpu_count_wins_even_as_a_fraction_string(self) -> None:
        plans = load_json(PLANS)["plans"][:1]
        plans[0]["gpu_count"] = "1/20"
        (offer,) = VultrScraper(env={}).parse(raw(plans=plans, metal=[]))
        assert offer.gpu_count == 0.05

    def test_unknown_gpu_model_keeps_a_count_of_one_and_says_so(self) -> None:
        plans = load_json(PLANS)["plans"][:1]
        plans[0]["gpu_type"] = "NVIDIA_FUTURE9"
        (offer,) = VultrScraper(env={}).parse(raw(plans=plans, metal=[]))
        assert offer.gpu_raw == "NVIDIA_FUTURE9"
        assert offer.gpu_count == 1 and offer.gpu_memory_gb is None
        assert offer.extra["gpu_count_assumed"] is True

    def test_metal_without_count_in_id_is_one_gpu(self) -> None:
        metal = load_json(METAL)["plans_metal"][1:]
        metal[0]["id"] = "vbm-72c-480gb-gh200-gpu"
        offers = VultrScraper(env={}).parse(raw(plans=[], metal=metal))
        assert {(o.gpu_raw, o.gpu_count, o.gpu_memory_gb) for o in offers} == {("gh200", 1, 96)}

    def test_cpu_metal_plans_are_skipped(self) -> None:
        metal = load_json(METAL)["plans_metal"]
        metal[0]["id"] = "vbm-24c-256gb-amd"
        offers = VultrScraper(env={}).parse(raw(plans=[], metal=metal))
        assert {o.sku for o in offers} == {"vbm-112c-2048gb-8-h100-gpu"}

    @pytest.mark.parametrize(
        ("name", "token"), [("NVIDIA_A100", "A100"), ("NVIDIA_A100_PCIE", "A100"), ("AMD_MI300X", "MI300X"), ("h100", "H100")]
    )
    def test_model_token(self, name: str, token: str) -> None:
        assert model_token(name) == token


class TestFetch:
    def test_requests_and_cursor_pagination(self) -> None:
        plans = load_json(PLANS)["plans"]
        metal = load_json(METAL)["plans_metal"]
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            path = request.url.path
            cursor = request.url.params.get("cursor")
            if path == "/v2/plans" and cursor is None:
                return httpx.Response(200, json={"plans": plans[:2], "meta": {"total": 3, "links": {"next": "c2", "prev": ""}}})
            if path == "/v2/plans" and cursor == "c2":
                return httpx.Response(200, json={"plans": plans[2:], "meta": {"total": 3, "links": {"next": "", "prev": "c1"}}})
            if path == "/v2/plans-metal" and cursor is None:
                return httpx.Response(200, json={"plans_metal": metal[:1], "meta": {"links": {"next": "m2"}}})
            if path == "/v2/plans-metal" and cursor == "m2":
                return httpx.Response(200, json={"plans_metal": metal[1:], "meta": {"links": {"next": ""}}})
            return httpx.Response(404)

        scraper = VultrScraper(env={})
        fetched = run_fetch(scraper, httpx.MockTransport(handler))
        assert [(r.method, str(r.url.copy_with(query=None))) for r in seen] == [
            ("GET", PLANS_URL), ("GET", PLANS_URL), ("GET", METAL_URL), ("GET", METAL_URL)
        ]
        assert dict(seen[0].url.params) == {"type": "all", "per_page": "500"}
        assert dict(seen[1].url.params) == {"type": "all", "per_page": "500", "cursor": "c2"}
        assert dict(seen[2].url.params) == {"per_page": "500"}
        assert dict(seen[3].url.params) == {"per_page": "500", "cursor": "m2"}
        assert all("authorization" not in r.headers for r in seen)
        assert len(fetched["plans"]) == 2 and len(fetched["plans_metal"]) == 2
        offers = scraper.parse(fetched)
        assert {o.sku for o in offers} == {p["id"] for p in plans + metal}

    def test_a_repeated_cursor_is_an_error(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"plans": [], "meta": {"links": {"next": "same"}}})

        with pytest.raises(FetchError, match="vultr: plans returned the same next cursor"):
            run_fetch(VultrScraper(env={}), httpx.MockTransport(handler))

    def test_no_credentials_needed(self) -> None:
        VultrScraper(env={}).check_credentials()
        assert VultrScraper.credentials == ()

    def test_replay_walks_both_recorded_plan_pages(self) -> None:
        from tracker.pipeline.replay import ReplayTransport

        transport = ReplayTransport.for_provider("vultr")
        fetched = run_fetch(VultrScraper(env={}, replay=True), transport)
        assert len(transport.requests) == 3
        assert len(fetched["plans"]) == 2
