"""recommend: a provider that rents per GPU (RunPod) is offered at n times its per-GPU price for n GPUs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tracker.cli import app

runner = CliRunner()


def cli_json(db: str, *args: str) -> object:
    result = runner.invoke(app, ["--db", db, *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_h200_x2_finds_runpod_at_twice_its_per_gpu_price(replay_store: str) -> None:
    # 100B parameters in fp16 need about 241.5 GB: two 141 GB H200s.
    rec = cli_json(replay_store, "recommend", "--params", "100B", "--workload", "inference", "--precision", "fp16")
    assert isinstance(rec, dict)
    h200 = next(o for o in rec["options"] if o["gpu"] == "H200")
    assert h200["gpus_needed"] == 2 and h200["gpu_count"] == 2
    runpod = [r for r in cli_json(replay_store, "prices", "--gpu", "H200", "--provider", "runpod")  # type: ignore[union-attr]
              if r["kind"] in ("on_demand", "community")]
    assert runpod and all(r["gpu_count"] == 1 for r in runpod)
    cheapest = min(runpod, key=lambda r: r["price_per_gpu_hour"])
    assert h200["provider"] == "runpod"
    assert h200["price_per_hour"] == pytest.approx(2 * cheapest["price_per_gpu_hour"])
    assert h200["sku"] == f"{cheapest['sku']} x2"


def rtx_4080(db: str, params: str) -> dict[str, object]:
    rec = cli_json(db, "recommend", "--params", params, "--workload", "inference", "--precision", "int8",
                   "--provider", "runpod")
    assert isinstance(rec, dict)
    return next(o for o in rec["options"] if o["gpu"] == "RTX-4080")


def test_the_providers_own_limit_holds(replay_store: str) -> None:
    """RunPod rents RTX 4080s up to 2 per pod (its maxGpuCount in the recording)."""
    two = rtx_4080(replay_store, "20B")  # 25.5 GB: two 16 GB cards
    assert two["gpus_needed"] == 2 and two["provider"] == "runpod" and two["gpu_count"] == 2
    three = rtx_4080(replay_store, "30B")  # 37.5 GB: three cards, more than RunPod rents together
    assert three["gpus_needed"] == 3 and three["provider"] is None and three["price_per_hour"] is None
