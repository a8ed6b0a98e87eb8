"""Recommendations: VRAM rules, the GPUs that fit at market prices, rent-vs-buy advice."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from tests.analysis.seq import T0, offer, scrape
from tracker.analysis.recommend import (
    estimate_vram,
    parse_params,
    recommend,
    rent_or_buy,
)
from tracker.catalog.specs import load_catalog
from tracker.errors import ConfigError


def store_market(engine: Engine) -> None:
    scrape(engine, "cloud", T0,
           offer("cloud", "t4", 0.35, gpu="T4"), offer("cloud", "4090", 0.45, gpu="RTX-4090"),
           offer("cloud", "l4", 0.70, gpu="L4"), offer("cloud", "a100", 1.60, gpu="A100-SXM-80GB"),
           offer("cloud", "a100x8", 1.60, gpu="A100-SXM-80GB", count=8), offer("cloud", "h100", 2.50),
           offer("cloud", "h100x8", 2.40, count=8), offer("cloud", "h200x8", 3.50, gpu="H200", count=8),
           offer("cloud", "b200x8", 5.00, gpu="B200", count=8), offer("cloud", "mi300x8", 3.00, gpu="MI300X", count=8),
           offer("cloud", "h100-spot", 1.00, kind="spot"))


def test_vram_rules() -> None:
    assert parse_params("13B") == 13 and parse_params("500M") == 0.5 and parse_params("70b") == 70
    assert parse_params("1.2T") == 1200 and parse_params(7) == 7
    with pytest.raises(ConfigError, match="--params"):
        parse_params("big")
    assert estimate_vram(7, "inference").total_gb == pytest.approx(7 * 2 * 1.2 + 1.5)  # 18.3
    assert estimate_vram(7, "inference", "int8").total_gb == pytest.approx(9.9)
    assert estimate_vram(7, "inference", "int4").total_gb == pytest.approx(5.7)
    # the seed's "QLoRA fits a 13B model in about 9 GB"
    qlora = estimate_vram(13, "qlora")
    assert qlora.precision == "int4" and qlora.total_gb == pytest.approx(9.3) and round(qlora.total_gb) == 9
    # the seed's "about 16 GB per billion for full fine-tuning", plus activations
    full = estimate_vram(70, "full")
    assert full.weights_gb == 70 * 16 and full.total_gb == pytest.approx(1345.5)
    assert estimate_vram(7, "lora").total_gb == pytest.approx(18.3)
    with pytest.raises(ConfigError, match="--workload"):
        estimate_vram(7, "pretrain")
    with pytest.raises(ConfigError, match="--precision"):
        estimate_vram(7, "full", "int4")


def test_7b_inference_runs_on_one_24gb_card(engine: Engine) -> None:
    store_market(engine)
    rec = recommend(engine, "7B", "inference", include_stale=True)
    priced = rec.options.dropna(subset=["price_per_hour"])
    assert priced.iloc[0]["gpu"] == "RTX-4090" and priced.iloc[0]["gpu_count"] == 1
    assert priced["price_per_hour"].is_monotonic_increasing
    assert (priced["total_vram_gb"] >= 18.3).all()
    a100 = priced.set_index("gpu").loc["A100-SXM-80GB"]
    assert a100["gpu_count"] == 1 and a100["price_per_hour"] == pytest.approx(1.6)  # not the 8-GPU box
    h100 = priced.set_index("gpu").loc["H100-SXM"]  # 2.50 on demand; the 1.00 spot offer is not a default kind
    tflops = load_catalog()["H100-SXM"].fp16_dense_tflops
    assert h100["price_per_hour"] == 2.5 and h100["cost_per_tflop_hour"] == pytest.approx(2.5 / tflops)
    # a 16 GB T4 needs two: the single-T4 offer does not qualify, so T4 is listed without a price
    t4 = rec.options.set_index("gpu").loc["T4"]
    assert t4["gpus_needed"] == 2 and t4["price_per_hour"] != t4["price_per_hour"]  # NaN


def test_13b_qlora_fits_a_t4(engine: Engine) -> None:
    store_market(engine)
    rec = recommend(engine, "13B", "qlora", include_stale=True)
    top = rec.options.iloc[0]
    assert (top["gpu"], top["gpu_count"], top["price_per_hour"]) == ("T4", 1, 0.35)
    assert rec.estimate.total_gb == pytest.approx(9.3)


def test_70b_full_finetune_needs_an_8_gpu_node_of_big_cards(engine: Engine) -> None:
    store_market(engine)
    rec = recommend(engine, "70B", "full", include_stale=True)
    fits = set(rec.options["gpu"])
    assert {"B200", "MI300X", "MI325X"} <= fits
    assert not fits & {"H100-SXM", "H200", "A100-SXM-80GB", "RTX-4090"}  # 8 x 141 GB = 1,128 GB < 1,345 GB
    assert (rec.options["total_vram_gb"] >= 1345.5).all()
    priced = rec.options.dropna(subset=["price_per_hour"])
    assert priced["gpu"].tolist() == ["MI300X", "B200"]  # 24 USD/h, then 40 USD/h
    assert priced.iloc[0]["gpu_count"] == 8


def test_too_big_for_one_node_says_so(engine: Engine) -> None:
    rec = recommend(engine, "405B", "full", include_stale=True)
    assert rec.options.empty and "several nodes" in rec.notes[0]


def test_rent_or_buy_checklist() -> None:
    assert rent_or_buy(50, 36, rent_per_hour=2.5, purchase=25_000).verdict == "rent"
    buy = rent_or_buy(600, 24, rent_per_hour=2.5, purchase=25_000)
    assert buy.verdict == "consider buying" and buy.breakeven_months_at_usage == pytest.approx(10_000 / 600)
    assert buy.rent_cost_over_horizon == pytest.approx(2.5 * 600 * 24)
    short = rent_or_buy(600, 12, rent_per_hour=2.5, purchase=25_000)
    assert short.verdict == "rent" and "not break even within 12" in short.reason
    medium = rent_or_buy(300, 48, rent_per_hour=2.5, purchase=25_000)
    assert medium.verdict == "rent" and "break-even" in medium.reason
    assert rent_or_buy(600, 18).verdict == "consider buying"  # checklist alone, no prices known
    assert rent_or_buy(600, 6).verdict == "rent"
    with pytest.raises(ConfigError, match="--hours-per-month"):
        rent_or_buy(0, 12)


def test_recommend_with_usage_gives_advice_on_a_buyable_option(engine: Engine) -> None:
    store_market(engine)
    rec = recommend(engine, "7B", "inference", include_stale=True, hours_per_month=600, months=24)
    assert rec.advice is not None and rec.advice.gpu == "RTX-4090"
    assert rec.advice.purchase == load_catalog()["RTX-4090"].purchase_price_usd
    assert rec.advice.verdict == "consider buying"
    rec = recommend(engine, "13B", "qlora", include_stale=True, hours_per_month=40)
    assert rec.advice is not None and rec.advice.verdict == "rent"
    assert rec.advice.gpu == "RTX-4090" and any("purchase price" in n for n in rec.notes)  # the T4 has none


def test_the_cli_bounds_gpus_by_recommends_limit() -> None:
    """The CLI's --max-gpus defaults to and stops at the limit recommend checks (one declaration)."""
    import inspect

    from tracker.analysis.assumptions import MAX_GPUS
    from tracker.cli.analysis_cmds import recommend as recommend_command

    assert inspect.signature(recommend_command).parameters["max_gpus"].default == MAX_GPUS
