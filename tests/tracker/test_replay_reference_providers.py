"""The providers whose bundled fixture is a ``reference`` (our own values in a public capture's
shape) replay into a fresh store on both backends: every one collects, a named offer is stored as
parsed (EUR kept as EUR, spot and reserved kept apart), and each price says it is an undated
reference replay."""

from __future__ import annotations

import pytest

from db import reads
from db.reader import in_transaction

pytest.importorskip("sqlalchemy")

from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session  # noqa: E402

from scrapers.registry import all_scrapers  # noqa: E402
from tracker.alerts.message import replay_note  # noqa: E402
from tracker.config.settings import Settings  # noqa: E402
from tracker.pipeline.collect import collect  # noqa: E402

REFERENCE = sorted(name for name, cls in all_scrapers().items() if cls.fixture_kind == "reference")


def test_the_reference_providers_are_the_new_ones() -> None:
    assert {"ovhcloud", "together", "gmicloud", "civo", "fal", "deepinfra", "tensorpool", "sesterce",
            "thundercompute"} <= set(REFERENCE)


def test_every_reference_provider_replays_into_a_fresh_store(engine: Engine) -> None:
    results = collect(engine, Settings(), REFERENCE, replay=True)
    assert {r.provider: r.status for r in results} == dict.fromkeys(REFERENCE, "ok"), [r.error_message for r in results]
    with Session(engine) as s:
        rows = reads.latest_prices(in_transaction(s.connection()), providers=REFERENCE)
    assert {r["provider"] for r in rows} == set(REFERENCE)
    assert all((r["replay"], r["recorded"], r["fixture"]) == (True, None, "reference") for r in rows)
    assert "reference sample (undated)" in replay_note(rows[0])

    def one(provider: str, sku: str, kind: str, region: str = "", term: int = 0) -> dict:
        found = [r for r in rows if (r["provider"], r["sku"], r["kind"], r["region"], r["term_months"] or 0)
                 == (provider, sku, kind, region, term)]
        assert len(found) == 1, (provider, sku, kind, region, term, found)
        return found[0]

    ovh = one("ovhcloud", "h100-380.consumption", "on_demand", "GRA11")
    assert (ovh["price_per_hour"], ovh["currency"], ovh["gpu"], ovh["gpu_count"]) == (2.89, "EUR", "H100-SXM", 1)
    assert one("sesterce", "H100_sxm5@AZ_17", "spot", "austin-usa-1")["price_per_hour"] == 1.49
    civo = one("civo", "extra-large-8x-nvidia-l40s-48gb", "reserved", term=12)
    assert (civo["price_per_hour"], civo["gpu"], civo["gpu_count"]) == (7.92, "L40S", 8)
    assert one("together", "nvidia-hgx-h100", "on_demand")["price_per_hour"] == 3.79
    assert one("tensorpool", "h100-sxm", "on_demand")["price_per_hour"] == 1.89
    # the aggregators: each row under the aggregator, the cloud it names as via, the GPU named by the catalog
    sf = one("shadeform", "lambda:H100x8", "on_demand", "us-west-1")
    assert (sf["price_per_hour"], sf["gpu"], sf["gpu_count"], sf["via"], sf["available"]) == (23.92, "H100-SXM", 8, "lambda", True)
    cp = one("computepulse", "vastai:H100 SXM:2x", "spot", "ap-japan")
    assert (cp["price_per_hour"], cp["gpu"], cp["via"]) == (1.92, "H100-SXM", "vastai")
    assert one("computepulse", "vastai:A100 SXM:1x", "on_demand", "us")["gpu"] == "A100-SXM-80GB"
