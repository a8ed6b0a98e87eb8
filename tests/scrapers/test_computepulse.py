"""Compute Pulse: the aggregator's per-GPU listing books (a reference fixture: the real 2026 shape,
our own values), stored under the aggregator with the cloud each row names as ``via``."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import ParseError, PartialOffers, ScrapedOffer
from scrapers.computepulse import (
    GPU_SLUGS,
    MAX_PAGES,
    URL,
    ComputepulseScraper,
    via_name,
)
from tests.conftest import load_recording_json
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    replayed_payload,
    run_fetch,
)

H100_P1 = "computepulse/listings_nvidia-h100_p1_reference.json"
H100_P2 = "computepulse/listings_nvidia-h100_p2_reference.json"


def book(index: int = 0, page: str = H100_P1, **changes: Any) -> dict[str, Any]:
    """One GPU's book of one page, row ``index``'s keys replaced (``...`` removes the key)."""
    raw = copy.deepcopy(load_recording_json(page))
    raw["page"]["next_offset"] = None
    for key, value in changes.items():
        if value is ...:
            raw["data"][index].pop(key)
        else:
            raw["data"][index][key] = value
    return {"books": {"nvidia-h100": [raw]}, "incomplete": None}


def with_meta(**meta: Any) -> dict[str, Any]:
    raw = book()
    raw["books"]["nvidia-h100"][0]["meta"].update(meta)
    return raw


class TestComputepulse(ProviderContract):
    scraper_cls = ComputepulseScraper
    named_offer = NamedOffer("A100 SXM", 1, "on_demand", "us", 0.62)
    handmade = True  # a reference fixture: the real shape with our own values
    min_offers = 15

    def load_raw(self) -> Any:
        return replayed_payload("computepulse")

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            [],
            {"books": {}},
            {"books": {"nvidia-h100": []}},
            {"books": {"nvidia-h100": [load_recording_json(H100_P1)["data"]]}},
            with_meta(price_unit="EUR per GPU hour"),
            with_meta(catalog_status="seed_fallback"),
            book(provider=...),
            book(gpu_model=""),
            book(billing_type="hourly-ish"),  # a billing this parser does not know is not guessed
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [
            book(1, price_per_gpu_hour=...),
            book(1, price_per_gpu_hour="cheap"),
            book(1, price_per_gpu_hour=0),
            book(1, gpu_count=0),
        ]

    def test_a_vast_host_through_the_aggregator(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "region", "kind"))
        spot = by[("vastai:H100 SXM:2x", "ap-japan", "spot")]
        assert (spot.gpu_raw, spot.gpu_count, spot.gpu_memory_gb, spot.currency, spot.available) == ("H100 SXM", 2, 80, "USD", True)
        assert spot.price_per_hour == pytest.approx(2 * 0.96) and spot.extra["price_per_gpu_hour"] == 0.96
        assert spot.extra["via"] == "vastai" and spot.extra["provider_name"] == "Vast.ai"

    def test_alike_hosts_are_numbered_by_price(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "region", "kind"))
        assert by[("vastai:H100 SXM:1x#1", "us", "on_demand")].price_per_hour == pytest.approx(1.41)
        assert by[("vastai:H100 SXM:1x#2", "us", "on_demand")].price_per_hour == pytest.approx(1.47)

    def test_terms_native_currencies_and_custom_rows(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "kind", "term_months"))
        inr = by[("cyfutureai:H100 SXM:8x", "reserved", 12)]  # 8,640 hours: twelve months
        assert (inr.currency, inr.price_per_hour, inr.extra["aggregator_usd_per_gpu_hour"]) == ("INR", pytest.approx(8 * 199.0), 2.21)
        monthly = by[("nordicaihosting:B200:8x", "reserved", 1)]
        assert (monthly.currency, monthly.extra["monthly_plan"]) == ("EUR", True)
        unstated = by[("hyperstack:H100 PCIe:1x", "reserved", 0)]
        assert unstated.extra["term_unstated"] is True and unstated.price_per_hour == pytest.approx(1.33)
        assert not [o for o in offers if o.extra["provider_name"] == "Example Bespoke Cloud"]  # custom terms left out

    def test_the_second_page_is_read(self, offers: list[ScrapedOffer]) -> None:
        lam = [o for o in offers if o.sku == "lambda:H100 SXM:8x"]
        assert len(lam) == 1 and lam[0].region == "us-east-1" and lam[0].available is None
        assert via_name("Lambda") == "lambda" and via_name("Vast.ai") == "vastai"


def test_fetch_pages_by_offset_and_reads_every_gpu() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        slug, offset = request.url.params["gpu"], request.url.params["offset"]
        name = H100_P2 if (slug, offset) == ("nvidia-h100", "200") else H100_P1
        body = copy.deepcopy(load_recording_json(name))
        if slug != "nvidia-h100":
            body["page"]["next_offset"] = None
        return httpx.Response(200, json=body)

    raw = run_fetch(ComputepulseScraper(env={}), httpx.MockTransport(handler))
    assert raw["incomplete"] is None and sorted(raw["books"]) == sorted(GPU_SLUGS)
    assert [r.url.params["offset"] for r in sent if r.url.params["gpu"] == "nvidia-h100"] == ["0", "200"]
    assert all(str(r.url).startswith(URL) and r.url.params["limit"] == "200" for r in sent)


def test_a_book_longer_than_the_page_limit_is_partial_never_a_delisting() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = copy.deepcopy(load_recording_json(H100_P1))
        body["page"]["next_offset"] = int(request.url.params["offset"]) + 200  # never ends
        return httpx.Response(200, json=body)

    raw = run_fetch(ComputepulseScraper(env={}), httpx.MockTransport(handler))
    assert f"still paging after {MAX_PAGES} pages" in raw["incomplete"]
    offers = ComputepulseScraper(env={}).parse(raw)
    assert isinstance(offers, PartialOffers) and offers and "computepulse" in offers.reason


def test_needs_no_credentials() -> None:
    ComputepulseScraper(env={}).check_credentials()


def test_an_empty_book_is_a_parse_error() -> None:
    raw = book()
    raw["books"]["nvidia-h100"][0]["data"] = []
    with pytest.raises(ParseError, match="computepulse: payload holds no listing"):
        ComputepulseScraper(env={}).parse(raw)


def test_a_fractional_count_stays_a_slice() -> None:
    offers = ComputepulseScraper(env={}).parse(book(0, gpu_count=0.5))
    (half,) = [o for o in offers if o.sku == "vastai:H100 SXM:0.5x"]
    assert (half.gpu_count, half.extra["fractional_gpu"], half.price_per_hour) == (0.5, True, pytest.approx(0.5 * 1.41))
