"""JarvisLabs: the pricing page without a key, ``/misc/server_meta`` with one.

The page fixture is the replay recording, a REFERENCE (our own values in the columns a public
2026 collector reads); the API fixture is HANDMADE (gpuhunt's ``SERVER_META_RESPONSE`` test
literal, plausible values): see tests/fixtures/jarvislabs/README.md.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, ParseError, ScrapedOffer
from scrapers.jarvislabs import PRICING_URL, SERVER_META_URL, JarvislabsScraper
from tests.conftest import load_json, load_recording_text
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)
from tests.scrapers.requests_helpers import json_fetch

PAGE = "jarvislabs/pricing_reference.html"  # the replay recording: the one copy
SAMPLE = "jarvislabs/server_meta_handmade.json"  # the keyed API's answer (handmade)
TOKEN = "jl-token-do-not-leak"


def page() -> str:
    return load_recording_text(PAGE)


def api_payload() -> dict[str, Any]:
    return load_json(SAMPLE)


class TestJarvislabs(ProviderContract):
    scraper_cls = JarvislabsScraper
    named_offer = NamedOffer("H200 SXM", 1, "on_demand", "", 3.41)
    handmade = True  # a reference fixture: the page's columns, our own values
    min_offers = 6

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            page().replace("<th>$/hour</th>", "<th>Hourly</th>"),  # the price column renamed
            page().replace("<th>VRAM</th>", "<th>Memory</th>"),
            page().replace("$", "ask "),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("<td>$0.91</td>", "<td>n/a?</td>")]

    def test_h100_per_gpu_hour_from_the_page(self, offers: list[ScrapedOffer]) -> None:
        h100 = {o.sku: o for o in offers}["h100-sxm-80gb"]
        assert (h100.gpu_raw, h100.gpu_count, h100.gpu_memory_gb, h100.vcpus, h100.ram_gb) == ("H100 SXM", 1, 80, 16, 200)
        assert (h100.kind, h100.region, h100.price_per_hour, h100.currency) == ("on_demand", "", 2.57, "USD")
        assert h100.extra["per_gpu"] and h100.extra["generation"] == "Hopper"

    def test_two_memory_sizes_of_one_gpu_are_two_offers(self, offers: list[ScrapedOffer]) -> None:
        by_sku = {o.sku: o.price_per_hour for o in offers}
        assert (by_sku["a100-80gb"], by_sku["a100-40gb"]) == (1.33, 1.17)
        assert len(offers) == 6  # the storage table is no GPU table

    def test_a_row_printed_twice_counts_once_and_two_prices_are_a_changed_layout(self) -> None:
        row = "<tr><td>L4</td><td>Ada Lovelace</td><td>24 GB</td><td>48 GB</td><td>8</td><td>$0.39</td></tr>"
        twice = page().replace(row, row * 2)
        assert len(JarvislabsScraper(env={}).parse(twice)) == 6
        with pytest.raises(ParseError, match="jarvislabs: layout changed: two different prices"):
            JarvislabsScraper(env={}).parse(page().replace(row, row + row.replace("$0.39", "$0.45")))


def test_without_a_key_the_page_is_read_once_after_robots() -> None:
    raw = assert_fetches_page_once(JarvislabsScraper(env={}), PRICING_URL, page())
    assert JarvislabsScraper(env={}).parse(raw)[0].sku == "h200-sxm-141gb"


def test_robots_refusing_the_page_skips_the_keyless_run() -> None:
    assert_refused_by_robots(JarvislabsScraper(env={}), PRICING_URL, page(), "User-agent: *\nDisallow: /pricing\n")


def test_a_fresh_install_needs_no_key_and_a_replay_reads_the_page() -> None:
    assert JarvislabsScraper.credentials == () and JarvislabsScraper.optional_credentials == ("JARVISLABS_TOKEN",)
    JarvislabsScraper(env={}).check_credentials()
    assert not JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}, replay=True).keyed()
    assert JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}).keyed()


class TestJarvislabsApi:
    """The keyed path: ``server_meta`` rows of every region, on demand and spot."""

    @pytest.fixture
    def offers(self) -> list[ScrapedOffer]:
        return JarvislabsScraper(env={}).parse(api_payload())

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
        sample = api_payload()
        offers = JarvislabsScraper(env={}).parse({"server_meta": sample["server_meta"] * 2})
        assert len(offers) == 11

    def test_one_answer_holds_every_region(self, offers: list[ScrapedOffer]) -> None:
        assert {o.region for o in offers} == {"india-noida-01", "india-chennai-01", "europe-01", "unknown-region"}

    def test_a_changed_shape_raises_parse_error_naming_the_provider(self) -> None:
        sample = api_payload()
        no_type, no_region = copy.deepcopy(sample), copy.deepcopy(sample)
        del no_type["server_meta"][0]["gpu_type"]
        del no_region["server_meta"][2]["region"]
        for broken in ({}, {"cpu_meta": sample["cpu_meta"]}, {"server_meta": {"rows": sample["server_meta"]}},
                       {"server_meta": []}, no_type, no_region):
            with pytest.raises(ParseError, match="jarvislabs"):
                JarvislabsScraper(env={}).parse(broken)

    def test_no_free_devices_is_unavailable(self) -> None:
        sample = api_payload()
        sample["server_meta"][2]["effective_num_free_devices"] = 0
        sample["server_meta"][2]["spot_num_free_devices"] = 0
        keys = index_offers(JarvislabsScraper(env={}).parse(sample))
        assert keys[("A100-80GB/vm", "india-noida-01", "on_demand")].available is False
        assert keys[("A100-80GB/vm", "india-noida-01", "spot")].available is False


def test_fetch_asks_one_host_with_the_token() -> None:
    raw, calls = json_fetch(JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}), api_payload())
    assert [(r.method, str(r.url)) for r in calls] == [("GET", "https://backendn.jarvislabs.net/misc/server_meta")]
    assert str(calls[0].url) == SERVER_META_URL
    assert calls[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert len(JarvislabsScraper(env={}).parse(raw)) == 11


def test_other_regional_hosts_being_down_does_not_matter() -> None:
    """The four regional hosts were each asked and each had to answer; one host is asked now."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host != "backendn.jarvislabs.net":
            return httpx.Response(503, text="down")
        return httpx.Response(200, json=api_payload())

    offers = JarvislabsScraper(env={}).parse(run_fetch(JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}), httpx.MockTransport(handler)))
    assert len(offers) == 11


def test_a_failing_host_fails_the_run_without_leaking_the_token() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, text=f"bad token {TOKEN}")

    with pytest.raises(FetchError, match=r"jarvislabs: GET https://backendn.jarvislabs.net/misc/server_meta -> HTTP 401") as info:
        run_fetch(JarvislabsScraper(env={"JARVISLABS_TOKEN": TOKEN}), httpx.MockTransport(handler))
    assert TOKEN not in str(info.value)
