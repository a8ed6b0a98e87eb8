"""Retention: raw intervals older than ``retention.raw_days`` are pruned, roll-ups stay, and
history crossing the horizon (whole buckets) gives the answer it gave before; ``rollups
rebuild`` restores roll-ups from raw intervals and keeps those before the horizon."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import reads, rollups
from db.reader import in_transaction
from tests.analysis.test_rollup_equivalence import T0, assert_same, record
from tests.conftest import fixture_path, read, run_main
from tests.db.test_rollup_runs_migration import stored
from tracker.analysis.grid import Filters, Resolution
from tracker.analysis.history import price_history
from tracker.analysis.trends import trends
from tracker.pipeline.retention import prune_raw

# six days, a collection every three hours, alternating between two providers; prices move every two days
HISTORY = [
    ("hourly" if k % 2 else "daily", 179, True,
     [("a", "on_demand", "H100-SXM", 2.0 + (k // 16) * 0.25), ("b", "spot", "H100-SXM", 1.5)])
    for k in range(48)
]


def answers(engine: Engine) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    start = pd.Timestamp(T0)
    out = []
    for res, length in ((Resolution.day, timedelta(days=6)), (Resolution.hour, timedelta(days=5))):
        for f in (Filters(), Filters(kinds=None)):
            h = read(engine, price_history,  f, since=start.to_pydatetime(), until=(start + length - pd.Timedelta(seconds=1)).to_pydatetime(),
                              resolution=res)
            out.append((h.market, h.by_provider))
    return out


def test_pruned_history_answers_as_before_and_rebuild_keeps_old_buckets(engine: Engine, capsys: Any) -> None:
    end = record(engine, HISTORY)
    before, hour_rows, day_rows = answers(engine), stored(engine, rollups.HOUR), stored(engine, rollups.DAY)
    with engine.connect() as conn:
        raw_before = conn.execute(text("SELECT COUNT(*) FROM price_interval")).scalar_one()
    deleted, horizon = prune_raw(engine, raw_days=3, now=end)
    assert deleted > 0 and horizon < end
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM price_interval")).scalar_one() == raw_before - deleted
    for got, want in zip(answers(engine), before, strict=True):
        assert_same(got, want)
    assert [r["all_time_low"] for r in read(engine, trends,  Filters(), as_of=end)] == [2.0]
    url = engine.url.render_as_string(hide_password=False)
    code, out, _ = run_main(capsys, "--db", url, "rollups", "rebuild")
    assert code == 0 and "rebuilt" in out
    assert stored(engine, rollups.HOUR) == hour_rows and stored(engine, rollups.DAY) == day_rows
    code, out, _ = run_main(capsys, "--db", url, "rollups", "prune", "--raw-days", "2")
    assert code == 0 and "deleted" in out
    for got, want in zip(answers(engine), before, strict=True):
        assert_same(got, want)


def test_an_archive_from_before_the_horizon_is_rolled_up_where_nothing_was_pruned(
        engine: Engine, db_url: str, tmp_path: Any, capsys: Any) -> None:
    """A store that has pruned (its horizon a year back, as every collector's store) imports an
    archive older than that: its history answers as on a store that never pruned, instead of
    keeping raw rows no answer reads and the next prune deletes."""
    archives = [str(p) for p in sorted(fixture_path("history-archives").glob("tugot17_*.jsonl"))]
    with engine.begin() as conn:
        rollups.prune(conn, int(pd.Timestamp("2025-12-03", tz="UTC").timestamp()))
        assert reads.raw_horizon(in_transaction(conn)) > int(pd.Timestamp("2025-10-26", tz="UTC").timestamp())
    never_pruned = f"sqlite:///{tmp_path / 'never-pruned.db'}"
    history = ["history", "--gpu", "H100", "--since", "2025-10-19", "--until", "2025-10-26", "--every", "1h",
               "--format", "json"]
    answers = []
    for url in (db_url, never_pruned):
        code, _, err = run_main(capsys, "--db", url, "import", *archives)
        assert code == 0, err
        code, out, err = run_main(capsys, "--db", url, *history)
        assert code == 0, err
        answers.append(json.loads(out))
    assert answers[0] == answers[1]
    assert len({r["min"] for r in answers[0] if r["min"] is not None}) > 1, "the archive's prices move"
