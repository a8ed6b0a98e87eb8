"""Benchmark: how fast an archive imports (SYNTHETIC data).

* ``import_rows_per_s`` -- rows a second of ``gpu-tracker import`` of a generated ``prices``
  CSV export whose rows are distinct offers (the slow case: every row is a series of its own),
  into an empty SQLite store, measured in this process around ``import_files``.
* ``import_rows_per_cpu_s`` -- the same per second of this process's CPU time (what a shared
  machine's load does not move).
* ``import_rows`` -- how many rows were imported (``TRACKER_BENCH_IMPORT_ROWS``, default 20,000:
  a batch of ``tracker.analysis.imports.base.BATCH_ROWS``).

The target is 20,000 rows a second, the rate a scrape stores offers at.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._results import record  # noqa: E402
from db.engine import make_engine  # noqa: E402
from db.migrate import init_db  # noqa: E402
from tracker.analysis.imports import import_files  # noqa: E402

HEADER = "provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at,price_since\n"


def write_prices_csv(path: Path, rows: int) -> None:
    """``rows`` distinct offers of one provider, one observation each (synthetic values)."""
    at = datetime(2025, 6, 1, 12, tzinfo=UTC)
    with path.open("w") as fh:
        fh.write(HEADER)
        for i in range(rows):
            since = (at - timedelta(hours=i % 48)).isoformat()
            fh.write(f"runpod,bench-{i},on_demand,H100 SXM,{1 + i % 8},{2.0 + (i % 97) / 100:.2f},USD,"
                     f"{at.isoformat()},{since}\n")


def main() -> None:
    rows = int(os.environ.get("TRACKER_BENCH_IMPORT_ROWS", "20000"))
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "prices.csv"
        write_prices_csv(csv_path, rows)
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        init_db(engine)
        t0, c0 = time.perf_counter(), time.process_time()
        result = import_files(engine, [csv_path])
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        engine.dispose()
    assert not result.bad_rows and result.rows == rows, result.summary()
    figures = {"import_rows": rows, "import_rows_per_s": round(rows / elapsed, 1),
               "import_rows_per_cpu_s": round(rows / cpu, 1)}
    record(figures)
    print(figures)


if __name__ == "__main__":
    main()
