"""RunPod: GraphQL gpuTypes parse (real recordings and a labelled reference fixture) and both requests:
the anonymous query (no key, and the fallback when the keyed query meets a GraphQL error) and the keyed one."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, PartialOffers, ScrapedOffer
from scrapers.runpod import ANONYMOUS_QUERY, GPU_TYPES_QUERY, GRAPHQL_URL, RunpodScraper
from tests.conftest import load_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch
from tests.scrapers.requests_helpers import (
    assert_only_optional_credential,
    assert_optional_key_sent_as_bearer,
)

# Real, exact copy: Jumbo2020/gpu_prices gpu_prices.json @ 13a47f94 (2025-06-21), the bare
# gpuTypes list (envelope stripped by the recording script), 39 GPU types with every price field.
FULL = "runpod/runpod_graphql_gpuTypes_2025-06-21.json"
# Real-transcribed (MIT): ewyluda/gpu-price-index tests/fixtures/runpod.json, full {"data": ...}
# envelope of a 2026 keyless answer (no spot/term prices, no cloud flags), 48 GPU types. The bundled
# replay recording is this same file.
ENVELOPE_2026 = "runpod/runpod_graphql_gpuTypes_envelope_2026.json"
# REFERENCE (our own values): the structure of getcomputable/gpu-index's 2026 keyless answer
# (observatory/runpod/gputypes.json @ 5cf4f703: cloud flags, maxGpuCount, stock objects), no value copied.
ANONYMOUS_2026_REFERENCE = "runpod/runpod_graphql_gpuTypes_anonymous_2026_reference.json"
KEY = "rp-secret-key-123"

H100 = "NVIDIA H100 80GB HBM3"


def pick(offers: list[ScrapedOffer], sku: str, kind: str, term: int = 0) -> ScrapedOffer:
    [match] = [o for o in offers if o.sku == sku and o.kind == kind and o.term_months == term]
    return match


def kinds_of(offers: list[ScrapedOffer], gpu_id: str) -> set[tuple[str, str, int]]:
    return {(o.sku.rsplit(":", 1)[1], o.kind, o.term_months) for o in offers if o.gpu_raw == gpu_id}


class TestRunpod(ProviderContract):
    """The contract on the bundled replay recording: the real 2026 keyless answer."""

    scraper_cls = RunpodScraper
    named_offer = NamedOffer("AMD Instinct MI300X OAM", 1, "on_demand", "", 2.39)
    min_offers = 70

    def load_raw(self) -> Any:
        return load_json(ENVELOPE_2026)

    @pytest.fixture
    def full(self) -> list[ScrapedOffer]:
        """The 2025 keyed answer: every price field."""
        return RunpodScraper(env={}).parse(load_json(FULL))

    def test_the_2026_recording_values(self, offers: list[ScrapedOffer]) -> None:
        h100 = pick(offers, f"{H100}:secure", "on_demand")
        assert (h100.gpu_raw, h100.gpu_count, h100.price_per_hour, h100.gpu_memory_gb) == (H100, 1, 3.49, 80.0)
        assert (h100.region, h100.currency, h100.available) == ("", "USD", None)  # no stock object asked then
        assert pick(offers, f"{H100}:community", "community").price_per_hour == 2.69
        assert {o.kind for o in offers} == {"on_demand", "community"}
        assert (len([o for o in offers if o.kind == "on_demand"]), len([o for o in offers if o.kind == "community"])) == (35, 41)

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            {"data": {}},
            {"data": {"gpuTypes": []}},
            {"data": {"gpuTypes": {"id": "NVIDIA L4"}}},
            {"data": None, "errors": [{"message": 'Cannot query field "oneWeekPrice" on type "GpuType".'}]},
            [{"displayName": "L4", "securePrice": 0.43, "communityPrice": 0.44}],
            [{"id": "unknown", "displayName": "unknown", "memoryInGb": 0, "securePrice": 0, "communityPrice": 0}],
            "upstream connect error",
            [None],
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        return [
            [{"id": "NVIDIA L4", "communityPrice": 0.44}],
        ]

    def test_h100_sxm_every_kind(self, full: list[ScrapedOffer]) -> None:
        offers = full
        secure, community = f"{H100}:secure", f"{H100}:community"
        on_demand = pick(offers, secure, "on_demand")
        assert (on_demand.gpu_raw, on_demand.gpu_count, on_demand.price_per_hour) == (H100, 1, 2.99)
        assert (on_demand.region, on_demand.country, on_demand.currency) == ("", None, "USD")
        assert on_demand.gpu_memory_gb == 80.0
        assert on_demand.extra["display_name"] == "H100 SXM"
        assert on_demand.extra["max_gpu_count"] == 8
        assert on_demand.extra["datacenters"] == ["CA-MTL-1", "EUR-IS-3"]
        assert pick(offers, community, "community").price_per_hour == 2.69
        assert pick(offers, secure, "spot").price_per_hour == 1.75
        assert pick(offers, community, "spot").price_per_hour == 1.5
        assert pick(offers, secure, "reserved", 3).price_per_hour == 2.811
        assert pick(offers, secure, "reserved", 6).price_per_hour == 2.601
        # oneMonthPrice is null: not offered
        assert not [o for o in offers if o.gpu_raw == H100 and o.term_months == 1]

    def test_prices_are_per_gpu(self, full: list[ScrapedOffer]) -> None:
        offers = full
        assert {o.gpu_count for o in offers} == {1}
        assert all(o.extra["per_gpu"] for o in offers)

    def test_cloud_flag_false_skips_placeholder_prices(self, full: list[ScrapedOffer]) -> None:
        offers = full
        # MI300X: communityCloud false, communityPrice 0.5 is a placeholder
        assert kinds_of(offers, "AMD Instinct MI300X OAM") == {
            ("secure", "on_demand", 0),
            ("secure", "spot", 0),
            ("secure", "reserved", 3),
            ("secure", "reserved", 6),
        }
        # RTX 3070: secureCloud false (securePrice 0) -> community only
        assert kinds_of(offers, "NVIDIA GeForce RTX 3070") == {("community", "community", 0), ("community", "spot", 0)}
        assert pick(offers, "NVIDIA GeForce RTX 3070:community", "community").price_per_hour == 0.13
        # A30: secureCloud false although secureSpotPrice is 0.21
        assert ("secure", "spot", 0) not in kinds_of(offers, "NVIDIA A30")
        # RTX 4080: secureCloud false, securePrice 0.5 placeholder
        assert ("secure", "on_demand", 0) not in kinds_of(offers, "NVIDIA GeForce RTX 4080")

    def test_null_spot_and_unknown_type_give_nothing(self, full: list[ScrapedOffer]) -> None:
        offers = full
        # B200: both spot prices null, community not offered
        assert kinds_of(offers, "NVIDIA B200") == {("secure", "on_demand", 0), ("secure", "reserved", 3), ("secure", "reserved", 6)}
        assert not [o for o in offers if o.gpu_raw == "unknown"]

    def test_offer_count(self, full: list[ScrapedOffer]) -> None:
        offers = full
        by_kind = {k: len([o for o in offers if o.kind == k]) for k in ("on_demand", "community", "spot", "reserved")}
        assert by_kind == {"on_demand": 23, "community": 32, "spot": 48, "reserved": 48}

    def test_envelope_without_flags_or_spot(self) -> None:
        offers = RunpodScraper(env={}).parse(load_json(ENVELOPE_2026))
        assert {o.kind for o in offers} == {"on_demand", "community"}
        # A100 SXM 40GB: securePrice 0 = not offered in Secure Cloud
        assert kinds_of(offers, "NVIDIA A100-SXM4-40GB") == {("community", "community", 0)}
        b300 = pick(offers, "NVIDIA B300 SXM6 AC:secure", "on_demand")
        assert (b300.price_per_hour, b300.gpu_memory_gb, b300.extra["display_name"]) == (7.89, 288.0, "B300")
        assert not [o for o in offers if o.gpu_raw == "unknown"]

    def test_without_cloud_flags_the_050_placeholders_are_not_offers(self) -> None:
        offers = RunpodScraper(env={}).parse(load_json(ENVELOPE_2026))
        assert not [o for o in offers if o.price_per_hour == 0.5]
        # MI300X and H200 NVL: communityPrice 0.5 (not on Community Cloud), their secure prices stay
        assert kinds_of(offers, "AMD Instinct MI300X OAM") == {("secure", "on_demand", 0)}
        assert pick(offers, "AMD Instinct MI300X OAM:secure", "on_demand").price_per_hour == 2.39
        assert kinds_of(offers, "NVIDIA H200 NVL") == {("secure", "on_demand", 0)}
        # RTX 4080: securePrice 0.5 (the 2025 recording flags it secureCloud false), community 0.27 stays
        assert kinds_of(offers, "NVIDIA GeForce RTX 4080") == {("community", "community", 0)}
        # RTX 2000 Ada: a $0.50 community price above its $0.24 secure one was never a price
        assert kinds_of(offers, "NVIDIA RTX 2000 Ada Generation") == {("secure", "on_demand", 0)}

    def test_with_the_flag_true_a_050_price_is_a_price(self) -> None:
        items = load_json(ENVELOPE_2026)["data"]["gpuTypes"]
        mi300x = next(g for g in items if g["id"] == "AMD Instinct MI300X OAM")
        mi300x.update(secureCloud=True, communityCloud=True)
        offers = RunpodScraper(env={}).parse(items)
        assert pick(offers, "AMD Instinct MI300X OAM:community", "community").price_per_hour == 0.5

    def test_bare_list_and_envelope_parse_alike(self) -> None:
        items = load_json(FULL)
        scraper = RunpodScraper(env={})
        assert scraper.parse({"data": {"gpuTypes": items}}) == scraper.parse(items)


class TestAnonymous2026Reference:
    """The 2026 keyless answer's shape (REFERENCE fixture, our own values): flags and per-cloud stock."""

    @pytest.fixture
    def offers(self) -> list[ScrapedOffer]:
        return RunpodScraper(env={}).parse(load_json(ANONYMOUS_2026_REFERENCE))

    def test_stock_status_is_kept_per_offer(self, offers: list[ScrapedOffer]) -> None:
        secure = pick(offers, f"{H100}:secure", "on_demand")
        assert (secure.price_per_hour, secure.available, secure.extra["stock"]) == (2.89, True, "High")
        community = pick(offers, f"{H100}:community", "community")
        assert (community.price_per_hour, community.available, community.extra["stock"]) == (2.39, True, "Low")
        # RTX 4090: none in stock on Secure Cloud (stockStatus null), plenty on Community Cloud
        out = pick(offers, "NVIDIA GeForce RTX 4090:secure", "on_demand")
        assert (out.price_per_hour, out.available, out.extra["stock"]) == (0.61, False, None)
        assert pick(offers, "NVIDIA GeForce RTX 4090:community", "community").available is True

    def test_cloud_flags_and_placeholders(self, offers: list[ScrapedOffer]) -> None:
        # B200 and MI300X: communityCloud false, their 0.50 community prices are placeholders
        assert kinds_of(offers, "NVIDIA B200") == {("secure", "on_demand", 0)}
        assert kinds_of(offers, "AMD Instinct MI300X OAM") == {("secure", "on_demand", 0)}
        # A40: secureCloud false (securePrice 0)
        assert kinds_of(offers, "NVIDIA A40") == {("community", "community", 0)}
        assert pick(offers, "NVIDIA A40:community", "community").extra["max_gpu_count"] == 10
        assert not [o for o in offers if o.gpu_raw == "unknown"]
        assert len(offers) == 9 and {o.kind for o in offers} == {"on_demand", "community"}


def _graphql_server(keyed: Any, anonymous: Any, keyed_status: int = 200) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A fake RunPod: the keyed query (it asks sixMonthPrice) gets ``keyed``, the anonymous one ``anonymous``."""
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if "sixMonthPrice" in json.loads(request.content)["query"]:
            return httpx.Response(keyed_status, json=keyed)
        return httpx.Response(200, json=anonymous)

    return httpx.MockTransport(handler), sent


def test_without_a_key_the_anonymous_query_is_asked() -> None:
    transport, sent = _graphql_server({"errors": [{"message": "not asked"}]}, load_json(ANONYMOUS_2026_REFERENCE))
    raw = run_fetch(RunpodScraper(env={}), transport)
    [request] = sent
    assert (request.method, str(request.url)) == ("POST", GRAPHQL_URL)
    assert "authorization" not in request.headers
    query = json.loads(request.content)["query"]
    assert query == ANONYMOUS_QUERY
    for field in ("securePrice", "communityPrice", "secureCloud", "communityCloud", "maxGpuCount", "stockStatus"):
        assert field in query
    for keyed_only in ("sixMonthPrice", "oneMonthPrice", "secureSpotPrice", "nodeGroupDatacenters", "clusterPrice"):
        assert keyed_only not in query
    offers = RunpodScraper(env={}).parse(raw)
    assert not isinstance(offers, PartialOffers)
    assert len(offers) == 9 and pick(offers, f"{H100}:secure", "on_demand").extra["query"] == "anonymous"


@pytest.mark.parametrize("status", [200, 400, 401])
def test_a_graphql_error_on_the_keyed_query_falls_back_to_the_anonymous_one(status: int) -> None:
    """A keyed query RunPod refuses (a field renamed, a key without rights) used to fail the whole run."""
    error = {"data": None, "errors": [{"message": f'Cannot query field "sixMonthPrice" on type "GpuType" for key {KEY}.'}]}
    transport, sent = _graphql_server(error, load_json(ANONYMOUS_2026_REFERENCE), keyed_status=status)
    scraper = RunpodScraper(env={"RUNPOD_API_KEY": KEY})
    raw = run_fetch(scraper, transport)
    assert [r.headers.get("authorization") for r in sent] == [f"Bearer {KEY}", None]
    assert json.loads(sent[1].content)["query"] == ANONYMOUS_QUERY
    assert KEY not in json.dumps(raw)
    offers = scraper.parse_payload(raw)
    assert isinstance(offers, PartialOffers)
    assert "keyed gpuTypes query failed" in offers.reason and "sixMonthPrice" in offers.reason and KEY not in offers.reason
    assert "spot or savings-plan prices" in offers.reason
    h100 = pick(offers, f"{H100}:secure", "on_demand")
    assert (h100.price_per_hour, h100.available, h100.extra["stock"], h100.extra["query"]) == (2.89, True, "High", "anonymous")
    assert list(offers) == RunpodScraper(env={}).parse(load_json(ANONYMOUS_2026_REFERENCE))


def test_a_keyed_answer_without_errors_is_used_whole() -> None:
    transport, sent = _graphql_server({"data": {"gpuTypes": load_json(FULL)}}, load_json(ANONYMOUS_2026_REFERENCE))
    raw = run_fetch(RunpodScraper(env={"RUNPOD_API_KEY": KEY}), transport)
    [request] = sent
    assert request.headers["authorization"] == f"Bearer {KEY}"
    query = json.loads(request.content)["query"]
    assert query == GPU_TYPES_QUERY
    for field in ("secureSpotPrice", "communitySpotPrice", "oneMonthPrice", "threeMonthPrice", "sixMonthPrice",
                  "nodeGroupDatacenters", "stockStatus"):
        assert field in query
    offers = RunpodScraper(env={}).parse(raw)
    assert not isinstance(offers, PartialOffers) and len(offers) == 151
    assert pick(offers, f"{H100}:secure", "spot").extra["query"] == "keyed"


def test_a_keyed_answer_that_is_no_json_is_a_fetch_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>maintenance</html>")

    with pytest.raises(FetchError, match="runpod: POST https://api.runpod.io/graphql did not return JSON"):
        run_fetch(RunpodScraper(env={"RUNPOD_API_KEY": KEY}), httpx.MockTransport(handler))


def test_fetch_sends_the_optional_key_as_bearer() -> None:
    assert_optional_key_sent_as_bearer(RunpodScraper, "RUNPOD_API_KEY", "rp-123", {"data": {"gpuTypes": load_json(FULL)}})


def test_needs_no_credentials() -> None:
    assert_only_optional_credential(RunpodScraper, "RUNPOD_API_KEY")


def test_graphql_errors_are_named() -> None:
    from scrapers.base import ParseError

    body = {"errors": [{"message": 'Cannot query field "sixMonthPrice" on type "GpuType".'}]}
    with pytest.raises(ParseError, match="runpod: GraphQL errors: .*sixMonthPrice"):
        RunpodScraper(env={}).parse(body)
