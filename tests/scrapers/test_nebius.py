"""Nebius price-page scraper: a REFERENCE page in the shape of a 2026-07 Wayback excerpt (our own prices), the
replayed September 2026 recording, and the request it makes."""

from __future__ import annotations

import re

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.nebius import PRICES_URL, NebiusScraper
from tests.conftest import load_recording_text, load_text
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.page_edits import replaced, without
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)

# The older page shape: the markup of a Wayback excerpt of 2026-07-12 (no licence stated), every price our own
# (the source's x 1.07, rounded to the cent); see tests/fixtures/nebius/README.md.
PAGE = "nebius/nebius_prices_page_2026-07-12_excerpt_reference.html"


def _page_without_price_table() -> str:
    page = without(load_text(PAGE), "div.pc-highlight-table-block__table")
    assert "GPU-hour" not in page
    return page


def _page_without_rows() -> str:
    return without(load_text(PAGE), "div.pc-highlight-table-block__body")


def _page_with_price(old: str, new: str) -> str:
    return replaced(load_text(PAGE), old, new)


def by_key(offers: list[ScrapedOffer]) -> dict[tuple[str, str], ScrapedOffer]:
    return {(o.sku, o.kind): o for o in offers}


class TestNebius(ProviderContract):
    scraper_cls = NebiusScraper
    named_offer = NamedOffer("NVIDIA HGX B300", 1, "on_demand", "", 7.85)
    min_offers = 10

    def load_raw(self) -> str:
        return load_text(PAGE)

    def broken_payloads(self) -> list[str]:
        return [
            "",
            "<html><body><h1>Prices</h1><p>Coming soon</p></body></html>",
            _page_without_price_table(),
            _page_without_rows(),
            re.sub(r"\$\d+\.\d+", "TBD", load_text(PAGE)),  # every price unreadable
            # the per-GPU-hour unit gone from the headers: the table now means something else
            load_text(PAGE).replace(", GPU-hour", ", hour"),
        ]

    def bad_offer_payloads(self) -> list[str]:
        return [_page_with_price("<p>$4.12</p>", "<p>TBD</p>")]  # one item's on-demand price unreadable

    def test_known_offers(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        h100 = o[("NVIDIA HGX H100", "on_demand")]
        assert (h100.gpu_raw, h100.gpu_count, h100.price_per_hour, h100.currency) == ("NVIDIA HGX H100", 1, 4.12, "USD")
        assert (h100.vcpus, h100.ram_gb, h100.region) == (16, 200, "")
        assert h100.extra["price_basis"] == "per GPU-hour"
        assert o[("NVIDIA HGX H100", "spot")].price_per_hour == 2.30  # "Preemptible" column
        assert o[("NVIDIA HGX H200", "on_demand")].price_per_hour == 4.82
        assert o[("NVIDIA HGX B200", "spot")].price_per_hour == 4.23
        assert o[("NVIDIA RTX PRO 6000", "on_demand")].price_per_hour == 1.93

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
        assert (intel.gpu_raw, intel.price_per_hour, intel.extra["price_from"]) == ("NVIDIA L40S", 1.95, True)
        assert (intel.vcpus, intel.ram_gb, intel.extra["vcpus_range"]) == (16, 96, "16-192")
        assert intel.extra["cpu"] == "Intel"
        assert (amd.gpu_raw, amd.price_per_hour, amd.extra["cpu"]) == ("NVIDIA L40S", 0.79, "AMD")

    def test_every_item_of_the_table_is_read(self, offers: list[ScrapedOffer]) -> None:
        assert len({o.sku for o in offers}) == 9
        assert len(offers) == 16  # 9 on-demand (2 "Contact us") + 7 preemptible

    def test_removed_price_table_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^nebius: layout changed: "):
            NebiusScraper(env={}).parse(_page_without_price_table())

    def test_unreadable_price_quarantines_that_offer_naming_the_cell(self) -> None:
        o = by_key(NebiusScraper(env={}).parse(_page_with_price("<p>$4.12</p>", "<p>TBD</p>")))
        h100 = o[("NVIDIA HGX H100", "on_demand")]
        assert h100.price_per_hour is None and "contact_sales" not in h100.extra
        assert h100.extra[UNREADABLE_PRICE] == "price field 'On-demand, GPU-hour' of 'NVIDIA HGX H100' holds 'TBD', not a price"
        assert len(o) == 16 and o[("NVIDIA HGX H100", "spot")].price_per_hour == 2.30

    def test_euro_prices_keep_their_currency(self) -> None:
        page = _page_with_price("<p>$4.12</p>", "<p>3,55 €</p>")
        o = by_key(NebiusScraper(env={}).parse(page))[("NVIDIA HGX H100", "on_demand")]
        assert (o.price_per_hour, o.currency) == (3.55, "EUR")

    def test_price_ranges_keep_the_lower_end(self) -> None:
        page = _page_with_price("<p>$4.12</p>", "<p>$4.12 - $4.39</p>")
        o = by_key(NebiusScraper(env={}).parse(page))[("NVIDIA HGX H100", "on_demand")]
        assert (o.price_per_hour, o.extra["price_max_per_hour"]) == (4.12, 4.39)

    def test_a_table_rendered_twice_counts_once_unless_it_disagrees(self) -> None:
        page = load_text(PAGE)
        assert len(NebiusScraper(env={}).parse(page + page)) == 16
        with pytest.raises(ParseError, match="nebius: layout changed: item 'NVIDIA HGX H100' is listed twice"):
            NebiusScraper(env={}).parse(page + _page_with_price("<p>$4.12</p>", "<p>$3.95</p>"))

    def test_needs_no_credentials(self) -> None:
        NebiusScraper(env={}).check_credentials()


def test_fetch_gets_the_price_page_once_with_a_browser_user_agent() -> None:
    raw = assert_fetches_page_once(NebiusScraper(env={}), PRICES_URL, load_text(PAGE),
                                   robots="User-agent: *\nDisallow: /console/\n")
    assert NebiusScraper(env={}).parse(raw)


def test_fetch_refuses_when_robots_txt_disallows() -> None:
    assert_refused_by_robots(NebiusScraper(env={}), PRICES_URL, load_text(PAGE), robots="User-agent: *\nDisallow: /prices\n")


# Real excerpt: ewyluda/gpu-price-index tests/fixtures/nebius.html @ eb72cc64 (MIT), the two GPU price
# tables of nebius.com/prices as of September 2026, copied whole: current on-demand prices beside
# "GPU-hour (Effective October 1, 2026)" ones, and spot prices in a table of their own.
PAGE_2026_09 = "nebius/prices_gpu_tables_2026-09.html"  # the replay recording: the one copy


class TestAnnouncedPrices2026:
    @pytest.fixture()
    def offers(self) -> list[ScrapedOffer]:
        return NebiusScraper(env={}).parse(load_recording_text(PAGE_2026_09))

    def test_the_current_price_is_the_offer_and_the_announced_one_is_kept_with_its_date(self, offers: list[ScrapedOffer]) -> None:
        h100 = by_key(offers)[("NVIDIA HGX H100", "on_demand")]
        assert h100.price_per_hour == 3.85
        assert (h100.extra["announced_price_per_hour"], h100.extra["announced_effective"]) == (4.50, "2026-10-01")
        b300 = by_key(offers)[("NVIDIA HGX B300", "on_demand")]
        assert (b300.price_per_hour, b300.extra["announced_price_per_hour"]) == (7.85, 9.50)
        gb300 = by_key(offers)[("NVIDIA GB300 NVL72", "on_demand")]
        assert gb300.price_per_hour is None and gb300.extra["announced_contact_sales"] is True

    def test_an_unreadable_announced_price_quarantines_the_on_demand_offer(self) -> None:
        page = replaced(load_recording_text(PAGE_2026_09), "<p>$3.85</p></div></div><div class=\"pc-highlight-table-block__cell\"><div><p>$4.50</p>",
                        "<p>$3.85</p></div></div><div class=\"pc-highlight-table-block__cell\"><div><p>TBD</p>")
        o = by_key(NebiusScraper(env={}).parse(page))
        reason = o[("NVIDIA HGX H100", "on_demand")].extra[UNREADABLE_PRICE]
        assert reason.startswith("price field 'GPU-hour (Effective October 1, 2026)' of 'NVIDIA HGX H100' holds 'TBD'")
        assert UNREADABLE_PRICE not in o[("NVIDIA HGX H200", "on_demand")].extra

    def test_the_announced_column_is_no_offer_of_its_own(self, offers: list[ScrapedOffer]) -> None:
        assert {o.kind for o in offers} == {"on_demand", "spot"}
        assert len([o for o in offers if o.kind == "on_demand"]) == 9

    def test_spot_prices_come_from_their_own_table(self, offers: list[ScrapedOffer]) -> None:
        spot = by_key(offers)[("NVIDIA HGX H100", "spot")]
        assert spot.price_per_hour == 0.79 and spot.extra["price_from"] is True
        assert by_key(offers)[("NVIDIA L40S with AMD CPU", "spot")].price_per_hour == 0.90  # "from $0.90**"
        assert len([o for o in offers if o.kind == "spot"]) == 7
        assert "announced_effective" not in spot.extra

    def test_the_store_gets_the_price_in_effect_when_the_page_was_seen(self, offers: list[ScrapedOffer]) -> None:
        from datetime import UTC, datetime

        from tracker.pipeline.normalise import normalise

        h100 = by_key(offers)[("NVIDIA HGX H100", "on_demand")]
        before = normalise(h100, observed_at=datetime(2026, 9, 30, 23, 59, tzinfo=UTC))
        assert before.price_per_hour == 3.85 and before.extra["announced_price_per_hour"] == 4.50
        after = normalise(h100, observed_at=datetime(2026, 10, 1, 0, 0, tzinfo=UTC))
        assert after.price_per_hour == after.price_per_gpu_hour == 4.50
        assert (after.extra["superseded_price_per_hour"], after.extra["price_effective_from"]) == (3.85, "2026-10-01")
        assert normalise(h100).price_per_hour == 3.85  # no observation time: the price as printed
