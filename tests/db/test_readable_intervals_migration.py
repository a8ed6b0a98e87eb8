"""Migration 0014 moves a store holding data between the layout with a sentinel (revisions
0007-0013: an open interval's row held a far-future ``last_seen``, ``offer_state`` the true one,
``interval_stated_start`` and the ``import of`` message beside) and the readable one (every
interval's true values in ``price_interval_past``/``price_interval_open``, read through the
view ``price_interval``), both ways, on SQLite and PostgreSQL.

The store is filled through the normal paths (the collector replaying every bundled recording,
the store stage with failures and delistings, an archive import) and asked every golden
question (``tests.golden``) and for every interval and every run's provenance; the previous
layout is checked to be what revisions 0007-0013 wrote, and after the move back every answer is
the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from db.migrate import current_revision, head_revision, upgrade
from tests.db.test_rollup_runs_migration import downgrade
from tests.golden.test_golden import fill_recordings, fill_synthetic, plain, questions
from tests.pipeline.imports.test_archives import H100_FILE, H100_GAP
from tracker.pipeline.imports import import_files

#: The sentinel of revisions 0007-0013 and the revision before 0014.
OPEN = 253_402_300_799
PREVIOUS = "0013"
COLUMNS = ("id, offer_id, provider_id, gpu_id, kind_id, currency_id, price_per_hour, price_per_gpu_hour, available, "
           "first_seen, last_seen, ends_at, observations")


def intervals(engine: Engine) -> list[tuple[Any, ...]]:
    """Every interval, every column, with its stated start, as a reader of either layout sees it."""
    with engine.connect() as conn:
        if current_revision(engine) == head_revision():
            sql = f"SELECT {COLUMNS}, stated_start FROM price_interval ORDER BY id"
        else:  # the previous layout: an open row's true values are its offer's state's
            true = ("CASE WHEN i.last_seen = {open} THEN s.{c} ELSE i.{c} END")
            sql = (f"SELECT i.id, i.offer_id, i.provider_id, i.gpu_id, i.kind_id, i.currency_id, i.price_per_hour, "
                   f"i.price_per_gpu_hour, i.available, i.first_seen, {true.format(open=OPEN, c='last_seen')}, "
                   f"i.ends_at, {true.format(open=OPEN, c='observations')}, ss.stated_start FROM price_interval i "
                   "LEFT JOIN offer_state s ON s.interval_id = i.id "
                   "LEFT JOIN interval_stated_start ss ON ss.interval_id = i.id ORDER BY i.id")
        return [tuple(r) for r in conn.execute(text(sql))]


def newest(engine: Engine) -> list[tuple[Any, ...]]:
    """Each offer's newest interval: (offer, interval, provider, last seen, observations, GPUs free)."""
    table, interval = ("price_interval_open", "id") if current_revision(engine) == head_revision() \
        else ("offer_state", "interval_id")
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            f"SELECT offer_id, {interval}, provider_id, last_seen, observations, available_count FROM {table} "
            "ORDER BY offer_id"))]


def provenance(engine: Engine) -> list[tuple[Any, ...]]:
    """Each run's id and where its observations came from, in either layout."""
    source = ("source" if current_revision(engine) == head_revision() else
              "CASE WHEN replay THEN 'replay' WHEN error_message LIKE 'import of %' THEN 'import' ELSE 'live' END")
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT id, {source} FROM scrape_run ORDER BY id"))]


def answers(engine: Engine, store: str) -> dict[str, Any]:
    return {name: plain(ask(engine)) for name, ask in questions(store).items()}


def _fill(engine: Engine, store: str, tmp: Path) -> None:
    if store == "recordings":
        fill_recordings(engine, tmp)
    else:
        fill_synthetic(engine)
        import_files(engine, [H100_FILE], max_gap=H100_GAP)  # an archive import beside the collections


def _check_move(engine: Engine, store: str, tmp: Path) -> None:
    _fill(engine, store, tmp)
    before_iv, before_newest, before_runs = intervals(engine), newest(engine), provenance(engine)
    before = answers(engine, store)
    assert any(r[11] is None for r in before_iv)
    if store == "synthetic":
        assert any(r[11] is not None for r in before_iv)  # open and closed
        assert any(r[12] > 1 for r in before_iv if r[11] is None)  # open intervals extended since they opened
    assert {s for _i, s in before_runs} >= ({"replay"} if store == "recordings" else {"import"})

    downgrade(engine, PREVIOUS)
    assert current_revision(engine) == PREVIOUS
    with engine.connect() as conn:
        raw = {r[0]: r for r in conn.execute(text(f"SELECT {COLUMNS} FROM price_interval"))}
    open_ids = {i for _o, i, _p, _l, _n, _c in before_newest if raw[i][11] is None}
    assert open_ids and all(raw[i][10] == OPEN for i in open_ids)  # as revisions 0007-0013 wrote them
    assert all(r[10] != OPEN for i, r in raw.items() if i not in open_ids)
    assert intervals(engine) == before_iv and newest(engine) == before_newest and provenance(engine) == before_runs

    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert intervals(engine) == before_iv
    assert newest(engine) == before_newest
    assert provenance(engine) == before_runs
    with engine.connect() as conn:  # no sentinel left anywhere a reader looks
        assert conn.execute(text(f"SELECT COUNT(*) FROM price_interval WHERE last_seen >= {OPEN}")).scalar_one() == 0
    after = answers(engine, store)
    assert sorted(after) == sorted(before)
    for name in before:
        assert after[name] == before[name], f"{store}: {name} changed in the move"


def test_a_collected_store_moves_both_ways(engine: Engine, tmp_path: Path) -> None:
    _check_move(engine, "recordings", tmp_path)


def test_a_store_with_failures_delistings_and_an_import_moves_both_ways(engine: Engine, tmp_path: Path) -> None:
    _check_move(engine, "synthetic", tmp_path)
