"""Pipeline: failure isolation, skipped providers, quarantine, secrets never stored."""

from __future__ import annotations

import gc
import threading
import time
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db import reads
from db.models import Provider, Quarantine, ScrapeRun
from db.reader import in_transaction
from tests.fakes import make_fake, offers_payload, routing_transport
from tracker.config.settings import Settings
from tracker.pipeline import store as store_stage
from tracker.pipeline.collect import PG_WRITERS, StoreTurns, collect

H100 = {"sku": "h100x1", "gpu": "H100 SXM", "count": 1, "price": 2.50}
H100x8 = {"sku": "h100x8", "gpu": "H100 SXM", "count": 8, "price": 20.0}


def fast_settings() -> Settings:
    return Settings(http={"timeout_s": 2, "retries": 1, "backoff_s": 0})


def runs(engine: Engine) -> dict[str, ScrapeRun]:
    with Session(engine) as s:
        return {r.provider: r for r in s.exec(select(ScrapeRun)).all()}


def test_failures_are_isolated_and_recorded(engine: Engine) -> None:
    good, broken, changed, slow, locked = (
        make_fake("good"), make_fake("broken"), make_fake("changed"), make_fake("slow"), make_fake("locked", ("LOCKED_KEY",))
    )

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    factory = routing_transport({
        "good": offers_payload(H100, H100x8),
        "broken": lambda req: httpx.Response(500, text="oops"),
        "changed": {"data": {"items": []}},
        "slow": timeout,
        "locked": offers_payload(H100),
    })
    results = collect(engine, fast_settings(), classes=[good, broken, changed, slow, locked],
                      transport_factory=factory, environ={})
    by = {r.provider: r for r in results}
    assert by["good"].status == "ok" and by["good"].offers_seen == 2
    assert by["broken"].status == "failed" and by["broken"].error_class == "FetchError"
    assert "HTTP 500" in (by["broken"].error_message or "")
    assert by["changed"].status == "failed" and by["changed"].error_class == "ParseError"
    assert "changed" in (by["changed"].error_message or "") and "offers" in (by["changed"].error_message or "")
    assert by["slow"].status == "failed" and "ReadTimeout" in (by["slow"].error_message or "")
    assert by["locked"].status == "skipped" and by["locked"].error_message == "locked: set LOCKED_KEY to enable"

    stored = runs(engine)
    assert {p: r.status for p, r in stored.items()} == {
        "good": "ok", "broken": "failed", "changed": "failed", "slow": "failed", "locked": "skipped"}
    assert stored["broken"].finished_at is not None and stored["broken"].error_class == "FetchError"
    with Session(engine) as s:
        providers = {i.provider for i in reads.interval_rows(in_transaction(s.connection()))}
        assert providers == {"good"}
        assert s.get(Provider, "broken").consecutive_failures == 1  # type: ignore[union-attr]
        assert s.get(Provider, "locked").consecutive_failures == 0  # type: ignore[union-attr]
        latest = reads.latest_prices(in_transaction(s.connection()))
    assert [(r["sku"], r["price_per_gpu_hour"]) for r in latest] == [("h100x1", 2.5), ("h100x8", 2.5)]


def test_empty_offer_list_is_a_failure_not_an_empty_truth(sqlite_engine: Engine) -> None:
    fake = make_fake("emptyish")
    first = collect(sqlite_engine, fast_settings(), classes=[fake], transport_factory=routing_transport({"emptyish": offers_payload(H100)}))
    assert first[0].ok
    second = collect(sqlite_engine, fast_settings(), classes=[fake], transport_factory=routing_transport({"emptyish": offers_payload()}))
    assert second[0].status == "failed" and second[0].error_class == "ParseError"
    with Session(sqlite_engine) as s:
        # the previous good data is still the current truth
        assert [r["sku"] for r in reads.latest_prices(in_transaction(s.connection()))] == ["h100x1"]


def test_absurd_prices_are_quarantined_with_reason(engine: Engine) -> None:
    fake = make_fake("q")
    payload = offers_payload(
        H100,
        {"sku": "zero", "gpu": "H100 SXM", "price": 0},
        {"sku": "neg", "gpu": "H100 SXM", "price": -3},
        {"sku": "absurd", "gpu": "H100 SXM", "count": 1, "price": 250.0},
        {"sku": "nogpu", "gpu": "H100 SXM", "count": 0, "price": 1.0},
        {"sku": "contact", "gpu": "H100 SXM", "price": None},
    )
    [result] = collect(engine, fast_settings(), classes=[fake], transport_factory=routing_transport({"q": payload}))
    assert result.ok and result.quarantined == 4
    with Session(engine) as s:
        reasons = {q.sku: q.reason for q in s.exec(select(Quarantine)).all()}
        priced = {r["sku"] for r in reads.latest_prices(in_transaction(s.connection()))}
    assert set(reasons) == {"zero", "neg", "absurd", "nogpu"}
    assert "plausibility limit" in reasons["absurd"] and "not a positive number" in reasons["zero"]
    assert priced == {"h100x1"}  # "contact" is an offer without a price, not a price of 0


def test_price_jump_is_held_until_confirmed(sqlite_engine: Engine) -> None:
    fake = make_fake("jumpy")
    settings = fast_settings()

    def scrape(price: float) -> None:
        collect(sqlite_engine, settings, classes=[fake],
                transport_factory=routing_transport({"jumpy": offers_payload({**H100, "price": price})}))

    def current() -> float:
        with Session(sqlite_engine) as s:
            return reads.latest_prices(in_transaction(s.connection()))[0]["price_per_hour"] if reads.latest_prices(in_transaction(s.connection())) else float("nan")

    scrape(2.50)
    scrape(0.25)  # a glitch: ten times cheaper
    with Session(sqlite_engine) as s:
        assert not reads.latest_prices(in_transaction(s.connection())), "the glitch must not become the current price"
        assert "jumped" in s.exec(select(Quarantine)).one().reason
    scrape(2.50)
    assert current() == 2.50
    scrape(0.40)
    scrape(0.40)  # a real cut, confirmed by a second scrape
    assert current() == 0.40


@pytest.mark.parametrize("echo", [str, str.lower, lambda k: quote(k, safe="")], ids=["as-is", "lowercased", "url-encoded"])
def test_secrets_never_reach_the_run_row_or_the_log(
    sqlite_engine: Engine, echo: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """An API that echoes the key back in its error body: the message is kept, the key is not."""
    from scrapers.base import ParseError

    secret = "SK+Live/1234567890="

    class Echo(make_fake("secretive", ("SECRETIVE_KEY",))):  # type: ignore[misc]
        def parse(self, raw):  # type: ignore[no-untyped-def]
            raise ParseError(f"secretive: GraphQL error: invalid token={echo(secret)} for query")

    with caplog.at_level("DEBUG"):
        [result] = collect(sqlite_engine, fast_settings(), classes=[Echo],
                           transport_factory=routing_transport({"secretive": offers_payload(H100)}),
                           environ={"SECRETIVE_KEY": secret})
    assert result.status == "failed" and result.error_message == "secretive: GraphQL error: invalid token=*** for query"
    with Session(sqlite_engine) as s:
        run = s.exec(select(ScrapeRun)).one()
    assert run.error_message == result.error_message
    assert secret.lower() not in caplog.text.lower() and quote(secret, safe="") not in caplog.text


def test_runtime_tokens_are_scrubbed_too(sqlite_engine: Engine) -> None:
    class Oauth(make_fake("oauth")):  # type: ignore[misc]
        async def fetch(self, http):  # type: ignore[no-untyped-def]
            self.remember_secret("tok-abcdef-123456")
            raise ValueError("server said: bad bearer tok-abcdef-123456")

    [result] = collect(sqlite_engine, fast_settings(), classes=[Oauth], transport_factory=routing_transport({"oauth": {}}))
    assert result.error_message == "server said: bad bearer ***"


@pytest.mark.parametrize("status", [429, 503])
def test_retry_then_success_is_ok(sqlite_engine: Engine, status: int) -> None:
    fake = make_fake("flaky")
    calls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return httpx.Response(status, headers={"Retry-After": "0"})
        return httpx.Response(200, json=offers_payload(H100))

    [result] = collect(sqlite_engine, fast_settings(), classes=[fake], transport_factory=routing_transport({"flaky": handler}))
    assert result.ok and calls["n"] == 2


def test_spot_above_on_demand_of_the_same_sku_is_quarantined(sqlite_engine: Engine) -> None:
    fake = make_fake("bids")
    payload = offers_payload(
        {"sku": "m1", "gpu": "RTX 4090", "price": 0.30},
        {"sku": "m1", "gpu": "RTX 4090", "price": 29.33, "kind": "spot"},
        {"sku": "m2", "gpu": "RTX 4090", "price": 0.40},
        {"sku": "m2", "gpu": "RTX 4090", "price": 0.20, "kind": "spot"},
    )
    [result] = collect(sqlite_engine, fast_settings(), classes=[fake], transport_factory=routing_transport({"bids": payload}))
    assert result.quarantined == 1
    with Session(sqlite_engine) as s:
        assert {(r["sku"], r["kind"]) for r in reads.latest_prices(in_transaction(s.connection()))} == {("m1", "on_demand"), ("m2", "on_demand"), ("m2", "spot")}
        assert "above the on-demand price" in s.exec(select(Quarantine)).one().reason


def test_a_stuck_provider_is_cut_off_by_the_provider_timeout(sqlite_engine: Engine) -> None:
    import asyncio

    class Stuck(make_fake("stuck")):  # type: ignore[misc]
        async def fetch(self, http):  # type: ignore[no-untyped-def]
            await asyncio.sleep(30)

    settings = Settings(http={"timeout_s": 2, "retries": 0, "provider_timeout_s": 1})
    [result] = collect(sqlite_engine, settings, classes=[Stuck], transport_factory=routing_transport({"stuck": {}}))
    assert result.status == "failed" and "longer than 1s" in (result.error_message or "")


def test_debug_logging_never_prints_a_key_from_a_query_string(sqlite_engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from scrapers.base import Http
    from tracker import logs

    class KeyInQuery(make_fake("keyinquery", ("KEYINQUERY_KEY",))):  # type: ignore[misc]
        async def fetch(self, http: Http):  # type: ignore[no-untyped-def]
            return await http.get_json("https://prices.example.test/skus", params={"key": self.credential("KEYINQUERY_KEY")})

    logs.configure("text", logging.DEBUG)
    try:
        [result] = collect(sqlite_engine, fast_settings(), classes=[KeyInQuery],
                           transport_factory=routing_transport({"keyinquery": offers_payload(H100)}),
                           environ={"KEYINQUERY_KEY": "sk-query-secret-42"})
    finally:
        logs.configure("text", logging.WARNING)
    assert result.ok
    assert "sk-query-secret-42" not in capsys.readouterr().err


def test_non_finite_numbers_are_quarantined_not_crashing_the_run(engine: Engine) -> None:
    fake = make_fake("nans")
    payload = offers_payload(H100, {"sku": "nanprice", "gpu": "H100 SXM", "price": float("nan")},
                             {"sku": "infprice", "gpu": "H100 SXM", "price": float("inf")},
                             {"sku": "nancount", "gpu": "H100 SXM", "count": float("nan"), "price": 2.0})
    [result] = collect(engine, fast_settings(), classes=[fake], transport_factory=routing_transport({"nans": payload}))
    assert result.ok and result.quarantined == 3
    with Session(engine) as s:
        assert [r["sku"] for r in reads.latest_prices(in_transaction(s.connection()))] == ["h100x1"]
        reasons = {q.sku: q.reason for q in s.exec(select(Quarantine)).all()}
    assert "not a positive number" in reasons["nanprice"] and "not a positive number" in reasons["nancount"]


def test_absurd_prices_in_other_currencies_are_quarantined(sqlite_engine: Engine) -> None:
    fake = make_fake("euro")
    payload = offers_payload({"sku": "ok", "gpu": "H100 SXM", "price": 2.4, "currency": "EUR"},
                             {"sku": "absurd", "gpu": "H100 SXM", "price": 90000, "currency": "EUR"},
                             {"sku": "unknown", "gpu": "H100 SXM", "price": 3.0, "currency": "XAU"})
    [result] = collect(sqlite_engine, fast_settings(), classes=[fake], transport_factory=routing_transport({"euro": payload}))
    assert result.quarantined == 2
    with Session(sqlite_engine) as s:
        reasons = {q.sku: q.reason for q in s.exec(select(Quarantine)).all()}
    assert "plausibility limit" in reasons["absurd"] and "set currency_rates.XAU" in reasons["unknown"]


def test_a_new_offer_far_below_the_market_is_held_until_confirmed(sqlite_engine: Engine) -> None:
    market = make_fake("market")
    newcomer = make_fake("newcomer")
    settings = fast_settings()
    collect(sqlite_engine, settings, classes=[market], transport_factory=routing_transport({"market": offers_payload(
        *({"sku": f"m{i}", "gpu": "H100 SXM", "price": 2.0 + i / 10} for i in range(5)))}))
    glitch = offers_payload({"sku": "cheap", "gpu": "H100 SXM", "price": 0.03}, {"sku": "fair", "gpu": "H100 SXM", "price": 1.5})

    def scrape() -> None:
        collect(sqlite_engine, settings, classes=[newcomer], transport_factory=routing_transport({"newcomer": glitch}))

    scrape()
    with Session(sqlite_engine) as s:
        assert [r["sku"] for r in reads.latest_prices(in_transaction(s.connection()), providers=["newcomer"])] == ["fair"]
        assert "market median" in s.exec(select(Quarantine)).one().reason
    scrape()  # the same price again: confirmed, now stored
    with Session(sqlite_engine) as s:
        assert [r["sku"] for r in reads.latest_prices(in_transaction(s.connection()), providers=["newcomer"])] == ["cheap", "fair"]


@pytest.mark.parametrize("on_before", [True, False])
def test_a_cycle_holds_off_the_cyclic_collector_and_restores_it(sqlite_engine: Engine, on_before: bool) -> None:
    """The cyclic collector is off while providers are parsed and stored, and as it was after,
    also when a provider fails (the state is restored whatever happens in the cycle)."""
    seen: list[bool] = []
    fake = make_fake("gcwatch")

    def parse(self: Any, raw: Any) -> Any:
        seen.append(gc.isenabled())
        return fake.parse(self, raw)

    watched = type("Fake_gcwatch", (fake,), {"parse": parse})
    broken = make_fake("gcbroken")
    factory = routing_transport({"gcwatch": offers_payload(H100), "gcbroken": lambda req: httpx.Response(500)})
    (gc.enable if on_before else gc.disable)()
    try:
        results = collect(sqlite_engine, fast_settings(), classes=[watched, broken], transport_factory=factory)
        assert gc.isenabled() is on_before
    finally:
        gc.enable()
    assert {r.provider: r.status for r in results} == {"gcwatch": "ok", "gcbroken": "failed"}
    assert seen == [False]


def test_a_cycle_writes_two_collections_at_once_on_postgresql_and_one_at_a_time_on_sqlite(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL takes ``PG_WRITERS`` collections at once, SQLite one at a time (each store is
    held long enough for a second writer to begin meanwhile, where one may); every provider's
    collection is stored whole either way."""
    real = store_stage.store_observation
    guard = threading.Lock()
    active, most = [0], [0]

    def watched(*args: Any, **kwargs: Any) -> Any:
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        try:
            time.sleep(0.2)
            return real(*args, **kwargs)
        finally:
            with guard:
                active[0] -= 1

    monkeypatch.setattr(store_stage, "store_observation", watched)
    fakes = [make_fake(f"writer{i}") for i in range(4)]
    factory = routing_transport({f"writer{i}": offers_payload({**H100, "price": 2.0 + i}) for i in range(4)})
    results = collect(engine, fast_settings(), classes=fakes, transport_factory=factory)
    assert [r.status for r in results] == ["ok"] * 4
    assert most[0] == (PG_WRITERS if engine.dialect.name == "postgresql" else 1)
    with Session(engine) as s:
        latest = reads.latest_prices(in_transaction(s.connection()))
    assert sorted((r["provider"], r["price_per_gpu_hour"]) for r in latest) == [
        (f"writer{i}", 2.0 + i) for i in range(4)]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_closing_the_turns_waits_for_the_write_in_progress_and_admits_no_other(dialect: str) -> None:
    """An exiting scheduler (``StoreTurns.close``) waits for a write holding a turn, then holds
    every turn: no collection writes after it, on either backend."""
    turns, store = StoreTurns(), SimpleNamespace(dialect=SimpleNamespace(name=dialect))
    writing, done = threading.Event(), threading.Event()

    def write() -> None:
        with turns.turn(store):  # type: ignore[arg-type]
            writing.set()
            done.wait(5)

    writer = threading.Thread(target=write)
    writer.start()
    assert writing.wait(5)
    closed: list[bool] = []
    closer = threading.Thread(target=lambda: closed.append(turns.close(5)))
    closer.start()
    closer.join(0.3)
    assert closer.is_alive() and not closed  # still waiting for the write in progress
    done.set()
    closer.join(5)
    writer.join(5)
    assert closed == [True]
    late = threading.Event()

    def late_write() -> None:
        with turns.turn(store):  # type: ignore[arg-type]
            late.set()

    threading.Thread(target=late_write, daemon=True).start()
    assert not late.wait(0.3)  # never admitted
