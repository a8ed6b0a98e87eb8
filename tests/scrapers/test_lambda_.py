"""Lambda pricing-page scraper on a REFERENCE page (the shape of a Wayback excerpt, 8x tab, our own prices),
requests, layout changes."""

from __future__ import annotations

import re

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.lambda_ import PRICING_URL, LambdaScraper
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.page_requests import fetch_with, page_requests
from tracker.errors import RobotsDisallowed
from tracker.pipeline.replay import BUNDLED_RECORDINGS, recording_info

# The bundled replay file: the markup of the Wayback capture 20260109103934 of lambda.ai/pricing (named in its
# manifest), every price our own (the source's x 1.07, rounded to the cent).
PAGE = BUNDLED_RECORDINGS / "lambda" / "pricing_reference.html"


def page() -> str:
    return PAGE.read_text()


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestLambda(ProviderContract):
    scraper_cls = LambdaScraper
    named_offer = NamedOffer("NVIDIA B200 SXM6", 8, "on_demand", "", 42.72)
    handmade = True  # not a real recording: a reference page (the 2026 shape, our own prices)

    def test_the_fixture_is_the_labelled_reference_replay_recording(self) -> None:
        info = recording_info("lambda")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        assert LambdaScraper.fixture_kind == "reference" and PAGE.name.endswith("_reference.html")
    min_offers = 5

    def load_raw(self) -> str:
        return page()

    def broken_payloads(self) -> list[object]:
        html = page()
        return [
            re.sub(r"<table.*?</table>", "", html, flags=re.S),  # price table removed
            re.sub(r"<tr [^>]*data-plan=.*?</tr>", "", html, flags=re.S),  # rows removed
            html.replace("PRICE/GPU/HR*", "COST"),  # no price column any more
            re.sub(r">\$[\d.]+</td>", ">soon</td>", html),  # every price cell unreadable
            html.replace(">8x</button>", ">All</button>"),  # no GPU count
            "<html><body><p>Pricing</p></body></html>",
            {"not": "html"},
        ]

    def bad_offer_payloads(self) -> list[object]:
        return [page().replace("$5.34", "soon"), page().replace("$3.20", "")]  # one row's price unreadable, or gone

    def test_known_offers(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) == 5
        b200 = by_sku(offers)["8x-nvidia-b200-sxm6-180gb"]
        assert b200.gpu_raw == "NVIDIA B200 SXM6"
        assert b200.gpu_count == 8
        assert b200.kind == "on_demand" and b200.term_months == 0
        assert b200.region == ""
        assert b200.gpu_memory_gb == 180
        assert b200.vcpus == 208 and b200.ram_gb == 2900
        assert b200.currency == "USD"
        # $5.34 per GPU-hour on the page -> the whole 8-GPU instance.
        assert b200.price_per_hour == pytest.approx(42.72)
        assert b200.price_per_gpu_hour == pytest.approx(5.34)
        assert b200.extra["price_per_gpu_hour"] == pytest.approx(5.34)
        assert b200.extra["storage"] == "22 TiB SSD"
        assert b200.gpu is None  # the pipeline normalises gpu_raw

    def test_two_a100_rows_differ_by_memory(self, offers: list[ScrapedOffer]) -> None:
        skus = by_sku(offers)
        a80, a40 = skus["8x-nvidia-a100-sxm-80gb"], skus["8x-nvidia-a100-sxm-40gb"]
        assert a80.gpu_raw == a40.gpu_raw == "NVIDIA A100 SXM"
        assert (a80.gpu_memory_gb, a80.price_per_hour) == (80, pytest.approx(8 * 1.92))
        assert (a40.gpu_memory_gb, a40.price_per_hour, a40.vcpus) == (40, pytest.approx(11.04), 124)
        v100 = skus["8x-nvidia-tesla-v100-16gb"]
        assert v100.price_per_hour == pytest.approx(4.72) and v100.ram_gb == 448

    def test_count_comes_from_the_tab(self) -> None:
        offers = LambdaScraper(env={}).parse(page().replace(">8x</button>", ">4x</button>"))
        h100 = by_sku(offers)["4x-nvidia-h100-sxm-80gb"]
        assert h100.gpu_count == 4 and h100.price_per_hour == pytest.approx(4 * 3.20)

    def test_count_prefix_in_plan_name_wins_over_the_tab(self) -> None:
        html = page().replace('data-plan="NVIDIA H100 SXM"', 'data-plan="2x NVIDIA H100 SXM"')
        h100 = [o for o in LambdaScraper(env={}).parse(html) if "h100" in o.sku][0]
        assert (h100.sku, h100.gpu_raw, h100.gpu_count) == ("2x-nvidia-h100-sxm-80gb", "NVIDIA H100 SXM", 2)
        assert h100.price_per_hour == pytest.approx(2 * 3.20)

    def test_tables_outside_the_count_tabs_are_not_read(self) -> None:
        other = (
            "<h2>1-Click Clusters</h2><table><thead><tr><th></th><th>VRAM/GPU</th><th>PRICE/GPU/HR</th></tr></thead>"
            '<tbody><tr data-plan="NVIDIA B200"><th>NVIDIA B200</th><td>180 GB</td><td>$3.79</td></tr></tbody></table>'
        )
        heading = '<h2 class="h2">Instances pricing</h2>'
        offers = LambdaScraper(env={}).parse(page().replace(heading, other + heading))
        assert len(offers) == 5 and all(o.gpu_count == 8 for o in offers)

    def test_per_instance_price_header_is_not_multiplied(self) -> None:
        offers = LambdaScraper(env={}).parse(page().replace("PRICE/GPU/HR*", "PRICE/HR"))
        b200 = by_sku(offers)["8x-nvidia-b200-sxm6-180gb"]
        assert b200.price_per_hour == pytest.approx(5.34)
        assert b200.extra["price_per_gpu_hour"] == pytest.approx(5.34 / 8)

    def test_contact_sales_is_listed_without_price(self) -> None:
        offers = LambdaScraper(env={}).parse(page().replace("$5.34", "Contact sales"))
        b200 = by_sku(offers)["8x-nvidia-b200-sxm6-180gb"]
        assert b200.price_per_hour is None and b200.extra["contact_sales"] is True

    def test_non_usd_keeps_its_currency(self) -> None:
        offers = LambdaScraper(env={}).parse(page().replace("$0.59", "0,59 €"))
        v100 = by_sku(offers)["8x-nvidia-tesla-v100-16gb"]
        assert v100.currency == "EUR" and v100.price_per_hour == pytest.approx(4.72)

    def test_removed_table_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^lambda: layout changed: .*pricing table"):
            LambdaScraper(env={}).parse(re.sub(r"<table.*?</table>", "", page(), flags=re.S))

    def test_unparseable_price_quarantines_its_row_naming_the_column(self) -> None:
        offers = by_sku(LambdaScraper(env={}).parse(page().replace("$5.34", "soon")))
        b200 = offers["8x-nvidia-b200-sxm6-180gb"]
        assert b200.price_per_hour is None and "contact_sales" not in b200.extra
        assert b200.extra[UNREADABLE_PRICE] == "price field 'PRICE/GPU/HR*' of 'NVIDIA B200 SXM6' holds 'soon', not a price"
        assert len(offers) == 5 and offers["8x-nvidia-h100-sxm-80gb"].price_per_hour == pytest.approx(8 * 3.20)


def test_fetch_gets_the_page_once_with_a_browser_user_agent() -> None:
    raw, sent = fetch_with(LambdaScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /api/\n")
    assert raw == page()
    pages = page_requests(sent, PRICING_URL)
    assert len(pages) == 1
    assert pages[0].method == "GET" and str(pages[0].url) == "https://lambda.ai/pricing"
    assert pages[0].headers["User-Agent"].startswith("Mozilla/5.0")
    assert [r.url.path for r in sent].count("/robots.txt") == 1


def test_fetch_refuses_what_robots_txt_disallows() -> None:
    with pytest.raises(RobotsDisallowed, match=r"lambda: robots\.txt .*disallows"):
        fetch_with(LambdaScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /pricing\n")


def test_needs_no_credentials() -> None:
    scraper = LambdaScraper(env={})
    assert scraper.credentials == ()
    scraper.check_credentials()  # a public page: never skipped for missing credentials


class TestEditedRows:
    """The real page with one edit each (badge, TB-sized RAM, a td header row), as Lambda prints them elsewhere."""

    NAME_CELL = '<th style="width:31%" data-label="Plan">NVIDIA B200 SXM6</th>'

    def test_a_new_badge_is_neither_in_the_gpu_name_nor_in_the_offer_id(self) -> None:
        plain = by_sku(LambdaScraper(env={}).parse(page()))["8x-nvidia-b200-sxm6-180gb"]
        badged_cell = '<th style="width:31%" data-label="Plan">NVIDIA B200 SXM6 <span class="tag">New</span></th>'
        for html in (
            page().replace(self.NAME_CELL, badged_cell),
            page().replace(self.NAME_CELL, badged_cell).replace('data-plan="NVIDIA B200 SXM6"', ""),
            page().replace('data-plan="NVIDIA B200 SXM6"', 'data-plan="NVIDIA B200 SXM6 New"'),
        ):
            b200 = next(o for o in LambdaScraper(env={}).parse(html) if "b200" in o.sku)
            assert (b200.sku, b200.gpu_raw) == (plain.sku, plain.gpu_raw) == ("8x-nvidia-b200-sxm6-180gb", "NVIDIA B200 SXM6")
            assert b200.extra["badge"] == "New" and b200.price_per_hour == plain.price_per_hour

    def test_a_name_that_only_contains_the_word_is_kept(self) -> None:
        html = page().replace('data-plan="NVIDIA B200 SXM6"', 'data-plan="NVIDIA Newton 1"')
        assert any(o.gpu_raw == "NVIDIA Newton 1" for o in LambdaScraper(env={}).parse(html))

    def test_ram_in_tb_agrees_with_the_gib_rows_beside_it(self) -> None:
        html = page().replace("<td data-label=\"RAM\">2900 GiB</td>", "<td data-label=\"RAM\">1.8 TB</td>")
        offers = by_sku(LambdaScraper(env={}).parse(html))
        assert offers["8x-nvidia-b200-sxm6-180gb"].ram_gb == 1800 == offers["8x-nvidia-h100-sxm-80gb"].ram_gb

    def test_a_header_row_of_td_cells_is_not_read_as_an_instance(self) -> None:
        header = "<thead><tr><th style=\"width:31%\"></th><th>VRAM/GPU</th><th>vCPUs</th><th>RAM</th><th>STORAGE</th><th>PRICE/GPU/HR*</th></tr></thead>"
        assert header in page()
        td_header = header.replace("<th ", "<td ").replace("<th>", "<td>").replace("</th>", "</td>")
        offers = LambdaScraper(env={}).parse(page().replace(header, td_header))
        assert by_sku(offers).keys() == by_sku(LambdaScraper(env={}).parse(page())).keys()
