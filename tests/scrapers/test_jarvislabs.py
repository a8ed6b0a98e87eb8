"""JarvisLabs ``/misc/server_meta`` scraper.

HANDMADE fixture (see tests/fixtures/jarvislabs/README.md): gpuhunt's ``SERVER_META_RESPONSE``
test literal. The values are plausible, not recorded prices.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, MissingCredentials, ScrapedOffer
from scrapers.jarvislabs import SERVER_META_URL, JarvislabsScraper
from tests.conftest import load_recording_json
from tests.scrapers.contract import ProviderContract, index_offers, run_fetch
from tests.scrapers.requests_helpers import json_fetch

SAMPLE = "jarvislabs/server_meta_handmade.json"  # the replay recording: the one copy
TOKEN = "jl-token-do-not-leak"


def raw_payload() -> dict[str, Any]:
    return load_recording_json(SAMPLE)


class TestJarvislabs(ProviderContract):
    scraper_cls = JarvislabsScraper
    handmade = True  # gpuhunt test literal, not a live recording
    min_offers = 8

    def load_raw(self) -> Any:
        return raw_payload()

    def broken_payloads(self) -> list[Any]:
        sample = load_recording_json(SAMPLE)
        no_type = copy.deepcopy(sample)
        del no_type["server_meta"][0]["gpu_type"]
        no_region = copy.deepcopy(sample)
        del no_region["server_meta"][2]["region"]
        return [
            {},
            {"cpu_meta": sample["cpu_meta"]},
            {"server_meta": {"rows": sample["server_meta"]}},
            {"server_meta": []},
            no_type,
            no_region,
            "<html>502 Bad Gateway</html>",
        ]

    def test_a100_on_demand_and_spot(self, offers: list[ScrapedOffer]) -> None:
        keys = index_offers(offers)
        o = keys[("A100-80GB/vm", "india-noida-01", "on_demand")]
        assert (o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.vcpus, o.ram_gb) == ("A100-80GB", 1, 80, 28, 112)
        assert (o.price_per_hour, o.currency, o.country, o.available) == (1.49, "USD", "IN", True)
        assert o.extra["max_gpus"] == 4 and o.extra["workload_type"] == "vm"
        s = keys[("A100-80GB/vm", "india-noida-01", "spot")]
        assert (s.price_per_hour, s.available) == (0.89, True)

    def test_workload_types_are_separate_skus(self, offers: list[ScrapedOffer]) -> None:
        keys = index_offers(offers)
        assert keys[("L4/container", "india-noida-01", "on_demand")].price_per_hour == 0.44
        assert keys[("L4/vm", "india-noida-01", "spot")].price_per_hour == 0.29

    def test_null_spot_price_means_no_spot_offer(self, offers: list[ScrapedOffer]) -> None:
        keys = index_offers(offers)
        h100 = keys[("H100", "europe-01", "on_demand")]  # workload_type null: bare GPU type
        assert (h100.price_per_hour, h100.country, h100.gpu_memory_gb) == (2.99, None, 80)
        assert ("H100", "europe-01", "spot") not in keys
        assert ("RTX PRO 6000/vm", "india-noida-01", "spot") not in keys
        assert keys[("RTX-PRO6000/vm", "india-chennai-01", "spot")].price_per_hour == 1.19
        assert len(offers) == 11

    def test_a_row_listed_twice_counts_once(self) -> None:
        sample = load_recording_json(SAMPLE)
        offers = JarvislabsScraper(env={}).parse({"server_meta": sample["server_meta"] * 2})
        assert len(offers) == 11

    def test_one_answer_holds_every_region(self, offers: list[ScrapedOffer]) -> None:
        assert {o.region for o in offers} == {"india-noida-01", "india-chennai-01", "europe-01", "unknown-region"}

    def test_no_free_devices_is_unavailable(self) -> None:
        sample = load_recording_json(SAMPLE)
        sample["server_meta"][2]["effective_num_free_devices"] = 0
        sample["server_meta"][2]["spot_num_free_devices"] = 0
        keys = index_offers(JarvislabsScraper(env={}).parse(sample))
        assert keys[("A100-80GB/vm", "india-noida-01", "on_demand")].available is False
        assert keys[("A100-80GB/vm", "india-noida-01", "spot")].available is False


def test_fetch_asks_one_host_with_the_token() -> None:
    raw, calls = json_fetch(JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}), load_recording_json(SAMPLE))
    assert [(r.method, str(r.url)) for r in calls] == [("GET", "https://backendn.jarvislabs.net/misc/server_meta")]
    assert str(calls[0].url) == SERVER_META_URL
    assert calls[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert len(JarvislabsScraper(env={}).parse(raw)) == 11


def test_other_regional_hosts_being_down_does_not_matter() -> None:
    """The four regional hosts were each asked and each had to answer; one host is asked now."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host != "backendn.jarvislabs.net":
            return httpx.Response(503, text="down")
        return httpx.Response(200, json=load_recording_json(SAMPLE))

    offers = JarvislabsScraper(env={}).parse(run_fetch(JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}), httpx.MockTransport(handler)))
    assert len(offers) == 11


def test_a_failing_host_fails_the_run_without_leaking_the_token() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, text=f"bad token {TOKEN}")

    with pytest.raises(FetchError, match=r"jarvislabs: GET https://backendn.jarvislabs.net/misc/server_meta -> HTTP 401") as info:
        run_fetch(JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}), httpx.MockTransport(handler))
    assert TOKEN not in str(info.value)


def test_missing_credentials() -> None:
    with pytest.raises(MissingCredentials, match="set JARVISLABS_TOKEN to enable"):
        JarvislabsScraper(env={}).check_credentials()
    JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}).check_credentials()
