"""Golden answers: history, trends, provider lows and value, frozen as JSON and held on both backends.

Two stores are filled through the real write paths and asked a fixed set of questions:

* ``recordings``: every bundled recording replayed through the collector twice, a day and an
  hour apart (``T0`` + 7 min and + 25 h 7 min), as ``test_rollup_equivalence`` does;
* ``synthetic``: a seeded, deterministic synthetic history (labelled synthetic: made-up
  providers ``syn-*``, prices from ``random.Random(SEED)``), 35 days of collections at 3 h, 8 h,
  1 d and 30 min intervals, with failed collections, delistings and price changes, on three
  GPUs, two kinds and two regions.

Each answer is made plain (floats rounded to 9 places, times as ISO text) and compared with
``tests/golden/<store>.json``; both backends must give the frozen answer.

To regenerate after a deliberate change of an answer (say why in the commit)::

    GOLDEN_REGENERATE=1 .venv/bin/python -m pytest -q tests/golden -k sqlite

The files are written from SQLite only; PostgreSQL is then held to them like any other run.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from db import labels
from db.engine import make_engine, session_scope
from db.migrate import init_db
from db.reader import in_transaction
from tests.conftest import (
    PG_ENV,
    _fresh_postgres_schema,
    postgres_url,
    read,
    replay_recordings_at,
)

GOLDEN = Path(__file__).parent
REGENERATE = os.environ.get("GOLDEN_REGENERATE") == "1"
SEED = 20260302
T0 = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
#: The synthetic providers: collection interval, first and last collection (days after T0).
SYNTHETIC = {"syn-alpha": (timedelta(hours=3), 0, 35), "syn-beta": (timedelta(hours=8), 0, 35),
             "syn-gamma": (timedelta(days=1), 0, 35), "syn-delta": (timedelta(minutes=30), 33, 35)}
SYN_GPUS = ("H100-SXM", "H100-PCIe", "A100-SXM-80GB")


def plain(v: Any) -> Any:
    """A value as JSON holds it, the same on every backend and run."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [plain(x) for x in v]
    if hasattr(v, "to_pydatetime"):
        v = v.to_pydatetime()
    if isinstance(v, datetime):
        return (v if v.tzinfo is not None else v.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
    if isinstance(v, date):
        return v.isoformat()
    if hasattr(v, "item") and not isinstance(v, str):  # numpy scalars
        v = v.item()
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, 9)
    return v


# --- the stores ----------------------------------------------------------------------------


def _url(kind: str, tmp: Path) -> tuple[str, Callable[[], None] | None]:
    if kind == "sqlite":
        return f"sqlite:///{tmp / 'golden.db'}", None
    server = postgres_url()
    if not server:
        pytest.skip(f"PostgreSQL tests need {PG_ENV} (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    return _fresh_postgres_schema(server)


def fill_recordings(engine: Engine, tmp: Path) -> None:
    replay_recordings_at(engine, tmp, (T0 + timedelta(minutes=7), T0 + timedelta(hours=25, minutes=7)))


def synthetic_events() -> list[tuple[datetime, str, bool, list[tuple[str, str, str, str, float]]]]:
    """The synthetic history: (time, provider, ok?, offers as (sku, gpu, kind, region, price)),
    in time order, from ``random.Random(SEED)`` alone."""
    rng = random.Random(SEED)
    events = []
    for provider, (every, first_day, last_day) in SYNTHETIC.items():
        skus = []
        for k in range(rng.randint(3, 5)):
            gpu = SYN_GPUS[rng.randrange(len(SYN_GPUS))]
            base = {"H100-SXM": 2.4, "H100-PCIe": 2.0, "A100-SXM-80GB": 1.3}[gpu]
            skus.append([f"{provider}-{k}", gpu, rng.choice(("on_demand", "on_demand", "spot")), rng.choice(("r1", "r2")),
                         round(base * rng.uniform(0.7, 1.4), 2)])
        at = T0 + first_day * DAY + timedelta(minutes=rng.randrange(0, 50))
        end = T0 + last_day * DAY
        while at < end:
            ok = rng.random() > 0.06
            listed = []
            for sku in skus:
                if rng.random() < 0.04:  # a price change
                    sku[4] = round(max(0.3, sku[4] * rng.uniform(0.85, 1.12)), 2)
                if rng.random() > 0.05:  # sometimes not listed
                    listed.append((sku[0], sku[1], sku[2], sku[3], sku[4]))
            events.append((at, provider, ok, listed))
            at += every + timedelta(seconds=rng.randrange(0, 90))
    events.sort(key=lambda e: (e[0], e[1]))
    return events


def fill_synthetic(engine: Engine) -> None:
    from tracker.pipeline import store as store_stage
    from tracker.pipeline.normalise import NormalisedOffer

    for at, provider, ok, listed in synthetic_events():
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, provider)
            if ok and listed:
                offers = [NormalisedOffer(provider=provider, sku=sku, region=region, kind=kind, term_months=0, gpu=gpu,
                                          gpu_raw=gpu, gpu_count=1, price_per_hour=price, price_per_gpu_hour=price,
                                          currency="USD", available=True)
                          for sku, gpu, kind, region, price in listed]
                store_stage.store_observation(s, provider, offers, at, prov.last_attempt_at,
                                              interval_s=int(SYNTHETIC[provider][0].total_seconds()))
                prov.last_success_at, prov.last_status = at, "ok"
            else:
                store_stage.record_failed_attempt(s, provider, at)
                prov.last_status = "failed"
            prov.last_attempt_at = at


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Engine]]:
    """Both golden stores on one backend."""
    tmp = tmp_path_factory.mktemp("golden")
    made: dict[str, Engine] = {}
    drops: list[Callable[[], None]] = []
    try:
        for name, fill in (("recordings", lambda e: fill_recordings(e, tmp)), ("synthetic", fill_synthetic)):
            (tmp / name).mkdir()
            url, drop = _url(request.param, tmp / name)
            if drop is not None:
                drops.append(drop)
            engine = make_engine(url)
            init_db(engine)
            made[name] = engine
            fill(engine)
        yield made
    finally:
        for engine in made.values():
            engine.dispose()
        for drop in drops:
            drop()


# --- the questions -------------------------------------------------------------------------


def history_answer(engine: Engine, **kw: Any) -> dict[str, Any]:
    from tracker.analysis.history import history

    h = read(engine, history,  **kw)
    return {"metric": h.metric, "unit": h.unit, "notes": h.notes, "providers": h.providers, "rows": h.rows()}


def trends_answer(engine: Engine, **kw: Any) -> list[dict[str, Any]]:
    """Trends as of the given moment, or as of the end of the stored history (the golden
    histories are fixed in time; "now" is the wall clock, which would move the answers)."""
    from tracker.analysis.trends import newest_observation, trends

    if "as_of" not in kw:
        kw["as_of"] = read(engine, newest_observation,  kw.get("filters"))
    return read(engine, trends,  **kw)


def lows_answer(engine: Engine, step: int, gpus: list[str], lo: datetime, hi: datetime) -> list[list[Any]]:
    """Each provider's lowest roll-up price and offers per bucket (gpu and provider by name)."""
    from db.reads import Labels, provider_lows
    from db.spans import epoch

    with engine.connect() as conn:
        reader = in_transaction(conn)
        labels = Labels(reader)
        names = labels.names("gpu") | labels.names("provider")
        rows = provider_lows(reader, step, gpu_ids=labels.lookup("gpu", gpus), lo=epoch(lo), hi=epoch(hi))
    return sorted([names[g], b, names[p], v, n] for g, b, p, v, n in rows)  # label ids follow arrival order


def value_answer(engine: Engine, **kw: Any) -> dict[str, Any]:
    from tracker.config.settings import Settings
    from tracker.reads import data

    ctx = data.ReadContext.create(Settings(database=engine.url.render_as_string(hide_password=False)), engine)
    out = data.value(ctx, include_stale=True, **kw)  # the golden histories are fixed in time
    # the figures, not where the cheapest price came from: its age is taken from the clock at each
    # read (the API and MCP tests check each row's provider, age and source)
    out["rows"] = [{k: v for k, v in r.items() if k not in ("provider", "age_s", "source")} for r in out["rows"]]
    return out


def questions(store: str) -> dict[str, Callable[[Engine], Any]]:
    """Named questions per store (every one a call on the public analysis API)."""
    from tracker.analysis.grid import Filters, Resolution

    h100 = ("H100-SXM", "H100-PCIe", "H100-NVL")
    if store == "recordings":
        start, t1 = T0, T0 + timedelta(hours=25, minutes=7)
        return {
            "history_h100_hour": lambda e: history_answer(e, filters=Filters(gpus=h100), since=start,
                                                          until=start + 30 * HOUR, resolution=Resolution.hour),
            "history_all_day": lambda e: history_answer(e, since=start, until=start + 2 * DAY),
            "history_all_kinds_day_partial": lambda e: history_answer(
                e, filters=Filters(kinds=None), since=start + timedelta(minutes=30), until=start + DAY + 2 * HOUR),
            "history_a100_hour_partial": lambda e: history_answer(
                e, filters=Filters(gpus=("A100-SXM-80GB", "A100-SXM-40GB", "A100-PCIe-80GB")),
                since=start + timedelta(minutes=30), until=start + timedelta(hours=3, minutes=10), resolution="hour"),
            "history_h100_region": lambda e: history_answer(
                e, filters=Filters(gpus=h100, regions=("us-east-1", "eastus", "US-TX-3")), since=start, until=start + 2 * DAY),
            "history_h100_first_price": lambda e: history_answer(e, filters=Filters(gpus=h100), until=start + 2 * DAY),
            "history_h100_tflop": lambda e: history_answer(e, filters=Filters(gpus=h100), metric="cost-per-tflop",
                                                           since=start, until=start + 2 * DAY),
            "history_h100_breakeven": lambda e: history_answer(e, filters=Filters(gpus=h100), metric="breakeven-months",
                                                               since=start, until=start + 2 * DAY),
            "trends_default": lambda e: trends_answer(e),
            "trends_all_kinds_at": lambda e: trends_answer(e, filters=Filters(kinds=None), as_of=start + 24 * HOUR + 30 * MIN_),
            "trends_h100_region": lambda e: trends_answer(e, filters=Filters(gpus=h100, regions=("us-east-1", "eastus")),
                                                          as_of=t1),
            "lows_day": lambda e: lows_answer(e, 86_400, list(h100), start, start + 2 * DAY),
            "lows_hour": lambda e: lows_answer(e, 3600, list(h100), start, start + 30 * HOUR),
            "value_fp16": lambda e: value_answer(e),
            "value_h100_all_kinds": lambda e: value_answer(e, gpu="H100", kinds=["all"]),
        }
    end = T0 + 35 * DAY
    return {
        "history_h100_day": lambda e: history_answer(e, filters=Filters(gpus=h100), since=T0, until=end),
        "history_h100_day_unaligned": lambda e: history_answer(e, filters=Filters(gpus=h100),
                                                               since=T0 + 3 * DAY + 5 * HOUR + 17 * MIN_,
                                                               until=end - 7 * HOUR),
        "history_all_hour": lambda e: history_answer(e, since=end - 3 * DAY - 20 * MIN_, until=end, resolution="hour"),
        "history_a100_week": lambda e: history_answer(e, filters=Filters(gpus=("A100-SXM-80GB",)), since=T0, until=end,
                                                      resolution="week"),
        "history_all_kinds_day": lambda e: history_answer(e, filters=Filters(kinds=None), since=T0, until=end),
        "history_providers_hour": lambda e: history_answer(
            e, filters=Filters(gpus=h100, providers=("syn-alpha", "syn-gamma"), kinds=None),
            since=T0 + 10 * DAY + 40 * MIN_, until=T0 + 13 * DAY, resolution="hour"),
        "history_region_r2_day": lambda e: history_answer(e, filters=Filters(regions=("r2",), kinds=None), since=T0, until=end),
        "history_first_price": lambda e: history_answer(e, filters=Filters(gpus=("H100-PCIe",)), until=end),
        "history_tolerance_hour": lambda e: history_answer(e, filters=Filters(gpus=h100), since=end - 2 * DAY, until=end,
                                                           resolution="hour", tolerance=timedelta(hours=1)),
        "history_tflop_day": lambda e: history_answer(e, metric="cost-per-tflop", basis="fp8-dense", since=T0, until=end),
        "history_breakeven_day": lambda e: history_answer(e, filters=Filters(gpus=h100), metric="breakeven-months",
                                                          since=T0 + 20 * DAY, until=end),
        "trends_default": lambda e: trends_answer(e),
        "trends_all_kinds": lambda e: trends_answer(e, filters=Filters(kinds=None)),
        "trends_at_midway": lambda e: trends_answer(e, as_of=T0 + 17 * DAY + 11 * HOUR),
        "trends_h100_r1": lambda e: trends_answer(e, filters=Filters(gpus=h100, regions=("r1",), kinds=None)),
        "trends_providers": lambda e: trends_answer(e, filters=Filters(providers=("syn-beta", "syn-delta"), kinds=None)),
        "trends_tolerance": lambda e: trends_answer(e, tolerance=timedelta(hours=2)),
        "lows_day": lambda e: lows_answer(e, 86_400, list(SYN_GPUS), T0, end),
        "lows_hour": lambda e: lows_answer(e, 3600, list(SYN_GPUS), end - 2 * DAY, end),
        "value_fp16": lambda e: value_answer(e),
        "value_all_kinds": lambda e: value_answer(e, kinds=["all"]),
    }


MIN_ = timedelta(minutes=1)


@pytest.mark.parametrize("store", ["recordings", "synthetic"])
def test_answers_equal_the_golden_files(stores: dict[str, Engine], store: str, request: pytest.FixtureRequest) -> None:
    engine = stores[store]
    got = {name: plain(ask(engine)) for name, ask in questions(store).items()}
    path = GOLDEN / f"{store}.json"
    if REGENERATE and "sqlite" in request.node.callspec.id:
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert sorted(got) == sorted(want), "questions and golden file differ: regenerate (see the module docstring)"
    for name in want:
        assert got[name] == want[name], f"{store}: {name} differs from its golden answer"
    # the answers are not empty: a golden file of nothing would hold anything
    assert all(got[name] for name in got if name.startswith(("trends", "lows")))
    assert all(any(r["min"] is not None for r in got[name]["rows"]) for name in got if name.startswith("history"))
