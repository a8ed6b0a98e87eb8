"""`value` has one default set of kinds everywhere (CLI, API, dashboard), and says which in its output."""

from __future__ import annotations

import json
import warnings
from typing import Any

from typer.testing import CliRunner

from db.engine import make_engine
from tracker.cli import app
from tracker.config.settings import load_settings
from tracker.kinds import DEFAULT_KINDS

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's test client warns at import about httpx
    from fastapi.testclient import TestClient

runner = CliRunner()


def cli_value(db: str, *args: str) -> tuple[list[dict[str, Any]], str]:
    result = runner.invoke(app, ["--db", db, "value", *args])
    assert result.exit_code == 0, result.output
    return (json.loads(result.stdout) if "json" in args else []), result.stdout


def test_cli_value_uses_the_api_default_and_states_it(replay_store: str) -> None:
    from tracker.web import create_app

    cli_rows, _ = cli_value(replay_store, "--format", "json")
    engine = make_engine(replay_store)
    try:
        with TestClient(create_app(load_settings(None, database=replay_store), engine),
                        base_url="http://127.0.0.1") as client:
            api = client.get("/api/value").json()
    finally:
        engine.dispose()
    assert api["kinds"] == list(DEFAULT_KINDS)
    assert {r["gpu"]: r["price_per_gpu_hour"] for r in cli_rows} == {
        r["gpu"]: r["price_per_gpu_hour"] for r in api["rows"]}
    assert {r["kinds"] for r in cli_rows} == {"on_demand,community"}
    assert {r["cheapest_kind"] for r in cli_rows} <= set(DEFAULT_KINDS)
    _, table = cli_value(replay_store)
    assert table.splitlines()[0] == ("value on basis fp16-dense, on-demand and community prices "
                                     "(spot and reserved with --kind spot, --kind reserved or --kind all)")


def test_spot_only_when_asked(replay_store: str) -> None:
    every, _ = cli_value(replay_store, "--kind", "all", "--format", "json")
    default, _ = cli_value(replay_store, "--format", "json")
    assert "spot" in {r["cheapest_kind"] for r in every}
    cheaper = {r["gpu"] for r in every} & {r["gpu"] for r in default}
    by_default = {r["gpu"]: r["price_per_gpu_hour"] for r in default}
    assert all(r["price_per_gpu_hour"] <= by_default[r["gpu"]] for r in every if r["gpu"] in cheaper)
    _, table = cli_value(replay_store, "--kind", "all")
    assert table.splitlines()[0] == "value on basis fp16-dense, every kind"


def test_value_rows_say_the_age_and_source_of_their_cheapest_price(replay_store: str) -> None:
    runner = CliRunner()
    ranked = json.loads(runner.invoke(app, ["--db", replay_store, "value", "--include-stale", "--format", "json"]).stdout)
    prices = json.loads(runner.invoke(app, ["--db", replay_store, "prices", "--include-stale", "--format", "json"]).stdout)
    assert ranked
    for row in ranked:
        quoted = [p for p in prices if p["gpu"] == row["gpu"] and p["provider"] == row["cheapest_provider"]
                  and p["price_per_gpu_hour"] == row["price_per_gpu_hour"]]
        assert quoted and row["source"] == quoted[0]["source"] and isinstance(row["age_s"], int)
    table = runner.invoke(app, ["--db", replay_store, "value", "--include-stale"], env={"COLUMNS": "300"})
    assert table.stdout.splitlines()[1].split()[-2:] == ["age", "source"]
