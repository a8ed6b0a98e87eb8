"""Massed Compute: the pricing page's Next.js flight data (a reference fixture: the real 2026 structure, our own values)."""

from __future__ import annotations

from typing import Any

import pytest

from scrapers._nextjs import flight_stream
from scrapers.base import ParseError, ScrapedOffer
from scrapers.massedcompute import PRICING_URL, MassedcomputeScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)

PAGE = "massedcompute/pricing_reference.html"  # the replay recording: the one copy


def stream() -> str:
    return flight_stream("massedcompute", load_recording_text(PAGE))


def excerpt(text: str) -> str:
    """A stream as it sits escaped inside the page's script strings (no script tags)."""
    return text.replace('"', '\\"').replace("\n", "\\n")


def edited(old: str, new: str, count: int = -1) -> str:
    text = stream()
    assert old in text
    return excerpt(text.replace(old, new, count))


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestMassedcompute(ProviderContract):
    scraper_cls = MassedcomputeScraper
    named_offer = NamedOffer("B300 SXM6", 8, "on_demand", "", 49.9)
    handmade = True  # a reference fixture: the real structure with our own values
    min_offers = 17

    def load_raw(self) -> Any:
        return load_recording_text(PAGE)

    def broken_payloads(self) -> list[Any]:
        return [
            "<html><body><table><tr><td>H100</td><td>$2.59/hr</td></tr></table></body></html>",  # no flight data
            "",
            {"rows": []},
            "<script>self.__next_f.push([1,\"0:[]\\n\"])</script>",  # flight data without price rows
            edited("-x ", "-qty ").replace("-mobile-qty", "-mobile-q"),  # the row keys changed
            edited('"$$', '"USD '),  # prices no longer '$$' cells: every offer unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [edited('"$$0.89"', '"0.89 dollars"')]  # one row's price cells lost their '$$'

    def test_a_single_gpu_row(self, offers: list[ScrapedOffer]) -> None:
        h100 = by_sku(offers)["H100 (80GB):1x"]
        assert (h100.gpu_raw, h100.gpu_count, h100.kind, h100.region, h100.currency) == ("H100 (80GB)", 1, "on_demand", "", "USD")
        assert (h100.price_per_hour, h100.gpu_memory_gb, h100.vcpus, h100.ram_gb) == (2.59, 80, 20, 128)
        assert h100.extra["copies"] == ["desktop", "mobile"]

    def test_a_multi_gpu_row_is_priced_whole(self, offers: list[ScrapedOffer]) -> None:
        b300 = by_sku(offers)["B300 SXM6:8x"]
        assert (b300.gpu_count, b300.price_per_hour) == (8, 49.9) and b300.price_per_gpu_hour == pytest.approx(6.2375)

    def test_a_request_row_is_listed_without_a_price(self, offers: list[ScrapedOffer]) -> None:
        request = by_sku(offers)["H100 (80GB):8x"]
        assert request.price_per_hour is None and request.extra["listed_without_price"] is True
        assert "unreadable_price" not in request.extra

    def test_a_deferred_price_cell_is_followed_to_its_line(self) -> None:
        # with the mobile cards' prices gone, the B200 and H100 NVL prices are only in desktop cells
        # that the stream sends later as their own lines ("$L<id>")
        text = stream().replace('"$$41.20"', '"-"', 1).replace('"$$21.44"', '"-"', 1)
        assert text.count('"$$41.20"') == 1 and text.index('"$$41.20"') > text.index('"$L')
        offers = by_sku(MassedcomputeScraper(env={}).parse(excerpt(text)))
        assert offers["B200 SXM6:8x"].price_per_hour == 41.2 and offers["H100 NVL (94GB) NVLink:8x"].price_per_hour == 21.44

    def test_copies_that_disagree_are_quarantined(self) -> None:
        text = stream()
        first = text.index('"$$3.49"')  # the mobile card's copy of the H200 NVL 1x row
        offers = by_sku(MassedcomputeScraper(env={}).parse(excerpt(text[:first] + '"$$3.59"' + text[first + 8 :])))
        assert "disagree" in offers["H200 NVL (141GB):1x"].extra["unreadable_price"]
        assert offers["H200 NVL (141GB):2x"].price_per_hour == 6.98

    def test_the_catalog_resolves_the_labels(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        resolved = {o.gpu_raw: resolve_gpu(o.gpu_raw, o.gpu_memory_gb) for o in offers}
        assert resolved["H200 NVL (141GB)"] == "H200-NVL" and resolved["H100 NVL (94GB) NVLink"] == "H100-NVL"
        assert resolved["RTX PRO 6000 Blackwell (96GB)"] == "RTX-PRO-6000" and resolved["B300 SXM6"] == "B300"
        assert resolved["A100 SXM4 (80GB)"] == "A100-SXM-80GB" and resolved["RTX 6000 Ada (48GB)"] == "RTX-6000-Ada"
        assert resolved["RTX PRO 4500 Blackwell (32GB)"] == "RTX-PRO-4500" and None not in resolved.values()

    def test_no_flight_data_is_a_clear_parse_error(self) -> None:
        with pytest.raises(ParseError, match=r"massedcompute: layout changed: no Next.js flight data"):
            MassedcomputeScraper(env={}).parse("<html><body><p>$2.59/hr</p></body></html>")


def test_fetch_reads_robots_then_the_page_once() -> None:
    assert_fetches_page_once(MassedcomputeScraper(env={}), PRICING_URL, load_recording_text(PAGE))


def test_fetch_respects_robots() -> None:
    assert_refused_by_robots(MassedcomputeScraper(env={}), PRICING_URL, load_recording_text(PAGE), "User-agent: *\nDisallow: /pricing\n")


def test_needs_no_credentials() -> None:
    MassedcomputeScraper(env={}).check_credentials()
    assert MassedcomputeScraper.credentials == () and MassedcomputeScraper.optional_credentials == ()
