"""DigitalOcean scraper: the keyless pricing documentation page and the token's API.

The page (the default, no token): a REFERENCE fixture of the 2026 Droplet pricing documentation
page, which is also the bundled replay recording (tracker/recordings/digitalocean/); its
structure follows a public capture named in the manifest, every value invented.

The API (with DIGITALOCEAN_TOKEN): the sample is HANDMADE (gpuhunt test literal, see
tests/fixtures/digitalocean/README.md).
"""

from __future__ import annotations

import asyncio
import copy
import re
from typing import Any

import httpx
import pytest

from scrapers.base import (
    UNREADABLE_PRICE,
    FetchError,
    MissingCredentials,
    ParseError,
    ScrapedOffer,
)
from scrapers.digitalocean import PRICING_URL, SIZES_URL, DigitaloceanScraper
from tests.conftest import load_json
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)
from tests.scrapers.page_requests import (
    assert_fetches_page_once,
    assert_refused_by_robots,
)
from tracker.pipeline.replay import BUNDLED_RECORDINGS, ReplayTransport, recording_info

SIZES = "digitalocean/digitalocean_v2_sizes_handmade.json"
TOKEN = "dop_v1_test_token"
PAGE = BUNDLED_RECORDINGS / "digitalocean" / "droplet_pricing_2026_reference.html"


def page() -> str:
    return PAGE.read_text()


class TestDigitaloceanPricingPage(ProviderContract):
    """The keyless path: the pricing documentation's GPU tables (reference fixture = replay recording)."""

    scraper_cls = DigitaloceanScraper
    handmade = True  # not a real recording: a reference page (the real 2026 shape, invented values)
    min_offers = 13

    def load_raw(self) -> str:
        return page()

    def broken_payloads(self) -> list[Any]:
        html = page()
        return [
            "",
            "<html><body><h1>Droplet Pricing</h1><p>See the pricing page.</p></body></html>",
            html.replace("<th>Price</th>", "<th>Rate</th>").replace('<th style="text-align: left">Price</th>', '<th style="text-align: left">Rate</th>'),
            html.replace("On-Demand GPU Droplet Pricing", "GPU Droplet Rates").replace("Spot GPU Droplet Pricing", "Preemptible Rates"),
            re.sub(r"\$[\d.]+ per hour", "TBA", html),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace("<td>$4.29 per hour</td>", "<td>call us</td>", 1)]  # the one-GPU H100 on demand

    def test_h100_plans_on_demand(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)
        h100x8 = o[("NVIDIA H100 (8x)", "", "on_demand")]
        assert (h100x8.gpu_raw, h100x8.gpu_count, h100x8.price_per_hour, h100x8.currency) == ("NVIDIA H100", 8, 34.32, "USD")
        assert h100x8.price_per_gpu_hour == pytest.approx(4.29)
        assert h100x8.extra["price_basis"] == "per Droplet-hour"
        h100 = o[("NVIDIA H100", "", "on_demand")]
        assert (h100.gpu_raw, h100.gpu_count, h100.price_per_hour) == ("NVIDIA H100", 1, 4.29)
        assert (h100.region, h100.vcpus, h100.ram_gb) == ("", None, None)  # the page prints none of them

    def test_spot_table_and_variants(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)
        b300 = o[("NVIDIA B300, air-cooled (8x)", "", "spot")]
        assert (b300.gpu_raw, b300.gpu_count, b300.price_per_hour, b300.extra["variant"]) == ("NVIDIA B300", 8, 86.40, "air-cooled")
        assert o[("NVIDIA B300, liquid-cooled (8x)", "", "spot")].price_per_hour == 84.00
        assert o[("AMD MI355X", "", "spot")].price_per_hour == 4.20
        assert ("NVIDIA H100", "", "spot") not in o

    def test_contract_table_and_table_of_contents_are_not_offers(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) == 13  # 8 on demand + 5 spot
        assert not [o for o in offers if "MI350X" in o.sku or o.extra.get("contact_sales")]
        assert {o.kind for o in offers} == {"on_demand", "spot"}

    def test_an_unreadable_price_quarantines_that_row_naming_column_row_and_section(self) -> None:
        o = index_offers(DigitaloceanScraper(env={}).parse(page().replace("<td>$4.29 per hour</td>", "<td>call us</td>", 1)))
        assert o[("NVIDIA H100", "", "on_demand")].extra[UNREADABLE_PRICE] == (
            "price field 'Price' of 'NVIDIA H100' in 'On-Demand GPU Droplet Pricing' holds 'call us', not a price")
        assert o[("NVIDIA H100 (8x)", "", "on_demand")].price_per_hour == 34.32

    def test_contact_sales_in_a_priced_section_is_listed_without_a_price(self) -> None:
        html = page().replace("<td>$0.69 per hour</td>", '<td>Per contract after <a href="/sales">contacting sales</a></td>', 1)
        rtx = index_offers(DigitaloceanScraper(env={}).parse(html))[("NVIDIA RTX 4000", "", "on_demand")]
        assert rtx.price_per_hour is None and rtx.extra["contact_sales"] is True and UNREADABLE_PRICE not in rtx.extra

    def test_no_price_table_says_layout_changed(self) -> None:
        with pytest.raises(ParseError, match=r"^digitalocean: layout changed: no GPU price table"):
            DigitaloceanScraper(env={}).parse("<html><body><h1>Droplet Pricing</h1></body></html>")

    def test_the_fixture_is_the_labelled_reference_replay_recording(self) -> None:
        info = recording_info("digitalocean")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        assert DigitaloceanScraper.fixture_kind == "reference" and PAGE.name.endswith("_reference.html")


def test_without_a_token_fetch_reads_the_pricing_page() -> None:
    DigitaloceanScraper(env={}).check_credentials()  # the token is optional now
    assert DigitaloceanScraper.credentials == () and DigitaloceanScraper.optional_credentials == ("DIGITALOCEAN_TOKEN",)
    assert PRICING_URL == "https://docs.digitalocean.com/products/droplets/details/pricing/"
    raw = assert_fetches_page_once(DigitaloceanScraper(env={}), PRICING_URL, page())
    assert len(DigitaloceanScraper(env={}).parse(raw)) == 13


def test_the_page_fetch_refuses_what_robots_txt_disallows() -> None:
    assert_refused_by_robots(DigitaloceanScraper(env={}), PRICING_URL, page(), robots="User-agent: *\nDisallow: /products/\n")


def test_with_a_token_the_api_is_read_and_the_page_is_not() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"sizes": sizes(), "links": {}, "meta": {"total": 3}})

    scraper = DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN})
    assert scraper.keyed() and scraper.secrets() == [TOKEN]
    raw = run_fetch(scraper, httpx.MockTransport(handler))
    assert [r.url.host for r in seen] == ["api.digitalocean.com"]
    assert {o.sku for o in scraper.parse(raw)} == {"gpu-h100x8-640gb", "gpu-mi300x8-1536gb"}


def sizes() -> list[dict[str, Any]]:
    return load_json(SIZES)["sizes"]


class TestDigitalocean(ProviderContract):
    """The token path: the API (a handmade sample of its answer)."""

    scraper_cls = DigitaloceanScraper
    named_offer = NamedOffer("AMD MI300X", 8, "on_demand", "", 19.92)
    handmade = True  # this API sample is handmade (and the bundled fixture is a reference page)
    min_offers = 2

    def load_raw(self) -> Any:
        return [load_json(SIZES)]

    def broken_payloads(self) -> list[Any]:
        no_price = copy.deepcopy(sizes())
        for s in no_price:
            s.pop("price_hourly")
        no_model = copy.deepcopy(sizes())
        no_model[1]["gpu_info"].pop("model")
        no_regions = copy.deepcopy(sizes())
        no_regions[1].pop("regions")
        return [
            {},
            [],
            [{"sizes": []}],
            [{"droplet_sizes": sizes()}],
            [{"sizes": no_price}],
            [{"sizes": no_model}],
            [{"sizes": no_regions}],
            [{"sizes": sizes()[:1]}],  # CPU sizes only: no GPU offer at all
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        text_price = copy.deepcopy(sizes())
        text_price[1]["price_hourly"] = "23.92"
        return [
            [{"sizes": text_price}],
        ]

    def test_h100x8(self, offers: list[Any]) -> None:
        h100 = next(o for o in offers if o.sku == "gpu-h100x8-640gb")
        assert h100.gpu_raw == "nvidia_h100"
        assert h100.gpu_count == 8
        assert h100.gpu_memory_gb == 80  # vram 640 GiB is for the 8 GPUs together
        assert h100.price_per_hour == 23.92
        assert h100.region == "nyc1" and h100.kind == "on_demand" and h100.currency == "USD"
        assert h100.vcpus == 160 and h100.ram_gb == 1920
        assert h100.available is True
        assert h100.extra["description"] == "H100 GPU - 8X"

    def test_mi300x8(self, offers: list[Any]) -> None:
        mi = next(o for o in offers if o.sku == "gpu-mi300x8-1536gb")
        assert (mi.gpu_raw, mi.gpu_count, mi.gpu_memory_gb, mi.price_per_hour) == ("amd_mi300x", 8, 192, 15.92)

    def test_cpu_sizes_are_not_offers(self, offers: list[Any]) -> None:
        assert {o.sku for o in offers} == {"gpu-h100x8-640gb", "gpu-mi300x8-1536gb"}


class TestSizeShapes:
    def test_one_offer_per_region_and_none_without_regions_or_price(self) -> None:
        data = sizes()
        data[1]["regions"] = ["nyc1", "tor1", "nyc1"]
        data[2]["regions"] = []
        offers = DigitaloceanScraper(env={}).parse([{"sizes": data}])
        assert sorted(o.region for o in offers) == ["nyc1", "tor1"]
        data[2]["regions"] = ["atl1"]
        data[2]["price_hourly"] = 0
        assert {o.sku for o in DigitaloceanScraper(env={}).parse([{"sizes": data}])} == {"gpu-h100x8-640gb"}

    def test_unavailable_size_is_kept_and_marked(self) -> None:
        data = sizes()
        data[1]["available"] = False
        h100 = next(o for o in DigitaloceanScraper(env={}).parse([{"sizes": data}]) if o.sku == "gpu-h100x8-640gb")
        assert h100.available is False


def _page(items: list[Any], next_url: str | None) -> dict[str, Any]:
    pages = {"next": next_url} if next_url else {}
    return {"sizes": items, "links": {"pages": pages}, "meta": {"total": 3}}


class TestFetch:
    def test_bearer_token_and_links_pages_next(self) -> None:
        data = sizes()
        next_url = "https://api.digitalocean.com/v2/sizes?page=2&per_page=200"
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            if request.url.params.get("page") == "2":
                return httpx.Response(200, json=_page(data[2:], None))
            return httpx.Response(200, json=_page(data[:2], next_url))

        scraper = DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN})
        fetched = run_fetch(scraper, httpx.MockTransport(handler))
        assert len(seen) == 2
        assert all(r.method == "GET" for r in seen)
        assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in seen)
        assert str(seen[0].url.copy_with(query=None)) == SIZES_URL
        assert dict(seen[0].url.params) == {"per_page": "200"}
        assert str(seen[1].url) == next_url
        assert {o.sku for o in scraper.parse(fetched)} == {"gpu-h100x8-640gb", "gpu-mi300x8-1536gb"}

    def test_the_token_never_appears_in_a_fetch_error(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(401, json={"id": "Unauthorized", "message": "Unable to authenticate you"})

        with pytest.raises(FetchError) as info:
            run_fetch(DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN}), httpx.MockTransport(handler))
        assert TOKEN not in str(info.value) and "401" in str(info.value)

    def test_a_repeated_next_link_is_an_error(self) -> None:
        url = "https://api.digitalocean.com/v2/sizes?page=2&per_page=200"

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=_page([], url))

        with pytest.raises(FetchError, match="digitalocean: .*same next page"):
            run_fetch(DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN}), httpx.MockTransport(handler))

    def test_a_next_link_to_another_host_or_scheme_is_refused_and_gets_no_token(self) -> None:
        for foreign in ("https://evil.example/v2/sizes?page=2", "http://api.digitalocean.com/v2/sizes?page=2"):
            seen: list[httpx.Request] = []

            def handler(request: httpx.Request, link: str = foreign, seen: list[httpx.Request] = seen) -> httpx.Response:
                seen.append(request)
                return httpx.Response(200, json=_page([], link))

            with pytest.raises(FetchError, match="digitalocean: refusing a next-page link .* it leaves https://api.digitalocean.com"):
                run_fetch(DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN}), httpx.MockTransport(handler))
            assert [r.url.host for r in seen] == ["api.digitalocean.com"]

    def test_no_token_is_no_missing_credential(self) -> None:
        DigitaloceanScraper(env={}).check_credentials()
        assert DigitaloceanScraper(env={}).missing_credentials() == []
        with pytest.raises(MissingCredentials):  # the API path itself still refuses to run without one
            asyncio.run(DigitaloceanScraper(env={})._fetch_api(None))  # type: ignore[arg-type]

    def test_replay_reads_the_page_even_with_a_token_in_the_environment(self) -> None:
        transport = ReplayTransport.for_provider("digitalocean")
        fetched = run_fetch(DigitaloceanScraper(env={"DIGITALOCEAN_TOKEN": TOKEN}, replay=True), transport)
        assert [str(r.url) for r in transport.requests if r.url.path != "/robots.txt"] == [PRICING_URL]
        assert all("authorization" not in r.headers for r in transport.requests)
        assert len(DigitaloceanScraper(env={}).parse(fetched)) == 13
