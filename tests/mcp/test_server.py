"""Every MCP tool called through the SDK's client over stdio, on the replayed store of
tests/web/conftest.py (every bundled recording once, then lambda failing on a changed page), and
checked against the JSON API's and the CLI's answers for the same filters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from tests.mcp.conftest import ROOT, call_all, with_client
from tests.web.conftest import BROKEN_PROVIDER, Store, TestClient, get_json
from tracker.catalog.specs import family_of
from tracker.cli import app as cli_app
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect

pytestmark = pytest.mark.slow

TOOLS = {"prices", "gpus", "history", "index", "trends", "value", "tco", "recommend", "alert_backtest", "provider_health",
         "availability"}
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "prices_h100": ("prices", {"gpu": "H100", "limit": 5}),
    "prices_all": ("prices", {"gpu": "H100", "limit": 1000}),
    "prices_vastai_spot": ("prices", {"provider": ["vastai"], "kind": ["spot"]}),  # the keyless RunPod replay has no spot
    "prices_bad_gpu": ("prices", {"gpu": "H999"}),
    "prices_bad_limit": ("prices", {"limit": 0}),
    "prices_bad_provider": ("prices", {"provider": ["nosuchcloud"]}),
    "history": ("history", {"gpu": "H100", "since": "30d", "every": "1d"}),
    "trends": ("trends", {"gpu": "H100"}),
    "index": ("index", {"gpu": "H100", "since": "all"}),
    "index_bad_method": ("index", {"method": "mean-1"}),
    "availability": ("availability", {"gpu": "H100", "since": "30d"}),
    "availability_bad_gpu": ("availability", {"gpu": "H999"}),
    "value": ("value", {"basis": "fp16-dense", "gpu": "H100"}),
    "value_bad_basis": ("value", {"basis": "fp64-magic"}),
    "tco": ("tco", {"gpu": "H100", "utilization": 0.6}),
    "recommend": ("recommend", {"params": "13B", "workload": "qlora", "hours_per_month": 200}),
    "health": ("provider_health", {}),
    "backtest": ("alert_backtest", {"gpu": "H100", "below": 100.0, "since": "90d"}),
    "gpus": ("gpus", {"gpu": "H100"}),
    "gpus_bad": ("gpus", {"gpu": "H999"}),
    "recommend_bad": ("recommend", {"params": "huge", "workload": "qlora"}),
    "tco_no_rent": ("tco", {"gpu": "B100", "purchase": 30000.0}),
    "backtest_bad": ("alert_backtest", {"rule": "no-such-rule"}),
}


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-config") / "config.toml"
    path.write_text("# empty: defaults only\n")
    return path


@pytest.fixture(scope="module")
def results(store: Store, config: Path) -> dict[str, Any]:
    """One server process answers every call of the module."""
    return with_client(store.url, config, lambda client: call_all(client, CALLS))


def ok(results: dict[str, Any], key: str) -> dict[str, Any]:
    r = results[key]
    assert not r.is_error, r.content
    assert r.structured_content is not None
    return r.structured_content


def cli_json(store: Store, *args: str) -> Any:
    result = CliRunner().invoke(cli_app, ["--db", store.url, *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_tool_has_typed_input_and_output_schemas(results: dict[str, Any]) -> None:
    tools = {t.name: t for t in results["_tools"]}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.input_schema["type"] == "object" and t.output_schema and t.output_schema["type"] == "object", t.name
        assert t.description and t.annotations and t.annotations.read_only_hint is True, t.name
    limit = tools["prices"].input_schema["properties"]["limit"]
    assert limit["type"] == "integer" and limit["minimum"] == 1 and limit["maximum"] == 1000
    assert tools["tco"].input_schema["required"] == ["gpu"]
    assert set(tools["recommend"].input_schema["required"]) == {"params", "workload"}
    assert "rows" in tools["prices"].output_schema["properties"]
    # `gpu` is one type in every tool that takes it: a string naming a family or a canonical id
    for name, tool in tools.items():
        gpu = tool.input_schema["properties"].get("gpu")
        if gpu is None:
            continue
        types = {gpu.get("type")} | {t.get("type") for t in gpu.get("anyOf", [])}
        assert types - {None, "null"} == {"string"}, (name, gpu)
        assert "`gpus` tool" in gpu["description"], name


def test_gpus_lists_catalog_ids_with_memory_and_tflops(results: dict[str, Any], client: TestClient) -> None:
    rows = ok(results, "gpus")["rows"]
    assert {r["gpu"] for r in rows} == {r["gpu"] for r in get_json(client, "/api/gpus?gpu=H100")}
    sxm = next(r for r in rows if r["gpu"] == "H100-SXM")
    assert sxm["vram_gb"] == 80 and sxm["fp16_dense_tflops"] and sxm["fp16_dense_tflops"] > 900
    assert results["gpus_bad"].is_error and "(the `gpus` tool lists them)" in results["gpus_bad"].content[0].text


def test_every_quoted_price_says_its_age_and_source(results: dict[str, Any]) -> None:
    for row in ok(results, "prices_h100")["rows"]:
        assert isinstance(row["age_s"], int) and row["source"]
    trends = ok(results, "trends")["rows"]
    assert trends and all(isinstance(r["age_s"], int) and r["source"] for r in trends if r["current"] is not None)
    value = ok(results, "value")["rows"]
    assert value and all(isinstance(r["age_s"], int) and r["source"] and r["provider"] for r in value)
    options = [o for o in ok(results, "recommend")["options"] if o["price_per_hour"] is not None]
    assert options and all(isinstance(o["age_s"], int) and o["source"] for o in options)


def test_messages_speak_of_tool_parameters_not_command_flags(results: dict[str, Any]) -> None:
    for key in ("recommend_bad", "tco_no_rent", "gpus_bad", "prices_bad_gpu", "backtest_bad"):
        r = results[key]
        text = r.content[0].text
        assert r.is_error, (key, text)
        assert "--" not in text and "/api/" not in text, (key, text)
    notes = ok(results, "history")["notes"] + ok(results, "recommend")["notes"]
    assert notes, "the replayed store has one day of history: history says how to get more"
    for note in notes:
        assert "--" not in note and "now and then" not in note, note
    assert any("outside this read-only server" in n for n in notes), notes
    assert "`params`" in results["recommend_bad"].content[0].text
    assert "`rent`" in results["tco_no_rent"].content[0].text


def test_prices_are_the_cli_and_api_rows(results: dict[str, Any], store: Store, client: TestClient) -> None:
    out = ok(results, "prices_h100")
    cli = cli_json(store, "prices", "--gpu", "H100", "--limit", "5")
    rest = get_json(client, "/api/prices?gpu=H100&limit=5")
    assert out["returned"] == len(out["rows"]) == len(cli) == len(rest) == 5
    for mine, theirs, web in zip(out["rows"], cli, rest, strict=True):
        for key in ("provider", "gpu", "sku", "kind", "region", "currency", "gpu_count"):
            assert mine[key] == theirs[key] == web[key], key
        assert mine["price_per_gpu_hour"] == pytest.approx(theirs["price_per_gpu_hour"]) == web["price_per_gpu_hour"]
    everything = ok(results, "prices_all")
    assert everything["matching"] == len(get_json(client, "/api/prices?gpu=H100")) == len(everything["rows"]) > 5
    assert {family_of(r["gpu"]) for r in everything["rows"]} == {"H100"}
    spot = ok(results, "prices_vastai_spot")["rows"]
    assert spot and {(r["provider"], r["kind"]) for r in spot} == {("vastai", "spot")}


@pytest.mark.parametrize("key,words", [
    ("prices_bad_gpu", "matches no GPU"), ("prices_bad_provider", "not a registered provider"),
    ("value_bad_basis", "fp64-magic"), ("prices_bad_limit", "limit"),
])
def test_bad_input_is_a_one_line_tool_error(results: dict[str, Any], key: str, words: str) -> None:
    r = results[key]
    assert r.is_error
    text = r.content[0].text
    assert words in text and "Traceback" not in text and "ConfigError" not in text


def test_history_is_the_api_history(results: dict[str, Any], client: TestClient) -> None:
    out = ok(results, "history")
    web = get_json(client, "/api/history?gpu=H100&since=30d&every=1d")
    for key in ("metric", "unit", "resolution", "kinds", "gpus", "providers"):
        assert out[key] == web[key], key
    assert out["resolution"] == "day" and len(out["providers"]) >= 5
    mine = [(m["gpu"], m["min"], m["median"], m["providers"]) for m in out["market"] if m["min"] is not None]
    theirs = [(m["gpu"], m["min"], m["median"], m["providers"]) for m in web["market"] if m["min"] is not None]
    assert mine == theirs and mine


def test_index_is_the_api_index_and_the_cli_index(results: dict[str, Any], client: TestClient, store: Store) -> None:
    out = ok(results, "index")
    web = get_json(client, "/api/index?gpu=H100&since=all")
    assert {k: v for k, v in out.items() if k not in ("until", "notes")} == {
        k: v for k, v in web.items() if k not in ("until", "notes")}
    assert out["method"] == "median-of-medians-1" and out["version"] == "1" and out["kinds"] == ["on_demand"]
    assert out["rows"] and {r["gpu"] for r in out["rows"]} <= {"H100-SXM", "H100-PCIe", "H100-NVL"}
    cli = cli_json(store, "index", "--gpu", "H100", "--since", "2000-01-01")
    assert [(r["gpu"], r["index"], r["providers"]) for r in cli] == [
        (r["gpu"], r["index"], r["providers"]) for r in out["rows"]]
    bad = results["index_bad_method"]
    assert bad.is_error and "`method`" in bad.content[0].text and "--method" not in bad.content[0].text


def test_availability_is_the_api_and_cli_availability(results: dict[str, Any], client: TestClient, store: Store) -> None:
    out = ok(results, "availability")["rows"]
    web = get_json(client, "/api/availability?gpu=H100&since=30d")
    cli = cli_json(store, "availability", "--gpu", "H100", "--since", "30d")
    # each read ends at its own "now" (an open interval's hours grow with it): compare what does not move
    def stable(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["provider"], r["region"], r["offers"], r["available_pct"] is None) for r in rows]
    assert stable(out) == stable(web) == stable(cli) and out
    vast = [r for r in out if r["provider"] == "vastai"]
    assert vast and all(r["available_pct"] == 100.0 for r in vast)  # every listing the rentable search returns
    # the RunPod recording states no stock: unknown, never 0 %
    assert all(r["available_pct"] is None and r["longest_unavailable_h"] is None for r in out if r["provider"] == "runpod")
    assert results["availability_bad_gpu"].is_error


def test_trends_are_the_api_trends(results: dict[str, Any], client: TestClient) -> None:
    out = ok(results, "trends")["rows"]
    web = get_json(client, "/api/trends?gpu=H100")
    assert [r["gpu"] for r in out] == [r["gpu"] for r in web] and out
    for mine, theirs in zip(out, web, strict=True):
        for key in ("current", "provider", "offers", "all_time_low", "good_deal"):
            assert mine[key] == theirs[key], key


def test_value_is_the_api_value(results: dict[str, Any], client: TestClient) -> None:
    out = ok(results, "value")
    web = get_json(client, "/api/value?basis=fp16-dense&gpu=H100")

    def timeless(value: dict[str, Any]) -> dict[str, Any]:  # each read takes its rows' ages from the clock
        return {**value, "rows": [{k: v for k, v in r.items() if k != "age_s"} for r in value["rows"]]}

    assert timeless(out) == timeless(web)
    assert out["basis"] == "fp16-dense" and {r["gpu"] for r in out["rows"]} <= {"H100-SXM", "H100-PCIe", "H100-NVL"}
    for row in out["rows"]:
        assert row["cost_per_tflop_hour"] == pytest.approx(row["price_per_gpu_hour"] / row["tflops"], rel=1e-6)


def test_tco_is_the_api_and_cli_tco(results: dict[str, Any], store: Store, client: TestClient) -> None:
    out = ok(results, "tco")
    web = get_json(client, "/api/tco?gpu=H100&utilization=0.6")
    cli = cli_json(store, "tco", "--gpu", "H100", "--utilization", "0.6")
    assert out["gpu"] == web["gpu"] == cli["gpu"] == "H100-SXM"
    for key in ("purchase", "rent", "breakeven_hours", "effective_hourly_cost", "electricity_per_year"):
        assert out[key] == pytest.approx(web[key]) == pytest.approx(cli[key], rel=1e-5), key
    assert out["rent_source"] == web["rent_source"]
    assert out["breakeven_hours"] == pytest.approx(out["purchase"] / out["rent"])


def test_recommend_is_the_cli_recommendation(results: dict[str, Any], store: Store) -> None:
    out = ok(results, "recommend")
    cli = cli_json(store, "recommend", "--params", "13B", "--workload", "qlora", "--hours-per-month", "200")
    assert out["vram_needed_gb"] == pytest.approx(cli["vram_needed_gb"]) and out["precision"] == cli["precision"]
    assert out["advice"]["verdict"] == cli["advice"]["verdict"] and out["advice"]["gpu"] == cli["advice"]["gpu"]
    assert len(out["options"]) == min(20, len(cli["options"]))
    for mine, theirs in zip(out["options"], cli["options"], strict=False):
        assert (mine["gpu"], mine["gpus_needed"], mine["provider"]) == (theirs["gpu"], theirs["gpus_needed"], theirs["provider"])
        assert mine["price_per_hour"] == pytest.approx(theirs["price_per_hour"], abs=1e-6)
    priced = [o["price_per_hour"] for o in out["options"] if o["price_per_hour"] is not None]
    assert priced == sorted(priced) and all(o["total_vram_gb"] >= out["vram_needed_gb"] for o in out["options"])


def test_alert_backtest_is_the_api_backtest(results: dict[str, Any], client: TestClient) -> None:
    out = ok(results, "backtest")
    web = get_json(client, "/api/alerts/backtest?gpu=H100&below=100&since=90d")
    for key in ("rule", "description", "evaluations", "fired", "resolved", "firing_at_end"):
        assert out[key] == web[key], key
    assert out["fired"] >= 1 and [e["event"] for e in out["events"]] == [e["event"] for e in web["events"]]
    assert [e["value"] for e in out["events"]] == [e["value"] for e in web["events"]]
    assert results["backtest_bad"].is_error and "no-such-rule" in results["backtest_bad"].content[0].text


def test_provider_health(results: dict[str, Any], client: TestClient) -> None:
    out = ok(results, "health")
    rows = {r["provider"]: r for r in out["providers"]}
    web = {r["provider"]: r for r in get_json(client, "/api/providers")}
    assert set(rows) == set(web)
    assert rows[BROKEN_PROVIDER]["health"] == "failing" and BROKEN_PROVIDER in out["failing"]
    assert rows[BROKEN_PROVIDER]["last_error_class"] == "ParseError"
    for name in ("runpod", "vastai", BROKEN_PROVIDER):
        for key in ("status", "offers", "consecutive_failures", "last_success_at", "health"):
            assert rows[name][key] == web[name][key], (name, key)
    assert rows["runpod"]["offers"] > 0 and out["scheduler"]["active"] is False


def test_the_store_refuses_writes(store: Store) -> None:
    """The server's engine: a write fails in the database itself."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from tracker.mcp.server import open_read_only

    ctx = open_read_only(Settings(), store.url)
    try:
        with ctx.engine.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM offer")).scalar_one() > 0
            with pytest.raises(OperationalError, match="readonly"):
                conn.execute(text("DELETE FROM offer"))
    finally:
        ctx.engine.dispose()


def test_a_missing_store_is_one_line(tmp_path: Path, config: Path) -> None:
    missing = tmp_path / "nothing-here.db"
    proc = subprocess.run([sys.executable, "-m", "tracker", "--config", str(config), "--db", f"sqlite:///{missing}", "mcp"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and not missing.exists()
    assert proc.stderr.count("\n") == 1 and "does not exist" in proc.stderr and proc.stdout == ""


def test_prices_on_both_backends(engine: Engine, db_url: str, config: Path) -> None:
    """A smaller replay into a fresh SQLite or PostgreSQL store; the tool answers what the CLI answers."""
    settings = Settings(database=db_url)
    results = collect(engine, settings, ["runpod", "lambda", "aws_spot"], replay=True)
    assert {r.status for r in results} == {"ok"}
    out = with_client(db_url, config, lambda client: client.call_tool("prices", {"gpu": "H100", "limit": 1000, "kind": ["all"]}))
    assert not out.is_error, out.content
    rows = out.structured_content["rows"]
    cli = CliRunner().invoke(cli_app, ["--db", db_url, "prices", "--gpu", "H100", "--kind", "all", "--format", "json"])
    assert cli.exit_code == 0, cli.output
    expected = json.loads(cli.stdout)
    assert [(r["provider"], r["sku"], r["region"], r["price_per_gpu_hour"]) for r in rows] == [
        (r["provider"], r["sku"], r["region"], r["price_per_gpu_hour"]) for r in expected]
    assert {r["provider"] for r in rows} == {"runpod", "lambda", "aws_spot"}
