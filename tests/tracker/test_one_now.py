"""One answer to "where is an H100-SXM cheapest now", on every surface, for a live store, the
demo store (a replay of the bundled recordings), an imported store and a mixed one.

"Now" is one rule (``db.reads``): each provider's latest collection while it ran within its
staleness limit, on-demand and community prices unless asked otherwise. The surfaces asked here
are the CLI (``prices``, ``value``, ``trends``, ``tco``), the JSON API (the same four) and the
dashboard's overview; the MCP tools answer with the API's rows (``tests/mcp/test_server.py``).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from tests.analysis.seq import offer, scrape
from tracker.cli import app
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.pipeline.imports import import_files

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

Answer = tuple[str, float] | None
GPU = "H100-SXM"


def url_of(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def cli(engine: Engine, *args: str) -> Any:
    res = CliRunner().invoke(app, ["--db", url_of(engine), *args, "--format", "json"])
    return json.loads(res.stdout) if res.exit_code == 0 else None


def answers(engine: Engine) -> dict[str, Answer]:
    """Each surface's cheapest H100-SXM now: (provider, USD per GPU-hour), or None for nothing."""
    from tracker.web import create_app

    out: dict[str, Answer] = {}
    rows = cli(engine, "prices", "--gpu", GPU)
    out["cli prices"] = (rows[0]["provider"], rows[0]["price_per_gpu_hour"]) if rows else None
    value = cli(engine, "value", "--gpu", GPU)
    out["cli value"] = (value[0]["cheapest_provider"], value[0]["price_per_gpu_hour"]) if value else None
    trend = [t for t in cli(engine, "trends", "--gpu", GPU) or [] if t["current"] is not None]
    out["cli trends"] = (trend[0]["provider"], trend[0]["current"]) if trend else None
    tco = cli(engine, "tco", "--gpu", GPU, "--purchase", "30000")
    out["cli tco"] = (tco["rent_source"].split(": ")[1].split(" ")[0], tco["rent"]) if tco else None
    settings = Settings(database=url_of(engine))
    with TestClient(create_app(settings, engine), base_url="http://127.0.0.1") as client:
        api = client.get(f"/api/prices?gpu={GPU}").json()
        out["api prices"] = (api[0]["provider"], api[0]["price_per_gpu_hour"]) if api else None
        v = client.get(f"/api/value?gpu={GPU}").json()["rows"]
        out["api value"] = (v[0]["cheapest_provider"], v[0]["price_per_gpu_hour"]) if v and "cheapest_provider" in v[0] \
            else (None, v[0]["price_per_gpu_hour"]) if v else None
        t = [r for r in client.get(f"/api/trends?gpu={GPU}").json() if r["current"] is not None]
        out["api trends"] = (t[0]["provider"], t[0]["current"]) if t else None
        r = client.get(f"/api/tco?gpu={GPU}&purchase=30000")
        out["api tco"] = (r.json()["rent_source"].split(": ")[1].split(" ")[0], r.json()["rent"]) \
            if r.status_code == 200 else None
        page = BeautifulSoup(client.get("/").text, "lxml")
        row = next((tr for tr in page.select("table#cheapest tbody tr") if GPU in tr.get_text(" ")), None)
        out["dashboard"] = _dashboard_answer(row)
    return out


def _dashboard_answer(row: Any) -> Answer:
    """The overview row's cheapest rentable offer: its provider and the price it prints."""
    if row is None:
        return None
    best = row.select_one("[data-best]")
    assert best is not None, row
    return best["data-provider"], float(best["data-price"])


def assert_one_answer(found: dict[str, Answer], expected: Answer) -> None:
    """Every surface answers ``expected`` (the API's value rows may omit the provider)."""
    for surface, got in found.items():
        if expected is None or got is None:
            assert got == expected, (surface, found)
            continue
        provider, price = got
        assert price == pytest.approx(expected[1]), (surface, found)
        assert provider in (expected[0], None), (surface, found)


@pytest.fixture
def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)


def live(engine: Engine, now: datetime) -> None:
    """alpha on demand at 2.50 and beta's spot at 1.80 now; gamma's 1.00 was collected a month ago."""
    scrape(engine, "gamma", now - timedelta(days=30), offer("gamma", "g1", 1.00))
    scrape(engine, "alpha", now, offer("alpha", "a1", 2.50), offer("alpha", "a2", 2.75))
    scrape(engine, "beta", now, offer("beta", "b-spot", 1.80, kind="spot"))


def archive(tmp_path: Path, at: datetime) -> Path:
    """A prices export of a provider we do not collect, a year old and cheaper than anyone now."""
    path = tmp_path / "old.csv"
    path.write_text("provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at\n"
                    f"primecompute,pc1,on_demand,H100 SXM,1,1.00,USD,{(at - timedelta(days=365)).isoformat()}\n")
    return path


def test_a_live_store_answers_alike_everywhere(engine: Engine, now: datetime) -> None:
    live(engine, now)
    assert_one_answer(answers(engine), ("alpha", 2.50))


def test_an_imported_store_has_nothing_current_anywhere(engine: Engine, now: datetime, tmp_path: Path) -> None:
    import_files(engine, [archive(tmp_path, now)])
    assert_one_answer(answers(engine), None)
    rows = cli(engine, "prices", "--gpu", GPU, "--include-stale")
    assert [(r["provider"], r["source"]) for r in rows] == [("primecompute", "import old.csv")]
    assert rows[0]["age_s"] >= 365 * 86400


def test_a_mixed_store_answers_with_the_live_price(engine: Engine, now: datetime, tmp_path: Path) -> None:
    live(engine, now)
    import_files(engine, [archive(tmp_path, now)])
    assert_one_answer(answers(engine), ("alpha", 2.50))
    rows = cli(engine, "prices", "--gpu", GPU)
    assert {r["source"] for r in rows} == {"live"} and all(0 <= r["age_s"] < 3600 for r in rows)


@pytest.fixture
def demo(engine: Engine) -> Iterator[Engine]:
    """The demo store: the bundled recordings replayed (as ``make demo`` does)."""
    results = collect(engine, Settings(database=url_of(engine)), None, replay=True)
    assert {r.status for r in results} <= {"ok", "skipped"}
    yield engine


def test_the_demo_store_answers_alike_everywhere(demo: Engine) -> None:
    rows = cli(demo, "prices", "--gpu", GPU)
    assert rows and all(r["source"].startswith("replay") for r in rows)
    usd = [r for r in rows if r["currency"] == "USD"]
    found = answers(demo)
    assert_one_answer(found, (usd[0]["provider"], usd[0]["price_per_gpu_hour"]))
