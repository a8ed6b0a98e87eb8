"""A price held for confirmation keeps what was observed with it: when a later import accepts
it (an older snapshot makes it no jump), its interval has the availability the source listed
and the start the source stated (joining the observations after it of that start), as when the
snapshots are imported in the other order or at once, on SQLite and PostgreSQL.

The offers are akash's (available) and voltagepark's (some available, some not), from a replay of
their bundled recordings (akash's real, voltagepark's a reference of our own values), exported as
``prices`` CSV; the prices and times around them are handmade:
each offer is set a day before its replayed observation, jumps x6 an hour later and is seen again at that
price twice."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from itertools import permutations
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import reads
from db.engine import make_engine
from db.migrate import init_db
from db.reader import in_transaction
from tests.pipeline.imports.test_import_order import clear, held, intervals
from tracker.cli.common import Format, emit
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.pipeline.imports import import_files

PROVIDERS = ["akash", "voltagepark"]  # bundled recordings that list availability
JUMP = 6.0  # more than validate's x5: held until the next snapshot confirms it


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    """The current prices of ``PROVIDERS`` after a replay of their real recordings."""
    eng = make_engine(f"sqlite:///{tmp_path_factory.mktemp('source') / 'source.db'}")
    init_db(eng)
    results = collect(eng, Settings(), PROVIDERS, replay=True)
    assert {r.status for r in results} == {"ok"}, [r.error_message for r in results]
    with Session(eng) as s:
        rows = reads.latest_prices(in_transaction(s.connection()))
    eng.dispose()
    yield rows


def write(rows: list[dict[str, Any]], path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    capsys.readouterr()
    emit(rows, Format.csv)
    path.write_text(capsys.readouterr().out)
    return path


def at(row: dict[str, Any], price: float, since: timedelta, seen: timedelta) -> dict[str, Any]:
    """``row`` at ``price`` per hour (per GPU-hour likewise), listed from ``since`` to ``seen`` after its real time
    (handmade), all a day earlier: a reference replay has no date and is observed now, and an import refuses
    observations from the future."""
    t = row["observed_at"] - timedelta(days=1)
    return {**row, "price_per_hour": round(row["price_per_hour"] * price, 6),
            "price_per_gpu_hour": round(row["price_per_gpu_hour"] * price, 6),
            "price_since": t + since, "observed_at": t + seen}


def test_a_held_price_accepted_later_keeps_its_availability(engine: Engine, listed: list[dict[str, Any]],
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in listed if r["available"] is not None]
    assert {r["available"] for r in rows} == {True, False}
    hour = timedelta(hours=1)
    # 00:00 the real price; 02:00-03:00 x6 (held at 02:00, confirmed at 03:00); then 01:00 x6,
    # imported later: now 01:00 is the held jump and 02:00 its confirmation
    first = write([at(r, 1, 0 * hour, 0 * hour) for r in rows] + [at(r, JUMP, 2 * hour, 3 * hour) for r in rows],
                  tmp_path / "handmade-first.csv", capsys)
    later = write([at(r, JUMP, hour, hour) for r in rows], tmp_path / "handmade-later.csv", capsys)
    available = {(r["provider"], r["sku"], r["region"]): r["available"] for r in rows}

    for order in ([later, first], [first, later]):  # the second accepts a held price on a later import
        clear(engine)
        for path in order:
            assert not import_files(engine, [path]).bad_rows
        stored = intervals(engine)
        assert {r[:3] for r in stored} == set(available), [p.name for p in order]
        assert [r for r in stored if r[11] != available[r[:3]]] == [], [p.name for p in order]


@pytest.mark.parametrize(("stated", "runs"), [
    ([(2, 3)], ((0, 1, False), (3600, 2, True))),  # one row states 02:00 and is seen until 03:00
    ([(2, 2), (3, 3)], ((0, 1, False), (0, 1, False), (0, 1, True))),  # 02:00 and 03:00 state apart
])
def test_a_held_stated_start_joins_its_interval_whatever_the_import_order(
        engine: Engine, listed: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        stated: list[tuple[int, int]], runs: tuple[tuple[int, int, bool], ...]) -> None:
    """The real price at 00:00, the x6 rows (stated from 02:00), and an x6 row at 01:00: in time
    order 01:00 is the held jump and 02:00 confirms it. Imported without 01:00, 02:00 is the held
    one (a stored observation held on a second look when 00:00 comes later) and 03:00 confirms
    it; 01:00 imported last then accepts 02:00 again. Observations of one stated start join
    (02:00 to 03:00), of two stay apart, in every order, as one import of all the files stores
    them (handmade prices)."""
    rows = [r for r in listed if r["available"] is not None]
    hour = timedelta(hours=1)
    real = write([at(r, 1, 0 * hour, 0 * hour) for r in rows], tmp_path / "handmade-real.csv", capsys)
    jump = write([at(r, JUMP, since * hour, seen * hour) for r in rows for since, seen in stated],
                 tmp_path / "handmade-jump.csv", capsys)
    later = write([at(r, JUMP, hour, hour) for r in rows], tmp_path / "handmade-later.csv", capsys)

    import_files(engine, [real, jump])  # 02:00 held: the interval from 03:00 keeps the start its row states
    alone = intervals(engine)
    start = {r[:5]: r[12] for r in alone if not r[16]}
    assert {(r[12] - start[r[:5]], None if r[17] is None else r[17] - start[r[:5]]) for r in alone if r[16]} == {
        (3 * 3600, 2 * 3600 if len(stated) == 1 else None)}
    clear(engine)
    import_files(engine, [real, jump, later])
    once, held_once = sorted(intervals(engine), key=repr), held(engine)
    for order in [*permutations([real, jump, later]), (jump, real, later, jump, real)]:
        clear(engine)
        for path in order:
            assert not import_files(engine, [path]).bad_rows
        assert sorted(intervals(engine), key=repr) == once, [p.name for p in order]
        assert held(engine) == held_once, [p.name for p in order]
    by_offer: dict[tuple[object, ...], list[tuple[object, ...]]] = {}
    for r in sorted(once, key=lambda r: r[12]):
        by_offer.setdefault(r[:5], []).append(r)
    assert len(by_offer) == len(rows)
    assert {tuple((r[13] - r[12], r[15], r[16]) for r in runs) for runs in by_offer.values()} == {runs}
    # 01:00 held, 02:00 confirms it
    assert [(p, v) for p, _s, _t, v in held_once] == sorted(
        (r["provider"], round(r["price_per_hour"] * JUMP, 6)) for r in rows)
