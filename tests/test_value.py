"""Cost per TFLOP: the seed article's table from its own inputs, and what the basis changes."""

from __future__ import annotations

import pytest

from tracker.catalog.specs import GpuSpec, load_catalog
from tracker.catalog.value import (
    BASES,
    DEFAULT_BASIS,
    check_basis,
    column_header,
    cost_per_tflop_hour,
    rank,
    tflops_for,
    value_for,
    value_table,
)
from tracker.errors import ConfigError

#: The seed article's table (issue 3): GPU, USD per GPU-hour, its TFLOPS, its USD/TFLOP-h.
SEED_TABLE = [
    ("B200", 4.70, 2500, 0.0019),
    ("H200", 3.80, 1000, 0.0038),
    ("H100", 3.15, 1000, 0.0032),
    ("A100 80GB", 0.72, 312, 0.0023),
    ("L40S", 1.50, 366, 0.0041),
    ("RTX 4090", 0.60, 330, 0.0018),
]
#: The article's GPUs as catalog ids, and the article's price for each.
SEED_IDS = {"B200": "B200", "H200": "H200", "H100": "H100-SXM", "A100 80GB": "A100-SXM-80GB", "L40S": "L40S", "RTX 4090": "RTX-4090"}
SEED_PRICES = {SEED_IDS[name]: price for name, price, _, _ in SEED_TABLE}


@pytest.fixture(scope="module")
def catalog() -> dict[str, GpuSpec]:
    return load_catalog()


@pytest.mark.parametrize(("gpu", "price", "tflops", "expected"), SEED_TABLE)
def test_the_seed_table_comes_out_exactly(gpu: str, price: float, tflops: float, expected: float) -> None:
    assert cost_per_tflop_hour(price, tflops, places=4) == expected


def test_the_seed_ranking_from_its_own_numbers() -> None:
    rows = rank(value_for(gpu, price, tflops=tflops) for gpu, price, tflops, _ in SEED_TABLE)
    assert [r.gpu for r in rows] == ["RTX 4090", "B200", "A100 80GB", "H100", "H200", "L40S"]
    assert {r.basis for r in rows} == {"user"}


def test_the_catalog_basis_changes_the_ranking(catalog: dict[str, GpuSpec]) -> None:
    # The article's 330 for the RTX 4090 is the FP16-accumulate figure; with FP32 accumulate it is 165.2.
    rtx = catalog["RTX-4090"]
    assert tflops_for(rtx, "fp16-dense") == 165.2
    assert rtx.fp16_dense_fp16acc_tflops == 330.3
    # The article's 2,500 for the B200 is the GB200 part; the HGX B200 clouds rent is 2,250.
    assert tflops_for(catalog["B200"], "fp16-dense") == 2250
    assert tflops_for(catalog["GB200"], "fp16-dense") == 2500
    assert cost_per_tflop_hour(4.70, tflops_for(catalog["GB200"]), places=4) == 0.0019  # the article's figure
    rows = value_table({gpu: [price] for gpu, price in SEED_PRICES.items()}, catalog)
    assert [r.gpu for r in rows] == ["B200", "A100-SXM-80GB", "H100-SXM", "RTX-4090", "H200", "L40S"]
    by = {r.gpu: r for r in rows}
    assert by["RTX-4090"].cost_per_tflop_hour == pytest.approx(0.60 / 165.2)  # 0.0036, not 0.0018
    assert by["B200"].cost_per_tflop_hour == pytest.approx(4.70 / 2250)  # 0.0021, not 0.0019
    assert all(r.basis == "fp16-dense" for r in rows)


def test_other_bases_rank_again(catalog: dict[str, GpuSpec]) -> None:
    # every basis is a different ranking; each row says which one it is on
    prices = {gpu: [price] for gpu, price in SEED_PRICES.items()}
    sparse = [r.gpu for r in value_table(prices, catalog, "fp16-sparse")]
    assert sparse[0] == "B200" and sparse.index("RTX-4090") < sparse.index("H200")
    fp8 = value_table(prices, catalog, "fp8-dense")
    assert next(r for r in fp8 if r.gpu == "A100-SXM-80GB").cost_per_tflop_hour is None  # Ampere has no FP8
    assert fp8[-1].gpu == "A100-SXM-80GB"  # no figure on the basis: ranked last


def test_bases_read_their_catalog_field(catalog: dict[str, GpuSpec]) -> None:
    h100 = catalog["H100-SXM"]
    assert {b: tflops_for(h100, b) for b in BASES} == {
        "fp16-dense": 989.4,
        "fp16-sparse": 1978.9,
        "fp8-dense": 1978.9,
        "tf32-dense": 494.7,
        "fp32": 67,
    }
    assert DEFAULT_BASIS == "fp16-dense"
    assert tflops_for(catalog["RTX-6000-Ada"]) is None  # not published: never filled in
    assert tflops_for(catalog["P100"], "tf32-dense") is None


def test_unknown_basis_is_a_config_error(catalog: dict[str, GpuSpec]) -> None:
    with pytest.raises(ConfigError, match="basis: 'fp4' is not one of fp16-dense, fp16-sparse, fp8-dense, tf32-dense, fp32"):
        tflops_for(catalog["H100-SXM"], "fp4")
    assert check_basis("FP16_Dense") == "fp16-dense"


def test_user_tflops_and_price(catalog: dict[str, GpuSpec]) -> None:
    row = value_for("H100-SXM", 2.5, catalog["H100-SXM"], tflops=1000)
    assert (row.basis, row.tflops, row.cost_per_tflop_hour) == ("user", 1000.0, 0.0025)
    row = value_for("H100-SXM", 2.5, catalog["H100-SXM"], basis="fp32")
    assert row.basis == "fp32" and row.cost_per_tflop_hour == pytest.approx(2.5 / 67)
    assert row.vram_gb == 80 and row.usd_per_gb_vram_hour == pytest.approx(2.5 / 80)
    unknown = value_for("MYSTERY", 1.0)
    assert unknown.tflops is None and unknown.cost_per_tflop_hour is None


def test_value_table_cheapest_and_median(catalog: dict[str, GpuSpec]) -> None:
    rows = value_table({"H100-SXM": [3.0, 2.0, 4.0, 0.0], "NOT-IN-CATALOG": [1.0], "L4": []}, catalog)
    assert [r.gpu for r in rows] == ["H100-SXM", "NOT-IN-CATALOG"]
    h100 = rows[0]
    assert (h100.price_per_gpu_hour, h100.median_price_per_gpu_hour, h100.offers) == (2.0, 3.0, 3)
    assert h100.cost_per_tflop_hour == pytest.approx(2.0 / 989.4)
    assert h100.median_cost_per_tflop_hour == pytest.approx(3.0 / 989.4)
    assert h100.usd_per_gb_vram_hour == pytest.approx(2.0 / 80)
    doc = h100.as_json()
    for key in ("gpu", "basis", "tflops", "price_per_gpu_hour", "cost_per_tflop_hour"):
        assert key in doc
    assert doc["basis"] == "fp16-dense"
    assert rows[1].cost_per_tflop_hour is None


def test_headers_name_the_basis() -> None:
    assert column_header("fp16-dense") == "USD/TFLOP-h (fp16-dense)"
    assert column_header("fp8-dense", "TFLOPS") == "TFLOPS (fp8-dense)"


@pytest.mark.parametrize(("price", "tflops"), [(1.0, 0), (1.0, -5), (-1.0, 100), (float("nan"), 100), (1.0, float("inf")), (True, 100)])
def test_bad_inputs(price: float, tflops: float) -> None:
    with pytest.raises(ValueError):
        cost_per_tflop_hour(price, tflops)
