"""Akamai/Linode linode/types scraper. The page is REAL (a linodego go-vcr recording, trimmed to 7 whole plan types):
see tests/fixtures/linode/README.md."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, ScrapedOffer
from scrapers.linode import TYPES_URL, LinodeScraper, gpu_name
from tests.conftest import load_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

TYPES = "linode/linode_v4beta_linode_types_linodego_cassette_excerpt.json"


def body() -> dict[str, Any]:
    return load_json(TYPES)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers if o.region == ""}


class TestLinode(ProviderContract):
    scraper_cls = LinodeScraper
    named_offer = NamedOffer("NVIDIA Quadro RTX 6000", 2, "on_demand", "", 3.0)
    min_offers = 4

    def load_raw(self) -> list[Any]:
        return [body()]

    def broken_payloads(self) -> list[Any]:
        no_price = body()
        for plan in no_price["data"]:
            plan["price"] = {"monthly": plan["price"]["monthly"]}
        no_id = body()
        del no_id["data"][2]["id"]
        cpu_only = body()
        cpu_only["data"] = [p for p in cpu_only["data"] if not p["gpus"]]
        return [
            {},
            [{"types": body()["data"]}],  # the list key was renamed
            [{"data": {"g1-gpu-rtx6000-1": body()["data"][2]}}],
            [no_price],
            [no_id],
            [cpu_only],
            [{"data": ["g1-gpu-rtx6000-1"]}],
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        text_price = body()
        text_price["data"][2]["price"]["hourly"] = "1.50"
        no_gpus = body()
        del no_gpus["data"][3]["gpus"]
        return [
            [text_price],
            [no_gpus],
        ]

    def test_gpu_plans_only(self, offers: list[ScrapedOffer]) -> None:
        assert sorted(o.sku for o in offers) == [f"g1-gpu-rtx6000-{n}" for n in (1, 2, 3, 4)]
        assert all(o.region == "" and o.kind == "on_demand" and o.currency == "USD" for o in offers)

    def test_rtx6000_values(self, offers: list[ScrapedOffer]) -> None:
        one = by_sku(offers)["g1-gpu-rtx6000-1"]
        assert (one.gpu_raw, one.gpu_count, one.price_per_hour) == ("NVIDIA Quadro RTX 6000", 1, 1.5)
        assert (one.vcpus, one.ram_gb, one.gpu_memory_gb) == (8, 32, None)
        assert one.extra["label"] == "Dedicated 32GB + RTX6000 GPU x1" and one.extra["monthly_price"] == 1000.0
        four = by_sku(offers)["g1-gpu-rtx6000-4"]
        assert (four.gpu_count, four.price_per_hour, four.vcpus, four.ram_gb) == (4, 6.0, 24, 128)
        assert four.price_per_gpu_hour == 1.5

    def test_region_prices_add_one_offer_per_region(self) -> None:
        # Handmade edit: the recording has no region_prices; 1.8 below is an invented value for the test.
        page = copy.deepcopy(body())
        page["data"][2]["region_prices"] = [{"id": "id-cgk", "hourly": 1.8, "monthly": 1200.0}]
        offers = [o for o in LinodeScraper(env={}).parse([page]) if o.sku == "g1-gpu-rtx6000-1"]
        assert sorted((o.region, o.price_per_hour) for o in offers) == [("", 1.5), ("id-cgk", 1.8)]
        assert next(o for o in offers if o.region == "id-cgk").extra["monthly_price"] == 1200.0

    @pytest.mark.parametrize(
        ("plan_id", "name"),
        [
            ("g1-gpu-rtx6000-1", "NVIDIA Quadro RTX 6000"),
            ("g1-gpu-rtx6000-4", "NVIDIA Quadro RTX 6000"),
            ("g2-gpu-rtx4000a1-s", "NVIDIA RTX 4000 Ada"),
            ("g2-gpu-rtx4000a2-hs", "NVIDIA RTX 4000 Ada"),
            ("g2-gpu-rtx4000a4-m", "NVIDIA RTX 4000 Ada"),
            ("g3-gpu-rtxpro6000-blackwell-1", "rtxpro6000"),  # not in the table: kept raw, not guessed
        ],
    )
    def test_gpu_name_from_the_plan_id(self, plan_id: str, name: str) -> None:
        assert gpu_name(plan_id) == name


class TestFetch:
    def test_requests_walk_every_page(self) -> None:
        data = body()["data"]
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            page = int(request.url.params["page"])
            chunk = data[(page - 1) * 4 : page * 4]
            return httpx.Response(200, json={"data": chunk, "page": page, "pages": 2, "results": len(data)})

        scraper = LinodeScraper(env={})
        fetched = run_fetch(scraper, httpx.MockTransport(handler))
        assert [(r.method, str(r.url.copy_with(query=None)), dict(r.url.params)) for r in seen] == [
            ("GET", TYPES_URL, {"page": "1", "page_size": "500"}),
            ("GET", TYPES_URL, {"page": "2", "page_size": "500"}),
        ]
        assert TYPES_URL == "https://api.linode.com/v4/linode/types"
        assert all("authorization" not in r.headers and r.content == b"" for r in seen)
        assert len(fetched) == 2
        assert sorted(o.sku for o in scraper.parse(fetched)) == [f"g1-gpu-rtx6000-{n}" for n in (1, 2, 3, 4)]

    def test_a_page_count_beyond_the_bound_is_an_error_before_more_requests(self) -> None:
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(200, json={"data": [], "page": int(request.url.params["page"]), "pages": 99})

        with pytest.raises(FetchError, match="linode: linode/types says it has 99 pages, more than the 10 allowed"):
            run_fetch(LinodeScraper(env={}), httpx.MockTransport(handler))
        assert len(seen) == 1

    def test_no_credentials_needed(self) -> None:
        LinodeScraper(env={}).check_credentials()
        assert LinodeScraper.credentials == () and LinodeScraper.optional_credentials == ()
