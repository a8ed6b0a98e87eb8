"""The reads validation makes in every collection's write transaction: the market medians and
the prices held for confirmation, each one lean statement that must give what the full reads give."""

from __future__ import annotations

import statistics
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import reads
from db.engine import make_engine
from db.reader import in_transaction
from tests.fakes import make_fake, offers_payload, routing_transport
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.pipeline.validate import HELD


def test_market_medians_are_those_of_the_listed_usd_prices(replay_store: str) -> None:
    engine = make_engine(replay_store)
    try:
        with Session(engine) as s:
            by_gpu: dict[str, list[float]] = {}
            for row in reads.latest_prices(in_transaction(s.connection()), include_unmapped=False):
                if row["currency"] == "USD" and row["gpu"]:
                    by_gpu.setdefault(row["gpu"], []).append(row["price_per_gpu_hour"])
            for least in (1, 3):
                expected = {g: statistics.median(ps) for g, ps in by_gpu.items() if len(ps) >= least}
                assert expected and reads.market_medians(in_transaction(s.connection()), least) == expected
    finally:
        engine.dispose()


def test_pending_jumps_are_the_held_prices_of_the_latest_good_run(engine: Engine) -> None:
    settings = Settings(http={"retries": 0})
    market, newcomer = make_fake("market"), make_fake("newcomer")
    collect(engine, settings, classes=[market], transport_factory=routing_transport({"market": offers_payload(
        *({"sku": f"m{i}", "gpu": "H100 SXM", "price": 2.0 + i / 10} for i in range(5)))}))

    def scrape(route: Any) -> None:
        collect(engine, settings, classes=[newcomer], transport_factory=routing_transport({"newcomer": route}))

    def pending() -> dict[tuple[str, str, str, int], float]:
        with Session(engine) as s:
            return reads.pending_jumps(in_transaction(s.connection()), "newcomer", HELD)

    glitch = offers_payload({"sku": "cheap", "gpu": "H100 SXM", "price": 0.03}, {"sku": "fair", "gpu": "H100 SXM", "price": 1.5})
    scrape(glitch)
    [(identity, price)] = pending().items()
    assert identity[0] == "cheap" and price == 0.03
    scrape(lambda _req: httpx.Response(500, text="down"))
    assert pending() == {identity: 0.03}  # a failed run holds nothing: the last good one counts
    scrape(glitch)  # seen again at the same price: confirmed and stored
    assert pending() == {}
