"""Akash: the /v1/gpu-prices marketplace summary (real 2026-07-17 excerpt) and its request."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scrapers.akash import URL, AkashScraper
from scrapers.base import ScrapedOffer
from tests.conftest import load_json
from tests.scrapers.contract import NamedOffer, ProviderContract
from tests.scrapers.requests_helpers import json_fetch

# Real excerpt: a live probe quoted in opencolin/n8n-nodes-akash docs/research/ecosystem.md @ 53780d5a (README.md).
SUMMARY = "akash/akash_gpu_prices_2026-07-17_excerpt.json"
A100 = "nvidia-a100-80gi-sxm4"


def summary(**changes: Any) -> dict[str, Any]:
    """The recorded summary with the A100 model's keys replaced (``None`` values stay as null)."""
    raw = load_json(SUMMARY)
    raw["models"][0].update(copy.deepcopy(changes))
    return raw


def without(key: str) -> dict[str, Any]:
    raw = load_json(SUMMARY)
    raw["models"][0].pop(key)
    return raw


class TestAkash(ProviderContract):
    scraper_cls = AkashScraper
    named_offer = NamedOffer("nvidia a100 80Gi SXM4", 1, "community", "", 1.48)

    def load_raw(self) -> Any:
        return load_json(SUMMARY)

    def broken_payloads(self) -> list[Any]:
        price = load_json(SUMMARY)["models"][0]["price"]
        return [
            {},
            {"models": []},
            {"models": {"vendor": "nvidia"}},
            {"data": load_json(SUMMARY)},  # an envelope the API does not use
            [load_json(SUMMARY)["models"][0]],  # the models list without the summary object
            {"models": ["nvidia a100"]},
            without("model"),
            without("price"),
            without("availability"),
            summary(price={**price, "med": "1.48"}),
            summary(price={k: v for k, v in price.items() if k != "med"}),
            summary(price={**price, "currency": "uakt"}),
            summary(price=[1.48]),
            summary(price=None),  # the only model has no bid: nothing to store
        ]

    def test_a100_is_priced_at_the_median_of_provider_bids(self, offers: list[ScrapedOffer]) -> None:
        (offer,) = offers
        assert offer.sku == A100
        assert offer.gpu_raw == "nvidia a100 80Gi SXM4"
        assert (offer.kind, offer.region, offer.currency) == ("community", "", "USD")
        assert offer.gpu_count == 1 and offer.gpu_memory_gb == 80
        assert offer.price_per_hour == 1.48  # price.med, not min 1.13 or weightedAverage 1.36
        assert offer.available is True  # 6 of 48 GPUs free

    def test_every_statistic_and_the_market_depth_are_kept(self, offers: list[ScrapedOffer]) -> None:
        extra = offers[0].extra
        assert (extra["price_min"], extra["price_max"], extra["price_avg"]) == (1.13, 1.83, 1.48)
        assert (extra["price_weighted_average"], extra["price_median"]) == (1.36, 1.48)
        assert (extra["gpus_total"], extra["gpus_available"]) == (48, 6)
        assert (extra["providers_total"], extra["providers_available"]) == (4, 3)
        assert extra["summary"] == "marketplace" and extra["price_figure"] == "med"

    def test_a_model_without_bids_gives_no_offer_beside_priced_ones(self) -> None:
        raw = load_json(SUMMARY)
        unpriced = copy.deepcopy(raw["models"][0]) | {"model": "a100", "ram": "40Gi", "interface": "PCIe", "price": None}
        raw["models"].append(unpriced)
        assert [o.sku for o in AkashScraper(env={}).parse(raw)] == [A100]

    def test_no_free_gpus_is_unavailable_but_still_priced(self) -> None:
        (offer,) = AkashScraper(env={}).parse(summary(availability={"total": 48, "available": 0}))
        assert offer.available is False and offer.price_per_hour == 1.48

    @pytest.mark.parametrize(("ram", "gb"), [("80Gi", 80.0), ("141Gi", 141.0), ("24G", 24.0), ("", None), ("lots", None)])
    def test_memory_from_ram(self, ram: str, gb: float | None) -> None:
        (offer,) = AkashScraper(env={}).parse(summary(ram=ram))
        assert offer.gpu_memory_gb == gb

    def test_the_catalog_resolves_the_recorded_name(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert resolve_gpu(offers[0].gpu_raw, offers[0].gpu_memory_gb) == "A100-SXM-80GB"


def test_fetch_is_one_anonymous_get() -> None:
    raw, sent = json_fetch(AkashScraper(env={}), load_json(SUMMARY))
    assert [(r.method, str(r.url)) for r in sent] == [("GET", URL)]
    assert sent[0].content == b""
    assert "authorization" not in sent[0].headers
    assert raw == load_json(SUMMARY)


def test_needs_no_credentials() -> None:
    AkashScraper(env={}).check_credentials()
    assert AkashScraper.credentials == () and AkashScraper.optional_credentials == ()


def test_declares_a_marketplace_summary() -> None:
    assert AkashScraper.source_kind == "marketplace summary"
    assert "median" in AkashScraper.caveats
