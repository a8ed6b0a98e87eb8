"""Benchmark: the hourly store cycle after a day and after a year, and bulk ingest (SYNTHETIC data).

* ``store_cycle_1d_s`` / ``store_cycle_365d_s`` -- one hourly collection of the 15 synthetic
  providers (2,000 offers, 5% of prices changed) through the real pipeline (``collect``:
  normalise, validate with previous prices and market medians, store, roll-ups), on a store
  holding one day and one year of history (``bench/synthetic_year.py``): the median of 8
  consecutive hours on each store, the two stores taking turns so that load from elsewhere
  weighs on both alike. Their ratio is printed: the cycle should not grow with the history.
  Each store's first cycle in the process (caches cold) is recorded apart (``*_cold_s``).
* ``ingest_vs_schema_floor_ratio`` -- 100,000 offers of one provider through
  ``store_observation``, a first scrape (``ingest_first_s``), over the schema's own floor
  (``ingest_first_inserts_only_s``): the same rows inserted into the store's own indexed tables
  by its own bulk path, with nothing else, in the same run; 1.0 would mean the store adds
  nothing to its inserts. ``ingest_steady_s`` is the next hour with 5% of prices changed.

With ``TRACKER_BENCH_DATABASE_URL`` (PostgreSQL) all of it is repeated there under ``*_postgres``
keys, each store in a database of the bench's own (the day and the year copied from the kept
synthetic years, ``synthetic_year.postgres_year``); without it those keys are skipped, and the
output says so.

Each figure is also split into the store's own statements and the roll-up refresh it ends
with (``*_refresh_s``: seconds of ``db.rollups.refresh`` inside the measured time), so the
two halves of the per-collection cost can be followed apart.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _results import machine, record
from sqlalchemy import text
from synthetic_year import (
    END,
    Shape,
    postgres_db,
    postgres_url,
    postgres_year,
    sqlite_copy,
)

from db import intervals, labels, rollups
from db import intervals as bulk
from db.engine import make_engine, session_scope
from db.migrate import init_db
from scrapers.base import ScrapedOffer, Scraper
from scrapers.http import Http
from tracker.config.settings import Settings
from tracker.pipeline import collect as collect_mod
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

CHANGE = 0.05
#: Hourly cycles measured on each store after its first one.
HOURS = 8


@contextmanager
def refresh_clock() -> Iterator[Callable[[], float]]:
    """Seconds spent in ``db.rollups.refresh`` while the block runs (the store calls it through
    the module, and collections store one at a time, so the sum is wall time)."""
    spent = [0.0]
    real = rollups.refresh

    def timed(*args: Any, **kwargs: Any) -> int:
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t0

    rollups.refresh = timed  # type: ignore[assignment]
    try:
        yield lambda: spent[0]
    finally:
        rollups.refresh = real  # type: ignore[assignment]


def current_offers(url: str) -> dict[str, list[dict[str, Any]]]:
    """Each synthetic provider's offers at their current price."""
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT o.provider, o.sku, o.region, o.kind, o.gpu, o.gpu_count, i.price_per_hour FROM price_interval_open i "
            "JOIN offer o ON o.id = i.offer_id")).all()
    engine.dispose()
    out: dict[str, list[dict[str, Any]]] = {}
    for p, sku, region, kind, gpu, count, price in rows:
        out.setdefault(p, []).append({"sku": sku, "region": region, "kind": kind, "gpu": gpu, "count": count,
                                      "price": price})
    return out


def scrapers_for(listing: dict[str, list[dict[str, Any]]], rng: random.Random) -> list[type[Scraper]]:
    classes = []
    for name, offers in sorted(listing.items()):
        for o in offers:
            if rng.random() < CHANGE:
                o["price"] = round(o["price"] * rng.uniform(0.9, 1.1), 4)
        snapshot = [dict(o) for o in offers]

        async def fetch(self: Scraper, http: Http, snapshot: list[dict[str, Any]] = snapshot) -> Any:
            return snapshot

        def parse(self: Scraper, raw: Any) -> list[ScrapedOffer]:
            return [self.offer(sku=o["sku"], region=o["region"], kind=o["kind"], gpu=o["gpu"], gpu_raw=f"synthetic {o['gpu']}",
                               gpu_count=o["count"], price_per_hour=o["price"], available=True) for o in raw]

        classes.append(type(f"Cycle_{name}", (Scraper,), {"name": name, "display_name": f"{name} (synthetic)",
                                                         "fetch": fetch, "parse": parse}))
    return classes


class Cycles:
    """Consecutive hourly collections after the history stored at ``url``, one per ``next()``:
    (wall seconds of the cycle, seconds of roll-up refresh inside it)."""

    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        self.listing = current_offers(url)
        self.rng = random.Random(7)
        self.settings = Settings(database=url)
        self.hour = 0

    def next(self) -> tuple[float, float]:
        self.hour += 1
        at = END + timedelta(hours=self.hour)
        real_now = collect_mod.utcnow
        collect_mod.utcnow = lambda: at  # the cycle happens an hour after the last one
        try:
            classes = scrapers_for(self.listing, self.rng)
            with refresh_clock() as refreshing:
                t0 = time.perf_counter()
                results = collect_mod.collect(self.engine, self.settings, classes=classes)
                took = time.perf_counter() - t0
        finally:
            collect_mod.utcnow = real_now
        assert all(r.ok for r in results), [(r.provider, r.error_message) for r in results if not r.ok]
        return took, refreshing()

    def close(self) -> None:
        self.engine.dispose()


def cycle_figures(day_url: str, year_url: str, hours: int = HOURS) -> dict[str, tuple[float, float]]:
    """Median wall time and roll-up refresh of ``hours`` hourly cycles on each store, the two
    stores taking turns (day, year, day, year, ...) so that whatever else the machine does
    weighs on both alike; each store's first cycle (a new process: connection, statement and
    page caches still cold) is measured apart as ``*_cold``."""
    day, year = Cycles(day_url), Cycles(year_url)
    try:
        cold = {"1d_cold": day.next(), "365d_cold": year.next()}
        runs: dict[str, list[tuple[float, float]]] = {"1d": [], "365d": []}
        for _ in range(hours):
            runs["1d"].append(day.next())
            runs["365d"].append(year.next())
    finally:
        day.close()
        year.close()
    return cold | {k: (statistics.median(t for t, _ in v), statistics.median(f for _, f in v)) for k, v in runs.items()}


def synthetic_ingest(n: int, rng: random.Random) -> list[NormalisedOffer]:
    gpus = ["H100-SXM", "A100-SXM-80GB", "L40S", "RTX-4090", "H200", "L4"]
    out = []
    for i in range(n):
        count = float(1 + i % 8)
        price = round(rng.uniform(0.2, 30), 4)
        out.append(NormalisedOffer(provider="synthetic-bulk", sku=f"synthetic-{i}", region=f"r{i % 17}", kind="on_demand",
                                   term_months=0, gpu=gpus[i % len(gpus)], gpu_raw="synthetic", gpu_count=count,
                                   price_per_hour=price, price_per_gpu_hour=price / count, currency="USD", available=True))
    return out


def changed(offers: list[NormalisedOffer], rng: random.Random) -> list[NormalisedOffer]:
    out = []
    for o in offers:
        if rng.random() < CHANGE:
            p = round((o.price_per_hour or 1.0) * rng.uniform(0.9, 1.1), 4)
            o = NormalisedOffer(**{**{f: getattr(o, f) for f in o.__dataclass_fields__}, "price_per_hour": p,
                                   "price_per_gpu_hour": p / o.gpu_count})
        out.append(o)
    return out


def ingest(url: str) -> tuple[float, float, float, float]:
    """(first, steady, refresh in first, refresh in steady) seconds of ``store_observation`` for
    100,000 offers (the refresh is part of the store's time)."""
    rng = random.Random(11)
    engine = make_engine(url)
    init_db(engine)
    first = synthetic_ingest(100_000, rng)
    second = changed(first, rng)
    out, refreshes = [], []
    prev = None
    for offers, at in ((first, END), (second, END + timedelta(hours=1))):
        with refresh_clock() as refreshing:
            t0 = time.perf_counter()
            with session_scope(engine) as s:
                store_stage.store_observation(s, "synthetic-bulk", offers, at, prev, interval_s=3600)
            out.append(time.perf_counter() - t0)
        refreshes.append(refreshing())
        prev = at
    engine.dispose()
    return out[0], out[1], refreshes[0], refreshes[1]


def inserts_only(url: str, offers: list[NormalisedOffer], at: int) -> float:
    """Seconds for the rows a first scrape of ``offers`` adds, inserted into a new store's own
    tables by the store's own bulk path (``db.intervals``: ``executemany`` on SQLite, ``COPY`` on
    PostgreSQL) and nothing else: no comparison, no roll-ups. The floor of a first scrape in this
    schema (the offers and their open intervals, with their indexes), against the baseline's one
    unindexed table."""
    engine = make_engine(url)
    init_db(engine)
    try:
        with session_scope(engine) as session:
            labels.ensure_provider(session, "synthetic-bulk")
        with engine.begin() as conn:
            ids = labels.ensure(conn, {("provider", "synthetic-bulk"), ("kind", "on_demand"), ("currency", "USD")}
                                | {("gpu", o.gpu) for o in offers if o.gpu})
        t0 = time.perf_counter()
        with engine.begin() as conn:
            seen = store_stage._stamp(conn, datetime.fromtimestamp(at, UTC))
            bulk.insert_many(conn, "offer", store_stage._OFFER_INSERT, [
                (o.provider, o.sku, o.region, o.kind, o.term_months, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb,
                 o.vcpus, o.ram_gb, o.country, "{}", seen, seen) for o in offers])
            pid = ids[("provider", "synthetic-bulk")]
            offer_ids = [i for (i,) in conn.exec_driver_sql("SELECT id FROM offer ORDER BY id").all()]
            bulk.insert_many(conn, intervals.OPEN_TABLE, store_stage._INTERVAL_INSERT, [
                (k + 1, oid, pid, ids[("gpu", o.gpu)], ids[("kind", o.kind)], ids[("currency", o.currency)],
                 o.price_per_hour, o.price_per_gpu_hour, o.available, at, at, None, 1, o.available_count)
                for k, (oid, o) in enumerate(zip(offer_ids, offers, strict=True))])
        return time.perf_counter() - t0
    finally:
        engine.dispose()


def figures_on(day_url: str, year_url: str, ingest_url: str, floor_url: str) -> dict[str, float]:
    """Every figure of the module on one backend (the four stores given), printed; keys as on SQLite."""
    cycles = cycle_figures(day_url, year_url)
    (c1, f1), (c365, f365) = cycles["1d"], cycles["365d"]
    k1, k365 = cycles["1d_cold"][0], cycles["365d_cold"][0]
    print(f"  hourly store cycle (median of {HOURS}, the stores taking turns): {c1:.3f} s after 1 day, {c365:.3f} s "
          f"after 365 days (ratio {c365 / c1:.2f}); of which roll-up refresh {f1:.3f} s / {f365:.3f} s; "
          f"first cycle of the process {k1:.3f} s / {k365:.3f} s")
    s1, s2, g1, g2 = ingest(ingest_url)
    floor1 = inserts_only(floor_url, synthetic_ingest(100_000, random.Random(11)), int(END.timestamp()))
    print(f"  ingest of 100,000 offers: first scrape {s1:.2f} s against the same rows inserted into the store's "
          f"tables and nothing else {floor1:.2f} s (ratio {s1 / floor1:.2f}); steady state {s2:.2f} s; "
          f"of which roll-up refresh {g1:.2f} s / {g2:.2f} s")
    return {
        "store_cycle_1d_s": round(c1, 3), "store_cycle_365d_s": round(c365, 3),
        "store_cycle_365d_vs_1d_ratio": round(c365 / c1, 2),
        "store_cycle_1d_refresh_s": round(f1, 3), "store_cycle_365d_refresh_s": round(f365, 3),
        "store_cycle_1d_cold_s": round(k1, 3), "store_cycle_365d_cold_s": round(k365, 3),
        "ingest_first_s": round(s1, 2), "ingest_steady_s": round(s2, 2),
        "ingest_first_refresh_s": round(g1, 2), "ingest_steady_refresh_s": round(g2, 2),
        "ingest_first_inserts_only_s": round(floor1, 2), "ingest_vs_schema_floor_ratio": round(s1 / floor1, 2),
    }


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-store-"))
    print("SYNTHETIC data: 15 providers, 2,000 offers, 5% of prices changing per hour")
    day = sqlite_copy(tmp / "day.db", Shape(days=1))
    year = sqlite_copy(tmp / "year.db", Shape())
    print("SQLite:")
    figures: dict[str, object] = dict(figures_on(f"sqlite:///{day}", f"sqlite:///{year}", f"sqlite:///{tmp / 'ingest.db'}",
                                                 f"sqlite:///{tmp / 'floor.db'}"))
    pg = postgres_url("the store cycle and ingest on PostgreSQL (store_cycle_*_postgres, ingest_*_postgres)")
    if pg:
        day_pg, year_pg = postgres_year(pg, Shape(days=1)), postgres_year(pg)
        with (postgres_db(pg, "cycle_day", template=day_pg) as day_url,
              postgres_db(pg, "cycle_year", template=year_pg) as year_url,
              postgres_db(pg, "ingest") as ingest_url, postgres_db(pg, "ingest_floor") as floor_url):
            print("PostgreSQL:")
            figures |= {f"{k}_postgres": v for k, v in figures_on(day_url, year_url, ingest_url, floor_url).items()}
    record(figures | machine("store_cycle"))


if __name__ == "__main__":
    main()
