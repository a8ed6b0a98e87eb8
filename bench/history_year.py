"""Benchmark: history and trends over a SYNTHETIC year (``bench/synthetic_year.py``), store size.

Keys written to ``bench/results.json`` (each printed with its same-run baseline):

* ``history_year_ms`` -- ``history(H100, since 365d, every 1d)`` in-process, best of ``RUNS``;
* ``history_year_vs_duckdb_ratio`` -- that time over DuckDB answering the same question from
  the same intervals (loaded into an in-memory DuckDB table beforehand, not timed): each
  interval spread over the days it was observed, lowest price per provider and day, then min /
  p25 / median across providers. Both are timed best of ``RUNS``, one run of each in turn, so
  a busy moment of the machine falls on both sides instead of on one (``duckdb_history_year_ms``);
* ``history_hourly_year_ms`` -- ``history(H100-SXM, since 365d, every 1h)`` in-process, best of ``RUNS``;
* ``trends_year_ms`` -- ``trends`` of every GPU, best of ``RUNS``;
* ``history_cli_s`` -- ``gpu-tracker history --gpu H100 --since 365d --every 1d`` as a whole
  process, best of 3 (baseline: ``python -c pass``); ``history_hourly_cli_s`` the same with
  ``--every 1h``;
* ``storage_bytes_per_interval`` -- the SQLite file of the year after ``VACUUM``, roll-ups and
  indexes included, over its intervals (``storage_mb_year`` the file itself; baseline: the same
  intervals in a plain sqlite3 table with no index, the least any layout can take).

With ``TRACKER_BENCH_DATABASE_URL`` set (PostgreSQL), the same year (built once into a database
of the bench's own and kept, ``synthetic_year.postgres_year``) is copied into a scratch database
and the history/trends/CLI figures are repeated under ``*_postgres`` keys (DuckDB timed again, in
turn with PostgreSQL's runs: ``duckdb_history_year_ms_postgres``); ``storage_bytes_per_interval_postgres``
and ``storage_mb_year_postgres`` are the store's tables with their indexes after a plain ``VACUUM``:
PostgreSQL's own row overhead (a 23-byte header, a 4-byte line pointer and 8-byte alignment per
row) makes them the larger ones. Without it those keys are skipped, and the output says so.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import duckdb
import pandas as pd
from _results import machine, record
from _timing import best_in_turn
from sqlalchemy import text
from synthetic_year import END, postgres_db, postgres_url, postgres_year, sqlite_copy

from db.engine import engine_reader, make_engine
from tracker.analysis.grid import Filters
from tracker.analysis.history import history
from tracker.analysis.trends import trends
from tracker.catalog.specs import gpu_ids_matching

SINCE = END - timedelta(days=365)
#: Timed runs of each in-process figure (after one untimed warm-up run).
RUNS = 7


def best_of(n: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def h100() -> Filters:
    return Filters.of(gpus=gpu_ids_matching("H100"))


DUCKDB_SQL = """
WITH per AS (
  SELECT d AS day, gpu, provider, MIN(price) AS value
  FROM iv, range(first_day, last_day + 1) AS t(d)
  WHERE d BETWEEN ? AND ?
  GROUP BY ALL
)
SELECT day, gpu, MIN(value), quantile_cont(value, 0.25), median(value), COUNT(*)
FROM per GROUP BY day, gpu ORDER BY gpu, day
"""


def duckdb_history(db_file: Path) -> tuple[Callable[[], int], int]:
    """DuckDB's daily H100 history over the same intervals (loaded beforehand, not timed): the
    query as a callable returning its row count, and that count."""
    src = sqlite3.connect(db_file)
    df = pd.read_sql_query(
        "SELECT lg.name AS gpu, lp.name AS provider, i.price_per_gpu_hour AS price, i.first_seen, "
        "i.last_seen AS last_seen "
        "FROM price_interval i JOIN label lg ON lg.id = i.gpu_id JOIN label lp ON lp.id = i.provider_id "
        "JOIN label lk ON lk.id = i.kind_id WHERE lg.name LIKE 'H100%' AND lk.name IN ('on_demand', 'community') "
        f"AND i.last_seen >= {int(SINCE.timestamp())}", src)
    src.close()
    df["first_day"] = df["first_seen"] // 86_400
    df["last_day"] = df["last_seen"] // 86_400
    con = duckdb.connect()
    con.register("iv_df", df)
    con.execute("CREATE TABLE iv AS SELECT * FROM iv_df")
    lo, hi = int(SINCE.timestamp()) // 86_400, int(END.timestamp()) // 86_400

    def query() -> int:
        return len(con.execute(DUCKDB_SQL, [lo, hi]).fetchall())

    return query, query()


def in_process(url: str, duck: Callable[[], int]) -> dict[str, float]:
    """Best-of-``RUNS`` seconds: our history and DuckDB's in turn, then trends."""
    engine = make_engine(url)

    def ours() -> object:
        with engine_reader(engine) as reader:
            return history(reader, h100(), since=SINCE, until=END, resolution="day")

    h = ours()
    assert len(h.market_rows) >= 365, len(h.market_rows)
    hist_s, duck_s = best_in_turn(RUNS, ours, duck)

    def hourly() -> object:
        with engine_reader(engine) as reader:
            return history(reader, Filters.of(gpus=["H100-SXM"]), since=SINCE, until=END, resolution="hour")

    assert len(hourly().market_rows) >= 365 * 24  # type: ignore[attr-defined]
    hourly_s = best_of(RUNS, hourly)
    with engine_reader(engine) as reader:
        df = trends(reader, Filters())
    assert len(df) >= 10, df
    def trend() -> object:
        with engine_reader(engine) as reader:
            return trends(reader, Filters())

    trends_s = best_of(RUNS, trend)
    engine.dispose()
    return {"history": hist_s, "duckdb": duck_s, "trends": trends_s, "hourly": hourly_s}


def cli_seconds(url: str, every: str = "1d") -> tuple[float, float]:
    cmd = [sys.executable, "-m", "tracker", "--db", url, "history", "--gpu", "H100", "--since", "365d", "--every", every,
           "--until", END.isoformat()]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    cli = best_of(3, lambda: subprocess.run(cmd, capture_output=True, check=True))
    base = best_of(3, lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
    return cli, base


def postgres_mb(url: str) -> tuple[float, str]:
    """MB of the store's tables with their indexes and TOAST in PostgreSQL after a plain
    ``VACUUM`` (what a running store keeps), and the largest three by name."""
    engine = make_engine(url)
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM"))
        sizes = conn.execute(text(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname = current_schema() ORDER BY 2 DESC")).all()
    engine.dispose()
    top = ", ".join(f"{name} {size / 1e6:.1f}" for name, size in sizes[:3])
    return sum(size for _, size in sizes) / 1e6, top


def interval_count(url: str) -> int:
    engine = make_engine(url)
    with engine.connect() as conn:
        n = int(conn.execute(text("SELECT COUNT(*) FROM price_interval")).scalar_one())
    engine.dispose()
    return n


def plain_table_mb(db_file: Path, tmp: Path) -> float:
    """The same intervals in a plain sqlite3 table without any index (the floor of any layout)."""
    plain = tmp / "plain.db"
    dst = sqlite3.connect(plain)
    dst.execute(f"ATTACH '{db_file}' AS y")
    dst.execute("CREATE TABLE iv AS SELECT i.offer_id, i.price_per_gpu_hour, i.first_seen, "
                "i.last_seen AS last_seen FROM y.price_interval i")
    dst.commit()
    dst.execute("DETACH y")
    dst.close()
    return plain.stat().st_size / 1e6


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-history-"))
    db_file = sqlite_copy(tmp / "year.db")
    url = f"sqlite:///{db_file}"
    print("SYNTHETIC data: 2,000 offers, 15 providers, hourly for 365 days, 5% of prices changing per hour")
    with sqlite3.connect(db_file) as c:
        c.execute("VACUUM")
    size_mb = db_file.stat().st_size / 1e6
    intervals = sqlite3.connect(db_file).execute("SELECT COUNT(*) FROM price_interval").fetchone()[0]
    floor_mb = plain_table_mb(db_file, tmp)
    print(f"storage: {size_mb:.1f} MB for {intervals:,} intervals ({size_mb * 1e6 / intervals:.0f} B each, roll-ups "
          f"included); the same intervals' four columns in a plain table: {floor_mb:.1f} MB ({size_mb / floor_mb:.2f}x)")

    duck, duck_rows = duckdb_history(db_file)
    ours = in_process(url, duck)
    duck_s = ours["duckdb"]
    print(f"history H100 365d/1d: {ours['history'] * 1e3:.1f} ms; DuckDB on the same intervals: {duck_s * 1e3:.1f} ms "
          f"({duck_rows} rows); ratio {ours['history'] / duck_s:.2f} (best of {RUNS} each, in turn)")
    print(f"history H100-SXM 365d/1h: {ours['hourly'] * 1e3:.1f} ms")
    print(f"trends (every GPU): {ours['trends'] * 1e3:.1f} ms")
    cli, base = cli_seconds(url)
    hourly_cli, _ = cli_seconds(url, "1h")
    print(f"history as a CLI process: {cli:.2f} s, hourly {hourly_cli:.2f} s (python -c pass: {base:.2f} s)")
    figures: dict[str, object] = {
        "history_year_ms": round(ours["history"] * 1e3, 1),
        "history_year_vs_duckdb_ratio": round(ours["history"] / duck_s, 2),
        "duckdb_history_year_ms": round(duck_s * 1e3, 1),
        "history_hourly_year_ms": round(ours["hourly"] * 1e3, 1),
        "trends_year_ms": round(ours["trends"] * 1e3, 1),
        "history_cli_s": round(cli, 3),
        "history_hourly_cli_s": round(hourly_cli, 3),
        "python_startup_s": round(base, 3),
        "storage_mb_year": round(size_mb, 1),
        "storage_bytes_per_interval": round(size_mb * 1e6 / intervals, 1),
        "storage_plain_table_mb_year": round(floor_mb, 1),
        "history_year_data": "synthetic",
    }
    pg = postgres_url("history, trends, the history CLI and the store's size on PostgreSQL (*_postgres)")
    if pg:
        with postgres_db(pg, "history", template=postgres_year(pg)) as pg_url:
            pg_ours = in_process(pg_url, duck)
            pg_duck = pg_ours["duckdb"]
            pg_cli, _ = cli_seconds(pg_url)
            pg_hourly_cli, _ = cli_seconds(pg_url, "1h")
            pg_mb, pg_tables_mb = postgres_mb(pg_url)
            pg_intervals = interval_count(pg_url)
        print(f"PostgreSQL: history {pg_ours['history'] * 1e3:.1f} ms (DuckDB in turn {pg_duck * 1e3:.1f} ms, ratio "
              f"{pg_ours['history'] / pg_duck:.2f}), hourly {pg_ours['hourly'] * 1e3:.1f} ms, trends "
              f"{pg_ours['trends'] * 1e3:.1f} ms, history as a CLI process {pg_cli:.2f} s, hourly {pg_hourly_cli:.2f} s; "
              f"the store's tables and indexes {pg_mb:.1f} MB after VACUUM ({pg_mb * 1e6 / pg_intervals:.0f} B per "
              f"interval; {pg_tables_mb})")
        figures |= {"history_year_ms_postgres": round(pg_ours["history"] * 1e3, 1),
                    "history_year_vs_duckdb_ratio_postgres": round(pg_ours["history"] / pg_duck, 2),
                    "duckdb_history_year_ms_postgres": round(pg_duck * 1e3, 1),
                    "history_hourly_year_ms_postgres": round(pg_ours["hourly"] * 1e3, 1),
                    "trends_year_ms_postgres": round(pg_ours["trends"] * 1e3, 1),
                    "history_cli_s_postgres": round(pg_cli, 3),
                    "history_hourly_cli_s_postgres": round(pg_hourly_cli, 3),
                    "storage_mb_year_postgres": round(pg_mb, 1),
                    "storage_bytes_per_interval_postgres": round(pg_mb * 1e6 / pg_intervals, 1)}
    record(figures | machine("history"))


if __name__ == "__main__":
    main()
