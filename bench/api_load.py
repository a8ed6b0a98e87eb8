"""Load benchmark: the API and dashboard with 20 clients while a writer stores 3,000-offer batches,
on a store holding a SYNTHETIC year (``bench/synthetic_year.py``: 2,000 offers, 15 providers,
hourly for 365 days).

Real processes over real sockets on 127.0.0.1: ``gpu-tracker serve`` on a copy of the synthetic
year, a writer process (this script with ``--writer``) that collects one synthetic provider of
3,000 offers through the real pipeline (``tracker.pipeline.collect``: normalise, validate, store,
roll-ups) over and over, 5% of its prices changed each time, and 20 httpx clients in this
process. Two phases of ``--seconds`` each, the writer running through both:

* light: ``/api/prices`` and ``/healthz`` in turn -> ``api_light_rps``;
* mixed: ``/api/prices``, ``/api/history?gpu=H100-SXM`` (the whole stored range, every=auto) and
  the ``/gpu/H100-SXM`` page in turn -> ``api_mixed_rps``.

Each route's p50 and p99 latency (``api_<phase>_p50_ms_<route>``, ``api_<phase>_p99_ms_<route>``),
the server's CPU per request, the errors, the batches the writer stored and the machine's cores
and load average go into ``bench/results.json``. Targets (SQLite): the mixed routes' p50 under
300 ms and at least 50 mixed requests per second; on PostgreSQL the same order.

With ``TRACKER_BENCH_DATABASE_URL`` (PostgreSQL) the same load runs again on a copy of the same
year in a database of the bench's own there (``synthetic_year.postgres_db``), every figure under
the same key ending ``_postgres``; without it those keys are skipped, and the output says so.

    .venv/bin/python bench/api_load.py [--seconds 15] [--clients 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench._results import machine, record  # noqa: E402
from bench._serve import TOKEN, env, free_port  # noqa: E402

LIGHT = ("/api/prices", "/healthz")
MIXED = ("/api/prices", "/api/history?gpu=H100-SXM", "/gpu/H100-SXM")
#: Offers of the writer's one synthetic provider, stored as one batch per collection.
BATCH = 3000
WRITER_PROVIDER = "synthetic-load"
CHANGE = 0.05




# --- the writer ------------------------------------------------------------------------------


def writer(url: str, stop: Path, report: Path) -> None:
    """Collect ``BATCH`` synthetic offers through the real pipeline until ``stop`` exists; write
    the number of batches and their median seconds to ``report``."""
    from synthetic_year import BASE_PRICE, GPUS

    from db.engine import make_engine
    from scrapers.base import ScrapedOffer, Scraper
    from tracker.config.settings import Settings
    from tracker.pipeline import collect as collect_mod

    rng = random.Random(29)
    offers = [{"sku": f"synthetic-load-{i}", "gpu": GPUS[i % len(GPUS)], "count": (1, 2, 4, 8)[i % 4],
               "price": round(BASE_PRICE[GPUS[i % len(GPUS)]] * (1, 2, 4, 8)[i % 4] * rng.uniform(0.8, 1.5), 4)}
              for i in range(BATCH)]

    class Load(Scraper):
        name = WRITER_PROVIDER
        display_name = "Synthetic load writer (synthetic)"

        async def fetch(self, http: Any) -> Any:
            return [dict(o) for o in offers]

        def parse(self, raw: Any) -> list[ScrapedOffer]:
            return [self.offer(sku=o["sku"], region="r0", kind="on_demand", gpu=o["gpu"], gpu_raw=f"synthetic {o['gpu']}",
                               gpu_count=o["count"], price_per_hour=o["price"], available=True) for o in raw]

    engine = make_engine(url)
    settings = Settings(database=url)
    took: list[float] = []
    while not stop.exists():
        for o in offers:
            if rng.random() < CHANGE:
                o["price"] = round(o["price"] * rng.uniform(0.95, 1.05), 4)
        t0 = time.perf_counter()
        results = collect_mod.collect(engine, settings, classes=[Load])
        took.append(time.perf_counter() - t0)
        if not all(r.ok for r in results):
            report.write_text(f"failed {[r.error_message for r in results]}")
            return
        time.sleep(0.5)
    engine.dispose()
    report.write_text(f"{len(took)} {statistics.median(took) if took else 0:.3f}")


# --- the clients -----------------------------------------------------------------------------


async def hammer(base: str, routes: tuple[str, ...], seconds: float, clients: int
                 ) -> tuple[float, dict[str, list[float]], int]:
    """(requests/s, latencies in seconds per route, errors) for ``clients`` concurrent loops,
    each asking ``routes`` in turn."""
    latencies: dict[str, list[float]] = {r: [] for r in routes}
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120,
                                 headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        deadline = time.monotonic() + seconds

        async def loop(i: int) -> None:
            nonlocal errors
            n = i
            while time.monotonic() < deadline:
                route = routes[n % len(routes)]
                t0 = time.monotonic()
                try:
                    r = await client.get(route)
                    if r.status_code != 200:
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                latencies[route].append(time.monotonic() - t0)
                n += 1

        t0 = time.monotonic()
        await asyncio.gather(*(loop(i) for i in range(clients)))
        elapsed = time.monotonic() - t0
    return sum(len(v) for v in latencies.values()) / elapsed, latencies, errors


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` in milliseconds (nearest rank)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def route_key(route: str) -> str:
    """``/api/history?gpu=H100-SXM`` -> ``api_history``; ``/gpu/H100-SXM`` -> ``gpu_page``."""
    path = route.split("?")[0].strip("/")
    return "gpu_page" if path.startswith("gpu/") else path.replace("/", "_")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process ``pid`` has used (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(base: str, routes: tuple[str, ...], seconds: float, clients: int, server: int
          ) -> tuple[float, dict[str, list[float]], int, float]:
    """``hammer`` plus the server's CPU milliseconds per request (a figure other load on the
    machine moves far less than requests per second)."""
    cpu0 = cpu_seconds(server)
    rps, latencies, errors = asyncio.run(hammer(base, routes, seconds, clients))
    n = sum(len(v) for v in latencies.values())
    return rps, latencies, errors, (cpu_seconds(server) - cpu0) * 1000 / max(n, 1)


def wait_ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            sys.exit("the server did not start")
        time.sleep(0.3)


def load(url: str, seconds: float, clients: int, tmp: Path) -> dict[str, Any]:
    """The load figures on the store at ``url`` (server, writer and clients as the module says),
    printed and returned under the keys of a SQLite run."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "tracker", "--db", url, "serve", "--port", str(port)], cwd=ROOT,
                              env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop, report = tmp / "stop", tmp / "report"
    stop.unlink(missing_ok=True)
    report.unlink(missing_ok=True)
    try:
        wait_ready(base, server)
        asyncio.run(hammer(base, MIXED, 3, 3))  # warm-up: imports, caches
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--writer", url, str(stop), str(report)],
                                cwd=ROOT, env=env())
        try:
            time.sleep(3)  # its first batch is under way
            light_rps, light, light_err, light_cpu = phase(base, LIGHT, seconds, clients, server.pid)
            mixed_rps, mixed, mixed_err, mixed_cpu = phase(base, MIXED, seconds, clients, server.pid)
        finally:
            stop.touch()
            proc.wait(300)
        batches = report.read_text() if report.exists() else "none"
    finally:
        server.terminate()
        server.wait(30)
    print(f"{clients} clients, {seconds:g} s per phase, writer: {batches} (batches, median seconds)")
    figures: dict[str, Any] = {"api_light_rps": round(light_rps, 1), "api_mixed_rps": round(mixed_rps, 1),
                               "api_load_errors": light_err + mixed_err, "api_load_writer_batches": batches}
    for name, rps, lat, err, cpu in (("light", light_rps, light, light_err, light_cpu),
                                     ("mixed", mixed_rps, mixed, mixed_err, mixed_cpu)):
        print(f"  {name}: {rps:7.1f} req/s ({err} errors), the server's CPU {cpu:.1f} ms per request")
        figures[f"api_{name}_server_cpu_ms_per_request"] = round(cpu, 2)
        for route, values in lat.items():
            key = route_key(route)
            p50, p99 = pct(values, 0.5), pct(values, 0.99)
            print(f"    {route:28s} {len(values):6d} requests  p50 {p50:8.1f} ms  p99 {p99:8.1f} ms")
            figures[f"api_{name}_p50_ms_{key}"] = round(p50, 1)
            figures[f"api_{name}_p99_ms_{key}"] = round(p99, 1)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--writer", nargs=3, metavar=("URL", "STOP", "REPORT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.writer:
        writer(args.writer[0], Path(args.writer[1]), Path(args.writer[2]))
        return
    from synthetic_year import postgres_db, postgres_url, postgres_year, sqlite_copy

    print("SYNTHETIC data: a year of 2,000 offers from 15 providers, and a writer storing "
          f"{BATCH:,}-offer batches of one synthetic provider")
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite_copy(Path(tmp) / "year.db")
        print("SQLite:")
        figures = load(f"sqlite:///{db}", args.seconds, args.clients, Path(tmp))
        db.unlink()
        pg = postgres_url("the load on PostgreSQL (api_*_postgres)")
        if pg:
            with postgres_db(pg, "api_load", template=postgres_year(pg)) as url:
                print("PostgreSQL (the same year, copied into a database of its own):")
                figures |= {f"{k}_postgres": v for k, v in load(url, args.seconds, args.clients, Path(tmp)).items()}
    figures |= machine("api")
    print(f"  machine: {figures['api_cores']} cores, load average {figures['api_load_average_1m']:.1f} "
          "(figures scale with free CPU)")
    print("  targets (SQLite): mixed routes p50 < 300 ms, >= 50 mixed requests/s; PostgreSQL of the same order")
    record(figures | {"api_load_data": "synthetic"})


if __name__ == "__main__":
    main()
