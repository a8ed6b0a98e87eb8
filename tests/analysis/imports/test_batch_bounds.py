"""Where an import's batches end does not change what it stores: the rows of one snapshot that
fall into two batches are one observation of it, and an export of offers the store already
keeps, imported again later, stores what importing everything once stores. Files are generated
by the test (SYNTHETIC prices, labelled so in their SKUs), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from tests.analysis.imports.test_import_order import clear, history, intervals
from tracker.analysis.imports import base, import_files

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
