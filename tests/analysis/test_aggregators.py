"""The aggregator rule: an aggregator's row for a cloud we also collect directly counts as that
cloud's in market figures (median, provider count); for a cloud we do not collect it stays the
aggregator's. Handmade rows in the OpenComputePrices schema, imported into the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.asof import latest_prices
from tests.analysis.imports.test_opencomputeprices import HEADER, handmade_row
from tracker.analysis.aggregators import cheapest_per_provider, market_provider
from tracker.analysis.imports import import_files
from tracker.analysis.tco import market_rent


def h100(source: str, provider: str, price: str, instance: str) -> str:
    return handmade_row(source=source, provider=provider, instance_type=instance, gpu_name="H100", gpu_variant="SXM5",
                        gpu_memory_gb="80", gpu_count="1", price_per_hour=price, price_per_gpu_hour=price)


def test_an_aggregators_row_for_a_collected_cloud_counts_as_that_cloud(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "handmade_aggregator.csv"
    path.write_text("\n".join([
        HEADER,
        h100("runpod", "runpod", "2.50", "H100 SXM"),  # RunPod's own list
        h100("lambda", "lambda_labs", "3.00", "gpu_1x_h100_sxm5"),
        h100("getdeploying", "runpod", "2.20", "1x H100 1x H100 80GB"),  # RunPod through the aggregator
        h100("getdeploying", "database_mart", "2.80", "1x H100 1x H100 80GB"),  # a cloud we do not collect
    ]) + "\n")
    import_files(engine, [path])
    with Session(engine) as session:
        rows = latest_prices(session, gpus=["H100-SXM"], include_stale=True)
    assert sorted((r["provider"], r["via"], r["price_per_gpu_hour"]) for r in rows) == [
        ("getdeploying", "databasemart", pytest.approx(2.8)), ("getdeploying", "runpod", pytest.approx(2.2)),
        ("lambda", None, pytest.approx(3.0)), ("runpod", None, pytest.approx(2.5))]
    per = cheapest_per_provider(rows)
    assert {p: r["price_per_gpu_hour"] for p, r in per.items()} == {
        "runpod": pytest.approx(2.2), "getdeploying": pytest.approx(2.8), "lambda": pytest.approx(3.0)}
    quote = market_rent(engine, "H100-SXM", "median", include_stale=True)
    assert quote is not None
    # runpod once (its cheaper price, through the aggregator), Database Mart's row the aggregator's
    assert (quote.providers, quote.offers, quote.rate) == (3, 4, pytest.approx(2.8))


def test_market_provider() -> None:
    direct = {"runpod", "lambda"}
    assert market_provider("getdeploying", "runpod", direct) == "runpod"
    assert market_provider("getdeploying", "databasemart", direct) == "getdeploying"
    assert market_provider("runpod", None, direct) == "runpod"
    assert market_provider("getdeploying", "runpod") == "runpod"  # runpod has a scraper
