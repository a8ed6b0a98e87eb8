"""Lium: the keyless executor book (a reference fixture: the real 2026 shape, our own values)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scrapers.base import ParseError, ScrapedOffer
from scrapers.lium import URL, LiumScraper
from tests.conftest import load_recording_json
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.requests_helpers import json_fetch

BOOK = "lium/executors_reference.json"  # the replay recording: the one copy
B300 = "00000000-0000-0000-0000-00000000a001"
H100_FI = "00000000-0000-0000-0000-00000000a002"
H200_SPOT = "00000000-0000-0000-0000-00000000a004"
H100_PCIE = "00000000-0000-0000-0000-00000000a006"
B200 = "00000000-0000-0000-0000-00000000a007"
PRO_SERVER = "00000000-0000-0000-0000-00000000a008"


def book(index: int = 0, **changes: Any) -> list[dict[str, Any]]:
    """The fixture with row ``index``'s keys replaced (a value of ``...`` removes the key)."""
    rows = copy.deepcopy(load_recording_json(BOOK))
    for key, value in changes.items():
        if value is ...:
            rows[index].pop(key)
        else:
            rows[index][key] = value
    return rows


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestLium(ProviderContract):
    scraper_cls = LiumScraper
    named_offer = NamedOffer("NVIDIA A100-SXM4-80GB", 8, "on_demand", "US", 9.2)
    handmade = True  # a reference fixture: the real shape with our own values
    min_offers = 13

    def load_raw(self) -> Any:
        return load_recording_json(BOOK)

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            [],
            {"executors": load_recording_json(BOOK)},
            ["NVIDIA H100"],
            book(machine_name=...),
            book(id=...),
            book(machine_name=""),
            book(tier=...),
            book(tier="community"),  # a tier this parser does not know is not guessed
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [
            book(1, price_per_gpu=...),
            book(1, price_per_gpu="cheap"),
            book(1, price_per_gpu=0),
            book(1, gpu_count=0),
        ]

    def test_an_eight_gpu_b300_machine(self, offers: list[ScrapedOffer]) -> None:
        b300 = by_sku(offers)[B300]
        assert (b300.gpu_raw, b300.gpu_count, b300.kind, b300.region, b300.currency) == ("NVIDIA B300 SXM6 AC", 8, "on_demand", "US", "USD")
        assert b300.price_per_hour == pytest.approx(8 * 7.49) and b300.extra["price_per_gpu_hour"] == 7.49
        assert b300.available is True and b300.extra["available_count"] == 8
        assert b300.extra["min_gpu_count_for_rental"] == 8 and b300.extra["city"] == "Ashburn"

    def test_partly_rented_machine_keeps_its_free_gpu_count(self, offers: list[ScrapedOffer]) -> None:
        pro = by_sku(offers)[PRO_SERVER]
        assert (pro.gpu_count, pro.extra["available_count"], pro.available) == (8, 4, True)
        assert pro.price_per_gpu_hour == pytest.approx(1.09)

    def test_a_fully_rented_machine_is_listed_unavailable(self, offers: list[ScrapedOffer]) -> None:
        pcie = by_sku(offers)[H100_PCIE]
        assert (pcie.available, pcie.extra["available_count"], pcie.price_per_hour) == (False, 0, 2.05)

    def test_spot_tier(self, offers: list[ScrapedOffer]) -> None:
        spot = by_sku(offers)[H200_SPOT]
        assert (spot.kind, spot.region, spot.gpu_count, spot.extra["is_spot"]) == ("spot", "DE", 8, True)
        assert spot.price_per_hour == pytest.approx(8 * 2.95)

    def test_a_scheduled_price_change_is_not_the_price(self, offers: list[ScrapedOffer]) -> None:
        b200 = by_sku(offers)[B200]
        assert b200.price_per_hour == 5.9
        assert (b200.extra["pending_price_per_gpu_hour"], b200.extra["price_change_effective_date"]) == (5.5, "2026-12-10T00:00:00")

    def test_a_machine_listed_twice_is_one_offer(self) -> None:
        rows = load_recording_json(BOOK)
        offers = LiumScraper(env={}).parse([*rows, rows[0]])
        assert len(offers) == len(rows)

    def test_the_catalog_resolves_every_machine_name(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        resolved = {o.gpu_raw: resolve_gpu(o.gpu_raw) for o in offers}
        assert None not in resolved.values(), resolved
        assert resolved["NVIDIA RTX PRO 6000 Blackwell Server Edition"] == "RTX-PRO-6000"
        assert resolved["NVIDIA H200 NVL"] == "H200-NVL" and resolved["NVIDIA H100 80GB HBM3"] == "H100-SXM"

    def test_an_unknown_tier_is_a_clear_parse_error(self) -> None:
        with pytest.raises(ParseError, match=r"lium: payload\[0\]\.tier is 'community'"):
            LiumScraper(env={}).parse(book(tier="community"))


def test_fetch_is_one_anonymous_get() -> None:
    raw, sent = json_fetch(LiumScraper(env={}), load_recording_json(BOOK))
    assert [(r.method, str(r.url)) for r in sent] == [("GET", URL)]
    assert "authorization" not in sent[0].headers and "cookie" not in sent[0].headers
    assert raw == load_recording_json(BOOK)


def test_needs_no_credentials() -> None:
    LiumScraper(env={}).check_credentials()
    assert LiumScraper.credentials == () and LiumScraper.optional_credentials == ()
