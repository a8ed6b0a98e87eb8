"""Benchmark: a year of daily rental-index values for one GPU over a SYNTHETIC year
(``bench/synthetic_year.py``: 2,000 offers, 15 providers, hourly, 5% of prices changing per hour).

Keys written to ``bench/results.json``:

* ``index_year_ms`` -- ``rental_index(H100-SXM, 365 days, daily)`` read from the index roll-up
  (``index_day``), in-process, best of ``RUNS``;
* ``index_year_raw_ms`` -- the same answer recomputed from the raw intervals (``use_rollups=False``,
  what ``gpu-tracker index verify`` does), best of ``RUNS``, timed in turn with the roll-up read so a
  busy moment of the machine falls on both;
* ``index_year_speedup`` -- raw over roll-up; ``index_year_rows`` the values answered (both reads
  give the same values: checked here before timing).

With ``TRACKER_BENCH_DATABASE_URL`` set (PostgreSQL), the same year is copied into a scratch
database there (``synthetic_year.postgres_db``) and the figures are repeated under ``*_postgres``
keys; without it they are skipped, and the output says so.
"""

from __future__ import annotations

import math
import tempfile
from datetime import timedelta
from pathlib import Path

from _results import machine, record
from _timing import best_in_turn
from synthetic_year import END, postgres_db, postgres_url, postgres_year, sqlite_copy

from db.engine import engine_reader, make_engine
from db.migrate import init_db
from tracker.analysis.index import rental_index

GPU = "H100-SXM"
SINCE = END - timedelta(days=365)
#: Timed runs of each read (after one untimed warm-up run of each).
RUNS = 7


def measure(url: str) -> dict[str, float]:
    engine = make_engine(url)
    init_db(engine)  # a cached year from before the index roll-up is brought to it

    def rolled() -> list[dict[str, object]]:
        with engine_reader(engine) as reader:
            return rental_index(reader, [GPU], since=SINCE, until=END).rows

    def raw() -> list[dict[str, object]]:
        with engine_reader(engine) as reader:
            return rental_index(reader, [GPU], since=SINCE, until=END, use_rollups=False).rows

    a, b = rolled(), raw()  # warm-up, and the two answers must be one
    assert len(a) >= 365 and [(r["time"], r["providers"]) for r in a] == [(r["time"], r["providers"]) for r in b]
    assert all(math.isclose(x["index"], y["index"], rel_tol=1e-12) for x, y in zip(a, b, strict=True))
    ours, theirs = best_in_turn(RUNS, rolled, raw)
    engine.dispose()
    return {"ms": ours * 1e3, "raw_ms": theirs * 1e3, "rows": len(a)}


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-index-"))
    db_file = sqlite_copy(tmp / "year.db")
    print("SYNTHETIC data: 2,000 offers, 15 providers, hourly for 365 days, 5% of prices changing per hour")
    m = measure(f"sqlite:///{db_file}")
    print(f"index {GPU} 365d/1d from the roll-up: {m['ms']:.1f} ms ({m['rows']} values); from the raw intervals: "
          f"{m['raw_ms']:.1f} ms ({m['raw_ms'] / m['ms']:.0f}x; best of {RUNS} each, in turn)")
    figures: dict[str, object] = {
        "index_year_ms": round(m["ms"], 1),
        "index_year_raw_ms": round(m["raw_ms"], 1),
        "index_year_speedup": round(m["raw_ms"] / m["ms"], 1),
        "index_year_rows": m["rows"],
        "index_year_data": "synthetic",
    }
    pg = postgres_url("the index on PostgreSQL (index_year_*_postgres)")
    if pg:
        with postgres_db(pg, "index", template=postgres_year(pg)) as pg_url:
            p = measure(pg_url)
        print(f"PostgreSQL: from the roll-up {p['ms']:.1f} ms, from the raw intervals {p['raw_ms']:.1f} ms")
        figures |= {"index_year_ms_postgres": round(p["ms"], 1), "index_year_raw_ms_postgres": round(p["raw_ms"], 1),
                    "index_year_speedup_postgres": round(p["raw_ms"] / p["ms"], 1)}
    record(figures | machine("index_year"))


if __name__ == "__main__":
    main()
