"""Crusoe pricing-page scraper on a REFERENCE page and the request it makes.

The page is the bundled replay file (tracker/recordings/crusoe/pricing_reference.html): the markup of a
2025-12-15 Wayback excerpt of www.crusoe.ai/cloud/pricing (named in its manifest), every price our own
(the source price x 1.07, rounded to the cent), so the assertions check the mapping, not market prices.
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.crusoe import PRICING_URL, CrusoeScraper
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.page_edits import replaced, without
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)
from tracker.pipeline.replay import BUNDLED_RECORDINGS, recording_info

# The reference page served by replay: the excerpt's shape minus its last, cut-off item.
PAGE_FILE = BUNDLED_RECORDINGS / "crusoe" / "pricing_reference.html"
# That cut-off item as the source excerpt ends (its markup unchanged): "NVIDIA A100", heading only,
# its price cells outside the cut.
CUT_OFF_ITEM = (
    '<div role="listitem" class="prixing-item w-dyn-item"><div class="pricing_gpu-item"><a data-wf-native-id-path='
    '"760de398-5296-b0d3-52e1-73592635b649_instance-4" data-wf-ao-click-engagement-tracking="true" data-wf-element-id='
    '"760de398-5296-b0d3-52e1-73592635b649" data-wf-cms-context="%5B%7B%22collectionId%22%3A%2268fb796cf6cbd4964cbcfb32'
    '%22%2C%22itemId%22%3A%2268fb7a68f547afcc63c5a3d3%22%7D%5D" href="/contact-sales" class="pricing-item-head-part '
    'w-inline-block"><div class="pricing-item-heading-wr"><h4 class="pricing-item-heading">NVIDIA A100</h4>\n'
)


def page() -> str:
    return PAGE_FILE.read_text()


def untrimmed() -> str:
    """The page as the source excerpt ends: inside "NVIDIA A100", a model whose price cells are missing."""
    return page().rstrip("\n") + CUT_OFF_ITEM


def _edited(*selectors: str) -> str:
    """The recorded page with the elements matching ``selectors`` removed (the tests may use class names)."""
    return without(page(), *selectors)


def _replaced(old: str, new: str) -> str:
    return replaced(page(), old, new)


def _with_extra_column(label: str, cells: dict[str, str]) -> str:
    """Handmade variant: a fourth column ``label``; ``cells`` maps a model heading to its cell text."""
    doc = BeautifulSoup(page(), "lxml")
    header = doc.select_one("div.pricing-table-heading")
    assert header is not None
    new = doc.new_tag("div")
    new.string = label
    header.append(new)
    for row in doc.select("div.pricing_gpu-item"):
        model = row.select_one("h4")
        assert model is not None
        cell = doc.new_tag("div")
        p = doc.new_tag("p")
        p.string = cells.get(model.get_text(strip=True), "-")
        cell.append(p)
        row.append(cell)
    return str(doc)


def by_key(offers: list[ScrapedOffer]) -> dict[tuple[str, str, int], ScrapedOffer]:
    return {(o.sku, o.kind, o.term_months): o for o in offers}


class TestCrusoe(ProviderContract):
    scraper_cls = CrusoeScraper
    named_offer = NamedOffer("NVIDIA H200 HGX", 1, "on_demand", "", 4.59)
    min_offers = 8
    handmade = True  # not a real recording: a reference page (the 2025 shape, our own prices)

    def load_raw(self) -> str:
        return page()

    def broken_payloads(self) -> list[str]:
        return [
            "",
            "<html><body><h1>Pricing</h1><p>On-demand GPUs, coming soon</p></body></html>",
            _edited("div.pricing-gap"),  # header and list gone
            _edited("div.pricing-cms"),  # header without rows
            re.sub(r"\$[\d.]+/GPU-hr", "TBA", page()),  # every price unreadable (Contact sales aside)
            re.sub(r"/GPU-hr", "/hr", page()),  # no price says per GPU any more
            untrimmed(),
        ]

    def bad_offer_payloads(self) -> list[str]:
        return [
            _replaced("$4.17/GPU-hr", "TBA"),
            _replaced("$4.17/GPU-hr", "$33.36/hr"),  # no longer per GPU: cannot be recorded safely
        ]

    def test_known_offers(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        h100 = o[("NVIDIA H100 80GB HGX", "on_demand", 0)]
        assert (h100.gpu_raw, h100.gpu_count, h100.gpu_memory_gb) == ("NVIDIA H100 HGX", 1, 80)
        assert (h100.price_per_hour, h100.currency, h100.region) == (4.17, "USD", "")
        assert h100.extra["price_basis"] == "per GPU-hour"
        assert h100.extra["form_factor"] == "HGX"
        assert o[("NVIDIA H100 80GB HGX", "spot", 0)].price_per_hour == 1.71
        h200 = o[("NVIDIA H200 141GB HGX", "on_demand", 0)]
        assert (h200.gpu_raw, h200.gpu_memory_gb, h200.price_per_hour) == ("NVIDIA H200 HGX", 141, 4.59)

    def test_contact_sales_is_listed_without_price(self, offers: list[ScrapedOffer]) -> None:
        o = by_key(offers)
        for key in [
            ("NVIDIA GB200 186GB NVL72", "on_demand", 0),
            ("NVIDIA GB200 186GB NVL72", "spot", 0),
            ("NVIDIA B200 180GB HGX", "on_demand", 0),
            ("NVIDIA H200 141GB HGX", "spot", 0),
        ]:
            assert o[key].price_per_hour is None, key
            assert o[key].extra["contact_sales"] is True
        assert o[("NVIDIA GB200 186GB NVL72", "on_demand", 0)].gpu_raw == "NVIDIA GB200 NVL72"
        assert len(offers) == 8  # 4 models x (on-demand, spot)

    def test_a_price_no_longer_per_gpu_quarantines_that_offer_naming_the_column(self) -> None:
        o = by_key(CrusoeScraper(env={}).parse(_replaced("$4.17/GPU-hr", "$33.36/hr")))
        h100 = o[("NVIDIA H100 80GB HGX", "on_demand", 0)]
        assert h100.extra[UNREADABLE_PRICE] == "price field 'On-demand' of 'NVIDIA H100 80GB HGX' holds '$33.36/hr', not per GPU"
        assert len(o) == 8 and UNREADABLE_PRICE not in o[("NVIDIA H100 80GB HGX", "spot", 0)].extra

    def test_removed_price_table_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^crusoe: layout changed: "):
            CrusoeScraper(env={}).parse(_edited("div.pricing-gap"))

    def test_model_without_price_cells_is_an_error_not_a_silent_drop(self) -> None:
        with pytest.raises(ParseError, match="crusoe: layout changed: .*'NVIDIA A100'"):
            CrusoeScraper(env={}).parse(untrimmed())

    def test_reserved_column_with_a_term(self) -> None:
        # Handmade: the recorded page has no commitment column; the value below is invented for the test.
        page = _with_extra_column("1-year reserved", {"NVIDIA H100": "$2.50/GPU-hr", "NVIDIA GB200": "Contact sales"})
        o = by_key(CrusoeScraper(env={}).parse(page))
        assert o[("NVIDIA H100 80GB HGX", "reserved", 12)].price_per_hour == 2.50
        assert o[("NVIDIA GB200 186GB NVL72", "reserved", 12)].price_per_hour is None
        assert ("NVIDIA B200 180GB HGX", "reserved", 12) not in o  # "-": not offered
        assert o[("NVIDIA H100 80GB HGX", "on_demand", 0)].price_per_hour == 4.17

    def test_commitment_column_without_term_is_ignored(self) -> None:
        page = _with_extra_column("Reserved", {"NVIDIA H100": "$2.50/GPU-hr"})
        offers = CrusoeScraper(env={}).parse(page)
        assert {o.kind for o in offers} == {"on_demand", "spot"}

    def test_hidden_text_in_a_cell_is_ignored(self) -> None:
        page = _replaced("<p>$4.17/GPU-hr</p>", '<p>$4.17/GPU-hr</p><p class="w-condition-invisible">Contact sales</p>')
        o = by_key(CrusoeScraper(env={}).parse(page))
        assert o[("NVIDIA H100 80GB HGX", "on_demand", 0)].price_per_hour == 4.17

    def test_the_fixture_is_the_labelled_reference_replay_recording(self) -> None:
        info = recording_info("crusoe")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        assert CrusoeScraper.fixture_kind == "reference" and PAGE_FILE.name.endswith("_reference.html")

    def test_needs_no_credentials(self) -> None:
        CrusoeScraper(env={}).check_credentials()


def test_fetch_gets_the_pricing_page_once_with_a_browser_user_agent() -> None:
    raw = assert_fetches_page_once(CrusoeScraper(env={}), PRICING_URL, page())  # no robots.txt: allowed
    assert CrusoeScraper(env={}).parse(raw)


def test_fetch_refuses_when_robots_txt_disallows() -> None:
    assert_refused_by_robots(CrusoeScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /cloud/\n")


def test_the_page_is_asked_for_at_www_not_the_bare_domain_that_redirects() -> None:
    """crusoe.ai answers 301 to www.crusoe.ai: the request goes straight to www, and both the
    bundled replay recording and the domain allow-list say so."""
    import json

    from tests.scrapers.contract import run_fetch
    from tracker.pipeline.replay import ReplayTransport

    assert PRICING_URL == "https://www.crusoe.ai/cloud/pricing"
    transport = ReplayTransport.for_provider("crusoe")
    assert CrusoeScraper(env={}, replay=True).parse(run_fetch(CrusoeScraper(env={}, replay=True), transport))
    pages = [r for r in transport.requests if r.url.path != "/robots.txt"]
    assert [(r.method, str(r.url)) for r in pages] == [("GET", "https://www.crusoe.ai/cloud/pricing")]
    manifest = json.loads((BUNDLED_RECORDINGS / "crusoe" / "manifest.json").read_text())
    assert [r["url"] for r in manifest["responses"]] == ["https://www.crusoe.ai/cloud/pricing"]
    assert CrusoeScraper.allowed_hosts() == ("www.crusoe.ai",)


def test_the_2026_list_shape_one_model_in_two_form_factors_and_an_empty_tag() -> None:
    """Test-built from the recording (values invented): the 2026 list names one model twice, told
    apart by its form-factor tag ("80GB SXM" / "80GB PCIe"), and leaves a model's second tag empty
    (``w-dyn-bind-empty``): two offers per kind, and no empty word in a sku."""
    html = page()
    start = html.rfind('<div role="listitem"', 0, html.index("NVIDIA H100<"))
    end = html.index("</div></div></div>", html.index("$1.71/GPU-hr")) + len("</div></div></div>")
    item = html[start:end]
    assert item.startswith('<div role="listitem"') and item.count('role="listitem"') == 1
    sxm = item.replace("NVIDIA H100<", "NVIDIA A100<").replace(">HGX<", ">SXM<").replace("$4.17", "$2.10").replace("$1.71", "$1.05")
    pcie = item.replace("NVIDIA H100<", "NVIDIA A100<").replace(">HGX<", ">PCIe<").replace("$4.17", "$1.85").replace(
        "<p>$1.71/GPU-hr</p>", "<p><a href=\"/contact-sales\">Contact sales</a></p>")
    l40s = item.replace("NVIDIA H100<", "NVIDIA L40S<").replace(">80GB<", ">48GB<").replace(
        '<div class="pricing-tag">HGX</div>', '<div class="pricing-tag w-dyn-bind-empty"></div>').replace("$4.17", "$1.45")
    o = by_key(CrusoeScraper(env={}).parse(html[:end] + sxm + pcie + l40s + html[end:]))
    assert (o[("NVIDIA A100 80GB SXM", "on_demand", 0)].price_per_hour, o[("NVIDIA A100 80GB SXM", "spot", 0)].price_per_hour) == (2.10, 1.05)
    assert o[("NVIDIA A100 80GB PCIe", "on_demand", 0)].price_per_hour == 1.85
    assert o[("NVIDIA A100 80GB PCIe", "spot", 0)].extra["contact_sales"] is True
    assert o[("NVIDIA A100 80GB PCIe", "on_demand", 0)].gpu_raw == "NVIDIA A100 PCIe"
    l40 = o[("NVIDIA L40S 48GB", "on_demand", 0)]
    assert (l40.gpu_raw, l40.gpu_memory_gb, l40.price_per_hour, "form_factor" in l40.extra) == ("NVIDIA L40S", 48, 1.45, False)
