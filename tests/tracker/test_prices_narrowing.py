"""``prices`` narrowed as ``dstack offer`` and ``sky show-gpus`` users ask (GPU count, GPU memory,
price, availability, data age), grouped with price ranges, with vCPU and RAM where stated: each
checked by value against the unnarrowed rows, on both backends."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest
from typer.testing import CliRunner

from tracker.catalog.specs import load_catalog
from tracker.cli import app, main
from tracker.errors import ConfigError
from tracker.reads.offers import GpuCount, OfferFilter, parse_group_by, split_gpu_spec

runner = CliRunner()


def rows_of(db: str, *args: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["--db", db, "prices", "--kind", "all", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def offers(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """What identifies a row apart from its age (taken from the clock at each read)."""
    return [(r["provider"], r["sku"], r["region"]) for r in rows]


def test_gpu_count_memory_price_and_age(replay_store: str) -> None:
    every = rows_of(replay_store)
    counts = {r["gpu_count"] for r in every}
    assert len(counts) > 1, "the store holds offers of several sizes"
    eight = rows_of(replay_store, "--gpus", "8")
    assert eight and offers(eight) == offers([r for r in every if r["gpu_count"] == 8])
    assert offers(rows_of(replay_store, "--gpus", "2..4")) == offers([r for r in every if 2 <= r["gpu_count"] <= 4])
    assert offers(rows_of(replay_store, "--gpus", "4..")) == offers([r for r in every if r["gpu_count"] >= 4])
    h100_8 = rows_of(replay_store, "--gpu", "H100:8")
    assert h100_8 and offers(h100_8) == offers([r for r in every if r["gpu_count"] == 8 and (r["gpu"] or "").startswith("H100")])

    vram = {g: s.vram_gb for g, s in load_catalog().items()}
    big = rows_of(replay_store, "--min-gpu-memory", "80")
    assert big and offers(big) == offers([r for r in every if (r["gpu_memory_gb"] or vram.get(r["gpu"] or "") or 0) >= 80])

    cheap = rows_of(replay_store, "--max-price", "1.5")
    assert cheap and offers(cheap) == offers([r for r in every if r["price_per_gpu_hour"] <= 1.5])
    assert max(r["price_per_gpu_hour"] for r in every) > 1.5

    newest = min(r["age_s"] for r in every)
    assert rows_of(replay_store, "--max-age", f"{newest + 3600:.0f}s"), "the newest rows are within an hour of themselves"
    assert rows_of(replay_store, "--max-age", "1s") == [] or newest <= 1


def test_available_only(replay_store: str) -> None:
    every = rows_of(replay_store)
    available = rows_of(replay_store, "--available")
    assert offers(available) == offers([r for r in every if r["available"] is True])
    assert len(available) < len(every), "some offers are not said to be available"


def test_vcpu_and_ram_where_the_provider_states_them(replay_store: str) -> None:
    every = rows_of(replay_store)
    stated = [r for r in every if r["vcpus"] is not None]
    assert stated and all(r["ram_gb"] and r["ram_gb"] > 0 for r in stated if r["provider"] == "aws")
    header = runner.invoke(app, ["--db", replay_store, "prices", "--kind", "all", "--wide"], env={"COLUMNS": "300"})
    assert "vCPU" in header.stdout and "RAM GB" in header.stdout


def test_group_by_gpu_and_provider_gives_price_ranges(replay_store: str) -> None:
    every = [r for r in rows_of(replay_store) if r["gpu"] and r["currency"] == "USD"]
    groups = rows_of(replay_store, "--group-by", "gpu,provider")
    assert len(groups) == len({(r["gpu"], r["provider"]) for r in every})
    for g in groups:
        members = [r["price_per_gpu_hour"] for r in every if (r["gpu"], r["provider"]) == (g["gpu"], g["provider"])]
        assert g["offers"] == len(members)
        assert (g["min_price_per_gpu_hour"], g["max_price_per_gpu_hour"]) == (min(members), max(members))
        assert g["median_price_per_gpu_hour"] == pytest.approx(statistics.median(members))
    assert [g["min_price_per_gpu_hour"] for g in groups] == sorted(g["min_price_per_gpu_hour"] for g in groups)
    by_gpu = rows_of(replay_store, "--group-by", "gpu")
    assert {g["gpu"] for g in by_gpu} == {r["gpu"] for r in every}
    assert all("provider" not in g for g in by_gpu)
    for g in by_gpu:
        assert g["providers"] == len({r["provider"] for r in every if r["gpu"] == g["gpu"]})


def test_provider_names_are_not_case_sensitive(replay_store: str) -> None:
    assert offers(rows_of(replay_store, "--provider", "RunPod")) == offers(rows_of(replay_store, "--provider", "runpod"))
    assert rows_of(replay_store, "--provider", "RUNPOD")


@pytest.mark.parametrize("args, message", [
    (["--gpus", "x"], "--gpus: 'x' is not a GPU count"),
    (["--gpus", "8..2"], "--gpus: '8..2' is not a GPU count"),
    (["--gpu", "H100:none"], "--gpu NAME:COUNT: 'none' is not a GPU count"),
    (["--max-age", "soon"], "--max-age: 'soon' is not a duration"),
    (["--group-by", "gpu,colour"], "--group-by: colour is not one of gpu, provider, kind"),
])
def test_bad_narrowing_is_one_line(replay_store: str, args: list[str], message: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--db", replay_store, "prices", *args])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: " + message), err


def test_count_and_group_parsing() -> None:
    assert GpuCount.parse("8") == GpuCount(8, 8)
    assert GpuCount.parse("..4") == GpuCount(1, 4)
    assert GpuCount.parse("4..") == GpuCount(4, None)
    assert split_gpu_spec("H100:2..8") == ("H100", GpuCount(2, 8))
    assert split_gpu_spec("H100") == ("H100", None)
    assert parse_group_by("provider,GPU") == ("gpu", "provider")
    with pytest.raises(ConfigError):
        GpuCount.parse("0")
    with pytest.raises(ConfigError):
        OfferFilter(max_price=float("nan"))


def test_value_takes_the_same_narrowing(replay_store: str) -> None:
    """``value --max-price 1.5 --min-gpu-memory 40`` ranks only offers that pass: each GPU's cheapest
    and offer count are those of the narrowed prices."""
    default_kinds = runner.invoke(app, ["--db", replay_store, "prices", "--max-price", "1.5", "--min-gpu-memory", "40",
                                        "--format", "json"])
    narrowed = [r for r in json.loads(default_kinds.stdout) if r["gpu"] and r["currency"] == "USD"]
    result = runner.invoke(app, ["--db", replay_store, "value", "--max-price", "1.5", "--min-gpu-memory", "40",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    ranked = json.loads(result.stdout)
    assert ranked and {r["gpu"] for r in ranked} == {r["gpu"] for r in narrowed}
    for row in ranked:
        prices = [r["price_per_gpu_hour"] for r in narrowed if r["gpu"] == row["gpu"]]
        assert row["price_per_gpu_hour"] == min(prices) <= 1.5
    every = json.loads(runner.invoke(app, ["--db", replay_store, "value", "--format", "json"]).stdout)
    assert len(every) > len(ranked)


def test_recommend_chooses_among_the_narrowed_offers(replay_store: str) -> None:
    """``recommend --max-price 1.5`` quotes only offers at most $1.50 per GPU-hour; without it, a
    dearer one is quoted, so the option changed the answer."""

    def options(*extra: str) -> list[dict[str, Any]]:
        result = runner.invoke(app, ["--db", replay_store, "recommend", "--params", "7B", "--workload", "inference",
                                     *extra, "--format", "json"])
        assert result.exit_code == 0, result.output
        return [o for o in json.loads(result.stdout)["options"] if o["price_per_hour"] is not None]

    everything, cheap = options(), options("--max-price", "1.5")
    assert cheap and all(o["price_per_gpu_hour"] <= 1.5 for o in cheap)
    assert any(o["price_per_gpu_hour"] > 1.5 for o in everything)
    available = options("--available")
    offered = {(r["provider"], r["gpu"]) for r in rows_of(replay_store, "--available")}
    assert all((o["provider"], o["gpu"]) in offered for o in available)
