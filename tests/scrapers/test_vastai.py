"""Vast.ai: bundles search parse (real CLI recordings) and the live request shape."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.vastai import BUNDLES_URL, VastaiScraper, split_geolocation
from tests.conftest import load_json
from tests.scrapers.contract import ProviderContract, run_fetch
from tests.scrapers.requests_helpers import (
    assert_only_optional_credential,
    assert_optional_key_sent_as_bearer,
    json_fetch,
)

# Real: vast-ai/vast-cli search.json @ 11ecdfa9 (2024-11-05), first 2 offers of each gpu_name
# plus a few picked records; each record byte-identical to the original.
TRIMMED = "vastai/vast_search_offers_raw_2024-11-05_trimmed.json"
# Real, exact copy: vast-ai/vast-cli search.json @ 4fb59669 (2025-01-17), 4 offers.
SMALL = "vastai/vast_search_offers_raw_2025-01-17.json"


def by(offers: list[ScrapedOffer], sku: str, kind: str = "on_demand") -> ScrapedOffer:
    [match] = [o for o in offers if o.sku == sku and o.kind == kind]
    return match


class TestVastai(ProviderContract):
    scraper_cls = VastaiScraper
    min_offers = 8  # the bundled recording: 4 offers, each on_demand + spot

    def load_raw(self) -> Any:
        return load_json(TRIMMED)

    def broken_payloads(self) -> list[Any]:
        good = load_json(SMALL)[0]
        no_gpu = {k: v for k, v in good.items() if k != "gpu_name"}
        no_count = {k: v for k, v in good.items() if k != "num_gpus"}
        return [
            {},
            {"offers": []},
            [],
            {"offers": {"1": good}},
            "<html>maintenance</html>",
            {"offers": [no_gpu]},
            [no_count],
            [1, 2],
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        good = load_json(SMALL)[0]
        no_price = {k: v for k, v in good.items() if k != "dph_base"}
        return [
            [no_price],
        ]

    def test_single_gpu_offer_values(self, offers: list[ScrapedOffer]) -> None:
        o = by(offers, "13489095")
        assert (o.gpu_raw, o.gpu_count, o.kind) == ("RTX 4090", 1, "on_demand")
        assert o.price_per_hour == pytest.approx(0.16666666666666666)
        assert (o.region, o.country, o.currency) == ("South Korea, KR", "KR", "USD")
        assert o.gpu_memory_gb == pytest.approx(24564 / 1024, abs=0.01)
        assert o.vcpus == 12.0
        assert o.ram_gb == pytest.approx(32069 / 1024, abs=0.01)
        assert o.available is True
        assert o.gpu is None
        assert o.extra["verification"] == "unverified" and o.extra["verified"] is False
        assert o.extra["reliability"] == pytest.approx(0.9985116)
        assert o.extra["machine_id"] and o.extra["host_id"]

    def test_spot_is_the_bid_floor_of_the_same_offer(self, offers: list[ScrapedOffer]) -> None:
        spot = by(offers, "13489095", "spot")
        assert spot.price_per_hour == pytest.approx(0.16)
        assert (spot.gpu_raw, spot.gpu_count, spot.region) == ("RTX 4090", 1, "South Korea, KR")
        # a floor above the on-demand price is passed on as listed; validation judges it
        odd = by(offers, "11471774", "spot")
        assert odd.price_per_hour == pytest.approx(29.333333)
        assert by(offers, "11471774").price_per_hour == pytest.approx(0.28)

    def test_multi_gpu_offer_is_priced_whole(self, offers: list[ScrapedOffer]) -> None:
        o = by(offers, "13511053")
        assert (o.gpu_raw, o.gpu_count) == ("A100 SXM4", 8)
        assert o.price_per_hour == pytest.approx(11.2)
        assert o.price_per_gpu_hour == pytest.approx(1.4)
        assert (o.region, o.country) == ("Washington, US", "US")
        assert o.gpu_memory_gb == 80.0
        assert o.extra["verification"] == "verified" and o.extra["verified"] is True

    def test_price_excludes_storage(self, offers: list[ScrapedOffer]) -> None:
        raw = {r["id"]: r for r in load_json(TRIMMED)}
        for o in offers:
            r = raw[int(o.sku)]
            if o.kind == "on_demand":
                assert o.price_per_hour == r["dph_base"]
                assert o.price_per_hour < r["dph_total"]
                assert o.extra["storage_per_hour"] == r["storage_total_cost"]
                assert o.extra["storage_per_gb_month"] == r["storage_cost"]

    def test_every_offer_has_on_demand_and_spot(self, offers: list[ScrapedOffer]) -> None:
        raw = load_json(TRIMMED)
        assert len([o for o in offers if o.kind == "on_demand"]) == len(raw) == 116
        assert len([o for o in offers if o.kind == "spot"]) == len(raw)  # every recorded min_bid > 0

    def test_datacenter_flag_and_geolocation_without_state(self, offers: list[ScrapedOffer]) -> None:
        flags = {o.extra["datacenter"] for o in offers}
        assert flags == {True, False}
        no_state = [o for o in offers if o.region == "US"]
        assert no_state and all(o.country == "US" for o in no_state)

    def test_api_envelope_and_cli_list_parse_alike(self) -> None:
        cli = load_json(SMALL)
        scraper = VastaiScraper(env={})
        assert scraper.parse({"offers": cli}) == scraper.parse(cli)
        offers = scraper.parse(cli)
        assert sorted(o.gpu_count for o in offers if o.kind == "on_demand") == [1, 2, 4, 6]
        six = by(offers, "16014636")
        assert (six.price_per_hour, six.region, six.country) == (2.4, "Alberta, CA", "CA")

    def test_zero_or_missing_min_bid_gives_no_spot(self) -> None:
        first = load_json(SMALL)[0]
        offers = VastaiScraper(env={}).parse([{**first, "min_bid": None}, {**first, "id": 2, "min_bid": 0}])
        assert [o.kind for o in offers] == ["on_demand", "on_demand"]

    def test_duplicate_ids_are_one_offer(self) -> None:
        first = load_json(SMALL)[0]
        offers = VastaiScraper(env={}).parse([first, first])
        assert len(offers) == 2  # one on_demand + one spot


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alberta, CA", ("Alberta, CA", "CA")),
        (", US", ("US", "US")),
        ("Sweden, SE", ("Sweden, SE", "SE")),
        ("Somewhere", ("Somewhere", None)),
        (None, ("", None)),
    ],
)
def test_split_geolocation(text: Any, expected: tuple[str, str | None]) -> None:
    assert split_geolocation(text) == expected


def test_fetch_posts_the_search_query_anonymously() -> None:
    raw, [request] = json_fetch(VastaiScraper(env={}), {"offers": load_json(SMALL)})
    assert request.method == "POST"
    assert str(request.url) == BUNDLES_URL
    assert "authorization" not in request.headers
    body = json.loads(request.content)
    assert body["rentable"] == {"eq": True}
    assert body["rented"] == {"eq": False}
    assert "verified" not in body  # verified=any: no verification filter
    assert body["type"] == "on-demand"
    assert body["limit"] >= 10000
    assert len(VastaiScraper(env={}).parse(raw)) == 8


def test_fetch_sends_the_optional_key_as_bearer() -> None:
    assert_optional_key_sent_as_bearer(VastaiScraper, "VAST_API_KEY", "vk-123", {"offers": load_json(SMALL)})


def test_needs_no_credentials() -> None:
    assert_only_optional_credential(VastaiScraper, "VAST_API_KEY")


def test_http_error_is_a_fetch_error_without_the_key() -> None:
    from scrapers.base import FetchError

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": "bad key"})

    with pytest.raises(FetchError) as info:
        run_fetch(VastaiScraper(env={"VAST_API_KEY": "vk-secret"}), httpx.MockTransport(handler))
    assert "vk-secret" not in str(info.value)


def test_an_unreadable_gpu_count_leaves_that_offer_for_quarantine_naming_the_field() -> None:
    good, other = load_json(SMALL)[:2]
    offers = VastaiScraper(env={}).parse([{**good, "num_gpus": "two"}, other])
    bad = {o.kind: o.extra.get(UNREADABLE_PRICE) for o in offers if o.sku == str(good["id"])}
    assert set(bad.values()) == {"GPU count field offers[0].num_gpus holds 'two', not a number"}
    assert all(UNREADABLE_PRICE not in o.extra for o in offers if o.sku == str(other["id"]))


@pytest.mark.parametrize("missing", [None, "", True, 1.5, {"id": 1}])
def test_an_offer_without_an_id_is_named_by_its_place_gpus_machine_and_host(missing: Any) -> None:
    offers = load_json(SMALL)
    bad = {**offers[1], "id": missing}
    if missing is None:
        bad.pop("id")
    with pytest.raises(ParseError) as info:
        VastaiScraper(env={}).parse([offers[0], bad])
    message = str(info.value)
    assert message.startswith("vastai: offers[1] (")
    for fact in (f"{bad['num_gpus']}x {bad['gpu_name']}", f"machine_id {bad['machine_id']}", f"host_id {bad['host_id']}"):
        assert fact in message
    assert message.endswith(f"has no usable 'id', got {missing!r}")
