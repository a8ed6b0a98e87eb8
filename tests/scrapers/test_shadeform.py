"""Shadeform: the marketplace's instance types (a reference fixture: the documented 2026 shape,
our own values), stored under the aggregator with the cloud each row names as ``via``."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import MissingCredentials, ParseError, ScrapedOffer
from scrapers.shadeform import KEY, URL, ShadeformScraper, via_name
from tests.conftest import load_recording_json
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)

TYPES = "shadeform/instance_types_reference.json"


def types(index: int = 0, config: bool = False, **changes: Any) -> dict[str, Any]:
    """The fixture with row ``index``'s keys (its configuration's, with ``config``) replaced
    (``...`` removes the key)."""
    raw = copy.deepcopy(load_recording_json(TYPES))
    node = raw["instance_types"][index]
    node = node["configuration"] if config else node
    for key, value in changes.items():
        if value is ...:
            node.pop(key)
        else:
            node[key] = value
    return raw


class TestShadeform(ProviderContract):
    scraper_cls = ShadeformScraper
    named_offer = NamedOffer("MI300X oam", 8, "on_demand", "us-houston-1", 20.0)
    handmade = True  # a reference fixture: the documented shape with our own values
    min_offers = 10

    def load_raw(self) -> Any:
        return load_recording_json(TYPES)

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            [],
            {"instance_types": []},
            {"instance_types": {"H100": 1}},
            {"data": load_recording_json(TYPES)["instance_types"]},
            {"instance_types": ["H100"]},
            types(cloud=...),
            types(shade_instance_type=""),
            types(configuration=...),
            types(config=True, gpu_type=...),
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [
            types(1, hourly_price=...),
            types(1, hourly_price="cheap"),
            types(1, hourly_price=0),
            types(1, config=True, num_gpus=0),
        ]

    def test_lambdas_eight_h100s_one_offer_per_region(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "region"))
        west, east = by[("lambda:H100x8", "us-west-1")], by[("lambda:H100x8", "us-east-1")]
        assert (west.gpu_raw, west.gpu_count, west.gpu_memory_gb, west.kind, west.currency) == ("H100 sxm5", 8, 80, "on_demand", "USD")
        assert west.price_per_hour == pytest.approx(23.92) and west.price_per_gpu_hour == pytest.approx(2.99)
        assert (west.available, east.available) == (True, False)
        assert west.extra["via"] == "lambda" and west.extra["cloud_instance_type"] == "gpu_8x_h100_sxm5"
        assert (west.vcpus, west.ram_gb, west.extra["region_name"]) == (208, 1800, "US West, California")

    def test_clouds_named_as_ours_and_the_own_pool_without_via(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "region"))
        assert by[("verda:B200x8", "fin-01")].extra["via"] == "verda"  # DataCrunch is Verda now
        pool = by[("excesssupply:H200x8", "us-central-2")]
        assert "via" not in pool.extra and pool.price_per_hour == pytest.approx(28.70)
        assert via_name("Lambda Labs") == "lambda" and via_name("ExcessSupply") is None

    def test_a_type_without_regions_is_one_offer_of_unknown_availability(self, offers: list[ScrapedOffer]) -> None:
        (l40s,) = [o for o in offers if o.sku == "crusoe:L40S"]
        assert (l40s.region, l40s.available, l40s.price_per_hour) == ("", None, pytest.approx(0.99))

    def test_a_bad_price_is_quarantined_with_its_field(self) -> None:
        offers = ShadeformScraper(env={}).parse(types(1, hourly_price=-5))
        (bad,) = [o for o in offers if o.sku == "hyperstack:A100_80G"]
        assert "instance_types[1].hourly_price" in bad.extra["unreadable_price"]


def test_the_key_is_required_and_sent_as_its_header() -> None:
    with pytest.raises(MissingCredentials):
        ShadeformScraper(env={}).check_credentials()
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=load_recording_json(TYPES))

    scraper = ShadeformScraper(env={KEY: "sf-test-key"})
    assert run_fetch(scraper, httpx.MockTransport(handler)) == load_recording_json(TYPES)
    assert str(sent[0].url) == URL and sent[0].headers["X-API-KEY"] == "sf-test-key"
    assert scraper.secrets() == ["sf-test-key"]


def test_an_empty_book_is_a_parse_error_not_a_delisting() -> None:
    with pytest.raises(ParseError, match="shadeform: payload.instance_types is empty"):
        ShadeformScraper(env={}).parse({"instance_types": []})
