"""DigitalOcean scraper. The sample is HANDMADE (gpuhunt test literal, see tests/fixtures/digitalocean/README.md)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, MissingCredentials
from scrapers.digitalocean import SIZES_URL, DigitaloceanScraper
from tests.conftest import load_json
from tests.scrapers.contract import ProviderContract, run_fetch

SIZES = "digitalocean/digitalocean_v2_sizes_handmade.json"
TOKEN = "dop_v1_test_token"


def sizes() -> list[dict[str, Any]]:
    return load_json(SIZES)["sizes"]


class TestDigitalocean(ProviderContract):
    scraper_cls = DigitaloceanScraper
    handmade = True  # the only DigitalOcean sample is a handmade test literal
    min_offers = 2

    def load_raw(self) -> Any:
        return [load_json(SIZES)]

    def broken_payloads(self) -> list[Any]:
        no_price = copy.deepcopy(sizes())
        for s in no_price:
            s.pop("price_hourly")
        no_model = copy.deepcopy(sizes())
        no_model[1]["gpu_info"].pop("model")
        no_regions = copy.deepcopy(sizes())
        no_regions[1].pop("regions")
        return [
            {},
            [],
            [{"sizes": []}],
            [{"droplet_sizes": sizes()}],
            [{"sizes": no_price}],
            [{"sizes": no_model}],
            [{"sizes": no_regions}],
            [{"sizes": sizes()[:1]}],  # CPU sizes only: no GPU offer at all
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        text_price = copy.deepcopy(sizes())
        text_price[1]["price_hourly"] = "23.92"
        return [
            [{"sizes": text_price}],
        ]

    def test_h100x8(self, offers: list[Any]) -> None:
        h100 = next(o for o in offers if o.sku == "gpu-h100x8-640gb")
        assert h100.gpu_raw == "nvidia_h100"
        assert h100.gpu_count == 8
        assert h100.gpu_memory_gb == 80  # vram 640 GiB is for the 8 GPUs together
        assert h100.price_per_hour == 23.92
        assert h100.region == "nyc1" and h100.kind == "on_demand" and h100.currency == "USD"
        assert h100.vcpus == 160 and h100.ram_gb == 1920
        assert h100.available is True
        assert h100.extra["description"] == "H100 GPU - 8X"

    def test_mi300x8(self, offers: list[Any]) -> None:
        mi = next(o for o in offers if o.sku == "gpu-mi300x8-1536gb")
        assert (mi.gpu_raw, mi.gpu_count, mi.gpu_memory_gb, mi.price_per_hour) == ("amd_mi300x", 8, 192, 15.92)

    def test_cpu_sizes_are_not_offers(self, offers: list[Any]) -> None:
        assert {o.sku for o in offers} == {"gpu-h100x8-640gb", "gpu-mi300x8-1536gb"}


class TestSizeShapes:
    def test_one_offer_per_region_and_none_without_regions_or_price(self) -> None:
        data = sizes()
        data[1]["regions"] = ["nyc1", "tor1", "nyc1"]
        data[2]["regions"] = []
        offers = DigitaloceanScraper(env={}).parse([{"sizes": data}])
        assert sorted(o.region for o in offers) == ["nyc1", "tor1"]
        data[2]["regions"] = ["atl1"]
        data[2]["price_hourly"] = 0
        assert {o.sku for o in DigitaloceanScraper(env={}).parse([{"sizes": data}])} == {"gpu-h100x8-640gb"}

    def test_unavailable_size_is_kept_and_marked(self) -> None:
        data = sizes()
        data[1]["available"] = False
        h100 = next(o for o in DigitaloceanScraper(env={}).parse([{"sizes": data}]) if o.sku == "gpu-h100x8-640gb")
        assert h100.available is False


def _page(items: list[Any], next_url: str | None) -> dict[str, Any]:
    pages = {"next": next_url} if next_url else {}
    return {"sizes": items, "links": {"pages": pages}, "meta": {"total": 3}}


class TestFetch:
    def test_bearer_token_and_links_pages_next(self) -> None:
        data = sizes()
        next_url = "https://api.digitalocean.com/v2/sizes?page=2&per_page=200"
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            if request.url.params.get("page") == "2":
                return httpx.Response(200, json=_page(data[2:], None))
            return httpx.Response(200, json=_page(data[:2], next_url))

        scraper = DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN})
        fetched = run_fetch(scraper, httpx.MockTransport(handler))
        assert len(seen) == 2
        assert all(r.method == "GET" for r in seen)
        assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in seen)
        assert str(seen[0].url.copy_with(query=None)) == SIZES_URL
        assert dict(seen[0].url.params) == {"per_page": "200"}
        assert str(seen[1].url) == next_url
        assert {o.sku for o in scraper.parse(fetched)} == {"gpu-h100x8-640gb", "gpu-mi300x8-1536gb"}

    def test_the_token_never_appears_in_a_fetch_error(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(401, json={"id": "Unauthorized", "message": "Unable to authenticate you"})

        with pytest.raises(FetchError) as info:
            run_fetch(DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN}), httpx.MockTransport(handler))
        assert TOKEN not in str(info.value) and "401" in str(info.value)

    def test_a_repeated_next_link_is_an_error(self) -> None:
        url = "https://api.digitalocean.com/v2/sizes?page=2&per_page=200"

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=_page([], url))

        with pytest.raises(FetchError, match="digitalocean: .*same next page"):
            run_fetch(DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN}), httpx.MockTransport(handler))

    def test_a_next_link_to_another_host_or_scheme_is_refused_and_gets_no_token(self) -> None:
        for foreign in ("https://evil.example/v2/sizes?page=2", "http://api.digitalocean.com/v2/sizes?page=2"):
            seen: list[httpx.Request] = []

            def handler(request: httpx.Request, link: str = foreign, seen: list[httpx.Request] = seen) -> httpx.Response:
                seen.append(request)
                return httpx.Response(200, json=_page([], link))

            with pytest.raises(FetchError, match="digitalocean: refusing a next-page link .* it leaves https://api.digitalocean.com"):
                run_fetch(DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN}), httpx.MockTransport(handler))
            assert [r.url.host for r in seen] == ["api.digitalocean.com"]

    def test_missing_credentials(self) -> None:
        scraper = DigitaloceanScraper(env={})
        with pytest.raises(MissingCredentials, match="set DIGITALOCEAN_TOKEN to enable"):
            scraper.check_credentials()
        with pytest.raises(MissingCredentials):
            run_fetch(scraper, httpx.MockTransport(lambda r: httpx.Response(500)))

    def test_replay_walks_both_recorded_pages(self) -> None:
        from tracker.pipeline.replay import ReplayTransport

        transport = ReplayTransport.for_provider("digitalocean")
        fetched = run_fetch(DigitaloceanScraper(env={}, replay=True), transport)
        assert len(transport.requests) == 2 and len(fetched) == 2
        assert transport.requests[0].headers["authorization"] == "Bearer replay-no-secret"
