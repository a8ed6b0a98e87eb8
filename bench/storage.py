"""Benchmark: store size and write speed for hourly scrapes of 2,000 offers (SYNTHETIC data).

Compares the interval store (an unchanged price only moves ``last_seen``) with a baseline
run in the same process: the naive one-row-per-observation layout, written to its own
SQLite table with the same columns. Prints rows, file size, and the ratios; merges the
figures into ``bench/results.json`` under ``"storage"``.

    python bench/storage.py [--hours 336] [--offers 2000] [--change-rate 0.02]

The prices are synthetic (a random walk, labelled so in the output) and exist only for this
benchmark.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from db import labels, reads
from db.engine import engine_reader, make_engine, session_scope
from db.migrate import init_db
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

RESULTS = Path(__file__).parent / "results.json"


def synthetic_offers(n: int, rng: random.Random) -> list[NormalisedOffer]:
    gpus = ["H100-SXM", "A100-SXM-80GB", "L40S", "RTX-4090", "H200", "L4"]
    return [
        NormalisedOffer(
            provider="synthetic", sku=f"synthetic-{i}", region=f"r{i % 17}", kind="on_demand" if i % 3 else "spot",
            term_months=0, gpu=gpus[i % len(gpus)], gpu_raw="synthetic", gpu_count=float(1 + i % 8),
            price_per_hour=round(rng.uniform(0.2, 30), 4), price_per_gpu_hour=0.0, currency="USD", available=True,
        )
        for i in range(n)
    ]


def step(offers: list[NormalisedOffer], rng: random.Random, change_rate: float) -> list[NormalisedOffer]:
    out = []
    for o in offers:
        price = o.price_per_hour or 1.0
        if rng.random() < change_rate:
            price = round(price * rng.uniform(0.9, 1.1), 4)
        out.append(NormalisedOffer(**{**{f: getattr(o, f) for f in o.__dataclass_fields__},
                                      "price_per_hour": price, "price_per_gpu_hour": price / o.gpu_count}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hours", type=int, default=24 * 14)
    ap.add_argument("--offers", type=int, default=2000)
    ap.add_argument("--change-rate", type=float, default=0.02, help="share of prices that change each hour")
    args = ap.parse_args()
    rng = random.Random(42)
    tmp = Path(tempfile.mkdtemp(prefix="bench-storage-"))
    engine = make_engine(f"sqlite:///{tmp / 'intervals.db'}")
    init_db(engine)
    naive = sqlite3.connect(tmp / "naive.db")
    naive.execute("PRAGMA journal_mode=WAL")
    naive.execute("CREATE TABLE obs (offer_id INTEGER, provider TEXT, gpu TEXT, kind TEXT, price_per_hour REAL,"
                  " price_per_gpu_hour REAL, currency TEXT, available INTEGER, observed_at TEXT)")
    naive.execute("CREATE INDEX ix_obs ON obs (gpu, observed_at)")

    offers = synthetic_offers(args.offers, rng)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    interval_s = naive_s = 0.0
    prev: datetime | None = None
    for h in range(args.hours):
        at = t0 + timedelta(hours=h)
        start = time.perf_counter()
        with session_scope(engine) as s:
            labels.ensure_provider(s, "synthetic")
            store_stage.store_offers(s, "synthetic", offers, at, prev)
            s.get(labels.Provider, "synthetic").last_success_at = at  # type: ignore[union-attr]
        interval_s += time.perf_counter() - start
        start = time.perf_counter()
        naive.executemany("INSERT INTO obs VALUES (?,?,?,?,?,?,?,?,?)", [
            (i, o.provider, o.gpu, o.kind, o.price_per_hour, o.price_per_gpu_hour, o.currency, 1, at.isoformat())
            for i, o in enumerate(offers)])
        naive.commit()
        naive_s += time.perf_counter() - start
        prev = at
        offers = step(offers, rng, args.change_rate)
    naive.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    naive_rows = naive.execute("SELECT count(*) FROM obs").fetchone()[0]
    naive.close()
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    with engine_reader(engine) as reader:
        counts = reads.row_counts(reader)
    engine.dispose()
    size_i = (tmp / "intervals.db").stat().st_size
    size_n = (tmp / "naive.db").stat().st_size
    year_factor = 8760 / args.hours
    result = {
        "data": "synthetic random walk",
        "hours": args.hours, "offers": args.offers, "change_rate": args.change_rate,
        "interval_rows": counts["price_interval"], "naive_rows": naive_rows,
        "interval_db_mb": round(size_i / 2**20, 2), "naive_db_mb": round(size_n / 2**20, 2),
        "size_ratio_naive_over_interval": round(size_n / size_i, 1),
        "interval_write_s_per_scrape": round(interval_s / args.hours, 4),
        "naive_write_s_per_scrape": round(naive_s / args.hours, 4),
        "projected_year_interval_db_mb": round(size_i / 2**20 * year_factor, 1),
        "projected_year_naive_db_mb": round(size_n / 2**20 * year_factor, 1),
    }
    print("storage benchmark (SYNTHETIC prices)")
    for k, v in result.items():
        print(f"  {k:34} {v}")
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data["storage"] = result
    RESULTS.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
