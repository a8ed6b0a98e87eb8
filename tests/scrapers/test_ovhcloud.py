"""OVHcloud: the keyless public-cloud order catalogue (reference fixture: our own values in its shape)."""

from __future__ import annotations

import copy
from typing import Any

from scrapers.base import UNREADABLE_PRICE, ScrapedOffer
from scrapers.ovhcloud import API, OvhcloudScraper
from tests.conftest import load_recording_json
from tests.scrapers.contract import NamedOffer, ProviderContract, index_offers
from tests.scrapers.requests_helpers import json_fetch

CATALOG = "ovhcloud/catalog_public_cloud_FR_reference.json"  # the replay recording: the one copy


def catalog() -> dict[str, Any]:
    return load_recording_json(CATALOG)


def addon(raw: dict[str, Any], code: str) -> dict[str, Any]:
    return next(a for a in raw["addons"] if a["planCode"] == code)


class TestOvhcloud(ProviderContract):
    scraper_cls = OvhcloudScraper
    named_offer = NamedOffer("H100", 4, "on_demand", "GRA11", 11.56, "EUR")
    handmade = True  # a reference fixture: the real shape, our own values
    min_offers = 10

    def load_raw(self) -> Any:
        return catalog()

    def broken_payloads(self) -> list[Any]:
        no_currency = catalog()
        del no_currency["locale"]
        no_project = catalog()
        no_project["plans"][0]["planCode"] = "projects"
        no_family = catalog()
        no_family["plans"][0]["addonFamilies"][0]["name"] = "instances"
        no_gpu = catalog()
        for a in no_gpu["addons"]:
            a["blobs"]["technical"].pop("gpu", None)
        price_renamed = catalog()
        for a in price_renamed["addons"]:
            for p in a["pricings"]:
                p["priceInUcents"] = p.pop("price")
        return [{}, [], no_currency, no_project, no_family, no_gpu, price_renamed, {**catalog(), "addons": []}]

    def bad_offer_payloads(self) -> list[Any]:
        raw = catalog()
        addon(raw, "h100-1520.consumption")["pricings"][0]["price"] = "lots"
        return [raw]

    def test_hourly_h100_per_region_in_euros(self, offers: list[ScrapedOffer]) -> None:
        by = index_offers(offers)
        for region in ("GRA11", "BHS5"):  # the hourly addon lists no region: its monthly twin's are used
            o = by[("h100-380.consumption", region, "on_demand")]
            assert (o.gpu_raw, o.gpu_count, o.gpu_memory_gb) == ("H100", 1, 80)
            assert o.price_per_hour == 2.89 and o.currency == "EUR"  # 289000000 / 10^8
            assert (o.vcpus, o.ram_gb) == (30, 380)
            assert o.extra["flavor"] == "h100-380" and o.extra["tags"] == ["active"]
        four = by[("h100-1520.consumption", "GRA11", "on_demand")]
        assert four.gpu_count == 4 and four.price_per_hour == 11.56 and four.price_per_gpu_hour == 2.89

    def test_monthly_plan_is_a_one_month_commitment_at_its_effective_hourly_price(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)[("h100-380.monthly.postpaid", "GRA11", "reserved")]
        assert o.term_months == 1 and o.extra["commitment"] == "monthly plan"
        assert o.extra["monthly_price"] == 1435.0
        assert o.price_per_hour == round(1435.0 / 730, 6)

    def test_instances_without_gpu_windows_flavors_and_storage_are_left_out(self, offers: list[ScrapedOffer]) -> None:
        skus = {o.sku for o in offers}
        assert "b3-8.consumption" not in skus and "win-a10-45.consumption" not in skus
        assert not any(s.startswith("storage") for s in skus)
        assert {o.sku for o in offers if o.gpu_raw == "A10"} == {"a10-45.consumption"}

    def test_currency_is_read_from_the_locale(self) -> None:
        raw = catalog()
        raw["locale"]["currencyCode"] = "USD"
        assert {o.currency for o in OvhcloudScraper(env={}).parse(raw)} == {"USD"}

    def test_a_flavor_with_no_region_anywhere_is_one_offer_saying_so(self) -> None:
        raw = catalog()
        addon(raw, "a10-45.consumption")["configurations"] = []
        a10 = [o for o in OvhcloudScraper(env={}).parse(raw) if o.sku == "a10-45.consumption"]
        assert len(a10) == 1 and a10[0].region == "" and a10[0].extra["regions_unstated"] is True

    def test_a_zero_gpu_count_is_quarantined_not_a_crash(self) -> None:
        raw = catalog()
        addon(raw, "l40s-180.consumption")["blobs"]["technical"]["gpu"]["number"] = 0
        scraper = OvhcloudScraper(env={})
        offers = scraper.readable(scraper.parse(raw))
        bad = [o for o in offers if o.extra.get(UNREADABLE_PRICE)]
        assert {o.sku for o in bad} == {"l40s-180.consumption"} and len(offers) > len(bad)
        assert all(o.extra[UNREADABLE_PRICE].startswith("GPU count field ") for o in bad)

    def test_the_catalog_resolves_the_recorded_names(self, offers: list[ScrapedOffer]) -> None:
        from tracker.catalog.specs import resolve_gpu

        assert resolve_gpu("H100", 80) is not None and resolve_gpu("L40S", 48) == "L40S" and resolve_gpu("A10", 24) == "A10"


def test_fetch_is_one_anonymous_get_of_the_fr_catalogue() -> None:
    raw, sent = json_fetch(OvhcloudScraper(env={}), catalog())
    assert [(r.method, str(r.url)) for r in sent] == [("GET", f"{API}?ovhSubsidiary=FR")]
    assert "authorization" not in sent[0].headers and "x-ovh-application" not in sent[0].headers
    assert raw == catalog()


def test_needs_no_credentials() -> None:
    OvhcloudScraper(env={}).check_credentials()
    assert OvhcloudScraper.credentials == () and OvhcloudScraper.optional_credentials == ()


def test_parse_is_pure() -> None:
    raw = catalog()
    before = copy.deepcopy(raw)
    OvhcloudScraper(env={}).parse(raw)
    assert raw == before  # parse is pure
