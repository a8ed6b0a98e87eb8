"""gpu.ai: the keyless paged pricing book (a reference fixture: the real 2026 shape, our own values)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, ParseError, PartialOffers, ScrapedOffer
from scrapers.gpuai import MAX_PAGES, URL, GpuaiScraper
from tests.conftest import load_recording_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

PAGE1 = "gpuai/pricing_page1_reference.json"  # the replay recording: the one copy
PAGE2 = "gpuai/pricing_page2_reference.json"  # the replay recording: the one copy
CURSOR = "MjAyNi0xMi0wM1QwNjowMDowMFp8cmVmZXJlbmNlfHBhZ2UtMg"


def book(page: int = 1, index: int = 0, **changes: Any) -> dict[str, Any]:
    """What ``fetch`` returns for the two fixture pages, with one row's keys replaced (``...`` removes)."""
    pages = [copy.deepcopy(load_recording_json(PAGE1)), copy.deepcopy(load_recording_json(PAGE2))]
    row = pages[page - 1]["data"][index]
    for key, value in changes.items():
        if value is ...:
            row.pop(key)
        else:
            row[key] = value
    return {"pages": pages, "incomplete": None}


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


def serve(pages: dict[str | None, Any], sent: list[httpx.Request]) -> httpx.MockTransport:
    """Answer the pricing URL with ``pages[cursor]`` (a 503 when the cursor has no page)."""

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        cursor = request.url.params.get("cursor")
        if cursor not in pages:
            return httpx.Response(503, text="unavailable")
        return httpx.Response(200, json=pages[cursor])

    return httpx.MockTransport(handler)


class TestGpuai(ProviderContract):
    scraper_cls = GpuaiScraper
    named_offer = NamedOffer("b200", 8, "community", "us-east", 47.6)
    handmade = True  # a reference fixture: the real shape with our own values
    min_offers = 19

    def load_raw(self) -> Any:
        return book()

    def broken_payloads(self) -> list[Any]:
        page1 = load_recording_json(PAGE1)
        return [
            {},
            [],
            {"pages": []},
            {"data": page1["data"]},  # next_cursor gone: paging changed
            {"items": page1["data"], "next_cursor": None},
            {"data": {"a100": 1}, "next_cursor": None},
            {"data": ["h100_sxm"], "next_cursor": None},
            book(gpu_type=...),
            book(tier="reserved"),
            book(capacity_class="premium"),
            book(capacity_class="", community=...),
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [
            book(index=1, price_per_hour=...),
            book(index=1, price_per_hour="0.89"),
            book(index=1, gpu_count=0),
        ]

    def test_an_eight_gpu_b300_is_one_whole_configuration(self, offers: list[ScrapedOffer]) -> None:
        b300 = next(o for o in offers if o.gpu_raw == "b300")
        assert (b300.gpu_count, b300.price_per_hour, b300.kind, b300.region, b300.currency) == (8, 52.8, "on_demand", "ca-central", "USD")
        assert b300.price_per_gpu_hour == pytest.approx(6.6)
        assert (b300.vcpus, b300.ram_gb, b300.available, b300.extra["available_count"]) == (224, 1900, True, 1)
        assert b300.extra["deployment_type"] == "vm"

    def test_community_capacity_is_community_and_secure_is_on_demand(self, offers: list[ScrapedOffer]) -> None:
        b200 = [o for o in offers if o.gpu_raw == "b200" and o.gpu_count == 1]
        assert {(o.kind, o.price_per_hour, o.region) for o in b200} == {("community", 5.45, "us-west"), ("on_demand", 6.49, "us-east")}

    def test_a_sold_out_offer_is_kept_unavailable(self, offers: list[ScrapedOffer]) -> None:
        sold_out = [o for o in offers if o.extra["available_count"] == 0]
        assert {o.gpu_raw for o in sold_out} == {"b200", "rtx_4090"}
        assert all(o.available is False and o.price_per_hour for o in sold_out)

    def test_an_odd_gpu_count(self, offers: list[ScrapedOffer]) -> None:
        seven = next(o for o in offers if o.gpu_raw == "rtx_3090")
        assert (seven.gpu_count, seven.price_per_hour) == (7, 1.33)

    def test_spot_and_the_capacity_fallback(self, offers: list[ScrapedOffer]) -> None:
        l4 = next(o for o in offers if o.gpu_raw == "l4")
        assert (l4.kind, l4.extra["capacity_class"], l4.price_per_hour) == ("spot", "secure", 0.39)

    def test_both_pages_are_read(self, offers: list[ScrapedOffer]) -> None:
        assert not isinstance(offers, PartialOffers)
        assert {"rtx_5090", "rtx_pro_6000", "a100_40gb"} <= {o.gpu_raw for o in offers}
        assert len(offers) == len(load_recording_json(PAGE1)["data"]) + len(load_recording_json(PAGE2)["data"])

    def test_an_offer_seen_on_two_pages_is_read_once(self) -> None:
        raw = book()
        raw["pages"][1]["data"].append(raw["pages"][0]["data"][0])
        assert len(GpuaiScraper(env={}).parse(raw)) == 19

    def test_the_catalog_resolves_the_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        resolved = {o.gpu_raw: resolve_gpu(o.gpu_raw) for o in offers}
        assert resolved["h100_sxm"] == "H100-SXM" and resolved["h100_nvl"] == "H100-NVL" and resolved["h200_sxm"] == "H200"
        assert resolved["a100_80gb"] == "A100-SXM-80GB" and resolved["rtx_pro_6000"] == "RTX-PRO-6000"
        assert resolved["rtx_6000_ada"] == "RTX-6000-Ada" and resolved["b300"] == "B300"

    def test_one_page_with_a_cursor_left_is_partial(self) -> None:
        offers = GpuaiScraper(env={}).parse(load_recording_json(PAGE1))
        assert isinstance(offers, PartialOffers) and "next_cursor" in offers.reason and len(offers) == 14

    def test_one_last_page_alone_is_whole(self) -> None:
        offers = GpuaiScraper(env={}).parse(load_recording_json(PAGE2))
        assert not isinstance(offers, PartialOffers) and len(offers) == 5

    def test_a_renamed_tier_is_a_clear_parse_error(self) -> None:
        with pytest.raises(ParseError, match=r"gpuai: pages\[0\]\.data\[0\]\.tier is 'reserved'"):
            GpuaiScraper(env={}).parse(book(tier="reserved"))


def test_fetch_follows_next_cursor_keyless() -> None:
    sent: list[httpx.Request] = []
    raw = run_fetch(GpuaiScraper(env={}), serve({None: load_recording_json(PAGE1), CURSOR: load_recording_json(PAGE2)}, sent))
    assert raw == {"pages": [load_recording_json(PAGE1), load_recording_json(PAGE2)], "incomplete": None}
    assert [str(r.url.copy_with(query=None)) for r in sent] == [URL, URL]
    assert [dict(r.url.params) for r in sent] == [
        {"limit": "200", "include_unavailable": "true"},
        {"limit": "200", "include_unavailable": "true", "cursor": CURSOR},
    ]
    assert all("authorization" not in r.headers for r in sent)


def test_a_missing_page_is_a_partial_answer() -> None:
    sent: list[httpx.Request] = []
    raw = run_fetch(GpuaiScraper(env={}), serve({None: load_recording_json(PAGE1)}, sent))
    assert raw["incomplete"].startswith("page 2 did not answer")
    offers = GpuaiScraper(env={}).parse(raw)
    assert isinstance(offers, PartialOffers) and len(offers) == 14 and "page 2 did not answer" in offers.reason


def test_a_failing_first_page_fails_the_run() -> None:
    with pytest.raises(FetchError):
        run_fetch(GpuaiScraper(env={}), serve({}, []))


def test_paging_is_bounded() -> None:
    sent: list[httpx.Request] = []
    endless = load_recording_json(PAGE2) | {"next_cursor": "again"}
    pages: dict[str | None, Any] = {None: load_recording_json(PAGE1) | {"next_cursor": "again"}, "again": endless}
    raw = run_fetch(GpuaiScraper(env={}), serve(pages, sent))
    assert len(sent) == 2 and "did not move" in raw["incomplete"]
    pages = {None: load_recording_json(PAGE1) | {"next_cursor": "p1"}}
    pages |= {f"p{i}": load_recording_json(PAGE2) | {"next_cursor": f"p{i + 1}"} for i in range(1, MAX_PAGES + 5)}
    sent.clear()
    raw = run_fetch(GpuaiScraper(env={}), serve(pages, sent))
    assert len(sent) == MAX_PAGES and raw["incomplete"] == f"still paging after {MAX_PAGES} pages"
    assert isinstance(GpuaiScraper(env={}).parse(raw), PartialOffers)


def test_needs_no_credentials() -> None:
    GpuaiScraper(env={}).check_credentials()
    assert GpuaiScraper.credentials == () and GpuaiScraper.optional_credentials == ()


def test_a_fractional_gpu_stays_a_slice_and_a_mig_slice_is_never_a_whole_gpu() -> None:
    from tracker.catalog.specs import resolve_gpu

    raw = book(index=1, gpu_count=0.5, gpu_type="a100_80gb")
    raw["pages"][1]["data"].append(load_recording_json(PAGE2)["data"][0] | {"gpu_type": "a100_mig_3g_40gb", "offering_id": "mig-slice-1"})
    offers = {o.sku: o for o in GpuaiScraper(env={}).parse(raw)}
    half = offers[load_recording_json(PAGE1)["data"][1]["offering_id"]]
    assert (half.gpu_count, half.price_per_hour, half.extra["fractional_gpu"]) == (0.5, 0.89, True)
    assert half.price_per_gpu_hour == pytest.approx(1.78)
    assert resolve_gpu(offers["mig-slice-1"].gpu_raw) is None  # unmapped, never an A100


def test_a_row_without_a_gpu_count_is_quarantined_not_guessed() -> None:
    offers = {o.sku: o for o in GpuaiScraper(env={}).parse(book(index=1, gpu_count=...))}
    unpriced = offers[load_recording_json(PAGE1)["data"][1]["offering_id"]]
    assert unpriced.extra["unreadable_price"] == "GPU count field pages[0].data[1].gpu_count is missing"
    assert len(offers) == 19
