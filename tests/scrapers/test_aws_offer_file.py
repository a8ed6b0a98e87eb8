"""AWS with ``$AWS_PRICING_SOURCE=offer-file``: streaming parse of the bulk offer file, downloads per region.

The fixture is real (tests/fixtures/aws/README.md: ``aws_offer_file_ec2_us-east-1_p4d_excerpt_2024-05-28.json``, a
real-transcribed excerpt of the us-east-1 EC2 offer file with two p4d.24xlarge products). Not
handmade. Filter tests write edited copies of it to ``tmp_path``.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from scrapers.aws import (
    DEFAULT_REGIONS,
    OFFER_URL,
    REGIONS_ENV,
    SOURCE_ENV,
    AwsScraper,
    OfferFiles,
)
from scrapers.base import FetchError, ParseError, ScrapedOffer
from tests.conftest import fixture_path, load_json
from tests.scrapers.contract import ProviderContract, run_fetch
from tracker.pipeline.replay import ReplayTransport

EXCERPT = "aws/aws_offer_file_ec2_us-east-1_p4d_excerpt_2024-05-28.json"
ON_DEMAND_SKU = "H7NGEAC6UEHNTKSJ"
CAPACITY_BLOCK_SKU = "YSXJGN78QTXNVGDQ"


def owned_file(content: bytes | str | dict[str, Any]) -> OfferFiles:
    """A temp file handed to ``parse`` as a download it owns (so parse deletes it)."""
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode()
    fd, name = tempfile.mkstemp(prefix="gpu-tracker-test-", suffix=".download")
    with os.fdopen(fd, "wb") as fh:
        fh.write(content)
    return OfferFiles([Path(name)])


def write(tmp_path: Path, name: str, payload: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload, indent=2))
    return path


def excerpt() -> dict[str, Any]:
    return load_json(EXCERPT)


def with_attrs(**attrs: str) -> dict[str, Any]:
    """The excerpt with the on-demand product's attributes changed."""
    doc = excerpt()
    doc["products"][ON_DEMAND_SKU]["attributes"].update(attrs)
    return doc


class TestAwsOfferFile(ProviderContract):
    scraper_cls = AwsScraper
    handmade = False  # real-transcribed excerpt of the EC2 offer file

    def load_raw(self) -> Any:
        return fixture_path(EXCERPT)

    def broken_payloads(self) -> list[Any]:
        doc = excerpt()
        no_terms = copy.deepcopy(doc)
        del no_terms["terms"]
        no_attrs = copy.deepcopy(doc)
        del no_attrs["products"][ON_DEMAND_SKU]["attributes"]
        bad_price = copy.deepcopy(doc)
        dims = bad_price["terms"]["OnDemand"][ON_DEMAND_SKU][f"{ON_DEMAND_SKU}.JRTCKXETXF"]["priceDimensions"]
        next(iter(dims.values()))["pricePerUnit"]["USD"] = "call us"
        no_price_dims = copy.deepcopy(doc)
        del no_price_dims["terms"]["OnDemand"][ON_DEMAND_SKU][f"{ON_DEMAND_SKU}.JRTCKXETXF"]["priceDimensions"]
        no_region = copy.deepcopy(doc)
        del no_region["products"][ON_DEMAND_SKU]["attributes"]["regionCode"]
        text = json.dumps(doc)
        return [
            {},
            [],
            "",
            42,
            owned_file(b"<html><body>503 Service Unavailable</body></html>"),
            owned_file(text[: len(text) // 2]),  # truncated download
            owned_file({"formatVersion": "v1.0", "offerCode": "AmazonS3", "products": {}}),
            owned_file({"formatVersion": "v1.0", "offerCode": "AmazonEC2"}),
            owned_file(no_terms),
            owned_file(no_attrs),
            owned_file(bad_price),
            owned_file(no_price_dims),
            owned_file(no_region),
            owned_file({**{k: doc[k] for k in ("formatVersion", "offerCode")}, "products": {}, "terms": {"OnDemand": {}}}),
            [Path("/nonexistent/gpu-tracker/index.json")],
        ]

    # --- values read from the recording ---------------------------------------------------

    def test_p4d_on_demand_us_east_1(self, offers: list[ScrapedOffer]) -> None:
        (o,) = offers  # the Capacity Block product ($0.00) is not an on-demand offer
        assert (o.sku, o.region, o.kind, o.term_months) == ("p4d.24xlarge", "us-east-1", "on_demand", 0)
        assert o.price_per_hour == pytest.approx(32.7726)
        assert o.currency == "USD"
        assert (o.gpu, o.gpu_count, o.gpu_raw) == ("A100-SXM-40GB", 8, "p4d.24xlarge")
        assert (o.vcpus, o.ram_gb, o.country) == (96, 1152, "US")
        assert o.extra["aws_sku"] == ON_DEMAND_SKU
        assert o.price_per_gpu_hour == pytest.approx(32.7726 / 8)

    def test_parse_does_not_delete_files_it_does_not_own(self) -> None:
        AwsScraper(env={}).parse(fixture_path(EXCERPT))
        AwsScraper(env={}).parse([str(fixture_path(EXCERPT))])
        assert fixture_path(EXCERPT).is_file()

    def test_parse_deletes_owned_downloads_after_success_and_failure(self) -> None:
        good = owned_file(excerpt())
        AwsScraper(env={}).parse(good)
        assert not good[0].exists()
        bad = owned_file(b"not json")
        with pytest.raises(ParseError):
            AwsScraper(env={}).parse(bad)
        assert not bad[0].exists()

    def test_unparsed_downloads_are_removed_when_dropped(self) -> None:
        files = owned_file(excerpt())
        path = files[0]
        del files
        assert not path.exists()

    def test_parse_never_loads_the_whole_file_with_json(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def forbidden(*a: Any, **k: Any) -> Any:
            raise AssertionError("json.load(s) used on an offer file")

        monkeypatch.setattr(json, "load", forbidden)
        monkeypatch.setattr(json, "loads", forbidden)
        (o,) = AwsScraper(env={}).parse(fixture_path(EXCERPT))
        assert o.sku == "p4d.24xlarge"

    # --- filters, on edited copies of the real excerpt ----------------------------------------

    @pytest.mark.parametrize(
        "attrs",
        [
            {"operatingSystem": "Windows"},
            {"tenancy": "Dedicated"},
            {"preInstalledSw": "SQL Std"},
            {"capacitystatus": "UnusedCapacityReservation"},
            {"marketoption": "CapacityBlock"},
            {"licenseModel": "Bring your own license"},
            {"locationType": "AWS Local Zone", "location": "US East (Boston)"},
            {"instanceType": "m5.24xlarge", "gpu": "NA", "usagetype": "BoxUsage:m5.24xlarge"},
        ],
    )
    def test_non_matching_products_are_left_out(self, tmp_path: Path, attrs: dict[str, str]) -> None:
        path = write(tmp_path, "index.json", with_attrs(**attrs))
        with pytest.raises(ParseError, match="aws: no Linux on-demand GPU instance prices"):
            AwsScraper(env={}).parse(path)

    def test_gpu_family_missing_from_the_table_keeps_the_payload_count(self, tmp_path: Path) -> None:
        path = write(tmp_path, "index.json", with_attrs(instanceType="g4ad.16xlarge", gpu="4"))
        (o,) = AwsScraper(env={}).parse(path)
        assert (o.sku, o.gpu, o.gpu_count, o.gpu_raw) == ("g4ad.16xlarge", None, 4, "g4ad.16xlarge")

    def test_catalog_count_wins_over_the_payload(self, tmp_path: Path) -> None:
        path = write(tmp_path, "index.json", with_attrs(instanceType="g6f.large", gpu="1"))
        (o,) = AwsScraper(env={}).parse(path)
        assert (o.gpu, o.gpu_count) == ("L4", 0.125)

    def test_products_and_terms_may_come_in_either_order(self, tmp_path: Path) -> None:
        doc = excerpt()
        reordered = {"formatVersion": doc["formatVersion"], "terms": doc["terms"], "offerCode": doc["offerCode"], "products": doc["products"]}
        (o,) = AwsScraper(env={}).parse(write(tmp_path, "index.json", reordered))
        assert o.price_per_hour == pytest.approx(32.7726)

    def test_two_region_files_give_one_offer_each(self, tmp_path: Path) -> None:
        other = excerpt()
        other["products"][ON_DEMAND_SKU]["attributes"].update(regionCode="us-west-2", location="US West (Oregon)")
        a = write(tmp_path, "a.json", excerpt())
        b = write(tmp_path, "b.json", other)
        offers = AwsScraper(env={}).parse([a, b])
        assert sorted((o.sku, o.region) for o in offers) == [("p4d.24xlarge", "us-east-1"), ("p4d.24xlarge", "us-west-2")]

    def test_the_same_region_twice_is_a_parse_error(self, tmp_path: Path) -> None:
        a = write(tmp_path, "a.json", excerpt())
        with pytest.raises(ParseError, match="aws: p4d.24xlarge in us-east-1 appears in two offer files"):
            AwsScraper(env={}).parse([a, a])

    def test_two_products_for_one_instance_type_keep_the_cheaper(self, tmp_path: Path) -> None:
        doc = excerpt()
        twin = copy.deepcopy(doc["products"][ON_DEMAND_SKU])
        twin["sku"] = "TWINSKU"
        doc["products"]["TWINSKU"] = twin
        term = copy.deepcopy(doc["terms"]["OnDemand"][ON_DEMAND_SKU][f"{ON_DEMAND_SKU}.JRTCKXETXF"])
        next(iter(term["priceDimensions"].values()))["pricePerUnit"]["USD"] = "40.0000000000"
        doc["terms"]["OnDemand"]["TWINSKU"] = {"TWINSKU.JRTCKXETXF": term}
        (o,) = AwsScraper(env={}).parse(write(tmp_path, "index.json", doc))
        assert o.price_per_hour == pytest.approx(32.7726)
        assert o.extra["aws_sku"] == ON_DEMAND_SKU
        assert o.extra["other_aws_skus"] == ["TWINSKU"] and o.extra["other_prices"] == [40.0]

    def test_gpu_product_without_an_on_demand_term_is_listed_without_price(self, tmp_path: Path) -> None:
        doc = excerpt()
        twin = copy.deepcopy(doc["products"][ON_DEMAND_SKU])
        twin["attributes"]["instanceType"] = "p5.48xlarge"
        doc["products"]["NOTERM"] = twin
        offers = {o.sku: o for o in AwsScraper(env={}).parse(write(tmp_path, "index.json", doc))}
        assert offers["p5.48xlarge"].price_per_hour is None
        assert offers["p5.48xlarge"].extra["no_on_demand_term"] is True
        assert offers["p4d.24xlarge"].price_per_hour == pytest.approx(32.7726)

    # --- requests and configuration -----------------------------------------------------------

    def test_fetch_downloads_each_region_and_parse_cleans_up(self) -> None:
        body = fixture_path(EXCERPT).read_bytes()
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(200, content=body, headers={"Content-Type": "application/json"})

        scraper = AwsScraper(env={}, regions=["us-east-1", "eu-west-1"], source="offer-file")
        files = run_fetch(scraper, httpx.MockTransport(handler))
        assert [str(r.url) for r in seen] == [OFFER_URL.format(region="us-east-1"), OFFER_URL.format(region="eu-west-1")]
        assert {r.method for r in seen} == {"GET"}
        assert all("authorization" not in r.headers for r in seen)
        assert isinstance(files, OfferFiles) and len(files) == 2
        assert all(p.is_file() and p.read_bytes() == body for p in files)
        paths = list(files)
        # Both files claim us-east-1 (same body for both URLs here), which parse refuses.
        with pytest.raises(ParseError, match="appears in two offer files"):
            scraper.parse(files)
        assert not any(p.exists() for p in paths)

    def test_fetch_failure_removes_the_files_already_downloaded(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

        def handler(request: httpx.Request) -> httpx.Response:
            if "/us-east-1/" in request.url.path:
                return httpx.Response(200, content=fixture_path(EXCERPT).read_bytes())
            return httpx.Response(403, text="AccessDenied")

        with pytest.raises(FetchError, match="HTTP 403"):
            run_fetch(AwsScraper(env={}, regions=["us-east-1", "us-west-2"], source="offer-file"), httpx.MockTransport(handler))
        assert list(tmp_path.iterdir()) == []

    def test_regions_default_env_and_argument(self) -> None:
        assert AwsScraper(env={SOURCE_ENV: "offer-file"}).regions == DEFAULT_REGIONS
        env = {SOURCE_ENV: "offer-file", REGIONS_ENV: "us-west-2, ap-northeast-1 us-west-2"}
        assert AwsScraper(env=env).regions == ("us-west-2", "ap-northeast-1")
        assert AwsScraper(env={REGIONS_ENV: "us-gov-west-1"}, source="offer-file").regions == ("us-gov-west-1",)

    def test_bundled_replay_drives_the_real_fetch(self, tmp_path: Path) -> None:
        """The bundled recording is the pricing JSON; this replays the offer-file fetch from a
        recording of the real excerpt as the us-east-1 offer file."""
        rec = tmp_path / "aws"
        rec.mkdir()
        (rec / "index.json").write_bytes(fixture_path(EXCERPT).read_bytes())
        manifest = {"source": "test", "recorded": "2024-05-28", "responses": [
            {"method": "GET", "url": OFFER_URL.format(region="us-east-1"), "file": "index.json"}]}
        (rec / "manifest.json").write_text(json.dumps(manifest))
        scraper = AwsScraper(env={}, replay=True, regions=["us-east-1"], source="offer-file")
        transport = ReplayTransport.for_provider("aws", tmp_path)
        (o,) = scraper.parse(run_fetch(scraper, transport))
        assert (o.sku, o.region, o.price_per_hour) == ("p4d.24xlarge", "us-east-1", pytest.approx(32.7726))
        assert [str(r.url) for r in transport.requests] == [OFFER_URL.format(region="us-east-1")]

    def test_parse_errors_name_the_region_and_url_never_the_temporary_file(self) -> None:
        text = fixture_path(EXCERPT).read_text()

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=text[: len(text) // 2].encode())  # a truncated download

        scraper = AwsScraper(env={}, regions=["us-east-1"], source="offer-file")
        files = run_fetch(scraper, httpx.MockTransport(handler))
        temp_name = files[0].name
        with pytest.raises(ParseError) as err:
            scraper.parse(files)
        message = str(err.value)
        assert message.startswith(f"aws: offer file for us-east-1 ({OFFER_URL.format(region='us-east-1')}) is not valid JSON")
        assert temp_name not in message and "gpu-tracker-" not in message and ".download" not in message

    def test_trainium_is_skipped_though_the_offer_file_counts_its_chips(self, tmp_path: Path) -> None:
        doc = with_attrs(instanceType="trn1.32xlarge", gpu="16", instanceFamily="Machine Learning ASIC Instances")
        with pytest.raises(ParseError, match="aws: no Linux on-demand GPU instance prices"):
            AwsScraper(env={}).parse(write(tmp_path, "index.json", doc))
