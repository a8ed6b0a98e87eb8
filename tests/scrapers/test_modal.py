"""Modal pricing-page scraper: a REFERENCE page (a browser DOM's shape, our own prices), requests, layout changes."""

from __future__ import annotations

import re

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.modal import PRICING_URL, ModalScraper
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.page_requests import fetch_with, page_requests
from tracker.errors import RobotsDisallowed
from tracker.pipeline.replay import BUNDLED_RECORDINGS, recording_info

# The bundled replay file: the markup of a Selenium page_source of modal.com/pricing (2025-06-12), trimmed to the
# "Compute costs" block (named in its manifest); every price our own (the source's x 1.07, same decimals).
PAGE = BUNDLED_RECORDINGS / "modal" / "pricing_reference.html"


def page() -> str:
    return PAGE.read_text()


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


def without_gpu_items(html: str) -> str:
    """The page with every GPU line item removed (the CPU and Memory ones stay)."""
    return re.sub(r'<div class="line-item svelte-1hbrymp"><p class="text-light-green/60">Nvidia.*?</div>', "", html)


class TestModal(ProviderContract):
    scraper_cls = ModalScraper
    named_offer = NamedOffer("Nvidia B200", 1, "on_demand", "", 6.6888)
    min_offers = 9
    handmade = True  # not a real recording: a reference page (the 2025 browser-DOM shape, our own prices)

    def test_the_fixture_is_the_labelled_reference_replay_recording(self) -> None:
        info = recording_info("modal")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        assert ModalScraper.fixture_kind == "reference" and PAGE.name.endswith("_reference.html")

    def load_raw(self) -> str:
        return page()

    def broken_payloads(self) -> list[object]:
        html = page()
        return [
            html.replace("GPU Tasks", "Accelerators"),  # section label gone
            without_gpu_items(html),  # price table removed, CPU/Memory left
            re.sub(r"\$0\.\d+ <span", "soon <span", html),  # every price unreadable
            "<html><body><p>GPU Tasks</p></body></html>",
            "",
            None,
        ]

    def bad_offer_payloads(self) -> list[object]:
        html = page()
        return [
            html.replace("$0.001174", "soon"),  # one GPU's price unreadable
            html.replace('$0.001174 <span class="text-light-green/60">/ sec</span>', "$0.001174"),  # its time unit gone
        ]

    def test_known_offers(self, offers: list[ScrapedOffer]) -> None:
        assert [o.gpu_raw for o in offers] == [
            "Nvidia B200", "Nvidia H200", "Nvidia H100", "Nvidia A100, 80 GB", "Nvidia A100, 40 GB",
            "Nvidia L40S", "Nvidia A10G", "Nvidia L4", "Nvidia T4",
        ]  # fmt: skip
        h100 = by_sku(offers)["nvidia-h100"]
        assert h100.gpu_count == 1
        assert h100.kind == "on_demand" and h100.region == ""
        assert h100.currency == "USD"
        # $0.001174 per second on the page.
        assert h100.price_per_hour == pytest.approx(0.001174 * 3600)
        assert h100.price_per_hour == pytest.approx(4.2264)
        assert h100.extra["price_per_second"] == pytest.approx(0.001174)
        assert h100.extra["gpu_component_only"] is True
        assert h100.gpu_memory_gb is None and h100.gpu is None

    def test_memory_from_the_name(self, offers: list[ScrapedOffer]) -> None:
        skus = by_sku(offers)
        a80, a40 = skus["nvidia-a100-80-gb"], skus["nvidia-a100-40-gb"]
        assert (a80.gpu_memory_gb, a80.price_per_hour) == (80, pytest.approx(2.6748))
        assert (a40.gpu_memory_gb, a40.price_per_hour) == (40, pytest.approx(0.000624 * 3600))
        assert skus["nvidia-t4"].price_per_hour == pytest.approx(0.63)

    def test_cpu_and_memory_items_are_not_offers(self, offers: list[ScrapedOffer]) -> None:
        assert not any("core" in o.gpu_raw.lower() or "memory" in o.gpu_raw.lower() for o in offers)

    def test_per_hour_display_is_taken_as_is(self) -> None:
        html = page().replace("$0.001174 <span class=\"text-light-green/60\">/ sec", "$4.23 <span class=\"text-light-green/60\">/ h")
        h100 = by_sku(ModalScraper(env={}).parse(html))["nvidia-h100"]
        assert h100.price_per_hour == pytest.approx(4.23) and h100.extra["price_per_hour"] == pytest.approx(4.23)

    def test_a_price_without_a_time_unit_quarantines_that_gpu(self) -> None:
        html = page().replace('$0.001174 <span class="text-light-green/60">/ sec</span>', "$0.001174")
        offers = by_sku(ModalScraper(env={}).parse(html))
        h100 = offers["nvidia-h100"]
        assert h100.price_per_hour is None
        assert h100.extra[UNREADABLE_PRICE] == "price field 'GPU Tasks' of 'Nvidia H100' holds '$0.001174', no time unit"
        assert len(offers) == 9 and UNREADABLE_PRICE not in offers["nvidia-h200"].extra

    def test_removed_price_table_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^modal: layout changed: no GPU line items under 'GPU Tasks'"):
            ModalScraper(env={}).parse(without_gpu_items(page()))

    def test_missing_section_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^modal: layout changed: no 'GPU Tasks' price section"):
            ModalScraper(env={}).parse(page().replace("GPU Tasks", "Accelerators"))


def test_fetch_gets_the_page_once_with_a_browser_user_agent() -> None:
    raw, sent = fetch_with(ModalScraper(env={}), PRICING_URL, page(), robots=None)  # no robots.txt: allowed
    assert raw == page()
    pages = page_requests(sent, PRICING_URL)
    assert len(pages) == 1
    assert pages[0].method == "GET" and str(pages[0].url) == "https://modal.com/pricing"
    assert pages[0].headers["User-Agent"].startswith("Mozilla/5.0")


def test_fetch_refuses_what_robots_txt_disallows() -> None:
    with pytest.raises(RobotsDisallowed, match=r"modal: robots\.txt .*disallows"):
        fetch_with(ModalScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /\n")


def test_needs_no_credentials() -> None:
    scraper = ModalScraper(env={})
    assert scraper.credentials == ()
    scraper.check_credentials()


def per_hour_state(html: str) -> str:
    """The recorded page with its toggle in the other state: every "$X / sec" printed as the
    per-hour figure "$Y / hr" (Y = X x 3600 rounded to cents). A test-built variant of the
    recording (the unit is the toggle's only effect on the list), not a capture."""

    def to_hour(m: re.Match[str]) -> str:
        return f"${float(m.group(1)) * 3600:.2f} {m.group(2)}/ hr</span>"

    return re.sub(r'\$(0\.\d+) (<span class="text-light-green/60">)/ sec</span>', to_hour, html)


def test_the_toggle_s_per_hour_state_reads_as_the_same_gpus_at_the_rounded_prices() -> None:
    """Whichever unit the server's initial state prints, the same nine GPUs come out, at prices
    that agree to the cent."""
    per_second = by_sku(ModalScraper(env={}).parse(page()))
    html = per_hour_state(page())
    assert "/ sec" not in html.split("GPU Tasks")[1].split("<hr")[0]
    per_hour = by_sku(ModalScraper(env={}).parse(html))
    assert per_hour.keys() == per_second.keys() and len(per_hour) == 9
    for sku, offer in per_hour.items():
        assert offer.price_per_hour == pytest.approx(per_second[sku].price_per_hour, abs=0.005), sku
        assert offer.extra["price_per_hour"] == offer.price_per_hour and "price_per_second" not in offer.extra
    assert per_hour["nvidia-h100"].price_per_hour == 4.23


def test_the_recorded_gpu_list_is_server_rendered() -> None:
    """The evidence the docstring cites, held to the recording: Svelte's server-render block
    markers open the GPU list and close each price, so a plain GET gets those items."""
    gpu_list = page().split("GPU Tasks", 1)[1].split("<hr", 1)[0]
    assert gpu_list.removeprefix("</p> ").startswith('<div class="space-y-2"><!--[--><div class="line-item')
    assert gpu_list.count('<!--[!--><p class="price') == 9 and gpu_list.count("<!--]-->") >= 9


def test_what_stays_unproven_is_said_where_users_and_maintainers_read() -> None:
    """The README table (caveats) and the scraper's docstring say the parser is proven on a
    browser capture, not on the served page, and what a plain GET may still change."""
    import scrapers.modal

    assert "not yet on what a plain GET receives" in ModalScraper.caveats
    doc = scrapers.modal.__doc__ or ""
    assert "Unproven until a plain GET of the page is recorded" in doc and "data: [null,null,null]" in doc
