"""Vast.ai: bundles search parse (the 2026 REFERENCE replay recording, real CLI recordings), the
live request shape, and the collection of a clamped search in parts."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, PartialOffers, ScrapedOffer
from scrapers.vastai import (
    BUNDLES_URL,
    KNOWN_CAPS,
    VastaiScraper,
    clamped,
    split_geolocation,
)
from tests.conftest import load_json
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    replayed_payload,
    run_fetch,
)
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


def by_id(offers: list[ScrapedOffer], sku: int, kind: str = "on_demand") -> ScrapedOffer:
    return by(offers, str(sku), kind)


class TestVastai(ProviderContract):
    """The contract on the bundled replay recording: REFERENCE answers (our own values) in the 2026
    per-chip shape, the unfiltered search clamped to 64 offers, so fetch collects per GPU name."""

    scraper_cls = VastaiScraper
    named_offer = NamedOffer("A100 SXM4", 8, "on_demand", "Oregon, US", 9.6576)
    handmade = True  # a reference fixture (the real shape, our own values), not a real recording
    min_offers = 160  # 84 offers, each on_demand + spot

    def load_raw(self) -> Any:
        return copy.deepcopy(replayed_payload("vastai"))

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

    def test_the_replay_asks_per_gpu_name_after_the_clamped_search(self) -> None:
        searches = [(s["search"], s["count"]) for s in self.load_raw()["searches"]]
        assert searches == [
            ("all", 64),
            ("gpu_name=A100 SXM4", 6), ("gpu_name=H100 SXM", 9), ("gpu_name=H200", 4),
            ("gpu_name=RTX 3090", 17), ("gpu_name=RTX 4090", 31), ("gpu_name=RTX 5090", 14),
            ("other GPUs", 3),
        ]

    def test_the_whole_market_is_collected_and_not_partial(self, offers: list[ScrapedOffer]) -> None:
        assert not isinstance(offers, PartialOffers)
        on_demand = [o for o in offers if o.kind == "on_demand"]
        assert len(on_demand) == 84 and len({o.sku for o in on_demand}) == 84
        counts = {name: len([o for o in on_demand if o.gpu_raw == name]) for name in {o.gpu_raw for o in on_demand}}
        assert counts == {"RTX 4090": 31, "RTX 5090": 14, "RTX 3090": 17, "H100 SXM": 9, "A100 SXM4": 6, "H200": 4,
                          "RTX A6000": 2, "B200": 1}

    def test_h100_offer_values(self, offers: list[ScrapedOffer]) -> None:
        o = by_id(offers, 31130081)
        assert (o.gpu_raw, o.gpu_count, o.kind, o.price_per_hour) == ("H100 SXM", 8, "on_demand", 21.4249)
        assert (o.region, o.country, o.currency, o.available) == ("Victoria, AU", "AU", "USD", True)
        assert (o.gpu_memory_gb, o.vcpus, o.ram_gb) == (80.0, 16.0, 256.0)
        assert o.extra["verification"] == "unverified" and o.extra["datacenter"] is False
        assert o.extra["storage_per_hour"] == 0.00173611 and o.extra["dph_total"] == 21.42663611
        assert (o.extra["search"], o.extra["search_count"]) == ("gpu_name=H100 SXM", 9)
        assert by_id(offers, 31130081, "spot").price_per_hour == 11.553

    def test_an_offer_only_the_per_name_search_found(self, offers: list[ScrapedOffer]) -> None:
        o = by_id(offers, 31058217)  # not among the clamped search's 64
        assert (o.gpu_raw, o.gpu_count, o.price_per_hour, o.region, o.country) == ("RTX 4090", 1, 0.4019, "Oregon, US", "US")
        assert (o.extra["search"], o.extra["search_count"]) == ("gpu_name=RTX 4090", 31)

    def test_gpus_only_the_other_gpus_search_found(self, offers: list[ScrapedOffer]) -> None:
        b200 = by_id(offers, 31158348)
        assert (b200.gpu_raw, b200.gpu_count, b200.price_per_hour, b200.region) == ("B200", 1, 3.6167, "Ontario, CA")
        assert (b200.extra["search"], b200.extra["search_count"]) == ("other GPUs", 3)
        a6000 = by_id(offers, 31153690)
        assert (a6000.gpu_raw, a6000.gpu_count, a6000.price_per_hour, a6000.region, a6000.country) == ("RTX A6000", 4, 1.8033, "US", "US")


class TestCliRecordings:
    """The real 2024 and 2025 recordings (the CLI's bare list): the offer fields as they were."""

    @pytest.fixture
    def offers(self) -> list[ScrapedOffer]:
        return VastaiScraper(env={}).parse(load_json(TRIMMED))

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
    assert "gpu_name" not in body
    assert body["type"] == "on-demand"
    assert body["limit"] >= 10000
    assert [(s["search"], s["count"]) for s in raw["searches"]] == [("all", 4)]  # honoured: one search
    offers = VastaiScraper(env={}).parse(raw)
    assert len(offers) == 8 and not isinstance(offers, PartialOffers)
    assert {(o.extra["search"], o.extra["search_count"]) for o in offers} == {("all", 4)}


def _offer(template: dict[str, Any], oid: int, gpu_name: str) -> dict[str, Any]:
    return {**template, "id": oid, "gpu_name": gpu_name}


class CappedMarket:
    """A fake bundles search over a market of ``sizes`` offers per GPU name that answers at most
    ``cap`` offers to any search, whatever limit is asked (the clamp a 2026 keyless client saw)."""

    def __init__(self, sizes: dict[str, int], cap: int = 64) -> None:
        template = load_json(SMALL)[0]
        self.market = [_offer(template, 1000 * i + k, name) for i, (name, n) in enumerate(sizes.items(), 1) for k in range(n)]
        self.cap = cap
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        wanted = body.get("gpu_name") or {}
        found = [o for o in self.market
                 if ("eq" not in wanted or o["gpu_name"] == wanted["eq"]) and o["gpu_name"] not in wanted.get("notin", [])]
        return httpx.Response(200, json={"offers": found[: min(self.cap, body["limit"])]})


def test_a_search_clamped_to_64_is_collected_per_gpu_name() -> None:
    """One search answered the first 64 of 121 offers and was taken for the whole market."""
    market = CappedMarket({"RTX 4090": 40, "H100 SXM": 30, "A100 SXM4": 20, "L40S": 31})
    raw = run_fetch(VastaiScraper(env={}), httpx.MockTransport(market.handler))
    assert [(s["search"], s["count"]) for s in raw["searches"]] == [
        ("all", 64), ("gpu_name=H100 SXM", 30), ("gpu_name=RTX 4090", 40), ("other GPUs", 51),
    ]
    assert market.bodies[1]["gpu_name"] == {"eq": "H100 SXM"}
    assert market.bodies[3]["gpu_name"] == {"notin": ["H100 SXM", "RTX 4090"]}
    offers = VastaiScraper(env={}).parse(raw)
    assert not isinstance(offers, PartialOffers)
    on_demand = [o for o in offers if o.kind == "on_demand"]
    assert len(on_demand) == 121
    assert {o.gpu_raw: 0 for o in on_demand}.keys() == {"RTX 4090", "H100 SXM", "A100 SXM4", "L40S"}
    l40s = by(offers, "4000")
    assert (l40s.gpu_raw, l40s.extra["search"], l40s.extra["search_count"]) == ("L40S", "other GPUs", 51)


def test_a_clamped_other_gpus_search_gets_its_new_names_searched() -> None:
    market = CappedMarket({"RTX 4090": 64, "A100 SXM4": 50, "L40S": 20})
    raw = run_fetch(VastaiScraper(env={}), httpx.MockTransport(market.handler))
    assert [(s["search"], s["count"]) for s in raw["searches"]] == [
        ("all", 64), ("gpu_name=RTX 4090", 64), ("other GPUs", 64),
        ("gpu_name=A100 SXM4", 50), ("gpu_name=L40S", 20), ("other GPUs", 0),
    ]
    offers = VastaiScraper(env={}).parse(raw)
    assert isinstance(offers, PartialOffers)  # RTX 4090 alone answered the cap: it may have more
    assert offers.reason == ("vastai: 1 search(es) answered a known cap or their limit, or failed, so more offers may exist: "
                             "gpu_name=RTX 4090 (64 offers)")
    assert len([o for o in offers if o.kind == "on_demand"]) == 134


def test_every_search_answering_64_is_a_partial_collection_naming_them() -> None:
    """A fake that answers 64 offers to every search: no part can be told complete."""
    market = CappedMarket({"RTX 4090": 100, "H100 SXM": 100, "L4": 100})
    market.market.sort(key=lambda o: o["id"] % 1000)  # the first 64 mix every GPU name
    raw = run_fetch(VastaiScraper(env={}), httpx.MockTransport(market.handler))
    assert [s["count"] for s in raw["searches"]] == [64, 64, 64, 64, 0]
    offers = VastaiScraper(env={}).parse(raw)
    assert isinstance(offers, PartialOffers)
    assert offers.reason.startswith("vastai: 3 search(es) answered a known cap or their limit")

    for name in ("gpu_name=H100 SXM (64 offers)", "gpu_name=L4 (64 offers)", "gpu_name=RTX 4090 (64 offers)"):
        assert name in offers.reason
    assert len([o for o in offers if o.kind == "on_demand"]) == 192


def test_a_per_name_search_that_fails_leaves_its_part_unknown_not_the_run() -> None:
    market = CappedMarket({"RTX 4090": 40, "H100 SXM": 30, "L40S": 31})

    def handler(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content).get("gpu_name") == {"eq": "H100 SXM"}:
            return httpx.Response(429, headers={"Retry-After": "0"})
        return market.handler(request)

    raw = run_fetch(VastaiScraper(env={}), httpx.MockTransport(handler))
    failed = [s for s in raw["searches"] if "error" in s]
    assert [s["search"] for s in failed] == ["gpu_name=H100 SXM"] and "HTTP 429" in failed[0]["error"]
    offers = VastaiScraper(env={}).parse(raw)
    assert isinstance(offers, PartialOffers) and "gpu_name=H100 SXM (failed: " in offers.reason
    assert {o.gpu_raw for o in offers} == {"RTX 4090", "H100 SXM", "L40S"}  # the clamped search's H100s are still seen


def test_the_first_search_failing_fails_the_run() -> None:
    from scrapers.base import FetchError

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503)

    with pytest.raises(FetchError, match="vastai: POST https://console.vast.ai/api/v0/bundles/ -> HTTP 503"):
        run_fetch(VastaiScraper(env={}), httpx.MockTransport(handler))


def test_one_recorded_answer_of_a_known_cap_is_partial() -> None:
    template = load_json(SMALL)[0]
    answer = {"offers": [_offer(template, i, "RTX 4090") for i in range(64)]}
    offers = VastaiScraper(env={}).parse(answer)
    assert isinstance(offers, PartialOffers) and "all (64 offers)" in offers.reason
    assert not isinstance(VastaiScraper(env={}).parse({"offers": answer["offers"][:63]}), PartialOffers)


@pytest.mark.parametrize(("count", "limit", "expected"), [(64, 65535, True), (63, 65535, False), (65, 65535, False),
                                                          (100, 100, True), (64, None, True), (1396, None, False)])
def test_clamped(count: int, limit: int | None, expected: bool) -> None:
    assert 64 in KNOWN_CAPS
    assert clamped(count, limit) is expected


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
