"""Verda (DataCrunch) scraper: the keyless pricing page and the keyed API.

The pricing page (the default, no key): a REFERENCE fixture of the 2026 https://verda.com/pricing
JSON-LD offer graph, which is also the bundled replay recording (tracker/recordings/verda/); its
structure follows a public capture named in the manifest, every value invented.

The API (with VERDA_CLIENT_ID/SECRET): HANDMADE fixtures (see tests/fixtures/verda/README.md):
gpuhunt's test literals for ``/instance-types``, ``/instance-availability?isSpot=true`` and
``/locations``. The values are plausible, not recorded prices, so the assertions below check the
mapping, not market truth.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, FetchError, ParseError, ScrapedOffer
from scrapers.verda import API, PRICING_URL, TOKEN_URL, VerdaScraper
from tests.conftest import load_json
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
from tracker.pipeline.replay import BUNDLED_RECORDINGS, ReplayTransport, recording_info

PAGE = BUNDLED_RECORDINGS / "verda" / "pricing_2026_reference.html"

CLIENT_ID = "verda-client-id-1234"
SECRET = "verda-secret-do-not-leak-5678"
ENV = {"VERDA_CLIENT_ID": CLIENT_ID, "VERDA_CLIENT_SECRET": SECRET}


def raw_payload() -> dict[str, Any]:
    spot = load_json("verda/verda_instance_availabilities_spot_handmade.json")
    return {
        "instance_types": load_json("verda/verda_instance_types_handmade.json"),
        # Only the spot sample exists; the on-demand list is the same one minus 2A6000.20V so that
        # the two kinds differ in the test.
        "availability": {
            "on_demand": [
                {**e, "availabilities": [t for t in e["availabilities"] if t != "2A6000.20V"]} for e in spot
            ],
            "spot": spot,
        },
        "locations": load_json("verda/verda_locations_handmade.json"),
    }


def page() -> str:
    return PAGE.read_text()


class TestVerdaPricingPage(ProviderContract):
    """The keyless path: the pricing page's JSON-LD offers (reference fixture = replay recording)."""

    scraper_cls = VerdaScraper
    handmade = True  # not a real recording: a reference page (the real 2026 shape, invented values)
    min_offers = 14

    def load_raw(self) -> str:
        return page()

    def broken_payloads(self) -> list[Any]:
        html = page()
        return [
            "",
            "<html><body><h1>Pricing</h1></body></html>",  # no JSON-LD at all
            html.replace('"@type":"Offer"', '"@type":"Thing"'),  # no Offer nodes
            html.replace(" on-demand\"", " hourly\"").replace(" spot\"", " preemptible\""),  # offer names reworded
            html.replace('{"@context"', '{"@context" oops', 1),  # the block is no JSON any more
            re.sub(r'"price":[\d.]+', '"price":"ask"', html),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace('"price":1.29,', '"price":"ask",', 1)]  # the L40S on-demand price

    def test_h100_on_demand_and_spot_per_instance(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)
        h100 = o[("1x H100 SXM5 80GB", "", "on_demand")]
        assert (h100.gpu_raw, h100.gpu_count, h100.gpu_memory_gb, h100.region) == ("H100 SXM5 80GB", 1, 80, "")
        assert (h100.price_per_hour, h100.currency, h100.available) == (2.95, "USD", None)
        assert h100.extra["price_basis"] == "per instance-hour" and h100.extra["source"] == "pricing page JSON-LD"
        assert o[("1x H100 SXM5 80GB", "", "spot")].price_per_hour == 1.475
        b300 = o[("1x B300 SXM6 268GB", "", "on_demand")]
        assert (b300.gpu_raw, b300.gpu_memory_gb, b300.price_per_hour) == ("B300 SXM6 268GB", 268, 7.20)

    def test_only_gpu_instance_offers_each_once(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) == 14  # 7 instances (H100 listed twice) x on-demand and spot
        assert {o.kind for o in offers} == {"on_demand", "spot"}
        assert not [o for o in offers if "serverless" in o.sku or "cluster" in o.sku or o.gpu_count != 1]
        assert not [o for o in offers if o.price_per_hour in (94.40, 3.30, 1.65, 0.09, 0.036, 0.19)]  # cluster, serverless, CPU, storage
        assert "prices_listed" not in index_offers(offers)[("1x H100 SXM5 80GB", "", "on_demand")].extra  # the same price twice

    def test_an_instance_listed_twice_at_two_prices_is_one_offer_at_the_lower(self) -> None:
        html = page().replace('"name":"1x H100 SXM5 80GB on-demand","description":"Hourly on-demand instance price","url":"https://verda.com/pricing","price":2.95',
                              '"name":"1x H100 SXM5 80GB on-demand","description":"Hourly on-demand instance price","url":"https://verda.com/pricing","price":3.10', 1)
        o = index_offers(VerdaScraper(env={}).parse(html))
        h100 = o[("1x H100 SXM5 80GB", "", "on_demand")]
        assert (h100.price_per_hour, h100.extra["prices_listed"]) == (2.95, [2.95, 3.10])

    def test_an_unreadable_price_or_unit_quarantines_that_offer_naming_the_field(self) -> None:
        o = index_offers(VerdaScraper(env={}).parse(page().replace('"price":1.29,', '"price":"ask",', 1)))
        assert o[("1x L40S 48GB", "", "on_demand")].extra[UNREADABLE_PRICE] == (
            "price field Offer '1x L40S 48GB on-demand'.price holds 'ask', not a number")
        assert o[("1x L40S 48GB", "", "spot")].price_per_hour == 0.645
        monthly = page().replace('"price":1.19,"priceCurrency":"USD","priceSpecification":{"@type":"UnitPriceSpecification","price":1.19,"priceCurrency":"USD","unitText":"hour"}',
                                 '"price":1.19,"priceCurrency":"USD","priceSpecification":{"@type":"UnitPriceSpecification","price":1.19,"priceCurrency":"USD","unitText":"month"}')
        a100 = index_offers(VerdaScraper(env={}).parse(monthly))[("1x A100 SXM4 40GB", "", "on_demand")]
        assert a100.extra[UNREADABLE_PRICE].endswith("unitText holds 'month', not per hour")

    def test_no_json_ld_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^verda: layout changed: no JSON-LD"):
            VerdaScraper(env={}).parse("<html><body><h1>Pricing</h1></body></html>")

    def test_the_fixture_is_the_labelled_reference_replay_recording(self) -> None:
        info = recording_info("verda")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        assert VerdaScraper.fixture_kind == "reference" and PAGE.name.endswith("_reference.html")


def test_without_keys_fetch_reads_the_pricing_page_and_needs_no_credentials() -> None:
    VerdaScraper(env={}).check_credentials()  # keys are optional now
    assert VerdaScraper.credentials == () and VerdaScraper.optional_credentials == ("VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET")
    assert PRICING_URL == "https://verda.com/pricing"
    raw = assert_fetches_page_once(VerdaScraper(env={}), PRICING_URL, page())
    assert len(VerdaScraper(env={}).parse(raw)) == 14


def test_one_key_alone_still_reads_the_page() -> None:
    raw = assert_fetches_page_once(VerdaScraper(env={"VERDA_CLIENT_ID": CLIENT_ID}), PRICING_URL, page())
    assert isinstance(raw, str)


def test_the_page_fetch_refuses_what_robots_txt_disallows() -> None:
    assert_refused_by_robots(VerdaScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /pricing\n")


def test_replay_reads_the_page_even_with_keys_in_the_environment() -> None:
    transport = ReplayTransport.for_provider("verda")
    raw = run_fetch(VerdaScraper(env=ENV, replay=True), transport)
    assert [str(r.url) for r in transport.requests if r.url.path != "/robots.txt"] == [PRICING_URL]
    assert len(VerdaScraper(env={}).parse(raw)) == 14


class TestVerda(ProviderContract):
    """The keyed path: the API (handmade samples of its answers)."""

    scraper_cls = VerdaScraper
    named_offer = NamedOffer("B300 SXM6 268GB", 1, "on_demand", "", 7.2)
    handmade = True  # these API samples are handmade (and the bundled fixture is a reference page)
    min_offers = 4

    def load_raw(self) -> Any:
        return raw_payload()

    def broken_payloads(self) -> list[Any]:
        raw = raw_payload()
        no_gpu = copy.deepcopy(raw)
        del no_gpu["instance_types"][0]["gpu"]
        bad_avail = copy.deepcopy(raw)
        bad_avail["availability"]["spot"] = [{"location": "FIN-01", "availabilities": []}]
        return [
            {},
            [],
            {**raw, "instance_types": []},
            {**raw, "instance_types": {"data": raw["instance_types"]}},
            {k: v for k, v in raw.items() if k != "locations"},
            {**raw, "availability": {"spot": raw["availability"]["spot"]}},
            no_gpu,
            bad_avail,
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        raw = raw_payload()
        no_price = copy.deepcopy(raw)
        del no_price["instance_types"][0]["price_per_hour"]
        bad_price = copy.deepcopy(raw)
        bad_price["instance_types"][0]["price_per_hour"] = "three"
        return [
            no_price,
            bad_price,
        ]

    def test_h100_on_demand_and_spot(self, offers: list[ScrapedOffer]) -> None:
        # 1H100.80S.30V is in no availability list: recorded once per kind, without region.
        o = index_offers(offers)[("1H100.80S.30V", "", "on_demand")]
        assert (o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.vcpus, o.ram_gb) == ("H100 SXM5 80GB", 1, 80, 30, 120)
        assert (o.price_per_hour, o.currency, o.available, o.country) == (3.95, "USD", False, None)
        s = index_offers(offers)[("1H100.80S.30V", "", "spot")]
        assert (s.price_per_hour, s.available) == (1.70, False)
        assert not [x for x in offers if x.sku == "1H100.80S.30V" and x.region]

    def test_regions_come_from_availability(self, offers: list[ScrapedOffer]) -> None:
        keys = index_offers(offers)
        a6000 = keys[("2A6000.20V", "FIN-01", "on_demand")]
        assert (a6000.gpu_raw, a6000.gpu_count, a6000.gpu_memory_gb) == ("RTX A6000 48GB", 2, 48)
        assert (a6000.price_per_hour, a6000.country, a6000.available) == (1.98, "FI", False)
        assert a6000.extra["p2p"] == "50GB/s"
        spot = keys[("2A6000.20V", "FIN-01", "spot")]
        assert (spot.price_per_hour, spot.available) == (0.70, True)
        v100 = keys[("1V100.6V", "FIN-01", "on_demand")]
        assert (v100.gpu_raw, v100.price_per_hour, v100.available) == ("Tesla V100 16GB", 0.89, True)
        # FIN-02 and ICE-01 list none of these GPU types.
        assert {o.region for o in offers} == {"", "FIN-01"}

    def test_cpu_nodes_are_skipped(self, offers: list[ScrapedOffer]) -> None:
        assert not [o for o in offers if o.sku.startswith("CPU")]
        assert len(offers) == 6  # 3 GPU types x 2 kinds

    def test_zero_or_null_spot_price_means_no_spot_offer(self) -> None:
        raw = raw_payload()
        raw["instance_types"][0]["spot_price"] = None
        raw["instance_types"][1]["spot_price"] = "0.00"
        offers = VerdaScraper(env={}).parse(raw)
        assert {(o.sku, o.kind) for o in offers if o.kind == "spot"} == {("1V100.6V", "spot")}


def handler_for(calls: list[httpx.Request]) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        url = f"{request.url.scheme}://{request.url.host}{request.url.path}"
        if url == TOKEN_URL:
            return httpx.Response(200, json={"access_token": "tok-abc", "token_type": "Bearer", "expires_in": 3600})
        if request.headers.get("Authorization") != "Bearer tok-abc":
            return httpx.Response(401, json={"code": "unauthorized_request"})
        if url == f"{API}/instance-types":
            return httpx.Response(200, json=load_json("verda/verda_instance_types_handmade.json"))
        if url == f"{API}/instance-availability":
            return httpx.Response(200, json=load_json("verda/verda_instance_availabilities_spot_handmade.json"))
        if url == f"{API}/locations":
            return httpx.Response(200, json=load_json("verda/verda_locations_handmade.json"))
        return httpx.Response(404)

    return handler


def test_fetch_gets_a_token_then_calls_with_bearer() -> None:
    calls: list[httpx.Request] = []
    raw = run_fetch(VerdaScraper(env=ENV), httpx.MockTransport(handler_for(calls)))
    token = calls[0]
    assert (token.method, str(token.url)) == ("POST", "https://api.verda.com/v1/oauth2/token")
    assert json.loads(token.content) == {"grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": SECRET}
    assert "authorization" not in token.headers
    rest = [(r.method, r.url.path, dict(r.url.params)) for r in calls[1:]]
    assert rest == [
        ("GET", "/v1/instance-types", {}),
        ("GET", "/v1/instance-availability", {"isSpot": "false"}),
        ("GET", "/v1/instance-availability", {"isSpot": "true"}),
        ("GET", "/v1/locations", {}),
    ]
    for r in calls[1:]:
        assert r.headers["Authorization"] == "Bearer tok-abc"
        assert SECRET not in str(r.url) and SECRET.encode() not in r.content
    assert VerdaScraper(env={}).parse(raw)


@pytest.mark.parametrize(
    "token_response",
    [
        httpx.Response(401, json={"code": "invalid_client", "echo": SECRET}),
        httpx.Response(200, json={"error": "invalid_client", "client_secret": SECRET}),
        httpx.Response(200, text=f"not json {SECRET}"),
    ],
)
def test_token_failures_never_show_the_secret(token_response: httpx.Response) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return token_response

    with pytest.raises(FetchError) as info:
        run_fetch(VerdaScraper(env=ENV), httpx.MockTransport(handler))
    assert "verda" in str(info.value)
    assert SECRET not in str(info.value) and CLIENT_ID not in str(info.value)
    assert "oauth2/token" in str(info.value)


def test_api_error_after_token_names_the_path_not_the_token() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/oauth2/token"):
            return httpx.Response(200, json={"access_token": "tok-secret-xyz"})
        return httpx.Response(403)

    with pytest.raises(FetchError, match=r"verda: GET https://api.verda.com/v1/instance-types -> HTTP 403") as info:
        run_fetch(VerdaScraper(env=ENV), httpx.MockTransport(handler))
    assert "tok-secret-xyz" not in str(info.value) and SECRET not in str(info.value)


def test_with_both_keys_the_api_is_read_and_the_page_is_not() -> None:
    calls: list[httpx.Request] = []
    run_fetch(VerdaScraper(env=ENV), httpx.MockTransport(handler_for(calls)))
    assert calls and all(r.url.host == "api.verda.com" for r in calls)
    assert not [r for r in calls if r.url.path == "/pricing"]
    assert VerdaScraper(env=ENV).keyed() and not VerdaScraper(env={}).keyed()
    assert sorted(VerdaScraper(env=ENV).secrets()) == sorted([CLIENT_ID, SECRET])
