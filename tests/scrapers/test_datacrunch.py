"""DataCrunch products-page scraper.

Fixture (real, see tests/fixtures/datacrunch/README.md): a verbatim excerpt of the 2025-08-08
Wayback capture of https://datacrunch.io/products holding the price table's four B200 rows.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.datacrunch import URL, DatacrunchScraper
from tests.conftest import load_text
from tests.scrapers.contract import ProviderContract, run_fetch
from tracker.errors import RobotsDisallowed

PAGE = "datacrunch/datacrunch_products_page_2025-08-08_excerpt.html"


def page() -> str:
    return load_text(PAGE)


def as_table(html: str) -> str:
    """The excerpt wrapped in the <table><thead><tr> it was cut from, as on the live page."""
    return f"<html><body><h2>Pricing</h2><table class='x9Qz'><thead><tr>{html}</body></html>"


def by_key(offers: list[ScrapedOffer]) -> dict[tuple[str, str], ScrapedOffer]:
    return {(o.sku, o.kind): o for o in offers}


class TestDatacrunch(ProviderContract):
    scraper_cls = DatacrunchScraper
    min_offers = 12

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        html = page()
        return [
            {},
            "",
            "<html><body><p>We moved to verda.com</p></body></html>",
            re.sub(r"<th[^>]*>On demand price</th>", "<th>Price</th>", html),  # header renamed
            re.sub(r"<th[^>]*>GPU model</th>", "<th>Model</th>", html),
            re.sub(r">(\d)</td>", ">one</td>", html),  # every GPU count not a number
            re.sub(r">\$[\d.]+/h</td>", ">call us</td>", html),  # every price cell unreadable
            re.sub(r"<tbody>.*</tbody>", "<tbody></tbody>", html, flags=re.S),  # no rows
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace(">1<", ">one<"), page().replace("$0.80/h", "call us")]  # one row's count, one cell

    @staticmethod
    def row_of(offer: Any) -> str:
        return offer.sku.removesuffix("/dynamic")  # the row's dynamic price is an offer of its own

    def test_b200_rows(self, offers: list[ScrapedOffer]) -> None:
        keys = by_key(offers)
        one = keys[("1B200.30V", "on_demand")]
        assert (one.gpu_raw, one.gpu_count, one.gpu_memory_gb, one.vcpus, one.ram_gb) == ("B200 SXM6 180GB", 1, 180, 30, 184)
        assert (one.price_per_hour, one.currency, one.region, one.available) == (3.64, "USD", "", None)
        assert "p2p" not in one.extra  # "/" means none
        eight = keys[("8B200.240V", "on_demand")]
        assert (eight.gpu_count, eight.gpu_memory_gb, eight.vcpus, eight.ram_gb, eight.price_per_hour) == (8, 180, 240, 1472, 29.10)
        assert eight.extra == {"p2p": "1.8 TB/s"}

    def test_dynamic_and_spot(self, offers: list[ScrapedOffer]) -> None:
        keys = by_key(offers)
        dyn = keys[("2B200.60V/dynamic", "on_demand")]
        assert (dyn.price_per_hour, dyn.gpu_count, dyn.extra["pricing"]) == (5.36, 2, "dynamic")
        spot = keys[("4B200.120V", "spot")]
        assert (spot.price_per_hour, spot.gpu_count) == (3.21, 4)
        assert len(offers) == 12  # 4 rows x (on demand, dynamic, spot)

    def test_parses_the_live_table_shape_too(self) -> None:
        offers = DatacrunchScraper(env={}).parse(as_table(page()))
        assert by_key(offers) == by_key(DatacrunchScraper(env={}).parse(page()))

    def test_price_table_removed_is_a_layout_change(self) -> None:
        html = as_table(page())
        without = re.sub(r"<table.*</table>", "<div>Contact us for prices</div>", html, flags=re.S)
        with pytest.raises(ParseError, match=r"^datacrunch: layout changed: no price table"):
            DatacrunchScraper(env={}).parse(without)

    def test_missing_or_contact_sales_cells(self) -> None:
        html = page().replace("$0.80/h", "–").replace("$7.27/h", "Contact sales")
        keys = by_key(DatacrunchScraper(env={}).parse(html))
        assert ("1B200.30V", "spot") not in keys  # "–": not offered
        assert keys[("2B200.60V", "on_demand")].price_per_hour is None  # listed without a price

    def test_a_price_cell_with_text_that_is_no_price_is_quarantined_not_a_missing_offer(self) -> None:
        keys = by_key(DatacrunchScraper(env={}).parse(page().replace("$0.80/h", "call us")))
        spot = keys[("1B200.30V", "spot")]
        assert spot.price_per_hour is None
        assert spot.extra[UNREADABLE_PRICE] == "price field 'Spot price' of '1B200.30V' holds 'call us', not a price"
        assert UNREADABLE_PRICE not in keys[("1B200.30V", "on_demand")].extra and len(keys) == 12

    def test_a_gpu_count_that_is_no_number_quarantines_the_row(self) -> None:
        offers = DatacrunchScraper(env={}).parse(page().replace(">1<", ">one<"))
        bad = {o.sku: o.extra[UNREADABLE_PRICE] for o in offers if UNREADABLE_PRICE in o.extra}
        assert set(bad) == {"1B200.30V", "1B200.30V/dynamic"} and len(offers) == 12
        assert set(bad.values()) == {"GPU count field 'GPU' of '1B200.30V' holds 'one', not a number"}

    def test_optional_columns_may_go(self) -> None:
        html = re.sub(r"<th[^>]*>Dynamic price</th>", "<th>Something else</th>", page())
        keys = by_key(DatacrunchScraper(env={}).parse(html))
        assert not [k for k in keys if k[0].endswith("/dynamic")]
        assert keys[("1B200.30V", "spot")].price_per_hour == 0.80


def test_fetch_checks_robots_then_gets_the_page_once() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if request.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nDisallow: /cdn-cgi/\n")
        if str(request.url) == "https://datacrunch.io/products":
            return httpx.Response(301, headers={"Location": "https://verda.com/products"})
        if str(request.url) == "https://verda.com/products":
            return httpx.Response(200, text=page(), headers={"Content-Type": "text/html"})
        return httpx.Response(404)

    raw = run_fetch(DatacrunchScraper(env={}), httpx.MockTransport(handler))
    assert [(r.method, str(r.url)) for r in calls] == [
        ("GET", "https://datacrunch.io/robots.txt"),
        ("GET", URL),
        ("GET", "https://verda.com/products"),
    ]
    assert "Authorization" not in calls[1].headers
    assert len(DatacrunchScraper(env={}).parse(raw)) == 12


def test_robots_disallow_stops_the_fetch() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if request.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nDisallow: /products\n")
        return httpx.Response(200, text=page())

    with pytest.raises(RobotsDisallowed, match=r"^datacrunch: robots.txt of datacrunch.io disallows fetching https://datacrunch.io/products"):
        run_fetch(DatacrunchScraper(env={}), httpx.MockTransport(handler))
    assert calls == ["/robots.txt"]


def test_needs_no_credentials() -> None:
    assert DatacrunchScraper.credentials == ()
    DatacrunchScraper(env={}).check_credentials()


def test_datacrunch_is_retired_in_favour_of_verda() -> None:
    """The renamed site's old page scraper is not collected: Verda's offers come from the verda
    provider alone (never twice under two names). Its parser stays, so stored history reads."""
    from datetime import date

    from scrapers.base import Retired
    from scrapers.verda import VerdaScraper

    retired = DatacrunchScraper.retired
    assert isinstance(retired, Retired) and retired.on == date(2026, 12, 3)
    assert "Verda" in retired.reason and "verda provider" in retired.reason
    assert DatacrunchScraper.caveats.startswith("retired:")
    assert VerdaScraper.retired is None and VerdaScraper.credentials == ()  # the successor needs no key
