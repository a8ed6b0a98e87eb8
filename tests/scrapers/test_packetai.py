"""packet.ai: the provider's aggregator feed (a reference fixture: the feed's real shape, our own values)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scrapers.base import ParseError, ScrapedOffer
from scrapers.packetai import URL, PacketaiScraper
from tests.conftest import load_recording_json
from tests.scrapers.contract import NamedOffer, ProviderContract, index_offers
from tests.scrapers.requests_helpers import json_fetch

FEED = "packetai/product_detail_reference.json"  # the replay recording: the one copy
LA = "Los Angeles, US (LA-1)"


def feed(section: str = "on_demand", index: int = 0, **changes: Any) -> dict[str, Any]:
    """The fixture with one row's keys replaced (``...`` removes the key)."""
    raw = copy.deepcopy(load_recording_json(FEED))
    for key, value in changes.items():
        if value is ...:
            raw[section][index].pop(key)
        else:
            raw[section][index][key] = value
    return raw


def offer(offers: list[ScrapedOffer], sku: str, region: str, kind: str = "on_demand") -> ScrapedOffer:
    return index_offers(offers)[(sku, region, kind)]


class TestPacketai(ProviderContract):
    scraper_cls = PacketaiScraper
    named_offer = NamedOffer("NVIDIA B200", 2, "reserved", "Los Angeles, US (LA-1)", 13.6)
    handmade = True  # a reference fixture: the real shape with our own values
    min_offers = 31

    def load_raw(self) -> Any:
        return load_recording_json(FEED)

    def broken_payloads(self) -> list[Any]:
        raw = load_recording_json(FEED)
        return [
            {},
            [],
            {"monthly": raw["monthly"]},  # no on_demand list
            {"on_demand": []},
            {"on_demand": raw["on_demand"][0]},
            {"on_demand": raw["on_demand"], "monthly": {"b200": 1}},
            {"on_demand": ["NVIDIA B200"]},
            feed(gpu_type=...),
            feed(gpu_type=""),
            {**raw, "spot": raw["on_demand"]},  # a new price section is not dropped silently
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [
            feed(index=1, price_per_gpu_hour_usd="6.89"),
            feed(index=1, price_per_gpu_hour_usd=...),
            feed("monthly", 1, effective_hourly_usd="x"),
        ]

    def test_per_gpu_prices_make_whole_instance_offers(self, offers: list[ScrapedOffer]) -> None:
        one = offer(offers, "NVIDIA B200:dedicated:1x", LA)
        four = offer(offers, "NVIDIA B200:dedicated:4x", LA)
        assert (one.gpu_raw, one.gpu_count, one.kind, one.currency, one.country) == ("NVIDIA B200", 1, "on_demand", "USD", "US")
        assert one.price_per_hour == 6.89 and one.extra["price_basis"] == "per GPU"
        assert (four.gpu_count, four.price_per_hour, four.extra["price_per_gpu_hour"]) == (4, pytest.approx(27.56), 6.89)
        assert (four.gpu_memory_gb, four.vcpus, four.ram_gb) == (180, 96, 720)

    def test_stock_status_is_availability(self, offers: list[ScrapedOffer]) -> None:
        assert offer(offers, "NVIDIA B200:dedicated:1x", LA).available is True
        eight = offer(offers, "NVIDIA B200:dedicated:8x", LA)
        assert (eight.available, eight.extra["stock"], eight.price_per_hour) == (False, "out_of_stock", pytest.approx(55.12))

    def test_dynamic_and_dedicated_are_two_products(self, offers: list[ScrapedOffer]) -> None:
        assert offer(offers, "NVIDIA B200:dynamic:1x", LA).price_per_hour == 3.69
        pro = offer(offers, "NVIDIA RTX PRO 6000 Blackwell:dynamic:1x", "Santa Clara, US (us-west-3)")
        assert (pro.price_per_hour, pro.region) == (0.69, "Santa Clara, US (us-west-3)")

    def test_launching_soon_is_listed_without_a_price(self, offers: list[ScrapedOffer]) -> None:
        soon = offer(offers, "NVIDIA H100 SXM:dedicated:1x", "TBC")
        assert soon.price_per_hour is None and soon.available is False
        assert soon.extra["launching_soon"] is True and soon.extra["listed_without_price"] is True
        assert "unreadable_price" not in soon.extra
        assert sum(1 for o in offers if o.extra.get("launching_soon")) == 6

    def test_monthly_plans_are_a_one_month_commitment_at_their_effective_hourly_price(self, offers: list[ScrapedOffer]) -> None:
        two = offer(offers, "NVIDIA B200:dedicated:2x", LA, "reserved")
        assert (two.kind, two.term_months, two.gpu_count) == ("reserved", 1, 2)
        assert two.price_per_hour == 13.6 and two.extra["price_per_month"] == 9928  # 9928 / 730
        uk = offer(offers, "NVIDIA A100 PCIe:dedicated:1x", "Reading, UK (UK-2 / UK-3)", "reserved")
        assert (uk.price_per_hour, uk.country) == (1.25, "GB")

    def test_a_monthly_row_without_its_hourly_figure_is_derived_from_the_month(self) -> None:
        offers = PacketaiScraper(env={}).parse(feed("monthly", 0, effective_hourly_usd=None))
        derived = offer(offers, "NVIDIA B200:dynamic:1x", LA, "reserved")
        assert derived.price_per_hour == pytest.approx(2686 / 730) and derived.extra["effective_hourly_derived"] is True

    def test_the_feeds_earlier_whole_instance_form_is_read_as_such(self) -> None:
        raw = load_recording_json(FEED)
        for row in raw["on_demand"]:
            if row["price_per_gpu_hour_usd"] is not None:
                row["price_per_gpu_hour_usd"] = round(row["price_per_gpu_hour_usd"] * row["gpu_count"], 2)
        offers = PacketaiScraper(env={}).parse(raw)
        four = offer(offers, "NVIDIA B200:dedicated:4x", LA)
        assert (four.price_per_hour, four.extra["price_per_gpu_hour"], four.extra["price_basis"]) == (27.56, 6.89, "instance")
        assert offer(offers, "NVIDIA B200:dedicated:1x", LA).price_per_hour == 6.89

    def test_a_row_without_a_gpu_count(self) -> None:
        offers = PacketaiScraper(env={}).parse(feed(index=5, gpu_count=None))
        unstated = offer(offers, "NVIDIA A100 PCIe:dedicated:?x", "Reading, UK (UK-2)")
        assert (unstated.gpu_count, unstated.price_per_hour, unstated.extra["gpu_count_unstated"]) == (1, 1.39, True)
        assert unstated.gpu_memory_gb is None

    def test_the_catalog_resolves_every_gpu(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        resolved = {o.gpu_raw: resolve_gpu(o.gpu_raw, o.gpu_memory_gb) for o in offers if o.gpu_memory_gb}
        assert resolved["NVIDIA A100 PCIe"] == "A100-PCIe-80GB" and resolved["NVIDIA RTX PRO 6000 Blackwell"] == "RTX-PRO-6000"
        assert resolve_gpu("NVIDIA H100 SXM") == "H100-SXM" and None not in resolved.values()

    def test_a_new_section_is_a_clear_parse_error(self) -> None:
        raw = load_recording_json(FEED)
        with pytest.raises(ParseError, match=r"packetai: the feed has section\(s\) this parser does not read: \['spot'\]"):
            PacketaiScraper(env={}).parse({**raw, "spot": raw["on_demand"]})


def test_fetch_is_one_anonymous_get_of_the_feed() -> None:
    raw, sent = json_fetch(PacketaiScraper(env={}), load_recording_json(FEED))
    assert [(r.method, str(r.url)) for r in sent] == [("GET", URL)]
    assert "authorization" not in sent[0].headers
    assert raw == load_recording_json(FEED)


def test_needs_no_credentials() -> None:
    PacketaiScraper(env={}).check_credentials()
    assert PacketaiScraper.credentials == () and PacketaiScraper.optional_credentials == ()


def test_a_fractional_gpu_row_stays_a_slice() -> None:
    offers = PacketaiScraper(env={}).parse(feed(index=9, gpu_count=0.5, vram_gb=12))
    half = offer(offers, "NVIDIA RTX 4090:dedicated:0.5x", "Dallas, US (Texas)")
    assert (half.gpu_count, half.price_per_hour, half.extra["fractional_gpu"]) == (0.5, 0.185, True)
    assert half.gpu_memory_gb == 24  # 12 GB of the slice is half of one 24 GB card
