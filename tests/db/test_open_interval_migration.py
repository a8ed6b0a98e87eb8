"""Migration 0007 moves an open interval's last_seen and observations between its row and
``offer_state``, both ways, without changing an interval (read through the state as revisions
0007-0013 kept them), a roll-up or a history answer (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import rollups
from db.migrate import current_revision, head_revision, upgrade
from tests.analysis.test_rollup_equivalence import assert_same, record
from tests.db.test_rollup_runs_migration import HISTORY, answers, downgrade, stored

COLUMNS = ("i.id, i.offer_id, i.provider_id, i.gpu_id, i.kind_id, i.currency_id, i.price_per_hour, "
           "i.price_per_gpu_hour, i.available, i.first_seen")


#: The sentinel ``last_seen`` of an open interval's row in revisions 0007-0013.
OPEN = 253_402_300_799
#: Revisions 0007-0013: an open row's true value of ``{column}`` is its offer's state's.
_TRUE = ("(CASE WHEN i.last_seen = " + str(OPEN) + " THEN (SELECT s.{column} FROM offer_state s "
         "WHERE s.offer_id = i.offer_id AND s.interval_id = i.id) ELSE i.{column} END)")


def true_intervals(engine: Engine) -> list[tuple[Any, ...]]:
    """Every interval as readers see it: its true ``last_seen`` and ``observations`` (through
    ``offer_state`` in revisions 0007-0013, plainly in the view since)."""
    last, seen = "i.last_seen", "i.observations"
    if current_revision(engine) != head_revision():
        last, seen = _TRUE.format(column="last_seen"), _TRUE.format(column="observations")
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            f"SELECT {COLUMNS}, {last}, i.ends_at, {seen} FROM price_interval i ORDER BY i.id"))]


def raw_intervals(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            f"SELECT {COLUMNS}, i.last_seen, i.ends_at, i.observations FROM price_interval i ORDER BY i.id"))]


def current(engine: Engine) -> list[tuple[Any, ...]]:
    table, interval = ("price_interval_open", "id") if current_revision(engine) == head_revision() else ("offer_state", "interval_id")
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            f"SELECT offer_id, {interval}, provider_id, last_seen FROM {table} ORDER BY offer_id"))]


def test_open_intervals_move_to_the_state_and_back(engine: Engine) -> None:
    record(engine, HISTORY)
    before_iv, before_state = true_intervals(engine), current(engine)
    before_hours, before_days, before = stored(engine, rollups.HOUR), stored(engine, rollups.DAY), answers(engine)
    assert any(r[-2] is None for r in before_iv) and any(r[-2] is not None for r in before_iv)  # open and closed
    assert any(r[-1] > 1 for r in before_iv if r[-2] is None)  # open intervals extended since they opened

    downgrade(engine, "0006")  # the layout before: every interval's row holds its true values
    assert current_revision(engine) == "0006"
    assert raw_intervals(engine) == before_iv
    assert all(r[-3] != OPEN for r in raw_intervals(engine))

    upgrade(engine, "0013")  # the layout of 0007-0013: open rows hold the sentinel, their state the truth
    assert true_intervals(engine) == before_iv
    assert current(engine) == before_state
    raw = {r[0]: r for r in raw_intervals(engine)}
    open_ids = {i for _o, i, _p, _l in before_state if raw[i][-2] is None}
    assert open_ids and all(raw[i][-3] == OPEN for i in open_ids)
    assert all(r[-3] != OPEN for i, r in raw.items() if i not in open_ids)

    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert true_intervals(engine) == before_iv
    assert current(engine) == before_state
    assert stored(engine, rollups.HOUR) == before_hours
    assert stored(engine, rollups.DAY) == before_days
    for got, want in zip(answers(engine), before, strict=True):
        assert_same(got, want)
    with engine.begin() as conn:  # and the roll-ups recomputed from the moved intervals are the same
        rollups.rebuild(conn)
    assert stored(engine, rollups.HOUR) == before_hours
    assert stored(engine, rollups.DAY) == before_days
