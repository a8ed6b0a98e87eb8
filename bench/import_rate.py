"""Benchmark: how fast an archive imports (SYNTHETIC data).

* ``import_rows_per_s`` -- rows a second of ``gpu-tracker import`` of a generated ``prices``
  CSV export whose rows are distinct offers (the slow case: every row is a series of its own),
  into an empty SQLite store, measured in this process around ``import_files``.
* ``import_rows_per_cpu_s`` -- the same per second of this process's CPU time (what a shared
  machine's load does not move).
* ``import_rows`` -- how many rows were imported (``TRACKER_BENCH_IMPORT_ROWS``, default 20,000:
  a batch of ``tracker.pipeline.imports.base.BATCH_ROWS``).

With ``TRACKER_BENCH_DATABASE_URL`` (PostgreSQL) the same import runs there too, into an empty
database of the bench's own: ``import_rows_per_s_postgres``, ``import_rows_per_cpu_s_postgres``
(this process's CPU only: the server's is not counted).

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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_year import postgres_db, postgres_url  # noqa: E402

from bench._results import machine, record  # noqa: E402
from db.engine import make_engine  # noqa: E402
from db.migrate import init_db  # noqa: E402
from tracker.pipeline.imports import import_files  # noqa: E402

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


def rates(url: str, csv_path: Path, rows: int, suffix: str = "") -> dict[str, float]:
    """Import ``csv_path`` into the empty store at ``url``: rows a second of wall and of this process's CPU."""
    engine = make_engine(url)
    init_db(engine)
    t0, c0 = time.perf_counter(), time.process_time()
    result = import_files(engine, [csv_path])
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    engine.dispose()
    assert not result.bad_rows and result.rows == rows, result.summary()
    return {f"import_rows_per_s{suffix}": round(rows / elapsed, 1), f"import_rows_per_cpu_s{suffix}": round(rows / cpu, 1)}


def main() -> None:
    rows = int(os.environ.get("TRACKER_BENCH_IMPORT_ROWS", "20000"))
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "prices.csv"
        write_prices_csv(csv_path, rows)
        figures: dict[str, float] = {"import_rows": rows, **rates(f"sqlite:///{Path(tmp) / 'bench.db'}", csv_path, rows)}
        pg = postgres_url("the import on PostgreSQL (import_rows_per_s_postgres)")
        if pg:
            with postgres_db(pg, "import_rate") as url:
                figures |= rates(url, csv_path, rows, "_postgres")
    print(f"SYNTHETIC prices export of {rows:,} distinct offers (target 20,000 rows/s): {figures}")
    record(figures | machine("import"))


if __name__ == "__main__":
    main()
