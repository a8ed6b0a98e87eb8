"""A seeded SYNTHETIC history in the project's own schema, for the history-engine benchmarks.

2,000 offers from 15 providers (``synthetic-p00`` .. ``synthetic-p14``) collected hourly for a
year, 5% of prices changing per hour (a random walk of +-10%). Every value is synthetic and
labelled so (provider names, SKUs, ``gpu_raw``); it exists only for benchmarks.

The history is written the way the store would have written it hour by hour, but vectorised:
offers through the ``offer`` table (each provider's offers together, with consecutive ids, as a store
assigns them when it first collects that provider), one interval per run of an unchanged price (``ends_at`` at the
next hourly attempt), in the order the store opens them (by the hour the run starts, then
provider by provider within the hour as a collection cycle stores them, so row ids
and the table's pages follow time as in a store that collected the year: the intervals a
collection reads are the recent ones, near the table's end, not one per page of it): each
offer's newest (still open) in ``price_interval_open``, the others in ``price_interval_past``,
as the store leaves them (``db.intervals``), then ``db.rollups.rebuild`` (the same code the ``rollups rebuild`` command runs)
fills the hourly and daily roll-ups. Replaying 131,400 collections through the store instead
would take about an hour; the store path itself is timed by ``bench/store_cycle.py``.

A SQLite year is cached under ``bench/.cache/`` (keyed by the parameters and the schema
version) and copied for each use, so the year is built once.

    python bench/synthetic_year.py [--days 365] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.pool import NullPool

from db import intervals as interval_tables
from db import labels, rollups
from db.engine import make_engine, session_scope
from db.migrate import init_db
from db.models import Offer
from db.spans import epoch

CACHE = Path(__file__).parent / ".cache"
#: The synthetic year ends here (a fixed date, so cached files and figures are comparable).
END = datetime(2026, 11, 30, tzinfo=UTC)
GPUS = ("H100-SXM", "H100-PCIe", "H100-NVL", "A100-SXM-80GB", "A100-PCIe-40GB", "H200", "L40S", "L4",
        "RTX-4090", "A10G", "MI300X", "RTX-A6000")
BASE_PRICE = {"H100-SXM": 2.8, "H100-PCIe": 2.3, "H100-NVL": 2.6, "A100-SXM-80GB": 1.7, "A100-PCIe-40GB": 1.2,
              "H200": 3.6, "L40S": 1.0, "L4": 0.5, "RTX-4090": 0.45, "A10G": 0.8, "MI300X": 2.5, "RTX-A6000": 0.6}
#: The newest migration: a cached year built before a schema change is built again.
SCHEMA_VERSION = max(p.name.split("_")[0] for p in (Path(__file__).resolve().parents[1] / "db" / "migrations" / "versions")
                     .glob("[0-9]*_*.py"))
#: How the rows are laid out (a changed layout is a different cached file).
LAYOUT = "time-ordered, provider-grouped"


@dataclass(frozen=True)
class Shape:
    days: int = 365
    offers: int = 2000
    providers: int = 15
    change: float = 0.05
    seed: int = 42

    @property
    def key(self) -> str:
        """The shape, the layout and the schema version: a cached history of another key is stale."""
        raw = f"{self.days}-{self.offers}-{self.providers}-{self.change}-{self.seed}-{SCHEMA_VERSION}-{LAYOUT}"
        return hashlib.sha1(raw.encode()).hexdigest()[:10]

    @property
    def shape_key(self) -> str:
        """The shape alone (no schema version): the histories of one shape replace each other."""
        raw = f"{self.days}-{self.offers}-{self.providers}-{self.change}-{self.seed}"
        return hashlib.sha1(raw.encode()).hexdigest()[:8]

    @property
    def start(self) -> datetime:
        return END - timedelta(hours=self.days * 24 - 1)


def provider_name(k: int) -> str:
    return f"synthetic-p{k:02d}"


def offer_rows(shape: Shape, rng: np.random.Generator) -> list[dict[str, object]]:
    """The synthetic offers: provider, sku, kind (every fifth is spot), GPU, count, base price."""
    out = []
    for i in range(shape.offers):
        gpu = GPUS[(i // shape.providers) % len(GPUS)]
        count = (1, 1, 2, 4, 8)[i % 5]
        base = BASE_PRICE[gpu] * rng.uniform(0.7, 1.6) * (0.45 if i % 5 == 0 else 1.0)
        out.append({"provider": provider_name(i % shape.providers), "sku": f"synthetic-{i}", "region": f"r{i % 7}",
                    "kind": "spot" if i % 5 == 0 else "on_demand", "term_months": 0, "gpu": gpu,
                    "gpu_raw": f"synthetic {gpu}", "gpu_count": float(count), "price": round(base * count, 4)})
    return out


def intervals(shape: Shape, base: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Interval columns (offer index, start and end hour, price per hour) of the random walk, in
    the order a store opens them: by start hour, then offer."""
    hours = shape.days * 24
    change = rng.random((shape.offers, hours)) < shape.change
    change[:, 0] = True
    offer_idx, start = np.nonzero(change)  # row-major: sorted by offer, then hour
    n = len(start)
    nxt = np.empty(n, dtype=np.int64)
    nxt[:-1] = start[1:]
    same = np.zeros(n, dtype=bool)
    same[:-1] = offer_idx[1:] == offer_idx[:-1]
    end = np.where(same, nxt - 1, hours - 1)
    step = np.log(rng.uniform(0.9, 1.1, n))
    step[start == 0] = 0.0
    walk = np.cumsum(step)
    first = np.flatnonzero(start == 0)
    walk -= np.repeat(walk[first], np.diff(np.append(first, n)))
    price = np.round(base[offer_idx] * np.exp(walk), 4)
    opened = np.lexsort((offer_idx, start))
    return {"offer": offer_idx[opened], "start": start[opened], "end": end[opened], "price": price[opened]}


def _insert(engine: Engine, table: str, columns: list[str], rows: list[tuple]) -> None:  # type: ignore[type-arg]
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if engine.dialect.name == "postgresql":
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:  # type: ignore[attr-defined]
                for r in rows:
                    copy.write_row(r)
        else:
            marks = ", ".join("?" for _ in columns)
            cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)
        raw.commit()
    finally:
        raw.close()


def build(url: str, shape: Shape = Shape(), *, quiet: bool = False) -> float:
    """Write the synthetic history into the (empty) database at ``url``; returns seconds taken."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(shape.seed)
    engine = make_engine(url)
    init_db(engine)
    start, end = shape.start, END
    offers = offer_rows(shape, rng)
    with session_scope(engine) as s:
        conn = s.connection()
        for k in range(shape.providers):
            conn.execute(text("INSERT INTO provider (name, display_name, last_run_at, last_status, last_success_at, "
                              "last_attempt_at, interval_s, consecutive_failures) VALUES (:n, :d, :t, 'ok', :t, :t, 3600, 0)"),
                         {"n": provider_name(k), "d": f"Synthetic provider {k} (synthetic)", "t": end.replace(tzinfo=None)
                          if engine.dialect.name == "sqlite" else end})
        ids = labels.ensure(conn, [("provider", provider_name(k)) for k in range(shape.providers)]
                            + [("gpu", g) for g in GPUS] + [("kind", "on_demand"), ("kind", "spot"), ("currency", "USD")])
        conn.execute(Offer.__table__.insert(), [  # type: ignore[attr-defined]
            {k: o[k] for k in ("provider", "sku", "region", "kind", "term_months", "gpu", "gpu_raw", "gpu_count")}
            | {"extra": {"synthetic": True}, "first_seen": start, "last_seen": end}
            for o in sorted(offers, key=lambda o: o["provider"])
        ])
        offer_ids = dict(conn.execute(text("SELECT sku, id FROM offer")).all())
    base = np.array([o["price"] for o in offers])
    iv = intervals(shape, base, rng)
    t_start, n = epoch(start), len(iv["start"])
    oid = np.array([offer_ids[o["sku"]] for o in offers])[iv["offer"]]
    in_hour = np.lexsort((oid, iv["start"]))  # each hour's intervals provider by provider, as collected
    iv, oid = {k: v[in_hour] for k, v in iv.items()}, oid[in_hour]
    pid = np.array([ids[("provider", o["provider"])] for o in offers])[iv["offer"]]
    gid = np.array([ids[("gpu", o["gpu"])] for o in offers])[iv["offer"]]
    kid = np.array([ids[("kind", o["kind"])] for o in offers])[iv["offer"]]
    count = np.array([o["gpu_count"] for o in offers])[iv["offer"]]
    first_seen = t_start + iv["start"] * 3600
    last_seen = t_start + iv["end"] * 3600
    current = iv["end"] == shape.days * 24 - 1
    usd = ids[("currency", "USD")]
    observations = iv["end"] - iv["start"] + 1
    rows = [
        (i + 1, int(oid[i]), int(pid[i]), int(gid[i]), int(kid[i]), usd, float(iv["price"][i]),
         float(iv["price"][i] / count[i]), True, int(first_seen[i]), int(last_seen[i]),
         None if current[i] else int(last_seen[i]) + 3600, int(observations[i]))
        for i in range(n)
    ]
    columns = ["id", "offer_id", "provider_id", "gpu_id", "kind_id", "currency_id", "price_per_hour",
               "price_per_gpu_hour", "available", "first_seen", "last_seen", "ends_at", "observations"]
    _insert(engine, interval_tables.PAST_TABLE, columns, [r for r, now in zip(rows, current, strict=True) if not now])
    _insert(engine, interval_tables.OPEN_TABLE, columns, [r for r, now in zip(rows, current, strict=True) if now])
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(text(f"SELECT setval('{interval_tables.SEQUENCE}', :n)"), {"n": n})
    t1 = time.perf_counter()
    with engine.begin() as conn:
        written = rollups.rebuild(conn)
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    if not quiet:
        print(f"synthetic year: {shape.offers} offers, {shape.providers} providers, {shape.days} days, "
              f"{n:,} intervals in {t1 - t0:.1f} s; roll-ups rebuilt ({written:,} rows) in {time.perf_counter() - t1:.1f} s")
    engine.dispose()
    return time.perf_counter() - t0


def sqlite_copy(dest: Path, shape: Shape = Shape()) -> Path:
    """A fresh copy of the cached SQLite history of ``shape`` at ``dest`` (building it once)."""
    CACHE.mkdir(exist_ok=True)
    cached = CACHE / f"year-{shape.days}d-{shape.key}.db"
    if not cached.exists():
        tmp = cached.with_suffix(".building")
        tmp.unlink(missing_ok=True)
        build(f"sqlite:///{tmp}", shape)
        with make_engine(f"sqlite:///{tmp}").connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        tmp.rename(cached)
        for leftover in CACHE.glob(f"{tmp.name}*"):
            leftover.unlink()
    shutil.copyfile(cached, dest)
    # The copy's pages are written out before anything is timed: otherwise the store's first WAL
    # checkpoint (which syncs the database file) would wait for the whole copy (a gigabyte at market
    # scale) to reach the disk, a cost no live store pays.
    with dest.open("rb+") as copied:
        os.fsync(copied.fileno())
    return dest


#: The environment variable naming the bench's PostgreSQL server (any database on it: the bench
#: works in databases of its own next to it, ``<database>_bench_*``).
POSTGRES_ENV = "TRACKER_BENCH_DATABASE_URL"


def postgres_url(what: str) -> str | None:
    """The bench's PostgreSQL URL, or ``None`` after printing that ``what`` is skipped and why:
    every script runs without a server and says which figures it left out."""
    url = os.environ.get(POSTGRES_ENV, "").strip()
    if not url:
        print(f"{what[0].upper()}{what[1:]} skipped ({POSTGRES_ENV} is not set)")
        return None
    return url


def _database_url(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)


def _admin(url: str) -> Connection:
    """An autocommit connection to the server of ``url`` (CREATE and DROP DATABASE refuse a transaction)."""
    return make_engine(url, poolclass=NullPool).connect().execution_options(isolation_level="AUTOCOMMIT")


def _bench_name(url: str, name: str) -> str:
    full = f"{make_url(url).database}_bench_{name}"
    if len(full) > 63:  # PostgreSQL would cut the name short, and two stores could share one
        raise SystemExit(f"{POSTGRES_ENV}: the database name {make_url(url).database!r} is too long for the bench's own "
                         "databases beside it (63 characters in all); name a shorter one on the same server")
    return full


def postgres_year(url: str, shape: Shape = Shape()) -> str:
    """The name of a database on ``url``'s server holding the synthetic history ``shape``, built
    once (about 2.5 minutes on a busy 2-core machine) and kept, like the SQLite cache, as the
    template ``postgres_db`` copies: ``<database>_bench_year_<days>d_<shape>_<key>``. The same
    shape of an earlier schema or layout is dropped when a new one is built; other shapes stay."""
    prefix = _bench_name(url, f"year_{shape.days}d_{shape.shape_key}_")
    name = prefix + shape.key
    with _admin(url) as conn:
        names = {n for (n,) in conn.execute(text("SELECT datname FROM pg_database")) if n.startswith(prefix)}
        if name in names:
            return name
        for old in names:
            conn.execute(text(f'DROP DATABASE "{old}" WITH (FORCE)'))
        building = prefix + "building"
        conn.execute(text(f'CREATE DATABASE "{building}"'))
    build(_database_url(url, building), shape)
    with _admin(url) as conn:
        conn.execute(text(f'ALTER DATABASE "{building}" RENAME TO "{name}"'))
    return name


@contextmanager
def postgres_db(url: str, name: str, template: str | None = None) -> Iterator[str]:
    """The URL of a database of the bench's own on ``url``'s server, ``<database>_bench_<name>``:
    empty, or a copy of ``template`` (a file copy, seconds), dropped afterwards. The bench never
    touches the database ``url`` names nor any other (a server shared with test runs)."""
    database = _bench_name(url, name)
    with _admin(url) as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{database}"' + (f' TEMPLATE "{template}"' if template else "")))
    try:
        yield _database_url(url, database)
    finally:
        with _admin(url) as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--url", help="build into this (empty) database instead of the SQLite cache")
    args = ap.parse_args()
    shape = Shape(days=args.days)
    if args.url:
        build(args.url, shape)
    else:
        print(sqlite_copy(CACHE / "latest.db", shape))


if __name__ == "__main__":
    main()
