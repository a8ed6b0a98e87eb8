"""``prices --available`` and the availability columns on a store whose providers state stock
(both backends): available offers only, the GPUs free now, unknown never shown as "no"."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from db import labels
from db.engine import session_scope
from db.spans import utcnow
from tracker.cli import app as cli_app
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer


def offer(sku: str, price: float, available: bool | None, count: int | None) -> NormalisedOffer:
    return NormalisedOffer(provider="p", sku=sku, region="r", kind="on_demand", term_months=0, gpu="H100-SXM",
                           gpu_raw="H100 SXM", gpu_count=1, price_per_hour=price, price_per_gpu_hour=price,
                           currency="USD", available=available, available_count=count)


def fill(engine: Engine) -> None:
    at = utcnow().replace(microsecond=0) - timedelta(minutes=5)
    with session_scope(engine) as s:
        prov = labels.ensure_provider(s, "p")
        store_stage.store_observation(s, "p", [offer("free", 2.0, True, 16), offer("flag", 2.1, True, None),
                                               offer("gone", 1.5, False, 0), offer("quiet", 1.8, None, None)],
                                      at, None, interval_s=3600)
        prov.last_attempt_at = prov.last_success_at = at
        prov.last_status = "ok"


def test_available_keeps_what_is_listed_as_available(engine: Engine, db_url: str) -> None:
    fill(engine)
    runner = CliRunner()
    every = runner.invoke(cli_app, ["--db", db_url, "prices", "--gpu", "H100", "--format", "json"])
    assert every.exit_code == 0, every.output
    rows = json.loads(every.stdout)
    assert [(r["sku"], r["available"], r["available_count"]) for r in rows] == [
        ("gone", False, 0), ("quiet", None, None), ("free", True, 16), ("flag", True, None)]
    only = runner.invoke(cli_app, ["--db", db_url, "prices", "--gpu", "H100", "--available", "--format", "json"])
    assert only.exit_code == 0, only.output
    assert [r["sku"] for r in json.loads(only.stdout)] == ["free", "flag"]
    table = runner.invoke(cli_app, ["--db", db_url, "prices", "--gpu", "H100", "--format", "tsv", "--columns",
                                    "gpu,price_per_gpu_hour,stock"])
    assert table.exit_code == 0, table.output
    assert [line.split("\t")[-1] for line in table.stdout.splitlines()[1:]] == ["no", "?", "yes (16 free)", "yes"]


def test_help_names_the_option() -> None:
    result = CliRunner().invoke(cli_app, ["prices", "--help"])
    assert result.exit_code == 0 and "--available" in result.stdout
