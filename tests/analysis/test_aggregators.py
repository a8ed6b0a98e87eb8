"""The aggregator rule: an aggregator's row for a cloud we also collect directly counts as that
cloud's in market figures (median, provider count); for a cloud we do not collect it stays the
aggregator's. Handmade rows in the OpenComputePrices schema, imported into the store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.engine import engine_reader
from db.reader import in_transaction
from db.reads import latest_prices
from tests.conftest import read
from tests.pipeline.imports.test_opencomputeprices import HEADER, handmade_row
from tracker.analysis.aggregators import (
    cheapest_per_provider,
    market_of_key,
    market_provider,
)
from tracker.analysis.grid import Filters
from tracker.analysis.history import price_history
from tracker.analysis.tco import market_rent
from tracker.analysis.trends import trends
from tracker.pipeline.imports import import_files


def h100(source: str, provider: str, price: str, instance: str) -> str:
    return handmade_row(source=source, provider=provider, instance_type=instance, gpu_name="H100", gpu_variant="SXM5",
                        gpu_memory_gb="80", gpu_count="1", price_per_hour=price, price_per_gpu_hour=price)


#: One snapshot: RunPod's own H100 at 2.50 and the same cloud through GetDeploying at 2.20,
#: Lambda at 3.00, and GetDeploying's row of Database Mart (no scraper of ours) at 2.80.
#: Counted once, the market is {runpod: 2.20, getdeploying: 2.80, lambda: 3.00}: median 2.80
#: over 3 providers. Counted twice (an aggregator as one provider) it would be a median of 2.50.
SNAPSHOT_ROWS = [
    h100("runpod", "runpod", "2.50", "H100 SXM"),  # RunPod's own list
    h100("lambda", "lambda_labs", "3.00", "gpu_1x_h100_sxm5"),
    h100("getdeploying", "runpod", "2.20", "1x H100 1x H100 80GB"),  # RunPod through the aggregator
    h100("getdeploying", "database_mart", "2.80", "1x H100 1x H100 80GB"),  # a cloud we do not collect
    # an A100 only RunPod rents, listed by RunPod and through the aggregator: one provider
    handmade_row(source="runpod", provider="runpod", instance_type="A100 SXM", gpu_name="A100", gpu_variant="SXM4",
                 gpu_memory_gb="80", gpu_count="1", price_per_hour="1.50", price_per_gpu_hour="1.50"),
    handmade_row(source="getdeploying", provider="runpod", instance_type="1x A100 1x A100 80GB", gpu_name="A100",
                 gpu_variant="SXM4", gpu_memory_gb="80", gpu_count="1", price_per_hour="1.40", price_per_gpu_hour="1.40"),
]


def import_snapshot(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "handmade_aggregator.csv"
    path.write_text("\n".join([HEADER, *SNAPSHOT_ROWS]) + "\n")
    import_files(engine, [path])


def test_an_aggregators_row_for_a_collected_cloud_counts_as_that_cloud(engine: Engine, tmp_path: Path) -> None:
    import_snapshot(engine, tmp_path)
    with Session(engine) as session:
        rows = latest_prices(in_transaction(session.connection()), gpus=["H100-SXM"], include_stale=True)
    assert sorted((r["provider"], r["via"], r["price_per_gpu_hour"]) for r in rows) == [
        ("getdeploying", "databasemart", pytest.approx(2.8)), ("getdeploying", "runpod", pytest.approx(2.2)),
        ("lambda", None, pytest.approx(3.0)), ("runpod", None, pytest.approx(2.5))]
    per = cheapest_per_provider(rows)
    assert {p: r["price_per_gpu_hour"] for p, r in per.items()} == {
        "runpod": pytest.approx(2.2), "getdeploying": pytest.approx(2.8), "lambda": pytest.approx(3.0)}
    quote = read(engine, market_rent, "H100-SXM", "median", include_stale=True)
    assert quote is not None
    # runpod once (its cheaper price, through the aggregator), Database Mart's row the aggregator's
    assert (quote.providers, quote.offers, quote.rate) == (3, 4, pytest.approx(2.8))


def test_market_provider() -> None:
    direct = {"runpod", "lambda"}
    assert market_provider("getdeploying", "runpod", direct) == "runpod"
    assert market_provider("getdeploying", "databasemart", direct) == "getdeploying"
    assert market_provider("runpod", None, direct) == "runpod"
    assert market_provider("getdeploying", "runpod") == "runpod"  # runpod has a scraper


@pytest.mark.parametrize("use_rollups", [True, False])
def test_history_market_counts_each_cloud_once(engine: Engine, tmp_path: Path, use_rollups: bool) -> None:
    """The day of the snapshot from the roll-ups (which keep GetDeploying's clouds apart) and from
    the raw intervals: RunPod once, at its cheaper price through the aggregator."""
    import_snapshot(engine, tmp_path)
    day = datetime(2026, 3, 22, tzinfo=UTC)
    h = read(engine, price_history,  Filters(gpus=["H100-SXM"]), since=day, until=datetime(2026, 3, 22, 23, 59, 59, tzinfo=UTC),
                      resolution="1d", use_rollups=use_rollups)
    (m,) = h.market_rows
    assert (m["providers"], m["offers"]) == (3, 4)
    assert (m["min"], m["median"]) == (pytest.approx(2.2), pytest.approx(2.8))
    # each stored provider's own line: GetDeploying's is the cheapest of its rows
    assert {r["provider"]: r["value"] for r in h.provider_rows} == {
        "getdeploying": pytest.approx(2.2), "lambda": pytest.approx(3.0), "runpod": pytest.approx(2.5)}
    only = read(engine, price_history,  Filters(gpus=["H100-SXM"], providers=["getdeploying"]), since=day,
                         until=datetime(2026, 3, 22, 23, 59, 59, tzinfo=UTC), resolution="1d", use_rollups=use_rollups)
    # the aggregator alone: its RunPod row is RunPod's in the market, its Database Mart row its own
    assert (only.market_rows[0]["providers"], only.market_rows[0]["median"]) == (2, pytest.approx(2.5))
    assert [r["provider"] for r in only.provider_rows] == ["getdeploying"]
    a100 = read(engine, price_history,  Filters(gpus=["A100-SXM-80GB"]), since=day,
                         until=datetime(2026, 3, 22, 23, 59, 59, tzinfo=UTC), resolution="1d", use_rollups=use_rollups)
    assert (a100.market_rows[0]["providers"], a100.market_rows[0]["offers"]) == (1, 2)  # RunPod, once
    assert a100.market_rows[0]["median"] == pytest.approx(1.4)


def test_rollups_keep_an_aggregators_clouds_apart(engine: Engine, tmp_path: Path) -> None:
    import_snapshot(engine, tmp_path)
    with engine_reader(engine) as r:
        keys = {name for (name,) in r.rows("SELECT DISTINCT l.name FROM rollup_day d JOIN label l ON l.id = d.provider_id")}
    assert keys == {"runpod", "lambda", "getdeploying/runpod", "getdeploying/databasemart"}
    with engine_reader(engine) as r:
        (a100,) = r.rows("SELECT COUNT(*) FROM rollup_day d JOIN label g ON g.id = d.gpu_id WHERE g.name = 'A100-SXM-80GB'")
    assert a100 == (2,)  # RunPod's own series and the aggregator's RunPod series


def test_trends_count_each_cloud_once(engine: Engine, tmp_path: Path) -> None:
    import_snapshot(engine, tmp_path)
    at = datetime(2026, 3, 22, 10, 30, tzinfo=UTC)
    a100, h100_ = read(engine, trends,  Filters(gpus=["H100-SXM", "A100-SXM-80GB"]), as_of=at)
    assert (h100_["current"], h100_["provider"], h100_["providers"], h100_["offers"]) == (
        pytest.approx(2.2), "getdeploying", 3, 4)
    # the A100 rented from RunPod, listed twice: one provider, two offers
    assert (a100["gpu"], a100["current"], a100["providers"], a100["offers"]) == ("A100-SXM-80GB", pytest.approx(1.4), 1, 2)


def test_a_series_key_belongs_to_its_market_provider() -> None:
    direct = {"runpod", "lambda"}
    assert market_of_key("getdeploying/runpod", direct) == "runpod"
    assert market_of_key("getdeploying/databasemart", direct) == "getdeploying"
    assert market_of_key("lambda", direct) == "lambda"


def test_a_rebuild_splits_roll_ups_written_before_composite_keys(engine: Engine, tmp_path: Path) -> None:
    """A store whose roll-ups blend an aggregator's clouds (written before composite keys): a
    rebuild gives each cloud its series, and the market counts RunPod once."""
    import_snapshot(engine, tmp_path)
    with engine.begin() as conn:  # as an older store has it: no composite labels, one series per provider
        conn.exec_driver_sql("DELETE FROM rollup_day")
        conn.exec_driver_sql("DELETE FROM label WHERE name LIKE 'getdeploying/%%'" if engine.dialect.name == "postgresql"
                             else "DELETE FROM label WHERE name LIKE 'getdeploying/%'")
    from db import rollups

    with engine.begin() as conn:
        rollups.rebuild(conn)
    h = read(engine, price_history,  Filters(gpus=["A100-SXM-80GB"]), since=datetime(2026, 3, 22, tzinfo=UTC),
                      until=datetime(2026, 3, 22, 23, 59, 59, tzinfo=UTC), resolution="1d")
    assert (h.market_rows[0]["providers"], h.market_rows[0]["offers"]) == (1, 2)


def test_value_median_is_across_providers_each_cloud_once(engine: Engine, db_url: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``value``: the median over each market provider's cheapest (RunPod once, at 2.20 through
    the aggregator): 2.80 for the H100, where a median over the four offers would be 2.65."""
    import json

    from tests.conftest import run_main

    import_snapshot(engine, tmp_path)
    code, out, err = run_main(capsys, "--db", db_url, "value", "--include-stale", "--format", "json")
    assert code == 0, err
    rows = {r["gpu"]: r for r in json.loads(out)}
    assert (rows["H100-SXM"]["price_per_gpu_hour"], rows["H100-SXM"]["median_price_per_gpu_hour"],
            rows["H100-SXM"]["offers"]) == (pytest.approx(2.2), pytest.approx(2.8), 4)
    assert (rows["A100-SXM-80GB"]["median_price_per_gpu_hour"], rows["A100-SXM-80GB"]["offers"]) == (pytest.approx(1.4), 2)


def test_market_runs_merge_an_aggregators_series_into_the_clouds() -> None:
    from tracker.analysis.aggregators import market_runs

    names = {1: "runpod", 2: "getdeploying/runpod", 3: "getdeploying/databasemart", 4: "lambda"}
    runs = {
        1: [(0, 9, 2.5, 3)],                      # RunPod's own, buckets 0-9
        2: [(5, 14, 2.2, 1)],                     # RunPod through the aggregator, buckets 5-14
        3: [(0, 4, 2.8, 1)],
        4: [(0, 2, 3.0, 1), (3, 6, 3.1, 1)],
    }
    merged = market_runs({names[k]: v for k, v in runs.items()}, {"runpod", "lambda"})
    assert merged["runpod"] == [(0, 4, 2.5, 3), (5, 9, 2.2, 4), (10, 14, 2.2, 1)]
    assert merged["getdeploying"] == [(0, 4, 2.8, 1)]
    assert merged["lambda"] == runs[4]


def test_a_collected_aggregator_counts_a_cloud_it_lists_once_now(engine: Engine) -> None:
    """A live-path collection (replayed): Compute Pulse lists Hot Aisle's MI300X, which Hot Aisle's
    own scraper collects too; the market now names one provider for it, its offers all counted."""
    from tracker.config.settings import Settings
    from tracker.pipeline.collect import collect

    results = collect(engine, Settings(), ["computepulse", "hotaisle"], replay=True)
    assert {r.provider: r.status for r in results} == {"computepulse": "ok", "hotaisle": "ok"}
    with Session(engine) as session:
        rows = [r for r in latest_prices(in_transaction(session.connection()), gpus=["MI300X"]) if r["currency"] == "USD"]
    assert {r["provider"] for r in rows} == {"computepulse", "hotaisle"}
    (row,) = read(engine, trends,  Filters(gpus=["MI300X"]))
    assert row["providers"] == 1 and row["offers"] >= 2  # Hot Aisle's own offer and Compute Pulse's of it
    with engine_reader(engine) as r:
        keys = {name for (name,) in r.rows("SELECT DISTINCT l.name FROM rollup_day d JOIN label l ON l.id = d.provider_id")}
    assert "computepulse/hotaisle" in keys and "computepulse/vastai" in keys
