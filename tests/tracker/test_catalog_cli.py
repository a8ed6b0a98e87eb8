"""`gpu-tracker catalog`, `catalog resolve`, `catalog --unmapped` and `value` on replayed data."""

from __future__ import annotations

import csv
import json

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import fixture_path
from tests.tracker.test_cli import cli, replayed  # noqa: F401  (module-scoped replayed store)


def test_catalog_json_has_the_documented_keys_and_sources(replayed: str) -> None:  # noqa: F811
    code, out = cli(replayed, "catalog", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 43
    for key in ("gpu", "vendor", "vram_gb", "tdp_w", "fp16_dense_tflops", "fp16_sparse_tflops", "fp8_dense_tflops",
                "purchase_price_usd", "sources"):
        assert key in rows[0]
    assert all(r["sources"] for r in rows)
    h100 = {r["gpu"]: r for r in json.loads(cli(replayed, "catalog", "--gpu", "H100", "--format", "json")[1])}
    assert set(h100) == {"H100-SXM", "H100-PCIe", "H100-NVL"}
    assert h100["H100-SXM"]["purchase_price_usd"] == 30000


def test_info_counts_the_loaded_catalog(replayed: str) -> None:  # noqa: F811
    [data] = json.loads(cli(replayed, "info", "--format", "json")[1])
    assert data["rows_gpu_model"] >= 43


def test_resolve_prints_canonical_ids_or_null(replayed: str) -> None:  # noqa: F811
    code, out = cli(replayed, "catalog", "resolve", "NVIDIA H100 80GB HBM3", "RTX 4090D", "Mystery GPU 9000", "--format", "json")
    assert code == 0
    assert json.loads(out) == [
        {"raw": "NVIDIA H100 80GB HBM3", "gpu": "H100-SXM"},
        {"raw": "RTX 4090D", "gpu": None},
        {"raw": "Mystery GPU 9000", "gpu": None},
    ]
    _, out = cli(replayed, "catalog", "resolve", "A100 SXM4", "--memory-gb", "40", "--format", "json")
    assert json.loads(out) == [{"raw": "A100 SXM4", "gpu": "A100-SXM-40GB"}]


def test_unmapped_lists_raw_names_with_counts(replayed: str) -> None:  # noqa: F811
    code, out = cli(replayed, "catalog", "--unmapped", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and rows
    assert all(r["offers"] >= 1 and r["gpu_raw"] for r in rows)
    assert [r["offers"] for r in rows] == sorted((r["offers"] for r in rows), reverse=True)


def _refused_on_purpose(raw: str) -> bool:
    """A slice or odd variant the name rules never map to a full GPU (MIG, SFF, Max-Q, vGPU, ...)."""
    from tracker.catalog.names import _DISQUALIFY, clean

    return bool(set(clean(raw).split()) & _DISQUALIFY)


def test_at_most_two_percent_of_replayed_offers_are_unmapped(replayed: str) -> None:  # noqa: F811
    """At most 2% of the replayed offers lack a catalog row. Names the rules refuse on purpose
    (a MIG slice, an SFF or Max-Q card: never a full GPU) are no missing row and do not count:
    RunPod's real 2026 answer rents several."""
    code, out = cli(replayed, "catalog", "--unmapped", "--format", "json")
    rows = json.loads(out)
    assert code == 0
    if not rows:
        return  # nothing unmapped at all
    unmapped, total = rows[0]["unmapped_offers"], rows[0]["offers_total"]
    assert unmapped == sum(r["offers"] for r in rows)
    assert total > 500  # every bundled recording was replayed
    assert rows[0]["unmapped_share"] == round(unmapped / total, 4)
    missing_rows = sum(r["offers"] for r in rows if not _refused_on_purpose(r["gpu_raw"]))
    assert missing_rows / total <= 0.02, [(r["gpu_raw"], r["offers"]) for r in rows if not _refused_on_purpose(r["gpu_raw"])]
    _, table = cli(replayed, "catalog", "--unmapped")
    assert f"{unmapped} of {total} offers" in table


def test_value_ranks_stored_prices_on_the_basis(replayed: str) -> None:  # noqa: F811
    code, out = cli(replayed, "value", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and rows and {r["basis"] for r in rows} == {"fp16-dense"}
    ranked = [r["cost_per_tflop_hour"] for r in rows if r["cost_per_tflop_hour"] is not None]
    assert ranked == sorted(ranked)
    for r in rows:
        if r["cost_per_tflop_hour"] is not None:
            assert r["cost_per_tflop_hour"] == pytest.approx(r["price_per_gpu_hour"] / r["tflops"], rel=1e-3)
    _, sparse = cli(replayed, "value", "--basis", "fp16-sparse", "--gpu", "H100", "--format", "json")
    assert {r["basis"] for r in json.loads(sparse)} == {"fp16-sparse"}


def test_value_with_a_given_price_needs_no_store(replayed: str) -> None:  # noqa: F811
    _, out = cli(replayed, "value", "--gpu", "RTX-4090", "--price", "0.60", "--tflops", "330", "--format", "json")
    [row] = json.loads(out)
    assert row["basis"] == "user" and round(row["cost_per_tflop_hour"], 4) == 0.0018
    _, out = cli(replayed, "value", "--gpu", "RTX-4090", "--price", "0.60", "--format", "json")
    [row] = json.loads(out)
    assert row["basis"] == "fp16-dense" and row["tflops"] == 165.2


def test_value_price_without_one_gpu_is_an_error(replayed: str) -> None:  # noqa: F811
    with pytest.raises(Exception, match="exactly one GPU"):
        cli(replayed, "value", "--price", "2.0")


#: Scrapers that resolve through another provider's instance-type table.
TABLE_PROVIDER = {"aws_spot": "aws"}


def test_the_name_table_covers_every_gpu_string_a_replay_stores(replayed: str) -> None:  # noqa: F811
    """Every (provider, raw name, memory) of every bundled recording has a hand-judged row in
    tests/fixtures/gpu_names.csv (tests/test_normalise.py checks the resolver against each row)."""
    with fixture_path("gpu_names.csv").open(newline="", encoding="utf-8") as fh:
        table = {(r["provider"], r["raw"], r["memory_gb"]): r["expected"] for r in csv.DictReader(fh)}
    engine = create_engine(replayed)
    with engine.connect() as conn:
        stored = set(conn.execute(text("SELECT provider, gpu_raw, gpu_memory_gb, gpu FROM offer")).all())
    engine.dispose()
    assert len(stored) > 200
    missing, different = [], []
    for provider, raw, mem, gpu in sorted(stored, key=str):
        memory = "" if mem is None else (str(int(mem)) if float(mem).is_integer() else f"{mem:.4f}")
        key = (TABLE_PROVIDER.get(provider, provider), raw, memory)
        if key not in table:
            missing.append(",".join(key))
        elif (table[key] or None) != gpu:
            different.append((key, table[key], gpu))
    assert not missing, f"add these to tests/fixtures/gpu_names.csv (provider,raw,memory_gb,...): {missing}"
    assert not different
