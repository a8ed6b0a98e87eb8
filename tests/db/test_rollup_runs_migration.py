"""Migration 0006 moves hourly roll-ups between one row per hour and runs of equal hours,
both ways, without changing an interval, a roll-up or a history answer (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import rollups
from db.migrate import current_revision, head_revision, run_command, upgrade
from tests.analysis.test_rollup_equivalence import T0, assert_same, record
from tests.conftest import read
from tracker.analysis.grid import Filters, Resolution
from tracker.analysis.history import price_history

# three providers at three cadences over three days, with failures and prices moving
HISTORY = [
    (("hourly", "half", "daily")[k % 3], 41 + 17 * (k % 4), k % 11 != 5,
     [("a", "on_demand", "H100-SXM", 2.0 + (k // 9) * 0.25), ("b", "spot", "H100-SXM", 1.5 + (k % 2) * 0.5),
      ("c", "on_demand", "A100-SXM-80GB", 1.0 + (k // 20) * 0.5)][: 1 + k % 3])
    for k in range(60)
]


def intervals(engine: Engine) -> list[tuple[Any, ...]]:
    """Every interval with its true ``last_seen`` and ``observations`` (a move through an older
    layout rewrites where they are kept, not what they are)."""
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT i.id, i.offer_id, i.provider_id, i.gpu_id, i.kind_id, i.currency_id, i.price_per_hour, "
            "i.price_per_gpu_hour, i.available, i.first_seen, i.last_seen, i.ends_at, "
            "i.observations FROM price_interval i ORDER BY i.id"))]


def stored(engine: Engine, step: int) -> list[tuple[Any, ...]]:
    """Every roll-up of ``step``, one row (gpu, bucket, provider, kind, min, median, max, offers) per
    bucket in that order: the day rows, or the hours of every run."""
    with engine.connect() as conn:
        if step == rollups.DAY:
            return [tuple(r) for r in conn.execute(text(
                "SELECT gpu_id, bucket, provider_id, kind_id, min, median, max, offers FROM rollup_day ORDER BY 1, 2, 3, 4"))]
        runs = conn.execute(text("SELECT s.gpu_id, s.provider_id, s.kind_id, r.start, r.hours, r.min, r.median, r.max, "
                                 "r.offers FROM rollup_hour r JOIN rollup_series s ON s.id = r.series_id")).all()
    return sorted((g, h * rollups.HOUR, p, k, mn, md, mx, n) for g, p, k, start, hours, mn, md, mx, n in runs
                  for h in range(start, start + hours))


def old_hours(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT gpu_id, bucket, provider_id, kind_id, min, median, max, offers FROM rollup_hour "
            "ORDER BY gpu_id, bucket, provider_id, kind_id"))]


def answers(engine: Engine) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    out = []
    start = pd.Timestamp(T0)
    for res, length in ((Resolution.hour, timedelta(days=3)), (Resolution.day, timedelta(days=4))):
        for f in (Filters(), Filters(kinds=None), Filters(providers=("half",))):
            h = read(engine, price_history,  f, since=start.to_pydatetime(),
                              until=(start + length - pd.Timedelta(seconds=1)).to_pydatetime(), resolution=res)
            out.append((h.market, h.by_provider))
    return out


def downgrade(engine: Engine, revision: str) -> None:
    run_command(engine, "downgrade", revision)


def test_hourly_rollups_survive_the_move_to_runs_and_back(engine: Engine) -> None:
    record(engine, HISTORY)
    before_iv, before_hours, before_days, before = intervals(engine), stored(engine, rollups.HOUR), \
        stored(engine, rollups.DAY), answers(engine)
    with engine.connect() as conn:
        runs = conn.execute(text("SELECT COUNT(*) FROM rollup_hour")).scalar_one()
    assert 0 < runs < len(before_hours)  # equal hours share a run

    downgrade(engine, "0005")  # a store as it was before runs: one row per hour
    assert current_revision(engine) == "0005"
    assert [(g, b, p, k, mn, md, mx, o) for g, b, p, k, mn, md, mx, o in old_hours(engine)] == before_hours

    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert intervals(engine) == before_iv
    assert stored(engine, rollups.HOUR) == before_hours
    assert stored(engine, rollups.DAY) == before_days
    for got, want in zip(answers(engine), before, strict=True):
        assert_same(got, want)


def test_a_store_without_rollups_gets_them_computed(engine: Engine) -> None:
    """Intervals moved from the layout before roll-ups existed: the migration computes them."""
    record(engine, HISTORY)
    want_hours, want_days, before = stored(engine, rollups.HOUR), stored(engine, rollups.DAY), answers(engine)
    downgrade(engine, "0005")
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM rollup_hour"))
        conn.execute(text("DELETE FROM rollup_day"))
    upgrade(engine)
    assert stored(engine, rollups.HOUR) == want_hours and stored(engine, rollups.DAY) == want_days
    for got, want in zip(answers(engine), before, strict=True):
        assert_same(got, want)
