"""Fan-out: every provider of a cycle runs at once by default, and all their clients share one
TLS context built once (not one per provider on the event loop); the cycle's writes run on one
thread, the run rows together and each provider's collection in a transaction of its own."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db import reads
from db.models import Provider, ScrapeRun
from db.reader import in_transaction
from scrapers.http import shared_ssl_context
from scrapers.registry import all_scrapers
from tests.fakes import make_fake, offers_payload, routing_transport
from tracker.config.settings import Settings
from tracker.pipeline import collect as collect_mod

H100 = {"sku": "h100x1", "gpu": "H100 SXM", "count": 1, "price": 2.50}


def test_default_concurrency_covers_every_registered_provider() -> None:
    assert Settings().http.concurrency >= len(all_scrapers())


def test_every_client_of_a_cycle_shares_one_tls_context(sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = httpx.AsyncClient

    def spy(*args: Any, **kwargs: Any) -> httpx.AsyncClient:
        seen.append(kwargs.get("verify"))
        return real(*args, **kwargs)

    monkeypatch.setattr(collect_mod.httpx, "AsyncClient", spy)
    fakes = [make_fake(f"tls{k}") for k in range(3)]

    in_flight = {"now": 0, "most": 0}

    async def slow(request: httpx.Request) -> httpx.Response:
        in_flight["now"] += 1
        in_flight["most"] = max(in_flight["most"], in_flight["now"])
        await asyncio.sleep(0.2)
        in_flight["now"] -= 1
        return httpx.Response(200, json=offers_payload(H100))

    results = collect_mod.collect(sqlite_engine, Settings(http={"retries": 0}), classes=fakes,
                                  transport_factory=lambda _name: httpx.MockTransport(slow))
    assert all(r.ok for r in results), [(r.provider, r.error_message) for r in results]
    assert len(seen) == 3 and all(v is shared_ssl_context() for v in seen)
    assert in_flight["most"] == 3  # the three providers waited at the same time


def test_run_rows_go_in_together_and_each_collection_commits_alone(engine: Engine,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    commits: list[str] = []
    event.listen(engine, "commit", lambda _conn: commits.append(threading.current_thread().name))
    real_store = collect_mod.store_stage.store_observation

    def store(session: Any, provider: str, *args: Any, **kwargs: Any) -> Any:
        if provider == "w_store":
            raise RuntimeError("disk full while storing w_store")
        return real_store(session, provider, *args, **kwargs)

    monkeypatch.setattr(collect_mod.store_stage, "store_observation", store)
    names = ["w_ok1", "w_ok2", "w_store", "w_http"]
    routes: dict[str, Any] = {n: offers_payload({**H100, "sku": n}) for n in names}
    routes["w_http"] = lambda _req: httpx.Response(500, text="down")
    results = collect_mod.collect(engine, Settings(http={"retries": 0}), classes=[make_fake(n) for n in names],
                                  transport_factory=routing_transport(routes))
    by = {r.provider: r for r in results}
    assert {p: r.status for p, r in by.items()} == {"w_ok1": "ok", "w_ok2": "ok", "w_store": "failed", "w_http": "failed"}
    assert by["w_store"].error_class == "RuntimeError" and "disk full" in (by["w_store"].error_message or "")
    # one transaction for the four run rows, then one per provider, all on the cycle's writer thread
    assert len(commits) == 1 + len(names)
    assert all(name.startswith("collect-writer") for name in commits), commits
    with Session(engine) as s:
        stored = {r.provider: r.status for r in s.exec(select(ScrapeRun)).all()}
        priced = {r["provider"] for r in reads.latest_prices(in_transaction(s.connection()))}
    assert stored == {p: r.status for p, r in by.items()}
    assert priced == {"w_ok1", "w_ok2"}  # the failed store left nothing behind


def test_the_market_is_asked_only_when_a_collection_lists_a_new_offer(engine: Engine,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    real = reads.market_medians

    def spy(*args: Any, **kwargs: Any) -> dict[str, float]:
        asked.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(reads, "market_medians", spy)
    fake = make_fake("steady")

    def scrape(*rows: dict[str, Any]) -> None:
        [result] = collect_mod.collect(engine, Settings(http={"retries": 0}), classes=[fake],
                                       transport_factory=routing_transport({"steady": offers_payload(*rows)}))
        assert result.ok, result.error_message

    scrape(H100)
    assert len(asked) == 1  # a first collection: every offer is new
    scrape({**H100, "price": 2.6})
    assert len(asked) == 1  # the same offer at another price: judged against its own last price
    scrape({**H100, "price": 2.6}, {**H100, "sku": "h100x1-b"})
    assert len(asked) == 2


def test_the_run_rows_of_a_cycle_create_and_rename_its_providers(engine: Engine) -> None:
    settings = Settings(http={"retries": 0})
    routes = routing_transport({n: offers_payload({**H100, "sku": n}) for n in ("p_one", "p_two")})
    collect_mod.collect(engine, settings, classes=[make_fake("p_one")], transport_factory=routes)
    renamed = type("Renamed", (make_fake("p_one"),), {"display_name": "P One Cloud"})
    results = collect_mod.collect(engine, settings, classes=[renamed, make_fake("p_two")], transport_factory=routes)
    assert all(r.ok for r in results), [(r.provider, r.error_message) for r in results]
    with Session(engine) as s:
        rows = {p.name: p for p in s.exec(select(Provider)).all()}
        run_of = {r.id: r.provider for r in s.exec(select(ScrapeRun)).all()}
    assert {n: p.display_name for n, p in rows.items()} == {"p_one": "P One Cloud", "p_two": "P_Two"}
    assert all(p.consecutive_failures == 0 and p.last_status == "ok" for p in rows.values())
    assert [run_of[r.run_id] for r in results] == ["p_one", "p_two"]  # each run id is its own provider's
