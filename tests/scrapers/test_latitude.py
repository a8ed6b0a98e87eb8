"""Latitude.sh: bare-metal GPU plans from the pricing page's flight data (a reference fixture: real structure, own values)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scrapers._nextjs import flight_stream
from scrapers.base import ParseError, ScrapedOffer
from scrapers.latitude import PRICING_URL, LatitudeScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract, index_offers
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)

PAGE = "latitude/pricing_reference.html"  # the replay recording: the one copy


def page_with(plans_data: Any) -> str:
    """A page whose flight data holds ``plansData`` = ``plans_data``."""
    line = '7:["$","$L15",null,{"plansData":%s}]\n' % json.dumps(plans_data)
    return "<html><body><script>self.__next_f.push([1,%s])</script></body></html>" % json.dumps(line)


def plans_data() -> dict[str, Any]:
    stream = flight_stream("latitude", load_recording_text(PAGE))
    start = stream.index('"plansData":') + len('"plansData":')
    data, _ = json.JSONDecoder().raw_decode(stream, start)
    return data


def changed(slug: str, **gpu: Any) -> str:
    data = plans_data()
    plan = next(p for p in data["servers"] if p["attributes"]["slug"] == slug)
    plan["attributes"]["specs"]["gpu"] = gpu
    return page_with(data)


class TestLatitude(ProviderContract):
    scraper_cls = LatitudeScraper
    named_offer = NamedOffer("H100", 8, "on_demand", "United States", 17.2)
    handmade = True  # a reference fixture: the real structure with our own values
    min_offers = 13

    def load_raw(self) -> Any:
        return load_recording_text(PAGE)

    def broken_payloads(self) -> list[Any]:
        data = plans_data()
        cpu_only = {"servers": [p for p in data["servers"] if not p["attributes"]["specs"]["gpu"]]}
        no_regions = plans_data()
        no_regions["servers"][1]["attributes"]["regions"] = {"United States": {}}
        return [
            "<html><body><p>$2.19/hr</p></body></html>",  # no flight data
            "",
            page_with([]),  # plansData is no object
            page_with({"servers": []}),
            page_with(cpu_only),  # no GPU plan left
            changed("g3-h100-small", gpu_count=1, model="H100"),  # the GPU spec's fields renamed
            page_with(no_regions),
            "<html><body><script>self.__next_f.push([1,\"2:{\\\"plans\\\":[]}\\n\"])</script></body></html>",
        ]

    def test_an_eight_gpu_server_hourly_and_monthly(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers)
        hourly = by[("g3-h100-large", "United States", "on_demand")]
        assert (hourly.gpu_raw, hourly.gpu_count, hourly.price_per_hour, hourly.currency) == ("H100", 8, 17.2, "USD")
        assert (hourly.gpu_memory_gb, hourly.vcpus, hourly.ram_gb, hourly.available) == (80, 64, 1536, True)
        assert hourly.extra["stock"] == "low" and hourly.extra["interconnect"] == "NVLink"
        monthly = by[("g3-h100-large", "United States", "reserved")]
        assert (monthly.term_months, monthly.extra["price_per_month"]) == (1, 9400)
        assert monthly.price_per_hour == pytest.approx(9400 / 730)

    def test_usd_only_with_brl_kept_aside(self, offers: list[ScrapedOffer]) -> None:
        small = index_offers(offers)[("g3-h100-small", "United States", "on_demand")]
        assert (small.currency, small.price_per_hour) == ("USD", 2.19)
        assert small.extra["brl"] == {"hour": 12.05, "month": 6595, "year": 66550}
        assert {o.currency for o in offers} == {"USD"}

    def test_stock_level_unavailable_is_listed_unavailable(self, offers: list[ScrapedOffer]) -> None:
        brazil = index_offers(offers)[("g3-h100-small", "Brazil", "on_demand")]
        assert (brazil.available, brazil.price_per_hour, brazil.extra["stock"]) == (False, 2.49, "unavailable")

    def test_a_region_without_a_price_and_a_term_not_offered_give_no_offer(self, offers: list[ScrapedOffer]) -> None:
        assert not [o for o in offers if o.region == "United Kingdom"]  # null USD, 0 BRL
        l40s = [o for o in offers if o.sku == "g3-l40s-medium"]
        assert [(o.kind, o.price_per_hour) for o in l40s] == [("on_demand", 2.3)]  # no month price

    def test_cpu_servers_and_gpu_less_vm_plans_are_not_offers(self, offers: list[ScrapedOffer]) -> None:
        assert {o.sku for o in offers} == {"g3-h100-small", "g3-h100-large", "g4-rtx6kpro-large", "g4-b300-large", "g3-l40s-medium"}

    def test_the_catalog_resolves_every_gpu(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert {resolve_gpu(o.gpu_raw, o.gpu_memory_gb) for o in offers} == {"H100-SXM", "RTX-PRO-6000", "B300", "L40S"}

    def test_a_reshaped_gpu_spec_is_a_clear_parse_error(self) -> None:
        with pytest.raises(ParseError, match=r"latitude: plan 'g3-h100-small' has a GPU spec without a count and type"):
            LatitudeScraper(env={}).parse(changed("g3-h100-small", gpu_count=1, model="H100"))


def test_fetch_reads_robots_then_the_page_once() -> None:
    assert_fetches_page_once(LatitudeScraper(env={}), PRICING_URL, load_recording_text(PAGE))


def test_fetch_respects_robots() -> None:
    assert_refused_by_robots(LatitudeScraper(env={}), PRICING_URL, load_recording_text(PAGE), "User-agent: *\nDisallow: /pricing\n")


def test_needs_no_credentials() -> None:
    LatitudeScraper(env={}).check_credentials()
    assert LatitudeScraper.credentials == () and LatitudeScraper.optional_credentials == ()
