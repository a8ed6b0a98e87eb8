"""Hourly roll-up runs: what the store's refreshes leave is a compact encoding of the same hours
``read`` returns one by one, and ``read_runs`` hands the runs over clipped to a range
(SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import rollups
from tests.analysis.test_rollup_equivalence import T0, record
from tests.db.test_rollup_runs_migration import HISTORY


def stored_runs(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT series_id, start, hours, min, median, max, offers FROM rollup_hour_run ORDER BY series_id, start"))]


def test_runs_are_maximal_and_expand_to_the_hours(engine: Engine) -> None:
    record(engine, HISTORY)
    runs = stored_runs(engine)
    assert runs
    for (sid, start, n, *figures), (sid2, start2, _, *figures2) in zip(runs, runs[1:]):
        assert 1 <= n <= rollups.MAX_RUN
        if sid == sid2:
            assert start + n <= start2  # no overlap
            # equal neighbours are merged unless the first is full
            assert not (start + n == start2 and figures == figures2 and n < rollups.MAX_RUN)
    t0 = int(T0.timestamp())
    with engine.connect() as conn:
        gpus = rollups.gpu_ids(conn)
        for lo, hi in ((t0, t0 + 3 * rollups.DAY), (t0 + 5 * 3600 + 17, t0 + 30 * 3600 - 1), (t0 + 7200, t0 + 7200)):
            hours = rollups.read(conn, rollups.HOUR, gpu_ids=gpus, lo=lo, hi=hi)
            got = rollups.read_runs(conn, gpu_ids=gpus, lo=lo, hi=hi)
            assert (got["first"] >= lo).all() and (got["last"] <= hi).all() and (got["first"] <= got["last"]).all()
            idx, hour = rollups.ranges(got["first"].to_numpy(dtype=np.int64) // 3600,
                                       got["last"].to_numpy(dtype=np.int64) // 3600)
            spread = got.iloc[idx].reset_index(drop=True).assign(bucket=hour * 3600)[rollups.COLUMNS]
            spread = spread.sort_values(["gpu_id", "bucket", "provider_id", "kind_id"], ignore_index=True)
            pd.testing.assert_frame_equal(spread, hours, check_dtype=False)
            assert len(got) <= len(hours)


def test_a_rebuild_leaves_the_hours_the_refreshes_left(engine: Engine) -> None:
    record(engine, HISTORY)
    with engine.connect() as conn:
        before = rollups.read(conn, rollups.HOUR, gpu_ids=rollups.gpu_ids(conn), lo=0, hi=2**31)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM rollup_hour_run"))
        assert rollups.rebuild(conn) > 0
    with engine.connect() as conn:
        after = rollups.read(conn, rollups.HOUR, gpu_ids=rollups.gpu_ids(conn), lo=0, hi=2**31)
    pd.testing.assert_frame_equal(after, before)
