"""API throughput: requests/s on ``/api/prices`` and ``/healthz`` with 20 concurrent clients, while
the collector writes, against the same figure without writes (baseline, same process, same store).

Real processes over real sockets on 127.0.0.1: ``gpu-tracker serve`` on a SQLite store filled by a
replay of every bundled recording (real payloads), a ``gpu-tracker run --replay`` collector
re-collecting every provider every few seconds (the writes), and 20 httpx clients in this process
alternating the two endpoints for a fixed time. Target: >= 100 requests/s under writes.

    .venv/bin/python bench/api_rps.py [--seconds 15] [--clients 20]

Writes ``api_rps_under_write``, ``api_rps_baseline`` (no writes), their ratio and p95 latencies
into ``bench/results.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._results import record  # noqa: E402
from bench._serve import TOKEN, env, free_port  # noqa: E402

ENDPOINTS = ("/api/prices", "/healthz")




def cli(*args: str, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tracker", *args], cwd=ROOT, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]


async def hammer(base: str, seconds: float, clients: int) -> tuple[float, float, int, int]:
    """(requests/s, p95 latency in ms, requests, errors) for ``clients`` concurrent loops."""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30,
                                 headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        deadline = time.monotonic() + seconds

        async def loop(i: int) -> None:
            nonlocal errors
            n = i
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                try:
                    r = await client.get(ENDPOINTS[n % len(ENDPOINTS)])
                    if r.status_code != 200:
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                latencies.append(time.monotonic() - t0)
                n += 1

        t0 = time.monotonic()
        await asyncio.gather(*(loop(i) for i in range(clients)))
        elapsed = time.monotonic() - t0
    latencies.sort()
    p95 = latencies[int(len(latencies) * 0.95)] * 1000 if latencies else float("nan")
    return len(latencies) / elapsed, p95, len(latencies), errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--clients", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'tracker.db'}"
        subprocess.run([sys.executable, "-m", "tracker", "--db", url, "scrape", "--replay"], cwd=ROOT, env=env(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=600)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = cli("--db", url, "serve", "--port", str(port))
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit("the server did not start")
                time.sleep(0.2)
            rows = len(httpx.get(f"{base}/api/prices", headers={"Authorization": f"Bearer {TOKEN}"}).json())
            asyncio.run(hammer(base, 2, args.clients))  # warm-up
            base_rps, base_p95, base_n, base_err = asyncio.run(hammer(base, args.seconds, args.clients))

            config = Path(tmp) / "collector.toml"
            config.write_text('default_interval = "3s"\n[scheduler]\njitter = "0.5s"\n')
            collector = cli("--config", str(config), "--db", url, "run", "--replay")
            try:
                time.sleep(8)  # its first cycle is under way
                rps, p95, n, err = asyncio.run(hammer(base, args.seconds, args.clients))
            finally:
                collector.terminate()
                collector.wait(60)
            import sqlite3

            with sqlite3.connect(Path(tmp) / "tracker.db") as conn:
                runs = conn.execute("SELECT count(*) FROM scrape_run").fetchone()[0]
        finally:
            server.terminate()
            server.wait(30)
    print(f"/api/prices ({rows} rows) and /healthz, {args.clients} clients, {args.seconds:g}s each")
    print(f"  without writes: {base_rps:7.1f} req/s  p95 {base_p95:6.1f} ms  ({base_n} requests, {base_err} errors)")
    print(f"  collector on:   {rps:7.1f} req/s  p95 {p95:6.1f} ms  ({n} requests, {err} errors; "
          f"{runs} scrape runs in the store)")
    load = os.getloadavg()[0]
    print(f"  ratio under writes / baseline: {rps / base_rps:.2f}  (target >= 100 req/s under writes)")
    print(f"  machine load average during the run: {load:.1f} on {os.cpu_count()} CPUs (figures scale with free CPU)")
    record({
        "api_rps_under_write": round(rps, 1),
        "api_rps_baseline": round(base_rps, 1),
        "api_rps_under_write_vs_baseline": round(rps / base_rps, 3),
        "api_p95_ms_under_write": round(p95, 1),
        "api_p95_ms_baseline": round(base_p95, 1),
        "api_errors_under_write": err,
        "api_bench_load_average": round(load, 1),
    })


if __name__ == "__main__":
    main()
