"""The analysis commands end to end: history, trends, tco, recommend, import (plot: test_plot).

SQLite only: the commands are presentation, and the analysis under them is tested on both
backends in the other files (a CLI run leaves its own engine open, which PostgreSQL reports).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from db.engine import make_engine
from db.migrate import init_db
from tests.analysis.seq import HOUR, T0, offer, scrape
from tests.analysis.test_history import store_day_one
from tracker.cli import app

COMMANDS = ("history", "trends", "tco", "recommend", "plot", "import")


def url_of(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def run(engine: Engine, *args: str) -> str:
    res = CliRunner().invoke(app, ["--db", url_of(engine), *args])
    assert res.exit_code == 0, (res.output, res.exception)
    return res.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    res = CliRunner().invoke(app, [command, "--help"])
    assert res.exit_code == 0 and "Usage" in res.output and len(res.output) > 300


def test_tco_reproduces_the_article(sqlite_engine: Engine) -> None:
    # the catalog's own price is a dated public street estimate, cited as such
    catalog = json.loads(run(sqlite_engine, "tco", "--gpu", "H100", "--rent", "3.15", "--format", "json"))
    assert catalog["gpu"] == "H100-SXM" and catalog["purchase"] == 30_000
    assert catalog["purchase_source"].startswith("catalog") and "https://" in catalog["purchase_source"]
    # the article's own inputs ($25K) reproduce its figures
    out = json.loads(run(sqlite_engine, "tco", "--gpu", "H100", "--purchase", "25000", "--rent", "3.15", "--cooling", "0.02",
                         "--utilization", "0.6", "--kwh", "0.10", "--years", "3", "--format", "json"))
    assert out["gpu"] == "H100-SXM" and out["purchase"] == 25_000
    assert round(out["breakeven_hours"]) == 7937
    assert round(out["breakeven_months_24_7"]) == 11 and round(out["breakeven_months_at_utilization"]) == 18
    assert out["effective_hourly_cost"] == pytest.approx(1.05, abs=0.01)
    assert round(out["electricity_per_year"]) == 368
    assert out["rent_source"] == "user"
    for key in ("breakeven_hours_full", "electricity_per_hour", "effective_hourly_cost_at_utilization"):
        assert key in out


def test_tco_rent_defaults_to_the_market(sqlite_engine: Engine) -> None:
    scrape(sqlite_engine, "lambda", T0, offer("lambda", "gpu_1x_h100_sxm5", 2.99), offer("lambda", "x8", 3.29, count=8))
    scrape(sqlite_engine, "runpod", T0 + HOUR, offer("runpod", "h100", 2.69))
    out = json.loads(run(sqlite_engine, "tco", "--gpu", "H100-SXM", "--purchase", "25000", "--include-stale",
                         "--format", "json"))
    assert out["rent"] == 2.69 and "runpod" in out["rent_source"] and "2026-01-01 01:00 UTC" in out["rent_source"]
    assert out["rent_observed_at"].startswith("2026-01-01T01:00")
    assert out["breakeven_hours"] == pytest.approx(25_000 / 2.69)
    median = json.loads(run(sqlite_engine, "tco", "--gpu", "H100-SXM", "--rent-basis", "median", "--include-stale",
                            "--format", "json"))
    assert median["rent"] == pytest.approx((2.69 + 2.99) / 2) and "median" in median["rent_source"]


def test_tco_without_a_market_price_says_what_to_do(sqlite_engine: Engine) -> None:
    res = CliRunner().invoke(app, ["--db", url_of(sqlite_engine), "tco", "--gpu", "H100"])
    assert res.exit_code != 0 and "pass --rent" in str(res.exception)


def test_history_json_csv_and_table(sqlite_engine: Engine) -> None:
    store_day_one(sqlite_engine)
    args = ["history", "--gpu", "H100", "--since", "2026-01-01", "--until", "2026-01-01T11:00:00Z", "--every", "1h"]
    rows = json.loads(run(sqlite_engine, *args, "--format", "json"))
    assert len(rows) == 12 and rows[3]["beta"] is None and rows[8]["min"] == 2.0 and rows[8]["gamma"] == 2.0
    assert rows[0]["time"] == "2026-01-01T00:00:00+00:00" and rows[0]["unit"] == "USD/GPU-h"
    csv_text = run(sqlite_engine, *args, "--format", "csv")
    assert csv_text.splitlines()[0].startswith("time,gpu,metric,unit,kinds,min,p25,median,providers,offers,alpha")
    assert "beta" in run(sqlite_engine, *args)
    cpt = json.loads(run(sqlite_engine, *args, "--metric", "cost-per-tflop", "--format", "json"))
    assert cpt[8]["min"] == pytest.approx(2.0 / 989.4) and cpt[8]["unit"] == "USD/TFLOP-h (fp16-dense)"
    be = json.loads(run(sqlite_engine, *args, "--metric", "breakeven-months", "--format", "json"))
    assert be[8]["min"] == pytest.approx(30_000 / (2.0 * 730))  # the catalog H100 price


def test_trends_json(sqlite_engine: Engine) -> None:
    store_day_one(sqlite_engine)
    rows = json.loads(run(sqlite_engine, "trends", "--as-of", "2026-01-01T09:00Z", "--format", "json"))
    by = {r["gpu"]: r for r in rows}
    assert by["H100-SXM"]["current"] == 2.0 and by["H100-SXM"]["all_time_low"] == 2.0
    # at its low, but one day of observations is too little to call it a good deal
    assert by["H100-SXM"]["history_days"] == 1 and by["H100-SXM"]["good_deal"] is False
    assert by["H100-SXM"]["all_time_low_at"] == "2026-01-01T08:00:00+00:00"
    assert set(by) == {"H100-SXM", "A100-SXM-80GB"}
    only = json.loads(run(sqlite_engine, "trends", "--gpu", "A100", "--as-of", "2026-01-01T09:00Z", "--format", "json"))
    assert [r["gpu"] for r in only] == ["A100-SXM-80GB"]


def test_recommend_json(sqlite_engine: Engine) -> None:
    scrape(sqlite_engine, "cloud", T0, offer("cloud", "t4", 0.35, gpu="T4"), offer("cloud", "4090", 0.45, gpu="RTX-4090"))
    out = json.loads(run(sqlite_engine, "recommend", "--params", "13B", "--workload", "qlora", "--hours-per-month", "40",
                         "--include-stale", "--format", "json"))
    assert out["vram_needed_gb"] == pytest.approx(9.3) and out["workload"] == "qlora"
    assert out["options"][0]["gpu"] == "T4" and out["advice"]["verdict"] == "rent"
    table = " ".join(run(sqlite_engine, "recommend", "--params", "7B", "--workload", "inference", "--include-stale").split())
    assert "18.3 GB" in table and "RTX-4" in table and "T4 x2" in table  # (80 columns may cut names)


def test_import_round_trip_and_bad_row_report(sqlite_engine: Engine, tmp_path: Path) -> None:
    source = make_engine(f"sqlite:///{tmp_path / 'source.db'}")
    init_db(source)
    store_day_one(source)
    args = ["history", "--gpu", "H100-SXM", "--since", "2026-01-01", "--until", "2026-01-01T11:00Z", "--every", "1h",
            "--format", "csv"]
    exported = run(source, *args)
    source.dispose()
    lines = exported.splitlines()
    lines[4] = lines[4].replace("H100-SXM", "H100-XYZ")  # line 5
    path = tmp_path / "history.csv"
    path.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(app, ["--db", url_of(sqlite_engine), "import", str(path), "--format", "json"])
    assert res.exit_code == 0, (res.output, res.exception)
    assert "line 5" in res.stderr and "H100-XYZ" in res.stderr
    summary = json.loads(res.stdout)[0]
    assert summary["format"] == "history" and summary["bad_rows"] == 1 and summary["rows"] == 12

    def without_offers(text: str) -> list[dict[str, str]]:
        return [{k: v for k, v in r.items() if k != "offers"} for r in csv.DictReader(io.StringIO(text))]

    before, after = without_offers(exported), without_offers(run(sqlite_engine, *args))
    # same prices everywhere except 03:00 (line 5, skipped): there only alpha, bridged across it
    assert [r for i, r in enumerate(after) if i != 3] == [r for i, r in enumerate(before) if i != 3]
    assert after[3]["alpha"] == "3.0" and after[3]["providers"] == "1"


def test_import_refuses_skypilot_without_provider(sqlite_engine: Engine) -> None:
    from tests.conftest import fixture_path

    res = CliRunner().invoke(app, ["--db", url_of(sqlite_engine), "import",
                                   str(fixture_path("skypilot/lambda_vms_v7_11580132_excerpt.csv"))])
    assert res.exit_code != 0 and "--provider and --observed-at" in str(res.exception)
    ok = run(sqlite_engine, "import", str(fixture_path("skypilot/lambda_vms_v7_11580132_excerpt.csv")),
             "--provider", "lambda", "--observed-at", "2025-06-01T12:00", "--format", "json")
    assert json.loads(ok)[0]["stored"] == 6
