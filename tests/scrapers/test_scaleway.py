"""Scaleway products/servers (+ availability) scraper. fr-par-2, where the GPUs are, is a REFERENCE fixture
(our own values in the structure of getcomputable/gpu-index's 2026 fr-par-2 read), the bundled replay
recording itself; the fr-par-1 pages are REAL (a terraform-provider-scaleway go-vcr recording, 2026-06-23),
trimmed to a few whole server types each: see tests/fixtures/scaleway/README.md."""

from __future__ import annotations

import copy
import re
from typing import Any

import httpx
import pytest

from scrapers.base import FetchError, PartialOffers, ScrapedOffer
from scrapers.scaleway import (
    DEFAULT_ZONES,
    ZONES_ENV,
    ScalewayScraper,
    availability_url,
    products_url,
)
from tests.conftest import load_json
from tests.scrapers.contract import (
    NamedOffer,
    ProviderContract,
    replayed_payload,
    run_fetch,
)
from tracker.errors import ConfigError
from tracker.pipeline.replay import BUNDLED_RECORDINGS

# REFERENCE (our own values): the bundled replay recording's fr-par-2 answers, read in place.
FR_PAR_2 = BUNDLED_RECORDINGS / "scaleway"
FR_PAR_2_SERVERS = "fr-par-2_servers_2026_reference.json"
FR_PAR_2_AVAILABILITY = "fr-par-2_availability_2026_reference.json"

PAGES = [f"scaleway/scaleway_products_servers_fr-par-1_page{i}_2026-06-23.json" for i in (1, 2, 3)]
# The recorded Link headers of pages 1 and 2 (page 3 has no rel="next").
LINKS = {
    1: '</products/servers?page=2&per_page=50&>; rel="next",</products/servers?page=3&per_page=50&>; rel="last"',
    2: '</products/servers?page=1&per_page=50&>; rel="first",</products/servers?page=1&per_page=50&>; rel="previous",'
    '</products/servers?page=3&per_page=50&>; rel="next",</products/servers?page=3&per_page=50&>; rel="last"',
}


def pages() -> list[Any]:
    return [load_json(p) for p in PAGES]


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


def fr_par_2(name: str) -> Any:
    import json

    return json.loads((FR_PAR_2 / name).read_text())


class TestScaleway(ProviderContract):
    """The contract on the bundled replay: every zone, fr-par-2 (REFERENCE) with its stock."""

    scraper_cls = ScalewayScraper
    named_offer = NamedOffer("NVIDIA L4", 2, "on_demand", "fr-par-1", 1.575, "EUR")
    handmade = True  # a reference fixture (the real shape, our own values), not a real recording
    min_offers = 16

    def load_raw(self) -> dict[str, Any]:
        return copy.deepcopy(replayed_payload("scaleway"))

    @pytest.fixture
    def fr_par_1(self) -> list[ScrapedOffer]:
        """The real fr-par-1 pages alone (the older {zone: [page, ...]} payload)."""
        return ScalewayScraper(env={}).parse({"fr-par-1": pages()})

    def test_every_zone_is_read_and_fr_par_2_holds_the_big_gpus(self, offers: list[ScrapedOffer]) -> None:
        assert not isinstance(offers, PartialOffers)
        assert list(self.load_raw()) == list(DEFAULT_ZONES)
        assert sorted(o.sku for o in offers if o.region == "fr-par-2") == [
            "B300-SXM-8-288G", "GPU-3070-S", "H100-1-80G", "H100-2-80G", "H100-SXM-2-80G", "H100-SXM-4-80G",
            "H100-SXM-8-80G", "L40S-1-48G", "L40S-2-48G", "L40S-4-48G", "L40S-8-48G",
        ]
        assert sorted(o.sku for o in offers if o.region == "fr-par-1") == ["L4-1-24G", "L4-2-24G", "L4-4-24G", "L4-8-24G", "RENDER-S"]

    def test_fr_par_2_h100_sxm_values_and_stock(self, offers: list[ScrapedOffer]) -> None:
        o = {(x.region, x.sku): x for x in offers}[("fr-par-2", "H100-SXM-8-80G")]
        assert (o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.kind) == ("NVIDIA H100-SXM", 8, 80.0, "on_demand")
        assert (o.price_per_hour, o.currency, o.country) == (23.4, "EUR", "FR")
        assert (o.vcpus, o.ram_gb, o.extra["monthly_price"]) == (128, 960, 17082.0)
        assert (o.available, o.extra["stock"]) == (True, "scarce")  # scarce: still rentable

    def test_fr_par_2_stock_levels(self, offers: list[ScrapedOffer]) -> None:
        o = {x.sku: x for x in offers if x.region == "fr-par-2"}
        assert (o["H100-1-80G"].available, o["H100-1-80G"].extra["stock"], o["H100-1-80G"].price_per_hour) == (True, "available", 2.52)
        assert (o["H100-SXM-2-80G"].available, o["H100-SXM-2-80G"].extra["stock"]) == (False, "shortage")
        assert (o["B300-SXM-8-288G"].gpu_raw, o["B300-SXM-8-288G"].available, o["B300-SXM-8-288G"].gpu_memory_gb) == ("NVIDIA B300-SXM", False, 288)
        # no availability listed for the type: not stated
        assert o["GPU-3070-S"].available is None and "stock" not in o["GPU-3070-S"].extra
        assert o["GPU-3070-S"].extra["end_of_service"] is True
        # fr-par-1's stock was not recorded: unknown there
        assert all(x.available is None for x in offers if x.region == "fr-par-1")

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            [],
            {"fr-par-1": [{"server_types": pages()[0]["servers"]}]},  # the envelope was renamed
            {"fr-par-1": [{"servers": None}]},
            {"fr-par-1": [{"servers": {"DEV1-S": pages()[0]["servers"]["DEV1-S"]}}]},  # no GPU type at all
            {"fr-par-1": [{"servers": {"L4-1-24G": "0.7875"}}]},
        ]

    def bad_offer_payloads(self) -> list[Any]:
        """One offer's own price or GPU count spoiled: that offer is quarantined, not the run."""
        no_price = pages()
        del no_price[0]["servers"]["L4-1-24G"]["hourly_price"]
        text_price = pages()
        text_price[1]["servers"]["RENDER-S"]["hourly_price"] = "1,221 €"
        no_gpu_field = pages()
        del no_gpu_field[0]["servers"]["L4-2-24G"]["gpu"]
        return [
            {"fr-par-1": no_price},
            {"fr-par-1": text_price},
            {"fr-par-1": no_gpu_field},
        ]

    def test_gpu_types_only(self, fr_par_1: list[ScrapedOffer]) -> None:
        offers = fr_par_1
        assert sorted(o.sku for o in offers) == ["L4-1-24G", "L4-2-24G", "L4-4-24G", "L4-8-24G", "RENDER-S"]

    def test_l4_values_in_eur_per_instance(self, fr_par_1: list[ScrapedOffer]) -> None:
        offers = fr_par_1
        l4x2 = by_sku(offers)["L4-2-24G"]
        assert (l4x2.gpu_raw, l4x2.gpu_count, l4x2.gpu_memory_gb) == ("NVIDIA L4", 2, 24)
        assert (l4x2.price_per_hour, l4x2.currency) == (1.575, "EUR")  # as listed: nothing converted here
        assert l4x2.price_per_gpu_hour == pytest.approx(0.7875)
        assert (l4x2.region, l4x2.country, l4x2.kind) == ("fr-par-1", "FR", "on_demand")
        assert (l4x2.vcpus, l4x2.ram_gb) == (16, 96)
        assert l4x2.extra["monthly_price"] == 1149.75
        assert by_sku(offers)["L4-8-24G"].price_per_hour == 6.3

    def test_render_s_is_a_p100(self, fr_par_1: list[ScrapedOffer]) -> None:
        offers = fr_par_1
        render = by_sku(offers)["RENDER-S"]
        assert (render.gpu_raw, render.gpu_count, render.gpu_memory_gb, render.price_per_hour) == ("NVIDIA P100", 1, 16, 1.221)
        assert render.ram_gb == 42 and "end_of_service" not in render.extra

    def test_type_without_gpu_info_keeps_its_commercial_type(self) -> None:
        page = copy.deepcopy(pages()[0])
        page["servers"]["L4-1-24G"]["gpu_info"] = None
        offer = by_sku(ScalewayScraper(env={}).parse({"fr-par-2": [page]}))["L4-1-24G"]
        assert (offer.gpu_raw, offer.gpu_memory_gb, offer.region) == ("L4-1-24G", None, "fr-par-2")

    def test_end_of_service_gpu_type_is_kept_and_marked(self) -> None:
        page = copy.deepcopy(pages()[1])
        page["servers"]["RENDER-S"]["end_of_service"] = True
        offer = by_sku(ScalewayScraper(env={}).parse({"fr-par-1": [page]}))["RENDER-S"]
        assert offer.extra["end_of_service"] is True and offer.price_per_hour == 1.221

    def test_zone_without_gpu_types_is_fine_when_another_has_some(self) -> None:
        offers = ScalewayScraper(env={}).parse({"fr-par-1": pages(), "nl-ams-1": [{"servers": {}}]})
        assert {o.region for o in offers} == {"fr-par-1"}


class TestFetch:
    def serve(self, zones_with_pages: set[str], seen: list[httpx.Request]) -> httpx.MockTransport:
        recorded = pages()

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            zone = request.url.path.split("/")[4]
            if request.url.path.endswith("/availability"):
                return httpx.Response(200, json={"servers": {"L4-2-24G": {"availability": "shortage"}}})
            if zone not in zones_with_pages:
                return httpx.Response(200, json={"servers": {}}, headers={"X-Total-Count": "0"})
            page = int(request.url.params["page"])
            headers = {"X-Total-Count": "107"}
            if page in LINKS:
                headers["Link"] = LINKS[page]
            return httpx.Response(200, json=recorded[page - 1], headers=headers)

        return httpx.MockTransport(handler)

    def test_requests_follow_the_link_header_per_zone(self) -> None:
        seen: list[httpx.Request] = []
        fetched = run_fetch(ScalewayScraper(env={}), self.serve({"fr-par-1"}, seen))
        expected = [("GET", products_url("fr-par-1"), "1"), ("GET", products_url("fr-par-1"), "2"),
                    ("GET", products_url("fr-par-1"), "3"), ("GET", availability_url("fr-par-1"), "1")]
        for zone in DEFAULT_ZONES[1:]:
            expected += [("GET", products_url(zone), "1"), ("GET", availability_url(zone), "1")]
        assert [(r.method, str(r.url.copy_with(query=None)), r.url.params.get("page")) for r in seen] == expected
        assert products_url("fr-par-1") == "https://api.scaleway.com/instance/v1/zones/fr-par-1/products/servers"
        assert availability_url("fr-par-2") == "https://api.scaleway.com/instance/v1/zones/fr-par-2/products/servers/availability"
        assert all(r.url.params["per_page"] == "100" for r in seen)
        assert all("x-auth-token" not in r.headers and "authorization" not in r.headers for r in seen)
        assert all(r.content == b"" for r in seen)
        assert list(fetched) == list(DEFAULT_ZONES) and len(fetched["fr-par-1"]["servers"]) == 3
        offers = ScalewayScraper(env={}).parse(fetched)
        assert len(offers) == 5 and by_sku(offers)["L4-2-24G"].available is False

    def test_every_zone_peers_query_is_asked(self) -> None:
        assert DEFAULT_ZONES == ("fr-par-1", "fr-par-2", "fr-par-3", "nl-ams-1", "nl-ams-2", "nl-ams-3",
                                 "pl-waw-1", "pl-waw-2", "pl-waw-3")

    def test_a_zone_that_does_not_answer_makes_a_partial_collection(self) -> None:
        seen: list[httpx.Request] = []
        inner = self.serve({"fr-par-1"}, seen)

        def handler(request: httpx.Request) -> httpx.Response:
            if "/nl-ams-3/" in request.url.path:
                return httpx.Response(404, json={"message": "zone not found"})
            return inner.handle_request(request)

        fetched = run_fetch(ScalewayScraper(env={}), httpx.MockTransport(handler))
        assert fetched["nl-ams-3"] == {"error": f"scaleway: GET {products_url('nl-ams-3')} -> HTTP 404"}
        offers = ScalewayScraper(env={}).parse(fetched)
        assert isinstance(offers, PartialOffers) and len(offers) == 5
        assert offers.reason.startswith("scaleway: 1 zone(s) did not answer: nl-ams-3 (")

    def test_a_zone_whose_stock_does_not_answer_keeps_its_prices(self) -> None:
        seen: list[httpx.Request] = []
        inner = self.serve({"fr-par-1"}, seen)

        def handler(request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/availability"):
                return httpx.Response(500)
            return inner.handle_request(request)

        fetched = run_fetch(ScalewayScraper(env={}), httpx.MockTransport(handler))
        offers = ScalewayScraper(env={}).parse(fetched)
        assert not isinstance(offers, PartialOffers)
        assert len(offers) == 5 and all(o.available is None for o in offers)
        assert "HTTP 500" in fetched["fr-par-1"]["availability_error"]

    def test_every_zone_failing_fails_the_run(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(503)

        with pytest.raises(FetchError, match=r"scaleway: GET .*fr-par-1/products/servers.* -> HTTP 503"):
            run_fetch(ScalewayScraper(env={}), httpx.MockTransport(handler))

    def test_zones_from_the_environment(self) -> None:
        seen: list[httpx.Request] = []
        scraper = ScalewayScraper(env={ZONES_ENV: "nl-ams-1, fr-par-1"})
        fetched = run_fetch(scraper, self.serve({"fr-par-1"}, seen))
        assert list(fetched) == ["nl-ams-1", "fr-par-1"]
        assert {o.available for o in scraper.parse(fetched) if o.sku == "L4-2-24G"} == {False}
        assert {o.region for o in scraper.parse(fetched)} == {"fr-par-1"}

    def test_an_invalid_zone_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="scaleway: SCALEWAY_ZONES has an invalid zone 'paris'"):
            ScalewayScraper(env={ZONES_ENV: "paris"}).zones()

    def test_a_link_back_to_an_earlier_page_is_an_error(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=pages()[0], headers={"Link": '</products/servers?page=1&per_page=100&>; rel="next"'})

        with pytest.raises(FetchError, match="scaleway: fr-par-1 page 1 links back to page 1"):
            run_fetch(ScalewayScraper(env={}), httpx.MockTransport(handler))

    def test_no_credentials_needed(self) -> None:
        ScalewayScraper(env={}).check_credentials()
        assert ScalewayScraper.credentials == () and ScalewayScraper.optional_credentials == ()


def test_replay_walks_the_three_recorded_pages_by_their_link_headers() -> None:
    from tracker.pipeline.replay import ReplayTransport

    transport = ReplayTransport.for_provider("scaleway")
    fetched = run_fetch(ScalewayScraper(env={}, replay=True), transport)
    fr_par_1 = [r.url.params["page"] for r in transport.requests if r.url.path.endswith("/fr-par-1/products/servers")]
    assert fr_par_1 == ["1", "2", "3"]
    assert len(transport.requests) == 3 + 1 + 2 * 8  # fr-par-1's pages and stock, then products and stock of each other zone
    assert all(r.url.path.endswith(("/products/servers", "/products/servers/availability")) for r in transport.requests)
    offers = ScalewayScraper(env={}).parse(fetched)
    assert len(offers) == 16 and {o.region for o in offers} == {"fr-par-1", "fr-par-2"}
    assert fetched["fr-par-2"] == {"servers": [fr_par_2(FR_PAR_2_SERVERS)], "availability": [fr_par_2(FR_PAR_2_AVAILABILITY)]}


def _replay_prices(db_url: str, config: str) -> list[dict[str, Any]]:
    import json

    from typer.testing import CliRunner

    from tracker.cli import app

    runner = CliRunner()
    scrape = runner.invoke(app, ["--config", config, "--db", db_url, "scrape", "--replay", "-p", "scaleway", "--format", "json"])
    assert scrape.exit_code == 0, scrape.stdout
    assert [(r["provider"], r["status"], r["offers"]) for r in json.loads(scrape.stdout)] == [("scaleway", "ok", 16)]
    listed = runner.invoke(app, ["--config", config, "--db", db_url, "prices", "-p", "scaleway", "--format", "json"])
    assert listed.exit_code == 0, listed.stdout
    return json.loads(listed.stdout)


def test_replayed_prices_stay_eur_without_a_rate(db_url: str, tmp_path: Any) -> None:
    config = tmp_path / "plain.toml"
    config.write_text("")
    rows = {r["gpu_count"]: r for r in _replay_prices(db_url, str(config)) if r["gpu_raw"] == "NVIDIA L4"}
    assert (rows[2]["currency"], rows[2]["price_per_hour"]) == ("EUR", pytest.approx(1.575))


def test_replayed_prices_are_converted_with_a_configured_eur_rate(db_url: str, tmp_path: Any) -> None:
    config = tmp_path / "eur.toml"
    config.write_text("[currency_rates]\nEUR = { rate = 1.08, date = 2026-12-01 }\n")  # a test rate, not a quoted one
    rows = {r["gpu_count"]: r for r in _replay_prices(db_url, str(config)) if r["gpu_raw"] == "NVIDIA L4"}
    assert (rows[2]["currency"], rows[2]["price_per_hour"]) == ("USD", pytest.approx(1.575 * 1.08))
    # shown with what it was converted from, at which rate, read on which day
    assert (rows[2]["original_price_per_hour"], rows[2]["original_currency"], rows[2]["usd_rate"],
            rows[2]["usd_rate_date"]) == (pytest.approx(1.575), "EUR", 1.08, "2026-12-01")
    from typer.testing import CliRunner

    from tracker.cli import app

    table = CliRunner().invoke(app, ["--config", str(config), "--db", db_url, "prices", "-p", "scaleway"])
    assert table.exit_code == 0
    assert re.search(r"\d+ prices converted from EUR to USD at 1.08 USD per EUR \(rate of 2026-12-01\)",
                     " ".join(table.stderr.split()))


def test_a_rate_without_its_date_is_refused(tmp_path: Any) -> None:
    from tracker.config.settings import load_settings
    from tracker.errors import ConfigError

    config = tmp_path / "undated.toml"
    config.write_text("[currency_rates]\nEUR = 1.08\n")
    with pytest.raises(ConfigError, match=r"currency_rates\.EUR: give the day the rate was read"):
        load_settings(config)
