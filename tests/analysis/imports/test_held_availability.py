"""A price held for confirmation keeps what was observed with it: when a later import accepts
it (an older snapshot makes it no jump), its interval has the availability the source listed,
as when the snapshots are imported in the other order, on SQLite and PostgreSQL.

The offers are akash's (available) and voltagepark's (not available), from a replay of their
real recordings, exported as ``prices`` CSV; the prices and times around them are handmade:
each offer jumps x6 an hour after its real observation and is seen again at that price twice."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import queries
from db.engine import make_engine
from db.migrate import init_db
from tests.analysis.imports.test_import_order import clear, intervals
from tracker.analysis.imports import import_files
from tracker.cli.common import Format, emit
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect

PROVIDERS = ["akash", "voltagepark"]  # real recordings that list availability
JUMP = 6.0  # more than validate's x5: held until the next snapshot confirms it


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    """The current prices of ``PROVIDERS`` after a replay of their real recordings."""
    eng = make_engine(f"sqlite:///{tmp_path_factory.mktemp('source') / 'source.db'}")
    init_db(eng)
    results = collect(eng, Settings(), PROVIDERS, replay=True)
    assert {r.status for r in results} == {"ok"}, [r.error_message for r in results]
    with Session(eng) as s:
        rows = queries.latest_prices(s)
    eng.dispose()
    yield rows


def write(rows: list[dict[str, Any]], path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    capsys.readouterr()
    emit(rows, Format.csv)
    path.write_text(capsys.readouterr().out)
    return path


def at(row: dict[str, Any], price: float, since: timedelta, seen: timedelta) -> dict[str, Any]:
    """``row`` at ``price`` per hour (per GPU-hour likewise), listed from ``since`` to ``seen`` after its real time (handmade)."""
    t = row["observed_at"]
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
