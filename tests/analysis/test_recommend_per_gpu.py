"""recommend: a provider that rents per GPU (RunPod) is offered at n times its per-GPU price for n
GPUs, up to the limit it states (``maxGpuCount``, kept in ``extra``), and not at all where it
states none (RunPod's anonymous 2026 answer carries no limit)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from tests.analysis.seq import offer, scrape
from tracker.cli import app

runner = CliRunner()


def cli_json(engine: Engine, *args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["--db", engine.url.render_as_string(hide_password=False), *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def runpod(sku: str, price: float, gpu: str, limit: int | None) -> object:
    """A RunPod one-GPU offer (per-GPU pricing) with the largest pod it may be rented as."""
    return replace(offer("runpod", sku, price, gpu=gpu), extra={} if limit is None else {"max_gpu_count": limit})


@pytest.fixture
def market(sqlite_engine: Engine) -> Engine:
    now = datetime.now(UTC) - timedelta(minutes=10)
    scrape(sqlite_engine, "runpod", now, runpod("h200", 3.59, "H200", 8), runpod("4080", 0.27, "RTX-4080", 2),
           runpod("4090", 0.34, "RTX-4090", None))
    scrape(sqlite_engine, "lambda", now, offer("lambda", "8x-h200", 4.20, gpu="H200", count=8))
    return sqlite_engine


def option(rec: dict, gpu: str) -> dict:  # type: ignore[type-arg]
    return next(o for o in rec["options"] if o["gpu"] == gpu)


def test_h200_x2_finds_runpod_at_twice_its_per_gpu_price(market: Engine) -> None:
    # 100B parameters in fp16 need about 241.5 GB: two 141 GB H200s.
    h200 = option(cli_json(market, "recommend", "--params", "100B", "--workload", "inference", "--precision", "fp16"),
                  "H200")
    assert h200["gpus_needed"] == 2 and h200["gpu_count"] == 2 and h200["provider"] == "runpod"
    assert h200["price_per_hour"] == pytest.approx(2 * 3.59) and h200["sku"] == "h200 x2"


def test_the_providers_own_limit_holds(market: Engine) -> None:
    """RunPod rents these RTX 4080s up to 2 per pod; three are more than it rents together."""
    def rtx_4080(params: str) -> dict:  # type: ignore[type-arg]
        return option(cli_json(market, "recommend", "--params", params, "--workload", "inference", "--precision",
                               "int8", "--provider", "runpod"), "RTX-4080")

    two = rtx_4080("20B")  # 25.5 GB: two 16 GB cards
    assert two["gpus_needed"] == 2 and two["provider"] == "runpod" and two["gpu_count"] == 2
    assert two["price_per_hour"] == pytest.approx(2 * 0.27)
    three = rtx_4080("30B")  # 37.5 GB: three cards, more than RunPod rents together
    assert three["gpus_needed"] == 3 and three["provider"] is None and three["price_per_hour"] is None


def test_no_stated_limit_offers_one_gpu_only(market: Engine) -> None:
    """Without a stated limit the offer stands for one GPU only, never n of them."""
    rec = cli_json(market, "recommend", "--params", "20B", "--workload", "inference", "--precision", "int8",
                   "--provider", "runpod")
    assert option(rec, "RTX-4090")["provider"] is None  # two 24 GB cards needed, no limit stated
