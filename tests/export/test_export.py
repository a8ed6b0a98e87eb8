"""`gpu-tracker export` on the replayed store of tests/web/conftest.py, each file read back with an
independent reader (csv, json, pyarrow, pandas) and checked against the store's own answers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from db import reads
from db.reader import in_transaction
from tests.web.conftest import Store
from tracker.cli import app as cli_app
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect


def run(url: str, *args: str) -> str:
    result = CliRunner().invoke(cli_app, ["--db", url, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def prices(url: str, *args: str) -> list[dict[str, Any]]:
    return json.loads(run(url, "prices", "--format", "json", *args))


def test_focus_sku_prices(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "skus.csv"
    run(store.url, "export", "--format", "focus", "-o", str(out))
    with out.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header, records = reader.fieldnames, list(reader)
    meta = json.loads((tmp_path / "skus.csv.metadata.json").read_text())
    [schema] = meta["Schemas"]
    assert schema["FocusVersion"] == "1.5-draft" and schema["Dataset"] == "SkuPrice"
    assert [c["ColumnName"] for c in schema["ColumnDefinition"]] == header
    assert {"ServiceProviderName", "SkuId", "SkuPriceId", "PricingRegionId", "PricingUnit", "PricingCurrency",
            "UnitPrice", "UnitPriceType", "SkuPriceEffectiveStart", "SkuPriceEffectiveEnd"} <= set(header or [])
    stored = prices(store.url, "--kind", "all")
    assert len(records) == len(stored) == meta["x_Records"] > 100
    key = ("ServiceProviderName", "SkuPriceId", "ContractId", "SkuPriceEffectiveStart", "PricingCurrency", "UnitPriceType")
    assert len({tuple(r[k] for k in key) for r in records}) == len(records)  # the draft's uniqueness rule
    by_id = {(r["x_Provider"], r["SkuPriceId"]): r for r in records}
    for s in stored:
        r = by_id[(s["provider"], "|".join([s["sku"], s["region"], s["kind"], f"{s['term_months']}m"]))]
        assert float(r["UnitPrice"]) == pytest.approx(s["price_per_hour"]) and r["PricingCurrency"] == s["currency"]
        assert float(r["x_PricePerGpuHour"]) == pytest.approx(s["price_per_gpu_hour"])
        assert (r["x_Spot"] == "true") == (s["kind"] == "spot") and r["x_PriceKind"] == s["kind"]
        assert r["PricingRegionId"] == s["region"] and r["SkuId"] == s["sku"] and r["x_Gpu"] == (s["gpu"] or "")
        assert pd.Timestamp(r["SkuPriceEffectiveStart"]) == pd.Timestamp(s["price_since"]) and r["SkuPriceEffectiveEnd"] == ""
    assert {r["UnitPriceType"] for r in records} == {"List"} and {r["PricingUnit"] for r in records} == {"Hours"}
    assert any(r["x_Spot"] == "true" for r in records) and any(r["PricingCurrency"] == "EUR" for r in records)
    assert all(json.loads(r["SkuPriceEligibility"]) == {"IsGlobalScope": True} for r in records)
    runpod = next(r for r in records if r["x_Provider"] == "runpod")
    assert runpod["ServiceProviderName"] == "RunPod"


def test_opencost_gpu_rows(store: Store) -> None:
    text = run(store.url, "export", "--format", "opencost")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["EndTimestamp", "InstanceID", "Region", "AssetClass", "InstanceIDField", "InstanceType",
                       "MarketPriceHourly", "Version"]
    body = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    assert body and all(len(r) == 8 for r in rows)
    assert {r["AssetClass"] for r in body} == {"gpu"} and {r["Region"] for r in body} == {""}
    assert {r["InstanceIDField"] for r in body} == {"nvidia.com/gpu_type"}
    on_demand = [p for p in prices(store.url, "--kind", "on-demand") if p["currency"] == "USD" and p["gpu"]]
    assert {r["InstanceID"] for r in body} == {p["gpu"] for p in on_demand}
    h100 = next(r for r in body if r["InstanceID"] == "H100-SXM")
    assert float(h100["MarketPriceHourly"]) == pytest.approx(min(p["price_per_gpu_hour"] for p in on_demand
                                                                 if p["gpu"] == "H100-SXM"))


def test_opencost_node_rows(store: Store) -> None:
    text = run(store.url, "export", "--format", "opencost", "--asset-class", "node", "--provider", "aws")
    body = list(csv.DictReader(io.StringIO(text)))
    aws = prices(store.url, "--provider", "aws", "--kind", "on-demand")
    assert len(body) == len({(p["region"], p["sku"]) for p in aws}) > 10
    for r in body:
        assert r["AssetClass"] == "node" and r["InstanceID"] == r["InstanceType"]
        assert r["InstanceIDField"] == "metadata.labels.node.kubernetes.io/instance-type"
        expected = min(p["price_per_hour"] for p in aws if (p["region"], p["sku"]) == (r["Region"], r["InstanceType"]))
        assert float(r["MarketPriceHourly"]) == pytest.approx(expected)


def test_parquet_prices_are_typed(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "prices.parquet"
    run(store.url, "export", "--format", "parquet", "--gpu", "H100", "-o", str(out))
    table = pq.read_table(out)
    assert table.schema.field("price_per_gpu_hour").type == pa.float64()
    assert table.schema.field("observed_at").type == pa.timestamp("ms", tz="UTC")
    assert table.schema.field("term_months").type == pa.int32() and table.schema.field("available").type == pa.bool_()
    assert table.schema.metadata[b"gpu_price_tracker.table"] == b"prices"
    df = pd.read_parquet(out)
    stored = prices(store.url, "--gpu", "H100", "--kind", "all")
    assert len(df) == len(stored) > 5
    assert df["price_per_gpu_hour"].tolist() == pytest.approx([s["price_per_gpu_hour"] for s in stored])
    assert df["sku"].tolist() == [s["sku"] for s in stored]
    assert table.schema.field("available_count").type == pa.int32()  # GPUs free now (null: not stated)
    assert table.column("available_count").to_pylist() == [s["available_count"] for s in stored]
    assert any(s["available_count"] for s in stored)  # the replayed marketplaces state counts
    assert [t.isoformat() for t in df["observed_at"]] == [pd.Timestamp(s["observed_at"]).isoformat() for s in stored]


def test_parquet_history_is_the_stored_intervals(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "history.parquet"
    run(store.url, "export", "--format", "parquet", "--table", "history", "-o", str(out))
    df = pq.read_table(out).to_pandas()
    with Session(store.engine) as s:
        stored = {r.id: r for r in reads.interval_rows(in_transaction(s.connection())) if r.currency == "USD" and r.gpu is not None}
    assert len(df) == len(stored) > 100
    for row in df.itertuples():
        iv = stored[row.interval_id]
        assert (row.provider, row.gpu, row.kind) == (iv.provider, iv.gpu, iv.kind)
        assert row.price_per_gpu_hour_usd == pytest.approx(iv.price_per_gpu_hour)
        assert row.first_seen == pd.Timestamp(iv.first_seen) and row.last_seen == pd.Timestamp(iv.last_seen)
        assert row.end > row.last_seen


@pytest.mark.parametrize("args,words", [
    (["--format", "focus"], "--output"), (["--format", "parquet", "--table", "nope", "-o", "x.parquet"], "--table"),
    (["--format", "opencost", "--gpu", "H999"], "matches no GPU"), (["--format", "opencost", "--asset-class", "cpu"], "--asset-class"),
])
def test_bad_options_are_one_line(store: Store, args: list[str], words: str) -> None:
    result = CliRunner().invoke(cli_app, ["--db", store.url, "export", *args])
    assert result.exit_code != 0 and words in str(result.exception or result.output)


def test_parquet_prices_on_both_backends(engine: Engine, db_url: str, tmp_path: Path) -> None:
    collect(engine, Settings(database=db_url), ["runpod", "aws_spot"], replay=True)
    out = tmp_path / "p.parquet"
    run(db_url, "export", "--format", "parquet", "-o", str(out))
    df = pd.read_parquet(out)
    stored = prices(db_url, "--kind", "all")
    assert len(df) == len(stored) > 10 and set(df["provider"]) == {"runpod", "aws_spot"}
    assert df["price_per_hour"].tolist() == pytest.approx([s["price_per_hour"] for s in stored])


def test_the_prices_csv_of_the_replayed_store_imports_again(store: Store, engine: Engine, db_url: str,
                                                            tmp_path: Path) -> None:
    """Every row of ``prices --format csv`` of every replayed provider imports again (reserved
    offers without a printed term too), as two files in either order, and lists the same prices."""
    from tests.pipeline.imports.test_import_order import clear, intervals
    from tracker.pipeline.imports import import_files

    text = run(store.url, "prices", "--kind", "all", "--format", "csv")
    header, *body = text.splitlines(keepends=True)
    whole, early, late = tmp_path / "all.csv", tmp_path / "a.csv", tmp_path / "b.csv"
    whole.write_text(text)
    early.write_text(header + "".join(body[::2]))
    late.write_text(header + "".join(body[1::2]))
    result = import_files(engine, [whole])
    assert not result.bad_rows and result.rows == len(body) > 500
    once = intervals(engine)
    key = ("provider", "sku", "region", "kind", "term_months", "price_per_hour", "currency", "observed_at", "price_since")
    assert sorted(tuple(r[k] for k in key) for r in prices(db_url)) == sorted(tuple(r[k] for k in key)
                                                                            for r in prices(store.url))
    for order in ([early, late], [late, early, late]):
        clear(engine)
        for path in order:
            import_files(engine, [path])
        assert intervals(engine) == once
