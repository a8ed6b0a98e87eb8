"""AWS spot prices from the public spot feed (spot.json): parse, request, config.

Fixtures: the replay file ``tracker/recordings/aws_spot/spot_us-east-2_gpu_excerpt_2026-08_reference.json`` is a
REFERENCE feed: the shape of AWS's spot.json of August 2026 (as committed by alexei-led/spotinfo), trimmed to
us-east-2 with its whole GPU group, every price our own (the source's x 1.07, 4 decimals);
``aws_spot_json_excerpt_2024-11.json`` (tests/fixtures/aws_spot/README.md) is a real recording, one region, two CPU
sizes. Shape and error tests edit copies of them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from scrapers._aws_common import REGIONS_ENV
from scrapers.aws_spot import SPOT_URL, AwsSpotScraper, spot_prices
from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from tests.conftest import load_json
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    index_offers,
    run_fetch,
)
from tracker.errors import ConfigError
from tracker.pipeline.replay import BUNDLED_RECORDINGS, recording_info

GPU_EXCERPT = BUNDLED_RECORDINGS / "aws_spot" / "spot_us-east-2_gpu_excerpt_2026-08_reference.json"
CPU_EXCERPT = "aws_spot/aws_spot_json_excerpt_2024-11.json"


def feed() -> dict[str, Any]:
    return json.loads(GPU_EXCERPT.read_text())


def gpu_sizes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    (group,) = [g for g in doc["config"]["regions"][0]["instanceTypes"] if g["type"] == "gpuCurrentGen"]
    return group["sizes"]


def size_entry(doc: dict[str, Any], size: str) -> dict[str, Any]:
    return next(s for s in gpu_sizes(doc) if s["size"] == size)


def edited(**changes: Any) -> dict[str, Any]:
    """The feed with ``config`` keys changed."""
    doc = feed()
    doc["config"].update(changes)
    return doc


class TestAwsSpot(ProviderContract):
    scraper_cls = AwsSpotScraper
    named_offer = NamedOffer("g4dn.12xlarge", 4, "spot", "us-east-2", 1.2286)
    handmade = True  # not a real recording: a reference feed (spot.json's shape, our own prices)

    def test_the_fixture_is_the_labelled_reference_replay_recording(self) -> None:
        info = recording_info("aws_spot")
        assert info is not None and (info.fixture, info.recorded) == ("reference", None)
        assert AwsSpotScraper.fixture_kind == "reference" and GPU_EXCERPT.name.endswith("_reference.json")

    def load_raw(self) -> Any:
        return feed()

    def broken_payloads(self) -> list[Any]:
        no_size = feed()
        del size_entry(no_size, "p5.48xlarge")["size"]
        every_price = feed()
        for entry in gpu_sizes(every_price):
            entry["valueColumns"][0]["prices"]["USD"] = "twenty"
        prices_not_object = feed()
        size_entry(prices_not_object, "p5.48xlarge")["valueColumns"][0]["prices"] = ["21.7886"]
        two_linux = feed()
        entry = size_entry(two_linux, "p5.48xlarge")
        entry["valueColumns"].append(copy.deepcopy(entry["valueColumns"][0]))
        no_region = feed()
        del no_region["config"]["regions"][0]["region"]
        sizes_not_list = feed()
        sizes_not_list["config"]["regions"][0]["instanceTypes"][1]["sizes"] = {}
        return [
            {},
            [],
            "",
            {"vers": 0.01},
            edited(rate="perday"),
            edited(currencies=["EUR"]),
            edited(valueColumns=["mswin"]),
            edited(regions=[]),
            edited(regions={"us-east-2": []}),
            no_size,
            every_price,
            prices_not_object,
            two_linux,
            no_region,
            sizes_not_list,
            load_json(CPU_EXCERPT),  # real, but no GPU size at all
            "<html><body>503 Service Unavailable</body></html>",
            GPU_EXCERPT.read_text()[:5000],  # a truncated body
        ]

    def bad_offer_payloads(self) -> list[Any]:
        bad_price = feed()
        size_entry(bad_price, "p5.48xlarge")["valueColumns"][0]["prices"]["USD"] = "twenty"
        no_usd = feed()
        size_entry(no_usd, "p5.48xlarge")["valueColumns"][0]["prices"] = {"EUR": "18.0"}
        return [bad_price, no_usd]

    # --- values read from the recording ---------------------------------------------------

    @pytest.mark.parametrize(
        ("sku", "gpu", "count", "price"),
        [
            ("p5.48xlarge", "H100-SXM", 8, 21.7886),
            ("p5.4xlarge", "H100-SXM", 1, 2.8136),
            ("p5e.48xlarge", "H200", 8, 26.9552),
            ("p5en.48xlarge", "H200", 8, 28.4342),
            ("p6-b200.48xlarge", "B200", 8, 44.9882),
            ("p4d.24xlarge", "A100-SXM-40GB", 8, 6.5051),
            ("p3.16xlarge", "V100-SXM-16GB", 8, 8.5953),
            ("g6e.48xlarge", "L40S", 8, 11.2737),
            ("g5.xlarge", "A10G", 1, 0.3907),
            ("g4dn.xlarge", "T4", 1, 0.2101),
            ("g6f.large", "L4", 0.125, 0.0379),
        ],
    )
    def test_spot_prices_in_us_east_2(self, offers: list[ScrapedOffer], sku: str, gpu: str, count: float, price: float) -> None:
        o = index_offers(offers)[(sku, "us-east-2", "spot")]
        assert (o.gpu, o.gpu_count, o.gpu_raw) == (gpu, count, sku)
        assert o.price_per_hour == pytest.approx(price)
        assert (o.currency, o.country, o.term_months) == ("USD", "US", 0)

    def test_only_mapped_gpu_sizes_become_offers(self, offers: list[ScrapedOffer]) -> None:
        skus = {o.sku for o in offers}
        assert not {s for s in skus if s.startswith(("trn", "inf"))}  # Trainium/Inferentia: not GPUs
        assert "m4.10xlarge" not in skus and "r4.16xlarge" not in skus  # CPU sizes around the GPU group
        assert not {s for s in skus if s.startswith(("g4ad.", "g7.", "g7e."))}  # GPUs the table lacks
        assert {o.kind for o in offers} == {"spot"} and {o.region for o in offers} == {"us-east-2"}
        # 76 distinct sizes in the group, less 5 g4ad, 6 g7, 6 g7e, 4 inf1, 4 inf2, 4 trn: 47 GPU offers
        assert len(offers) == len(skus) == 47

    def test_a_size_listed_twice_is_one_offer(self, offers: list[ScrapedOffer]) -> None:
        assert sum(1 for s in gpu_sizes(feed()) if s["size"] == "g6.12xlarge") == 2  # as the feed lists it
        (o,) = [o for o in offers if o.sku == "g6.12xlarge"]
        assert o.price_per_hour == pytest.approx(1.7029) and "other_prices" not in o.extra

    def test_differing_duplicates_keep_the_lower_price(self) -> None:
        doc = feed()
        twins = [s for s in gpu_sizes(doc) if s["size"] == "g6.12xlarge"]
        twins[0]["valueColumns"][0]["prices"]["USD"] = "1.9000"
        (o,) = [o for o in AwsSpotScraper(env={}).parse(doc) if o.sku == "g6.12xlarge"]
        assert o.price_per_hour == pytest.approx(1.7029) and o.extra["other_prices"] == [1.9]

    def test_every_price_of_the_real_cpu_excerpt(self) -> None:
        """The 2024 excerpt: "N/A*" marks an OS not offered; the Linux prices are read as they are."""
        assert spot_prices(load_json(CPU_EXCERPT)) == [("us-east-1", "m6i.xlarge", 0.0615, {}), ("us-east-1", "m6g.xlarge", 0.0378, {})]
        with pytest.raises(ParseError, match=r"aws_spot: no Linux GPU spot prices among 2 priced size\(s\)"):
            AwsSpotScraper(env={}).parse(load_json(CPU_EXCERPT))

    def test_linux_not_offered_is_no_offer(self) -> None:
        doc = feed()
        size_entry(doc, "p5.48xlarge")["valueColumns"][0]["prices"]["USD"] = "N/A*"
        skus = {o.sku for o in AwsSpotScraper(env={}).parse(doc)}
        assert "p5.48xlarge" not in skus and "p5.4xlarge" in skus

    def test_parse_errors_name_provider_region_size_and_field(self) -> None:
        doc = feed()
        size_entry(doc, "p5.48xlarge")["valueColumns"][0]["prices"] = ["21.7886"]
        with pytest.raises(ParseError) as err:
            AwsSpotScraper(env={}).parse(doc)
        assert str(err.value) == "aws_spot: spot.json: region us-east-2: p5.48xlarge: linux prices should be an object"

    def test_one_unreadable_price_quarantines_that_size_naming_the_field(self) -> None:
        doc = feed()
        sizes = gpu_sizes(doc)
        i = next(i for i, s in enumerate(sizes) if s["size"] == "p5.48xlarge")
        sizes[i]["valueColumns"][0]["prices"]["USD"] = "twenty"
        offers = AwsSpotScraper(env={}).parse(doc)
        (bad,) = [o for o in offers if UNREADABLE_PRICE in o.extra]
        assert (bad.sku, bad.price_per_hour) == ("p5.48xlarge", None)
        assert bad.extra[UNREADABLE_PRICE] == f"price field config.regions[0].instanceTypes[1].sizes[{i}].valueColumns[0].prices.USD holds 'twenty', not a number"
        assert len(offers) == 47

    def test_an_unreadable_duplicate_gives_way_to_the_readable_listing(self) -> None:
        doc = feed()
        twins = [s for s in gpu_sizes(doc) if s["size"] == "g6.12xlarge"]
        twins[0]["valueColumns"][0]["prices"]["USD"] = "twenty"
        (o,) = [o for o in AwsSpotScraper(env={}).parse(doc) if o.sku == "g6.12xlarge"]
        assert o.price_per_hour == pytest.approx(1.7029) and UNREADABLE_PRICE not in o.extra

    # --- request and configuration --------------------------------------------------------------

    def test_fetch_is_one_get_without_auth(self) -> None:
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(200, json=feed(), headers={"Content-Type": "application/x-javascript"})

        scraper = AwsSpotScraper(env={})
        raw = run_fetch(scraper, httpx.MockTransport(handler))
        (request,) = seen
        assert (request.method, str(request.url)) == ("GET", SPOT_URL)
        assert "authorization" not in request.headers and not request.content
        assert json.loads(raw) == feed()  # the body text; parse decodes it
        assert scraper.parse(raw) == scraper.parse(feed())

    def test_the_body_is_read_with_or_without_the_old_callback_wrapper(self) -> None:
        text = GPU_EXCERPT.read_text()
        scraper = AwsSpotScraper(env={})
        expected = scraper.parse(feed())
        assert scraper.parse(text) == expected
        assert scraper.parse(text.encode()) == expected
        assert scraper.parse(f"callback({text});") == expected

    def test_regions_filter(self) -> None:
        assert AwsSpotScraper(env={}).regions == frozenset()  # every region in the feed
        assert AwsSpotScraper(env={REGIONS_ENV: "us-east-2 us-west-2"}).regions == {"us-east-2", "us-west-2"}
        assert len(AwsSpotScraper(env={REGIONS_ENV: "us-east-2"}).parse(feed())) == 47
        with pytest.raises(ParseError, match=r"aws_spot: no Linux GPU spot prices among 0 priced size\(s\) in \['eu-west-1'\]"):
            AwsSpotScraper(env={}, regions=["eu-west-1"]).parse(feed())
        with pytest.raises(ConfigError, match=f"aws_spot: {REGIONS_ENV} has an invalid region code"):
            AwsSpotScraper(env={REGIONS_ENV: "us-east-2;drop"})

    def test_needs_no_credentials_and_runs_hourly(self) -> None:
        scraper = AwsSpotScraper(env={})
        assert scraper.credentials == ()
        scraper.check_credentials()
        assert AwsSpotScraper.default_interval_s == 3600
