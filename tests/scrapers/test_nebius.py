"""Nebius price-page scraper: the recorded page (a real Wayback excerpt) and the request it makes."""

from __future__ import annotations

import httpx
import pytest
from bs4 import BeautifulSoup

from scrapers.base import FetchError, ParseError, ScrapedOffer
from scrapers.http import USER_AGENT
from scrapers.nebius import PRICES_URL, NebiusScraper
from tests.conftest import load_text
from tests.scrapers.contract import ProviderContract, run_fetch

PAGE = "nebius/nebius_prices_page_2026-07-12_excerpt.html"


def _page_without_price_table() -> str:
    doc = BeautifulSoup(load_text(PAGE), "lxml")
    for table in doc.select("div.pc-highlight-table-block__table"):
        table.decompose()
    assert "GPU-hour" not in str(doc)
    return str(doc)


def _page_without_rows() -> str:
    doc = BeautifulSoup(load_text(PAGE), "lxml")
    for body in doc.select("div.pc-highlight-table-block__body"):
        body.decompose()
    return str(doc)


def _page_with_price(old: str, new: str) -> str:
    page = load_text(PAGE)
    assert old in page
    return page.replace(old, new, 1)


def by_key(offers: list[ScrapedOffer]) -> dict[tuple[str, str], ScrapedOffer]:
    return {(o.sku, o.kind): o for o in offers}


class TestNebius(ProviderContract):
    scraper_cls = NebiusScraper
    min_offers = 10

    def load_raw(self) -> str:
        return load_text(PAGE)

    def broken_payloads(self) -> list[str]:
        return [
            "",
            "<html><body><h1>Prices</h1><p>Coming soon</p></body></html>",
            _page_without_price_table(),
            _page_without_rows(),
            _page_with_price("<p>$3.85</p>", "<p>TBD</p>"),
            # the per-GPU-hour unit gone from the headers: the table now means something else
            load_text(PAGE).replace(", GPU-hour", ", hour"),
        ]

    def test_known_offers(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        h100 = o[("NVIDIA HGX H100", "on_demand")]
        assert (h100.gpu_raw, h100.gpu_count, h100.price_per_hour, h100.currency) == ("NVIDIA HGX H100", 1, 3.85, "USD")
        assert (h100.vcpus, h100.ram_gb, h100.region) == (16, 200, "")
        assert h100.extra["price_basis"] == "per GPU-hour"
        assert o[("NVIDIA HGX H100", "spot")].price_per_hour == 2.15  # "Preemptible" column
        assert o[("NVIDIA HGX H200", "on_demand")].price_per_hour == 4.50
        assert o[("NVIDIA HGX B200", "spot")].price_per_hour == 3.95
        assert o[("NVIDIA RTX PRO 6000", "on_demand")].price_per_hour == 1.80

    def test_contact_us_is_listed_without_price_and_dashes_are_not_offered(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        gb200 = o[("NVIDIA GB200 NVL72", "on_demand")]
        assert gb200.price_per_hour is None
        assert gb200.extra["contact_sales"] is True
        assert ("NVIDIA GB200 NVL72", "spot") not in o  # "––" in the preemptible column
        assert ("NVIDIA GB300 NVL72", "spot") not in o

    def test_from_prices_and_cpu_variants(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        intel = o[("NVIDIA L40S with Intel CPU", "on_demand")]
        amd = o[("NVIDIA L40S with AMD CPU", "spot")]
        assert (intel.gpu_raw, intel.price_per_hour, intel.extra["price_from"]) == ("NVIDIA L40S", 1.82, True)
        assert (intel.vcpus, intel.ram_gb, intel.extra["vcpus_range"]) == (16, 96, "16-192")
        assert intel.extra["cpu"] == "Intel"
        assert (amd.gpu_raw, amd.price_per_hour, amd.extra["cpu"]) == ("NVIDIA L40S", 0.74, "AMD")

    def test_every_item_of_the_table_is_read(self, offers: list[ScrapedOffer]) -> None:
        assert len({o.sku for o in offers}) == 9
        assert len(offers) == 16  # 9 on-demand (2 "Contact us") + 7 preemptible

    def test_removed_price_table_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^nebius: layout changed: "):
            NebiusScraper(env={}).parse(_page_without_price_table())

    def test_unreadable_price_names_the_cell(self) -> None:
        with pytest.raises(ParseError, match="nebius: layout changed: .*'TBD'.*NVIDIA HGX H100"):
            NebiusScraper(env={}).parse(_page_with_price("<p>$3.85</p>", "<p>TBD</p>"))

    def test_euro_prices_keep_their_currency(self) -> None:
        page = _page_with_price("<p>$3.85</p>", "<p>3,55 €</p>")
        o = by_key(NebiusScraper(env={}).parse(page))[("NVIDIA HGX H100", "on_demand")]
        assert (o.price_per_hour, o.currency) == (3.55, "EUR")

    def test_price_ranges_keep_the_lower_end(self) -> None:
        page = _page_with_price("<p>$3.85</p>", "<p>$3.85 - $4.10</p>")
        o = by_key(NebiusScraper(env={}).parse(page))[("NVIDIA HGX H100", "on_demand")]
        assert (o.price_per_hour, o.extra["price_max_per_hour"]) == (3.85, 4.10)

    def test_a_table_rendered_twice_counts_once_unless_it_disagrees(self) -> None:
        page = load_text(PAGE)
        assert len(NebiusScraper(env={}).parse(page + page)) == 16
        with pytest.raises(ParseError, match="nebius: layout changed: item 'NVIDIA HGX H100' is listed twice"):
            NebiusScraper(env={}).parse(page + _page_with_price("<p>$3.85</p>", "<p>$3.95</p>"))

    def test_needs_no_credentials(self) -> None:
        NebiusScraper(env={}).check_credentials()


def _handler(seen: list[httpx.Request], robots: str | None = None):
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(200, text=robots) if robots is not None else httpx.Response(404)
        return httpx.Response(200, text=load_text(PAGE), headers={"Content-Type": "text/html"})

    return handle


def test_fetch_gets_the_price_page_once_with_a_browser_user_agent() -> None:
    seen: list[httpx.Request] = []
    raw = run_fetch(NebiusScraper(env={}), httpx.MockTransport(_handler(seen, robots="User-agent: *\nDisallow: /console/\n")))
    pages = [r for r in seen if r.url.path != "/robots.txt"]
    assert len(pages) == 1
    assert (pages[0].method, str(pages[0].url)) == ("GET", PRICES_URL)
    assert pages[0].headers["User-Agent"] == USER_AGENT
    assert pages[0].headers["User-Agent"].startswith("Mozilla/5.0")
    assert any(r.url.path == "/robots.txt" for r in seen)
    assert NebiusScraper(env={}).parse(raw)


def test_fetch_refuses_when_robots_txt_disallows() -> None:
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(_handler(seen, robots="User-agent: *\nDisallow: /prices\n"))
    with pytest.raises(FetchError, match="nebius: robots.txt .*disallows"):
        run_fetch(NebiusScraper(env={}), transport)
    assert all(r.url.path == "/robots.txt" for r in seen)
