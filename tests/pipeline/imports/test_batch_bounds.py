"""Where an import's batches end does not change what it stores: the rows of one snapshot that
fall into two batches are one observation of it, and an export of offers the store already
keeps, imported again later, stores what importing everything once stores. Files are generated
by the test (SYNTHETIC prices, labelled so in their SKUs), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from tests.pipeline.imports.test_import_order import clear, history, intervals
from tracker.pipeline.imports import base, import_files

DAY0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
EWYLUDA_HEADER = ("date,collected_at,source,provider,segment,pricing,gpu_model,sku,region,geo,gpu_count,usd_per_hour,"
                  "usd_per_gpu_hour,sample_size\n")


def ewyluda_days(path: Path, days: int) -> int:
    """Daily collections of two sources whose rows interleave (vast's H100, lambda's H100, then
    vast's A100): one source's snapshot is not contiguous in the file. Returns the rows."""
    rows = []
    for d in range(days):
        at = (DAY0 + timedelta(days=d)).isoformat()
        for source, model, price in (("vast", "H100", 2.0), ("lambdalabs", "H100", 2.9), ("vast", "A100", 1.1)):
            rows.append(f"{at[:10]},{at},{source},{source},cloud,on_demand,{model},synthetic-{model.lower()},us,US,1,"
                        f"{price + d % 2 * 0.01:.2f},{price:.2f},1\n")
    path.write_text(EWYLUDA_HEADER + "".join(rows))
    return len(rows)


COUNTS = ("rows", "observations", "stored", "already_stored", "snapshots", "new_offers", "prices_changed", "bad_rows")


def test_a_snapshot_split_across_batches_is_one_observation(engine: Engine, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One row a batch: every day's vast snapshot is cut in two by lambda's row between its rows;
    the second part joins the first (stored, not counted as already stored), as in one batch."""
    path = tmp_path / "ewyluda.csv"
    rows = ewyluda_days(path, 4)
    whole = import_files(engine, [path], fmt="ewyluda").summary()
    once, read_back = intervals(engine), history(engine, "H100-SXM", DAY0 - timedelta(days=1), DAY0 + timedelta(days=5))
    assert whole["stored"] == rows and whole["already_stored"] == 0 and whole["snapshots"] == 8
    clear(engine)
    monkeypatch.setattr(base, "BATCH_ROWS", 1)
    split = import_files(engine, [path], fmt="ewyluda").summary()
    assert {k: split[k] for k in COUNTS} == {k: whole[k] for k in COUNTS}
    assert intervals(engine) == once
    for a, b in zip(history(engine, "H100-SXM", DAY0 - timedelta(days=1), DAY0 + timedelta(days=5)), read_back,
                    strict=True):
        assert a.equals(b)
    # and a second import of the file, in any batch size, finds every row stored
    again = import_files(engine, [path], fmt="ewyluda").summary()
    assert again["already_stored"] == rows and again["stored"] == 0 and intervals(engine) == once


PRICES_HEADER = "provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at,price_since\n"


def prices_export(path: Path, at: datetime, moment: int, offers: int = 30) -> Path:
    """What ``prices --format csv`` would say at ``at``, the ``moment``-th of three: a third of the
    offers change price at the second moment, a third keep theirs, a third jump tenfold then (held
    until the third moment confirms it), and every fifth offer is not listed at the second."""
    rows = []
    for i in range(offers):
        price, since = 2.0 + i / 10, DAY0 - timedelta(hours=i)
        if moment >= 1 and i % 3 == 0:
            price, since = price + 0.5, DAY0 + timedelta(hours=1)
        if moment >= 1 and i % 3 == 2:
            price, since = price * 10, DAY0 + timedelta(hours=1)
        if moment == 1 and i % 5 == 4:
            continue
        rows.append(f"runpod,synthetic-{i},on_demand,H100 SXM,1,{price:.2f},USD,{at.isoformat()},{since.isoformat()}\n")
    path.write_text(PRICES_HEADER + "".join(rows))
    return path


def test_an_export_of_stored_offers_imported_later_stores_what_one_import_does(engine: Engine, tmp_path: Path) -> None:
    """Three exports of the same offers an hour apart: imported in one command, and one command
    each (the second and third re-cut offers the store keeps, a batch at a time), the intervals,
    held prices and history are the same."""
    exports = [prices_export(tmp_path / f"{k}.csv", DAY0 + timedelta(hours=k), k) for k in range(3)]
    until = DAY0 + timedelta(hours=4)
    together = import_files(engine, exports)
    once, read_back = intervals(engine), history(engine, "H100-SXM", DAY0 - timedelta(days=2), until)
    assert together.quarantined > 0 and together.prices_changed > 0  # the held jumps and the changes took part
    held_once = held(engine)
    clear(engine)
    for k, path in enumerate(exports):
        result = import_files(engine, [path])
        if k:
            assert result.stored > 0 and result.new_offers == 0  # re-cut offers the store keeps
    assert intervals(engine) == once
    assert held(engine) == held_once
    for a, b in zip(history(engine, "H100-SXM", DAY0 - timedelta(days=2), until), read_back, strict=True):
        assert a.equals(b)


def held(engine: Engine) -> list[tuple[object, ...]]:
    """The prices held for confirmation: offer, price and time."""
    with engine.connect() as conn:
        return sorted(tuple(r) for r in conn.execute(text(
            "SELECT sku, price_per_hour, observed_at FROM quarantine")).all())
