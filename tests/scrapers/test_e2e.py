"""E2E Networks (the JSON-LD offer catalogue of its pricing page, in INR).

Fixture (reference, our own values; see tests/fixtures/e2e/README.md): the structure of the
page's schema.org OfferCatalog as captured by getcomputable/gpu-index, no value copied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.e2e import E2eScraper
from tests.conftest import load_recording_text
from tests.scrapers.contract import NamedOffer, ProviderContract
from tracker.pipeline.normalise import normalise

PAGE = "e2e/e2e_pricing_reference.html"  # the replay recording: the one copy


def page() -> str:
    return load_recording_text(PAGE)


def by_sku(offers: list[ScrapedOffer]) -> dict[str, ScrapedOffer]:
    return {o.sku: o for o in offers}


class TestE2e(ProviderContract):
    scraper_cls = E2eScraper
    named_offer = NamedOffer("NVIDIA H100", 1, "on_demand", "", 300.0, "INR")
    handmade = True  # a reference fixture: the real structure with our own values
    min_offers = 6

    def load_raw(self) -> Any:
        return page()

    def broken_payloads(self) -> list[Any]:
        return [
            "",
            "<html><body>no catalogue</body></html>",
            page().replace('"OfferCatalog"', '"ItemList"'),  # the catalogue retyped
            page().replace('"itemListElement": [', '"itemListElement": {"x": ['),  # the list gone
            page().replace('"priceCurrency": "INR"', '"priceCurrency": null'),  # currency gone
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [page().replace('"price": 300,', '"price": "call us",', 1)]

    def test_a_gpu_offer_in_rupees(self, offers: list[ScrapedOffer]) -> None:
        h100 = by_sku(offers)["nvidia-h100"]
        assert (h100.gpu_raw, h100.gpu_count, h100.price_per_hour, h100.currency) == ("NVIDIA H100", 1, 300.0, "INR")
        assert (h100.gpu_memory_gb, h100.vcpus, h100.ram_gb, h100.available, h100.kind) == (80, 24, 240, True, "on_demand")
        assert h100.extra["gpu_count_stated"] is False
        assert normalise(h100).gpu == "H100-SXM"

    def test_the_two_a100_sizes_and_stock(self, offers: list[ScrapedOffer]) -> None:
        k = by_sku(offers)
        assert normalise(k["nvidia-a100-80gb"]).gpu == "A100-SXM-80GB"
        assert normalise(k["nvidia-a100-40gb"]).gpu == "A100-SXM-40GB"
        assert k["nvidia-l40s"].available is False
        assert "C3.8GB CPU Instance" not in k and len(offers) == 6  # CPU instances left out

    def test_a_monthly_plan_is_a_one_month_commitment_at_its_hourly_rate(self, offers: list[ScrapedOffer]) -> None:
        h200 = by_sku(offers)["nvidia-h200"]
        assert (h200.kind, h200.term_months, h200.extra["monthly_price"]) == ("reserved", 1, 250000)
        assert h200.price_per_hour == pytest.approx(250000 / 730)

    def test_a_price_that_is_no_number_quarantines_that_offer(self) -> None:
        k = by_sku(E2eScraper(env={}).parse(page().replace('"price": 300,', '"price": "call us",', 1)))
        assert k["nvidia-h100"].price_per_hour is None and UNREADABLE_PRICE in k["nvidia-h100"].extra
        assert k["nvidia-l4"].price_per_hour == 45.0

    def test_no_catalogue_is_a_layout_change(self) -> None:
        with pytest.raises(ParseError, match=r"^e2e: layout changed: the page has no JSON-LD 'OfferCatalog'"):
            E2eScraper(env={}).parse("<html><script type='application/ld+json'>{}</script></html>")


def test_replayed_rupees_are_converted_with_a_dated_rate_and_shown_with_it(db_url: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tracker.cli import app

    runner = CliRunner()
    dated = tmp_path / "inr.toml"
    dated.write_text("[currency_rates]\nINR = { rate = 0.0115, date = 2026-12-01 }\n")  # a test rate, not a quoted one
    scrape = runner.invoke(app, ["--config", str(dated), "--db", db_url, "scrape", "--replay", "-p", "e2e", "--no-alerts"])
    assert scrape.exit_code == 0
    listed = runner.invoke(app, ["--config", str(dated), "--db", db_url, "prices", "-p", "e2e", "--format", "json"])
    rows = {r["sku"]: r for r in json.loads(listed.stdout)}
    h100 = rows["nvidia-h100"]
    assert (h100["currency"], h100["price_per_hour"]) == ("USD", pytest.approx(300 * 0.0115))
    assert (h100["original_price_per_hour"], h100["original_currency"], h100["usd_rate"], h100["usd_rate_date"]) == (
        300.0, "INR", 0.0115, "2026-12-01")
    table = runner.invoke(app, ["--config", str(dated), "--db", db_url, "prices", "-p", "e2e", "--kind", "all"])
    assert "6 prices converted from INR to USD at 0.0115 USD per INR (rate of 2026-12-01)" in " ".join(table.stderr.split())


def test_a_rate_configured_later_converts_without_holding_a_jump(db_url: str, tmp_path: Path) -> None:
    """Rupees stored first; once a rate is set the next collection stores USD at once (a change of
    currency is not a price jump held for confirmation)."""
    from typer.testing import CliRunner

    from tracker.cli import app

    runner = CliRunner()
    plain, dated = tmp_path / "plain.toml", tmp_path / "inr.toml"
    plain.write_text("")
    dated.write_text("[currency_rates]\nINR = { rate = 0.0115, date = 2026-12-01 }\n")  # a test rate, not a quoted one
    for config in (plain, dated):
        scrape = runner.invoke(app, ["--config", str(config), "--db", db_url, "scrape", "--replay", "-p", "e2e",
                                     "--no-alerts", "--format", "json"])
        assert scrape.exit_code == 0
    assert [(r["offers"], r["quarantined"]) for r in json.loads(scrape.stdout)] == [(6, 0)]
    listed = runner.invoke(app, ["--config", str(dated), "--db", db_url, "prices", "-p", "e2e", "--format", "json"])
    assert {r["currency"] for r in json.loads(listed.stdout)} == {"USD"}


def test_the_dashboard_shows_a_converted_price_with_its_rate_and_date(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from db.engine import make_engine
    from db.migrate import init_db
    from tracker.config.settings import Settings
    from tracker.pipeline.collect import collect
    from tracker.web import create_app

    url = f"sqlite:///{tmp_path / 'tracker.db'}"
    engine = make_engine(url)
    init_db(engine)
    settings = Settings(database=url, currency_rates={"INR": {"rate": 0.0115, "date": "2026-12-01"}})
    [result] = collect(engine, settings, ["e2e"], replay=True)
    assert result.status == "ok"
    with TestClient(create_app(settings, engine), base_url="http://127.0.0.1") as client:
        page = client.get("/gpu/H100-SXM")
    engine.dispose()
    assert page.status_code == 200
    assert "INR at 0.0115 (2026-12-01)" in page.text
