"""Civo: GPU tables of the pricing page (reference fixture: our own values in its shape)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.civo import PRICING_URL, CivoScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)

PAGE = "civo/pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


class TestCivo(ProviderContract):
    scraper_cls = CivoScraper
    named_offer = NamedOffer("NVIDIA L40S - 48GB", 2, "on_demand", "", 2.38)
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 20

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            page().replace(">vCPU<", ">Cores<"),  # no GPU table with the expected columns
            page().replace(" x NVIDIA", " NVIDIA"),  # sizes name no GPU count
            re.sub(r"\$[\d,.]+<span>per hour", "TBA<span>per hour", page()),  # every hourly price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("$2.39<span>", "soon<span>", 1)]

    def test_l40s_sizes_on_demand_and_commitments(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers, ("sku", "kind", "term_months"))
        small = by[("small-1x-nvidia-l40s-48gb", "on_demand", 0)]
        assert (small.gpu_raw, small.gpu_count, small.gpu_memory_gb, small.price_per_hour) == ("NVIDIA L40S - 48GB", 1, 48, 1.19)
        assert (small.vcpus, small.ram_gb, small.currency, small.region) == (12, 96, "USD", "")
        xl = by[("extra-large-8x-nvidia-l40s-48gb", "on_demand", 0)]
        assert xl.gpu_count == 8 and xl.price_per_hour == 9.52  # whole instance, not per GPU
        # every commitment term is read, not only the one the selector shows (36 months)
        assert [by[("medium-2x-nvidia-l40s-48gb", "reserved", t)].price_per_hour for t in (6, 12, 24, 36)] == [2.18, 1.98, 1.78, 1.58]

    def test_monthly_figures_are_not_separate_offers(self, offers: list[ScrapedOffer]) -> None:
        prices = {o.price_per_hour for o in offers}
        assert 868.7 not in prices and all(p is None or p < 20 for p in prices)

    def test_cpu_tables_are_not_read_and_contact_us_has_no_price(self, offers: list[ScrapedOffer]) -> None:
        assert all("nvidia" in o.sku for o in offers)
        xl = index_offers(offers, ("sku", "kind", "term_months"))[("extra-large-8x-nvidia-h100-80gb", "on_demand", 0)]
        assert xl.price_per_hour is None and xl.extra["contact_sales"] is True
        assert not [o for o in offers if o.sku.endswith("h100-80gb") and o.kind == "reserved"]  # "-": not offered

    def test_a_fractional_slice_keeps_its_fraction(self) -> None:
        html = page().replace("1 x NVIDIA A100 - 40GB", "1/2 x NVIDIA A100 - 40GB")
        half = [o for o in CivoScraper(env={}).parse(html) if o.sku.startswith("small-1-2x-nvidia-a100")]
        assert half and all(o.gpu_count == 0.5 and o.extra["fractional"] is True for o in half)
        od = next(o for o in half if o.kind == "on_demand")
        assert od.price_per_hour == 1.05 and od.price_per_gpu_hour == 2.1

    def test_the_catalog_resolves_the_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {resolve_gpu(o.gpu_raw, o.gpu_memory_gb) for o in offers} == {"L40S", "A100-SXM-40GB", "H100-SXM"}

    def test_one_unreadable_price_quarantines_that_offer(self) -> None:
        scraper = CivoScraper(env={})
        offers = scraper.readable(scraper.parse(page().replace("$2.39<span>", "soon<span>", 1)))
        bad = [o for o in offers if o.extra.get(UNREADABLE_PRICE)]
        assert [(o.sku, o.kind) for o in bad] == [("small-1x-nvidia-h100-80gb", "on_demand")]


def test_fetch_is_one_page_get() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(404)
        return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})

    assert run_fetch(CivoScraper(env={}), httpx.MockTransport(handler)) == page()
    assert str(sent[-1].url) == PRICING_URL


def test_needs_no_credentials() -> None:
    CivoScraper(env={}).check_credentials()
    assert CivoScraper.credentials == () and CivoScraper.optional_credentials == ()


def test_a_table_shown_twice_gives_its_offers_once_and_a_conflicting_copy_is_an_error() -> None:
    from scrapers.base import ParseError

    html = page()
    start, end = html.index('<div id="nvidia-h100-80gb">'), html.index("</main>")
    twice = html[:end] + html[start:end] + html[end:]
    assert len(CivoScraper(env={}).parse(twice)) == len(CivoScraper(env={}).parse(html))
    conflicting = html[:end] + html[start:end].replace("$2.39<span>", "$2.49<span>") + html[end:]
    with pytest.raises(ParseError, match="civo: layout changed: two different prices"):
        CivoScraper(env={}).parse(conflicting)
