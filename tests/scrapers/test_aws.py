"""AWS on-demand through the light pricing JSON (the default source): parse, requests, config.

Fixtures are real (tests/fixtures/aws/README.md): ``aws_pricing_json_ondemand_linux_gpu_by_location_
2026-09-28.json`` holds AWS's pricing JSON of 7 locations, filtered by its author to GPU rows
(no ``manifest``); ``aws_pricing_json_ondemand_linux_eu-stockholm_excerpt_2024-11-14.json`` is one
document as served (with its ``manifest``), 3 CPU rows. Not handmade. Filter and error tests edit
copies of real rows. The offer-file source is tested in ``test_aws_offer_file.py``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from scrapers._aws_common import REGIONS
from scrapers.aws import (
    CONCURRENCY,
    PRICING_JSON_REGIONS,
    REGIONS_ENV,
    SOURCE_ENV,
    AwsScraper,
    pricing_url,
)
from scrapers.base import UNREADABLE_PRICE, FetchError, ParseError, ScrapedOffer
from tests.conftest import load_json
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)
from tracker.errors import ConfigError

BY_LOCATION = "aws/aws_pricing_json_ondemand_linux_gpu_by_location_2026-09-28.json"
STOCKHOLM = "aws/aws_pricing_json_ondemand_linux_eu-stockholm_excerpt_2024-11-14.json"
VIRGINIA = "US East (N. Virginia)"
P5_KEY = "p5 48xlarge US East N. Virginia Linux"
VIRGINIA_URL = (
    "https://b0.p.awsstatic.com/pricing/2.0/meteredUnitMaps/ec2/USD/current/ec2-ondemand-without-sec-sel/"
    "US%20East%20(N.%20Virginia)/Linux/index.json"
)


def documents() -> dict[str, Any]:
    return load_json(BY_LOCATION)


def virginia_only(**row_changes: Any) -> dict[str, Any]:
    """The N. Virginia document alone, with the p5.48xlarge row's fields changed (None deletes)."""
    doc = copy.deepcopy(documents()[VIRGINIA])
    row = doc["regions"][VIRGINIA][P5_KEY]
    for key, value in row_changes.items():
        if value is None:
            row.pop(key, None)
        else:
            row[key] = value
    return {VIRGINIA: doc}


def stockholm() -> dict[str, Any]:
    """The 2024 document as served (manifest + regions), keyed by its location as fetch returns it."""
    return {"EU (Stockholm)": load_json(STOCKHOLM)}


def parse(raw: Any) -> list[ScrapedOffer]:
    return AwsScraper(env={}).parse(raw)


class TestAwsPricingJson(ProviderContract):
    scraper_cls = AwsScraper
    named_offer = NamedOffer("g6e.48xlarge", 8, "on_demand", "us-east-1", 30.13118)
    handmade = False  # real AWS pricing JSON (an excerpt filtered to GPU rows by its recorder)

    def load_raw(self) -> Any:
        return documents()

    def broken_payloads(self) -> list[Any]:
        no_regions = {VIRGINIA: {"manifest": {"currencyCode": "USD"}}}
        wrong_key = {VIRGINIA: {"regions": {"US East (Ohio)": {}}}}
        rows_not_object = {VIRGINIA: {"regions": {VIRGINIA: []}}}
        row_not_object = {VIRGINIA: {"regions": {VIRGINIA: {P5_KEY: "55.04"}}}}
        return [
            {},
            [],
            "",
            42,
            {"Atlantis (North)": documents()[VIRGINIA]},  # a location the region table does not know
            {VIRGINIA: []},
            no_regions,
            wrong_key,
            rows_not_object,
            row_not_object,
            virginia_only(**{"Instance Type": None}),
            virginia_only(**{"Instance Type": ""}),
            virginia_only(vCPU="lots"),
            virginia_only(Memory="2 TB-ish"),
            virginia_only(Memory=2048),
            virginia_only(rateCode="3D4V8UAYEMB38GU2"),
            virginia_only(Location="US East (Ohio)"),
            stockholm(),  # a real document with no GPU rows at all
            load_json(STOCKHOLM),  # a document not keyed by its location
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        return [
            virginia_only(price=None),
            virginia_only(price="call us"),
            virginia_only(price=["55.04"]),
        ]

    # --- values read from the recording ---------------------------------------------------

    def test_p5_48xlarge_in_us_east_1(self, offers: list[ScrapedOffer]) -> None:
        o = index_offers(offers)[("p5.48xlarge", "us-east-1", "on_demand")]
        assert (o.gpu, o.gpu_count, o.gpu_raw) == ("H100-SXM", 8, "p5.48xlarge")
        assert o.price_per_hour == pytest.approx(55.04)
        assert o.price_per_gpu_hour == pytest.approx(6.88)
        assert (o.currency, o.country, o.term_months) == ("USD", "US", 0)
        assert (o.vcpus, o.ram_gb) == (192, 2048)
        assert o.extra["aws_sku"] == "3D4V8UAYEMB38GU2"
        assert o.extra["rate_code"] == "3D4V8UAYEMB38GU2.JRTCKXETXF.6YS6EN2CT7"
        assert o.extra["storage"] == "8 x 3840 GB SSD" and o.extra["network"] == "3200 Gigabit"

    @pytest.mark.parametrize(
        ("sku", "region", "gpu", "count", "price"),
        [
            ("p5.48xlarge", "ap-northeast-1", "H100-SXM", 8, 68.80),
            ("p5.48xlarge", "sa-east-1", "H100-SXM", 8, 92.4672),
            ("p5.4xlarge", "us-east-2", "H100-SXM", 1, 6.88),
            ("p5en.48xlarge", "ap-south-1", "H200", 8, 75.9552),
            ("p6-b200.48xlarge", "us-west-2", "B200", 8, 113.9328),
            ("p6-b300.48xlarge", "us-west-2", "B300", 8, 142.416),
            ("p4d.24xlarge", "ap-southeast-2", "A100-SXM-40GB", 8, 28.54493),
            ("p4de.24xlarge", "us-east-1", "A100-SXM-80GB", 8, 27.44705),
            ("g6e.12xlarge", "ap-northeast-1", "L40S", 4, 15.21742),
            ("g6e.xlarge", "us-east-1", "L40S", 1, 1.861),
        ],
    )
    def test_instance_prices_per_region(
        self, offers: list[ScrapedOffer], sku: str, region: str, gpu: str, count: int, price: float
    ) -> None:
        o = index_offers(offers)[(sku, region, "on_demand")]
        assert (o.gpu, o.gpu_count, o.price_per_hour) == (gpu, count, pytest.approx(price))
        assert o.country == REGIONS[region].country

    def test_every_recorded_location_maps_to_its_region(self, offers: list[ScrapedOffer]) -> None:
        assert {o.region for o in offers} == {
            "us-east-1", "us-east-2", "us-west-2", "ap-northeast-1", "ap-south-1", "ap-southeast-2", "sa-east-1",
        }
        assert {o.region: o.country for o in offers}["ap-south-1"] == "IN"

    def test_the_p4d_sku_is_the_offer_files_sku(self, offers: list[ScrapedOffer]) -> None:
        """The rate code's SKU is the same product as in the offer file (test_aws_offer_file.ON_DEMAND_SKU)."""
        o = index_offers(offers)[("p4d.24xlarge", "us-east-1", "on_demand")]
        assert o.extra["aws_sku"] == "H7NGEAC6UEHNTKSJ"
        assert o.price_per_hour == pytest.approx(21.957642)

    def test_a_real_document_with_its_manifest_is_read(self) -> None:
        """The 2024 Stockholm excerpt is one document as served: manifest + regions; no GPU rows."""
        doc = stockholm()
        with pytest.raises(ParseError, match=r"aws: no Linux on-demand GPU instance prices in 1 pricing JSON"):
            parse(doc)
        # Give a real CPU row a GPU instance type: the row is then read, in eu-north-1.
        row = doc["EU (Stockholm)"]["regions"]["EU (Stockholm)"]["m6in large EU Stockholm Linux"]
        row["Instance Type"] = "g6e.xlarge"
        (o,) = parse(doc)
        assert (o.sku, o.region, o.country, o.price_per_hour, o.vcpus, o.ram_gb) == (
            "g6e.xlarge", "eu-north-1", "SE", 0.148, 2, 8,
        )

    def test_manifest_in_another_currency_or_source_is_refused(self) -> None:
        for field, value in (("currencyCode", "EUR"), ("source", "ec2-ondemand")):
            doc = stockholm()
            doc["EU (Stockholm)"]["manifest"][field] = value
            with pytest.raises(ParseError, match=f"aws: pricing JSON for eu-north-1 .*manifest.{field}"):
                parse(doc)

    # --- GPUs, accelerators and filters, on edited copies of real rows ------------------------

    def test_trainium_and_inferentia_are_not_gpu_offers(self, caplog: pytest.LogCaptureFixture) -> None:
        for itype, family in (("trn1.32xlarge", "Machine Learning ASIC Instances"), ("inf2.48xlarge", "GPU instance")):
            raw = virginia_only(**{"Instance Type": itype, "Instance Family": family})
            with caplog.at_level(logging.WARNING, logger="scrapers.aws"):
                offers = parse(raw)
            assert itype not in {o.sku for o in offers}
        assert "trn1" not in caplog.text and "inf2" not in caplog.text

    def test_a_gpu_instance_missing_from_the_table_is_left_out_and_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        raw = virginia_only(**{"Instance Type": "g4ad.16xlarge"})  # AMD Radeon Pro V520: no catalog row
        with caplog.at_level(logging.WARNING, logger="scrapers.aws"):
            offers = parse(raw)
        assert "g4ad.16xlarge" not in {o.sku for o in offers}
        assert "missing from the instance-type table" in caplog.text and "g4ad.16xlarge" in caplog.text

    @pytest.mark.parametrize(
        "change",
        [
            {"Operating System": "Windows"},
            {"Pre Installed S/W": "SQL Web"},
            {"License Model": "Bring your own license"},
        ],
    )
    def test_non_linux_or_licensed_rows_are_left_out(self, change: dict[str, str]) -> None:
        offers = parse(virginia_only(**change))
        assert "p5.48xlarge" not in {o.sku for o in offers}
        assert "p4d.24xlarge" in {o.sku for o in offers}

    def test_optional_fields_may_be_absent(self) -> None:
        offers = parse(virginia_only(vCPU=None, Memory=None, rateCode=None, Location=None))
        o = index_offers(offers)[("p5.48xlarge", "us-east-1", "on_demand")]
        assert (o.vcpus, o.ram_gb, o.price_per_hour) == (None, None, pytest.approx(55.04))
        assert "aws_sku" not in o.extra

    def test_two_rows_for_one_instance_type_keep_the_cheaper(self) -> None:
        raw = virginia_only()
        rows = raw[VIRGINIA]["regions"][VIRGINIA]
        twin = copy.deepcopy(rows[P5_KEY])
        twin["price"] = "60.0000000000"
        rows["p5 48xlarge twin"] = twin
        o = index_offers(parse(raw))[("p5.48xlarge", "us-east-1", "on_demand")]
        assert o.price_per_hour == pytest.approx(55.04)
        assert o.extra["other_prices"] == [60.0]

    def test_parse_errors_name_the_region_the_url_and_the_field(self) -> None:
        with pytest.raises(ParseError) as err:
            parse(virginia_only(vCPU="lots"))
        message = str(err.value)
        assert message.startswith(f"aws: pricing JSON for us-east-1 ({VIRGINIA}, {VIRGINIA_URL})")
        assert message.endswith(f"regions.{VIRGINIA!r}.{P5_KEY!r}['vCPU'] is not a number: 'lots'")
        assert "\n" not in message

    def test_an_unreadable_price_leaves_that_row_for_quarantine_naming_the_field(self) -> None:
        (bad,) = [o for o in parse(virginia_only(price="call us")) if o.extra.get(UNREADABLE_PRICE)]
        assert bad.price_per_hour is None
        assert bad.extra[UNREADABLE_PRICE] == f"price field regions[{VIRGINIA!r}][{P5_KEY!r}].price holds 'call us', not a number"

    # --- requests -------------------------------------------------------------------------------

    def test_fetch_gets_each_location_quoted_without_auth_and_404_means_no_listing(self) -> None:
        seen: list[httpx.Request] = []
        body = documents()[VIRGINIA]

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            if "N.%20Virginia" in request.url.raw_path.decode():
                return httpx.Response(200, json=body)
            return httpx.Response(404, text="<Error><Code>NoSuchKey</Code></Error>")

        scraper = AwsScraper(env={}, regions=["us-east-1", "eu-west-1"])
        raw = run_fetch(scraper, httpx.MockTransport(handler))
        assert {r.method for r in seen} == {"GET"}
        paths = sorted(r.url.raw_path.decode() for r in seen)
        assert paths == sorted([
            "/pricing/2.0/meteredUnitMaps/ec2/USD/current/ec2-ondemand-without-sec-sel/US%20East%20(N.%20Virginia)/Linux/index.json",
            "/pricing/2.0/meteredUnitMaps/ec2/USD/current/ec2-ondemand-without-sec-sel/EU%20(Ireland)/Linux/index.json",
        ])
        assert {r.url.host for r in seen} == {"b0.p.awsstatic.com"}
        assert all("authorization" not in r.headers and not r.url.query for r in seen)
        assert list(raw) == [VIRGINIA]  # Ireland answered 404: no listing there, not an error
        assert {o.region for o in scraper.parse(raw)} == {"us-east-1"}

    def test_every_location_404_is_a_fetch_error(self) -> None:
        transport = httpx.MockTransport(lambda request: httpx.Response(404))
        with pytest.raises(FetchError, match=r"aws: every pricing JSON answered 404 \(2 locations"):
            run_fetch(AwsScraper(env={}, regions=["us-east-1", "eu-west-1"]), transport)

    def test_a_server_error_fails_the_fetch(self) -> None:
        transport = httpx.MockTransport(lambda request: httpx.Response(503))
        with pytest.raises(FetchError, match="HTTP 503"):
            run_fetch(AwsScraper(env={}, regions=["us-east-1"]), transport)

    def test_default_fetch_asks_every_public_region_at_most_four_at_a_time(self) -> None:
        class Counting(httpx.AsyncBaseTransport):
            def __init__(self) -> None:
                self.in_flight = self.peak = 0
                self.paths: list[str] = []

            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
                self.paths.append(unquote(request.url.raw_path.decode()))
                for _ in range(3):
                    await asyncio.sleep(0)  # let the other requests start if the gate allows
                self.in_flight -= 1
                return httpx.Response(404, request=request)

        transport = Counting()
        with pytest.raises(FetchError, match=f"every pricing JSON answered 404 \\({len(PRICING_JSON_REGIONS)} locations"):
            run_fetch(AwsScraper(env={}), transport)
        assert transport.peak == CONCURRENCY
        assert sorted(transport.paths) == sorted(
            f"/pricing/2.0/meteredUnitMaps/ec2/USD/current/ec2-ondemand-without-sec-sel/{REGIONS[r].location}/Linux/index.json"
            for r in PRICING_JSON_REGIONS
        )

    def test_pricing_url_quotes_the_location_like_aws(self) -> None:
        assert pricing_url(VIRGINIA) == VIRGINIA_URL
        assert unquote(pricing_url("South America (Sao Paulo)")).endswith("/South America (Sao Paulo)/Linux/index.json")

    # --- configuration --------------------------------------------------------------------------

    def test_defaults_pricing_json_in_every_public_region(self) -> None:
        scraper = AwsScraper(env={})
        assert scraper.source == "pricing-json"
        assert scraper.regions == PRICING_JSON_REGIONS
        assert "us-east-1" in scraper.regions and "us-gov-west-1" not in scraper.regions
        assert len(set(PRICING_JSON_REGIONS)) == len(PRICING_JSON_REGIONS) >= 30

    def test_regions_and_source_from_env_or_arguments(self) -> None:
        assert AwsScraper(env={REGIONS_ENV: "us-west-2, ap-northeast-1 us-west-2"}).regions == ("us-west-2", "ap-northeast-1")
        assert AwsScraper(env={}, regions=["eu-west-1"]).regions == ("eu-west-1",)
        assert AwsScraper(env={SOURCE_ENV: "offer-file"}).source == "offer-file"
        assert AwsScraper(env={SOURCE_ENV: "offer-file"}, source="pricing-json").source == "pricing-json"

    def test_bad_configuration_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match=f"aws: {SOURCE_ENV} must be one of pricing-json, offer-file"):
            AwsScraper(env={SOURCE_ENV: "bulk"})
        with pytest.raises(ConfigError, match=f"aws: {REGIONS_ENV} has an invalid region code"):
            AwsScraper(env={REGIONS_ENV: "us-east-1/../../x"})
        with pytest.raises(ConfigError, match="no price-list location name is known for region 'ap-east-9'"):
            AwsScraper(env={REGIONS_ENV: "ap-east-9"})
        assert AwsScraper(env={REGIONS_ENV: "ap-east-9", SOURCE_ENV: "offer-file"}).regions == ("ap-east-9",)

    def test_needs_no_credentials_and_runs_daily(self) -> None:
        scraper = AwsScraper(env={})
        assert scraper.credentials == ()
        scraper.check_credentials()
        assert AwsScraper.default_interval_s == 86400


def test_region_table_is_consistent() -> None:
    """Codes are well-formed and unique per location; every location recorded in a real price
    list maps back to its code."""
    from scrapers._aws_common import REGION_BY_LOCATION, REGION_CODE

    assert len(REGION_BY_LOCATION) == len(REGIONS)
    assert all(REGION_CODE.match(code) and r.code == code and len(r.country) == 2 for code, r in REGIONS.items())
    recorded = {loc for loc in documents()} | set(load_json(STOCKHOLM)["regions"])
    assert recorded == {r.location for r in REGIONS.values() if r.recorded}


def test_replay_scrape_then_prices_lists_aws_h100s(tmp_path: Path) -> None:
    """``gpu-tracker scrape --replay`` then ``prices --gpu H100``: AWS's p5 instances, on-demand
    from the pricing JSON recording and spot from the spot feed recording."""
    from typer.testing import CliRunner

    from tracker.cli import app

    db = f"sqlite:///{tmp_path / 'aws.db'}"
    runner = CliRunner()
    scrape = runner.invoke(app, ["--db", db, "scrape", "--replay", "-p", "aws", "-p", "aws_spot", "--format", "json"])
    assert scrape.exit_code == 0, scrape.output
    summary = {r["provider"]: r for r in json.loads(scrape.stdout)}
    assert summary["aws"]["status"] == summary["aws_spot"]["status"] == "ok"
    assert summary["aws"]["offers"] >= 40 and summary["aws_spot"]["offers"] == 47
    prices = runner.invoke(app, ["--db", db, "prices", "--gpu", "H100", "--kind", "all", "--format", "json"])
    assert prices.exit_code == 0, prices.output
    rows = {(r["provider"], r["gpu_raw"], r["kind"], r["region"]): r for r in json.loads(prices.stdout)}
    p5 = rows[("aws", "p5.48xlarge", "on_demand", "us-east-1")]
    assert (p5["gpu"], p5["gpu_count"], p5["price_per_hour"], p5["price_per_gpu_hour"]) == ("H100-SXM", 8, 55.04, 6.88)
    spot = rows[("aws_spot", "p5.48xlarge", "spot", "us-east-2")]
    assert spot["price_per_hour"] == pytest.approx(21.7886)  # the reference excerpt: the feed's 20.3632 x 1.07
