"""Hourly roll-up runs: what the store's refreshes leave is a compact encoding of the hours
(SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Engine

from db import labels, rollups
from db.engine import session_scope
from db.migrate import upgrade
from tests.analysis.test_rollup_equivalence import offer, record
from tests.db.test_rollup_runs_migration import HISTORY, downgrade, stored
from tests.db.test_store_refresh import assert_newest_runs_apart
from tracker.pipeline import store as store_stage


def stored_runs(engine: Engine) -> list[tuple[Any, ...]]:
    """Every run, the earlier ones and each series' newest (two tables), in order."""
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT series_id, start, hours, min, median, max, offers FROM rollup_hour_run UNION ALL "
            "SELECT series_id, start, hours, min, median, max, offers FROM rollup_hour_open ORDER BY 1, 2"))]


def test_runs_are_maximal(engine: Engine) -> None:
    record(engine, HISTORY)
    runs = stored_runs(engine)
    assert runs
    for (sid, start, n, *figures), (sid2, start2, _, *figures2) in zip(runs, runs[1:]):
        assert 1 <= n <= rollups.MAX_RUN
        if sid == sid2:
            assert start + n <= start2  # no overlap
            # equal neighbours are merged unless the first is full
            assert not (start + n == start2 and figures == figures2 and n < rollups.MAX_RUN)


def test_a_rebuild_leaves_the_hours_the_refreshes_left(engine: Engine) -> None:
    record(engine, HISTORY)
    before = stored(engine, rollups.HOUR)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM rollup_hour_run"))
        conn.execute(text("DELETE FROM rollup_hour_open"))
        assert rollups.rebuild(conn) > 0
    assert stored(engine, rollups.HOUR) == before


def test_newest_runs_move_to_their_table_and_back(engine: Engine) -> None:
    """Migration 0009 moves each series' newest run into ``rollup_hour_open``; downgrading puts it
    back among the others: no run is lost or changed either way."""
    record(engine, HISTORY)
    runs = stored_runs(engine)
    with engine.connect() as conn:
        opened = conn.execute(text("SELECT COUNT(*) FROM rollup_hour_open")).scalar_one()
        series = conn.execute(text("SELECT COUNT(DISTINCT series_id) FROM rollup_hour_run")).scalar_one()
    assert 0 < opened and series > 0  # newest runs apart, earlier ones in the run table
    downgrade(engine, "0008")
    assert not inspect(engine).has_table("rollup_hour_open")
    with engine.connect() as conn:
        assert [tuple(r) for r in conn.execute(text(
            "SELECT series_id, start, hours, min, median, max, offers FROM rollup_hour_run ORDER BY 1, 2"))] == runs
    upgrade(engine)
    assert stored_runs(engine) == runs
    with engine.connect() as conn:
        assert_newest_runs_apart(conn)


def test_an_hour_that_lengthens_the_newest_runs_writes_only_their_table(engine: Engine) -> None:
    """A collection that changes no figure lengthens each series' newest run: the year of earlier
    runs is not written at all (the store cycle's cost stays the same as the table grows)."""
    listing = [("a", "on_demand", "H100-SXM", 2.0), ("b", "spot", "H100-SXM", 1.0), ("c", "on_demand", "A100-SXM-80GB", 1.5)]
    at = record(engine, [("hourly", 0, True, listing)] + [("hourly", 59, True, listing)] * 3)
    written: list[str] = []

    def remember(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            written.append(statement)

    event.listen(engine, "before_cursor_execute", remember)
    try:
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, "hourly")
            store_stage.store_observation(s, "hourly", [offer("hourly", *o) for o in listing], at + timedelta(hours=1),
                                          prov.last_attempt_at, interval_s=3600)
    finally:
        event.remove(engine, "before_cursor_execute", remember)
    assert any("rollup_hour_open" in sql for sql in written), written
    assert not [sql for sql in written if "rollup_hour_run" in sql], written
    with engine.connect() as conn:
        assert_newest_runs_apart(conn)
