"""Benchmark: one collection cycle of 20 providers that each answer after 1 s (local server).

A small HTTP server on 127.0.0.1 answers every request after one second with one SYNTHETIC
offer; 20 synthetic scrapers each fetch their own path through the real collector (client,
retries, normalise, validate, store) at the default settings. Writes ``fanout_wall_s`` (the
cycle's wall time) and ``fanout_one_provider_s`` (the same with one provider: the baseline a
cycle cannot beat) to ``bench/results.json``. Each cycle starts from an empty store, so every
provider, offer and label is new (a first collection: the most a cycle writes).

With ``TRACKER_BENCH_DATABASE_URL`` (PostgreSQL) the same cycles run there too (each on an
empty database of the bench's own); without it they are skipped, and the output says so: ``fanout_wall_s_postgres`` and ``fanout_one_provider_s_postgres``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _results import machine, record
from synthetic_year import postgres_db, postgres_url

from db.engine import make_engine
from db.migrate import init_db
from scrapers.base import ScrapedOffer, Scraper
from scrapers.http import Http
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect

DELAY_S = 1.0
PROVIDERS = 20


async def _serve(ready: threading.Event, port_box: list[int], stop: asyncio.Event) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                await asyncio.sleep(DELAY_S)
                body = json.dumps({"sku": path.strip("/"), "price": 2.5}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port_box.append(server.sockets[0].getsockname()[1])
    ready.set()
    async with server:
        await stop.wait()


def scraper_class(k: int, port: int) -> type[Scraper]:
    name = f"synthetic-fanout-{k:02d}"

    async def fetch(self: Scraper, http: Http) -> Any:
        return await http.get_json(f"http://127.0.0.1:{port}/{name}")

    def parse(self: Scraper, raw: Any) -> list[ScrapedOffer]:
        return [self.offer(sku=raw["sku"], gpu_raw="H100 SXM", gpu_count=1, price_per_hour=raw["price"])]

    return type(f"Fanout{k}", (Scraper,), {"name": name, "display_name": f"{name} (synthetic)", "fetch": fetch,
                                          "parse": parse})


def cycle(classes: list[type[Scraper]], url: str) -> float:
    """Wall time of one collection cycle of ``classes`` into the empty store at ``url``."""
    engine = make_engine(url)
    init_db(engine)
    t0 = time.perf_counter()
    results = collect(engine, Settings(database=url), classes=classes)
    wall = time.perf_counter() - t0
    assert all(r.ok for r in results), [(r.provider, r.error_message) for r in results if not r.ok]
    engine.dispose()
    return wall


def main() -> None:
    ready, stop_box, port_box = threading.Event(), [], []
    loop = asyncio.new_event_loop()

    def run() -> None:
        asyncio.set_event_loop(loop)
        stop = asyncio.Event()
        stop_box.append(stop)
        loop.run_until_complete(_serve(ready, port_box, stop))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    port = port_box[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench-fanout-"))
    classes = [scraper_class(k, port) for k in range(PROVIDERS)]
    one = min(cycle(classes[:1], f"sqlite:///{tmp / f'one{i}.db'}") for i in range(2))
    wall = min(cycle(classes, f"sqlite:///{tmp / f'all{i}.db'}") for i in range(2))
    print(f"SYNTHETIC providers: one collection cycle of {PROVIDERS} providers answering after {DELAY_S:g} s: "
          f"{wall:.2f} s at the default concurrency ({Settings().http.concurrency}); one provider alone: {one:.2f} s")
    figures = {"fanout_wall_s": round(wall, 3), "fanout_one_provider_s": round(one, 3)}
    pg = postgres_url("the fan-out on PostgreSQL (fanout_*_postgres)")
    if pg:
        def on_postgres(some: list[type[Scraper]]) -> float:
            with postgres_db(pg, "fanout") as url:
                return cycle(some, url)

        pg_one = min(on_postgres(classes[:1]) for _ in range(2))
        pg_wall = min(on_postgres(classes) for _ in range(2))
        print(f"PostgreSQL: {pg_wall:.2f} s; one provider alone: {pg_one:.2f} s")
        figures |= {"fanout_wall_s_postgres": round(pg_wall, 3), "fanout_one_provider_s_postgres": round(pg_one, 3)}
    loop.call_soon_threadsafe(stop_box[0].set)
    thread.join(5)
    record(figures | machine("fanout"))


if __name__ == "__main__":
    main()
