"""GCP scraper: Cloud Billing Catalog SKUs -> per-GPU-hour offers.

Fixtures (see tests/fixtures/gcp/README.md):
* ``gcp_cloudbilling_skus_excerpt_2023-03.json``: a real recording, 7 whole SKUs in the real envelope (one GPU SKU).
* ``gcp_cloudbilling_skus_gpu_2025-06-17_trimmed_reference.json``: REFERENCE, the shape of 61 2025 GPU SKUs (the
  source kept only ``skuId``, ``description`` and ``pricingInfo``, no ``serviceRegions``), every price our own.
* ``gcp_cloudbilling_skus_gpu_2025-06-17_h100_h200_reference.json``: REFERENCE, every 2025 SKU of the H100 80GB,
  H100 80GB Mega, H100 80GB Plus and H200 141GB models (396, same 3 fields), every price our own; the bundled
  replay file is these SKUs.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, MissingCredentials, ParseError
from scrapers.gcp import (
    SKUS_URL,
    GcpScraper,
    classify_description,
    gpu_memory_gb,
    region_of_location,
)
from tests.conftest import load_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch
from tracker.pipeline.replay import BUNDLED_RECORDINGS, recording_info

EXCERPT_2023 = "gcp/gcp_cloudbilling_skus_excerpt_2023-03.json"
GPU_2025 = "gcp/gcp_cloudbilling_skus_gpu_2025-06-17_trimmed_reference.json"
H100_2025 = "gcp/gcp_cloudbilling_skus_gpu_2025-06-17_h100_h200_reference.json"
KEY = "AIzaSy-test-key-do-not-leak"


def skus_2025_with_regions(regions: list[str]) -> list[dict[str, Any]]:
    """The reference 2025 SKUs plus a ``serviceRegions`` the test adds (the source dropped that field)."""
    skus = copy.deepcopy(load_json(GPU_2025))
    for sku in skus:
        sku["serviceRegions"] = regions
    return skus


def no_location_sku() -> dict[str, Any]:
    """A reference 2025 H100 SKU whose description lost its " running in <location>" (and has no serviceRegions)."""
    [sku] = [copy.deepcopy(s) for s in load_json(H100_2025) if s["skuId"] == "E166-C34C-2AF7"]
    sku["description"] = "Nvidia H100 80GB GPU"
    return sku


class TestGcp(ProviderContract):
    scraper_cls = GcpScraper
    named_offer = NamedOffer("H200 141GB", 1, "reserved", "Americas", 6.88159, "USD", sku="759E-59C1-661D")
    min_offers = 3
    handmade = True  # the replay file is a reference (the 2025 catalogue's shape, our own prices)

    def test_the_replay_file_is_the_labelled_reference(self) -> None:
        info = recording_info("gcp")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        files = [r["file"] for r in json.loads((BUNDLED_RECORDINGS / "gcp" / "manifest.json").read_text())["responses"]]
        assert GcpScraper.fixture_kind == "reference" and all(f.endswith("_reference.json") for f in files)

    def load_raw(self) -> Any:
        return [load_json(EXCERPT_2023)]

    def broken_payloads(self) -> list[Any]:
        page = load_json(EXCERPT_2023)
        no_price = copy.deepcopy(page)
        no_price["skus"][0]["pricingInfo"] = []
        per_month = copy.deepcopy(page)
        per_month["skus"][0]["pricingInfo"][0]["pricingExpression"]["usageUnit"] = "mo"
        bad_money = copy.deepcopy(page)
        bad_money["skus"][0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["units"] = "two"
        cpu_only = {"skus": page["skus"][1:], "nextPageToken": ""}
        return [
            {},
            [],
            [{"skus": []}],
            [{"items": page["skus"]}],
            [{"skus": "not a list"}],
            [no_price],
            [per_month],
            [bad_money],
            [cpu_only],  # no description in the GPU grammar any more
            [{"skus": [no_location_sku()]}],  # neither serviceRegions nor a location in the description
        ]

    def test_a100_from_the_2023_recording(self, offers: list[Any]) -> None:
        assert {o.region for o in offers} == {"us-central1", "us-east1", "us-west1"}
        a100 = next(o for o in offers if o.region == "us-central1")
        assert a100.sku == "039F-D0DA-4055"
        assert a100.gpu_raw == "Nvidia Tesla A100"
        assert a100.gpu_count == 1
        assert a100.gpu_memory_gb == 40
        assert a100.kind == "on_demand" and a100.term_months == 0
        assert a100.price_per_hour == pytest.approx(2.933908)
        assert a100.currency == "USD"
        assert a100.gpu is None
        assert a100.extra["gpu_component_only"] is True
        assert a100.extra["location"] == "Americas"

    def test_cpu_and_ram_skus_are_not_offers(self, offers: list[Any]) -> None:
        assert {o.sku for o in offers} == {"039F-D0DA-4055"}


class TestDescriptions:
    @pytest.mark.parametrize(
        ("description", "expected"),
        [
            ("Nvidia Tesla A100 GPU running in Americas", ("Nvidia Tesla A100", "on_demand", 0, "Americas")),
            (
                "Nvidia L4 GPU attached to Spot Preemptible VMs running in Hong Kong",
                ("Nvidia L4", "spot", 0, "Hong Kong"),
            ),
            ("Spot Preemptible Nvidia L4 GPU running in Americas", ("Nvidia L4", "spot", 0, "Americas")),
            ("Preemptible Nvidia Tesla T4 GPU running in EMEA", ("Nvidia Tesla T4", "spot", 0, "EMEA")),
            (
                "Commitment v1: Nvidia H100 80GB GPU running in Americas for 1 Year",
                ("Nvidia H100 80GB", "reserved", 12, "Americas"),
            ),
            (
                "Commitment v1: Nvidia H100 80GB GPU running in Americas for 3 Years",
                ("Nvidia H100 80GB", "reserved", 36, "Americas"),
            ),
            (
                "Commitment v1: Nvidia Tesla V100 GPU running in Jakarta for 3 Year",
                ("Nvidia Tesla V100", "reserved", 36, "Jakarta"),
            ),
            ("H200 141GB GPU running in Americas", ("H200 141GB", "on_demand", 0, "Americas")),
            ("Nvidia H100 80GB Plus GPU running in Americas", ("Nvidia H100 80GB Plus", "on_demand", 0, "Americas")),
        ],
    )
    def test_rentable_gpu_descriptions(self, description: str, expected: tuple[Any, ...]) -> None:
        assert tuple(classify_description(description)) == expected  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "description",
        [
            "Licensing Fee for Bitnami Alchemy (GPU cost)",
            "Licensing Fee for Ubuntu Pro 18.04 LTS (Bionic Beaver) on VM with 8 to 8 GPU (GPU cost)",
            "Nvidia L4 GPU attached to DWS Defined Duration VMs running in Americas",
            "Reserved Nvidia H100 80GB GPU in Americas in Calendar Mode",
            "Reserved Nvidia Tesla A100 GPU in Americas",
            "A2 Instance Core running in Americas",
            "A2 Instance Ram running in Americas",
        ],
    )
    def test_not_rentable_gpus(self, description: str) -> None:
        assert classify_description(description) is None

    def test_every_2025_description_is_classified_or_deliberately_skipped(self) -> None:
        kinds: dict[tuple[str, int], int] = {}
        for sku in load_json(GPU_2025):
            what = classify_description(sku["description"])
            if what is None:
                assert sku["description"].startswith(("Licensing Fee", "Reserved ")) or "DWS" in sku["description"]
                continue
            assert "GPU" not in what.model and "Preemptible" not in what.model, what
            kinds[(what.kind, what.term_months)] = kinds.get((what.kind, what.term_months), 0) + 1
        assert set(kinds) == {("on_demand", 0), ("spot", 0), ("reserved", 12), ("reserved", 36)}

    def test_memory(self) -> None:
        assert gpu_memory_gb("Nvidia Tesla A100 80GB") == 80
        assert gpu_memory_gb("H200 141GB") == 141
        assert gpu_memory_gb("Nvidia Tesla A100") == 40
        assert gpu_memory_gb("Nvidia L4") == 24
        assert gpu_memory_gb("Some Future GPU") is None


class TestParse2025:
    """Reference 2025 SKUs; ``serviceRegions`` is added by the test because the source excerpt dropped it."""

    def offers(self) -> dict[tuple[str, str, int], Any]:
        offers = GcpScraper(env={}).parse([{"skus": skus_2025_with_regions(["us-central1", "us-east4"])}])
        keys = [(o.sku, o.region, o.kind, o.term_months) for o in offers]
        assert len(keys) == len(set(keys))
        return {(o.gpu_raw, o.kind, o.term_months): o for o in offers if o.region == "us-central1" and "Americas" in o.extra["location"]}

    def test_h100_on_demand_spot_and_commitments(self) -> None:
        by = self.offers()
        assert by[("Nvidia H100 80GB", "on_demand", 0)].price_per_hour == pytest.approx(10.482309109)
        assert by[("Nvidia H100 80GB", "spot", 0)].price_per_hour == pytest.approx(2.411)
        assert by[("Nvidia H100 80GB", "reserved", 12)].price_per_hour == pytest.approx(7.27472517)
        assert by[("Nvidia H100 80GB", "reserved", 36)].price_per_hour == pytest.approx(4.600891466)
        assert by[("Nvidia H100 80GB", "on_demand", 0)].sku == "D4E2-451A-15B9"
        assert by[("Nvidia L4", "spot", 0)].price_per_hour == pytest.approx(0.2387)
        assert by[("Nvidia L4", "on_demand", 0)].gpu_memory_gb == 24

    def test_one_offer_per_sku_and_region(self) -> None:
        offers = GcpScraper(env={}).parse([{"skus": skus_2025_with_regions(["us-central1", "us-east4"])}])
        h100 = [o for o in offers if o.sku == "D4E2-451A-15B9"]
        assert sorted(o.region for o in h100) == ["us-central1", "us-east4"]

    def test_skipped_skus(self) -> None:
        offers = GcpScraper(env={}).parse([{"skus": skus_2025_with_regions(["asia-southeast2"])}])
        descriptions = {o.extra["description"] for o in offers}
        assert not any(d.startswith(("Licensing", "Reserved")) or "DWS" in d for d in descriptions)
        # V100 on demand and committed in Jakarta are listed at $0 (not sold there): skipped.
        assert "Nvidia Tesla V100 GPU running in Jakarta" not in descriptions
        assert "Nvidia Tesla V100 GPU attached to Spot Preemptible VMs running in Jakarta" in descriptions
        assert all(o.price_per_hour and o.price_per_hour > 0 for o in offers)


def _page(skus: list[dict[str, Any]], token: str) -> dict[str, Any]:
    return {"skus": skus, "nextPageToken": token}


class TestFetch:
    def test_pages_through_next_page_token_with_the_api_key(self) -> None:
        skus = load_json(EXCERPT_2023)["skus"]
        second = copy.deepcopy(skus[0])
        second["skuId"] = "SECOND-PAGE"
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            if request.url.params.get("pageToken") == "tok-2":
                return httpx.Response(200, json=_page([second], ""))
            return httpx.Response(200, json=_page(skus, "tok-2"))

        scraper = GcpScraper(env={"GCP_API_KEY": KEY})
        raw = run_fetch(scraper, httpx.MockTransport(handler))
        assert len(seen) == 2
        for request in seen:
            assert request.method == "GET"
            assert str(request.url.copy_with(query=None)) == SKUS_URL
            assert request.url.params["key"] == KEY
            assert request.url.params["currencyCode"] == "USD"
            assert request.url.params["pageSize"] == "5000"
        assert "pageToken" not in seen[0].url.params
        assert seen[1].url.params["pageToken"] == "tok-2"
        offers = scraper.parse(raw)
        assert {o.sku for o in offers} == {"039F-D0DA-4055", "SECOND-PAGE"}

    def test_the_key_never_appears_in_a_fetch_error(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(403, json={"error": {"message": "API key not valid"}})

        with pytest.raises(FetchError) as info:
            run_fetch(GcpScraper(env={"GCP_API_KEY": KEY}), httpx.MockTransport(handler))
        assert KEY not in str(info.value)
        assert "403" in str(info.value) and "cloudbilling.googleapis.com" in str(info.value)

    def test_the_key_never_appears_after_retries_either(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError(f"boom {request.url}")

        with pytest.raises(FetchError) as info:
            run_fetch(GcpScraper(env={"GCP_API_KEY": KEY}), httpx.MockTransport(handler))
        assert KEY not in str(info.value)

    def test_a_repeated_page_token_is_an_error_not_a_loop(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=_page([], "same"))

        with pytest.raises(FetchError, match="nextPageToken"):
            run_fetch(GcpScraper(env={"GCP_API_KEY": KEY}), httpx.MockTransport(handler))

    def test_missing_credentials(self) -> None:
        scraper = GcpScraper(env={})
        with pytest.raises(MissingCredentials, match="set GCP_API_KEY to enable"):
            scraper.check_credentials()
        with pytest.raises(MissingCredentials):
            run_fetch(scraper, httpx.MockTransport(lambda r: httpx.Response(500)))

    def test_replay_needs_no_key_and_reads_both_recorded_pages(self) -> None:
        from tracker.pipeline.replay import ReplayTransport

        scraper = GcpScraper(env={}, replay=True)
        transport = ReplayTransport.for_provider("gcp")
        pages = run_fetch(scraper, transport)
        assert len(pages) == 2 and len(transport.requests) == 2
        assert transport.requests[1].url.params["pageToken"] == pages[0]["nextPageToken"]
        assert [len(p["skus"]) for p in pages] == [198, 198]
        assert [s for p in pages for s in p["skus"]] == load_json(H100_2025)
        offers = scraper.parse(pages)
        assert offers == GcpScraper(env={}).parse([{"skus": load_json(H100_2025)}])
        tokyo = next(o for o in offers if o.sku == "E166-C34C-2AF7")
        assert (tokyo.region, tokyo.price_per_hour) == ("asia-northeast1", pytest.approx(15.199348))


class TestRegionFromDescription:
    """Reference 2025 SKUs without ``serviceRegions``: the region comes from the description's location."""

    @pytest.fixture
    def offers(self) -> dict[str, Any]:
        offers = GcpScraper(env={}).parse([{"skus": load_json(H100_2025)}])
        keys = [(o.sku, o.region, o.kind, o.term_months) for o in offers]
        assert len(keys) == len(set(keys))
        by_sku = {o.sku: o for o in offers}
        assert len(by_sku) == len(offers)  # one offer per SKU: one place each
        return by_sku

    def test_h100_on_demand_in_tokyo(self, offers: dict[str, Any]) -> None:
        o = offers["E166-C34C-2AF7"]  # "Nvidia H100 80GB GPU running in Tokyo"
        assert (o.gpu_raw, o.gpu_count, o.gpu_memory_gb) == ("Nvidia H100 80GB", 1, 80)
        assert (o.kind, o.term_months) == ("on_demand", 0)
        assert (o.region, o.country) == ("asia-northeast1", "JP")
        assert o.price_per_hour == pytest.approx(15.199348)
        assert o.currency == "USD"
        assert o.extra["location"] == "Tokyo" and o.extra["region_source"] == "description"
        assert o.extra["gpu_component_only"] is True
        assert o.extra["description"] == "Nvidia H100 80GB GPU running in Tokyo"

    def test_h100_spot_and_commitments(self, offers: dict[str, Any]) -> None:
        spot = offers["683F-D9EF-1D9F"]  # "... attached to Spot Preemptible VMs running in Taiwan"
        assert (spot.kind, spot.region, spot.country) == ("spot", "asia-east1", "TW")
        assert spot.price_per_hour == pytest.approx(2.1847)
        one_year = offers["D2ED-B300-87EA"]  # "Commitment v1: Nvidia H100 80GB GPU running in Tokyo for 1 Year"
        assert (one_year.kind, one_year.term_months, one_year.region) == ("reserved", 12, "asia-northeast1")
        assert one_year.price_per_hour == pytest.approx(10.548351)
        three_years = offers["12E2-9EC3-63C6"]  # "... running in Taiwan for 3 Years"
        assert (three_years.kind, three_years.term_months, three_years.region) == ("reserved", 36, "asia-east1")
        assert three_years.price_per_hour == pytest.approx(5.327373)

    def test_a_location_that_is_no_single_region_stays_a_name(self, offers: dict[str, Any]) -> None:
        americas = offers["D4E2-451A-15B9"]  # "Nvidia H100 80GB GPU running in Americas": a pricing group
        assert (americas.region, americas.country) == ("Americas", None)
        assert americas.extra["location"] == "Americas" and americas.extra["region_source"] == "description_name"
        assert americas.price_per_hour == pytest.approx(10.482309109)
        names = {o.region for o in offers.values() if o.extra["region_source"] == "description_name"}
        assert names == {"Americas", "Virginia", "Northern Virginia", "Phoenix"}

    def test_h100_mega_plus_and_h200(self, offers: dict[str, Any]) -> None:
        by_text = {o.extra["description"]: o for o in offers.values()}
        mega = by_text["Nvidia H100 80GB Mega GPU running in Tokyo"]
        assert (mega.gpu_raw, mega.region, mega.price_per_hour) == (
            "Nvidia H100 80GB Mega", "asia-northeast1", pytest.approx(14.21401))
        h200 = by_text["H200 141GB GPU running in Northern Virginia"]
        assert (h200.gpu_raw, h200.gpu_memory_gb, h200.region) == ("H200 141GB", 141, "Northern Virginia")
        assert h200.price_per_hour == pytest.approx(9.96356)

    def test_calendar_mode_dws_and_zero_price_skus_are_skipped(self, offers: dict[str, Any]) -> None:
        raw = load_json(H100_2025)
        skipped = {s["skuId"] for s in raw} - set(offers)
        assert "AE60-7D45-1DF5" in skipped  # "Reserved Nvidia H100 80GB GPU in Americas in Calendar Mode"
        assert "0D84-873D-A330" in skipped  # "... attached to DWS Defined Duration VMs running in Tokyo"
        assert not any("Calendar Mode" in o.extra["description"] or "DWS" in o.extra["description"]
                       for o in offers.values())
        assert len(offers) == 220

    def test_service_regions_stay_the_first_choice(self) -> None:
        [sku] = [copy.deepcopy(s) for s in load_json(H100_2025) if s["skuId"] == "E166-C34C-2AF7"]
        sku["serviceRegions"] = ["asia-northeast1", "asia-northeast2"]  # added by the test
        offers = GcpScraper(env={}).parse([{"skus": [sku]}])
        assert [(o.region, o.country, o.extra["region_source"]) for o in offers] == [
            ("asia-northeast1", None, "serviceRegions"),
            ("asia-northeast2", None, "serviceRegions"),
        ]
        sku["serviceRegions"] = []  # present but empty: the description decides
        [o] = GcpScraper(env={}).parse([{"skus": [sku]}])
        assert (o.region, o.extra["region_source"]) == ("asia-northeast1", "description")

    def test_service_regions_of_the_wrong_type_is_a_parse_error(self) -> None:
        [sku] = [copy.deepcopy(s) for s in load_json(H100_2025) if s["skuId"] == "E166-C34C-2AF7"]
        sku["serviceRegions"] = "asia-northeast1"
        with pytest.raises(ParseError, match="gcp: .*serviceRegions"):
            GcpScraper(env={}).parse([{"skus": [sku]}])

    @pytest.mark.parametrize(
        ("location", "expected"),
        [
            ("Sydney", ("australia-southeast1", "AU")),
            ("Frankfurt", ("europe-west3", "DE")),
            ("Netherlands", ("europe-west4", "NL")),
            ("Sao Paulo", ("southamerica-east1", "BR")),
            ("São Paulo", ("southamerica-east1", "BR")),
            ("Zürich", ("europe-west6", "CH")),
            ("montreal", ("northamerica-northeast1", "CA")),
            ("Americas", None),
            ("EMEA", None),
            ("APAC", None),
            ("Japan", None),
            ("Virginia", None),
            ("Phoenix", None),
        ],
    )
    def test_location_table(self, location: str, expected: tuple[str, str] | None) -> None:
        assert region_of_location(location) == expected

    def test_every_location_of_the_2025_catalogue_is_mapped_or_deliberately_a_name(self) -> None:
        sample = load_json(GPU_2025) + load_json(H100_2025)
        locations = {what.location for s in sample if (what := classify_description(s["description"]))}
        unmapped = {loc for loc in locations if region_of_location(loc) is None}
        assert unmapped <= {"Americas", "EMEA", "APAC", "Japan", "Virginia", "Northern Virginia", "Phoenix"}


def test_parse_error_names_the_sku_without_a_location() -> None:
    with pytest.raises(ParseError, match=r"gcp: sku E166-C34C-2AF7 .*no serviceRegions.*no location"):
        GcpScraper(env={}).parse([{"skus": [no_location_sku()]}])
