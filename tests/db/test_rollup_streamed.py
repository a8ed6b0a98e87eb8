"""A window too dense to hold in one chunk (an import of millions of offers) is refreshed from a
stream of whole offers tallied per bucket (``db.rollups._refresh_streamed``): on random histories,
and on a store with an aggregator's clouds and fractional-GPU offers (SQLite and PostgreSQL), it
leaves the same day rows, hourly runs (each series' newest run kept apart) and index rows as the
one-pass refresh of the same window."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from db import labels, rollups
from db.engine import session_scope
from tests.analysis.test_rollup_equivalence import MIN, T0, clear
from tests.db.test_store_refresh import (
    assert_newest_runs_apart,
    events,
    record,
    rollup_rows,
)
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer


def index_rows(conn: Connection) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(text(
        "SELECT gpu_id, bucket, provider_id, kind_id, via, median, offers FROM index_day "
        "ORDER BY gpu_id, bucket, provider_id, kind_id, via"))]


def refreshed(engine: Engine, provider: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The roll-ups after refreshing ``provider``'s whole window read ``chunk`` intervals at a time
    (rolled back after), whether the window was streamed and the number of offers it counts."""
    streamed: list[int] = []
    real = rollups._refresh_streamed

    def spy(*args: Any, **kwargs: Any) -> int:
        streamed.append(1)
        return real(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(rollups, "FETCH_CHUNK", chunk)
        m.setattr(rollups, "_refresh_streamed", spy)
        with engine.connect() as conn:
            pid = labels.lookup(conn, "provider", [provider])[0]
            lo, hi, offers = conn.execute(text(
                "SELECT MIN(first_seen), MAX(last_seen), COUNT(DISTINCT offer_id) FROM price_interval "
                "WHERE provider_id = :p AND gpu_id IS NOT NULL AND currency_id = :usd"),
                {"p": pid, "usd": labels.usd_id(conn)}).one()
            if lo is None:  # nothing the roll-ups count
                return [], [], [], False, 0
            rollups.refresh(conn, pid, int(lo) - 2 * 86_400, int(hi) + 2 * 86_400)
            assert_newest_runs_apart(conn)
            out = (*rollup_rows(conn), index_rows(conn), bool(streamed), offers)
            conn.rollback()
    return out


def assert_streamed_like_one_pass(engine: Engine, providers: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for provider in providers:
        *whole, whole_streamed, offers = refreshed(engine, provider, 1 << 30, monkeypatch)
        assert not whole_streamed
        for chunk in (1, 3):
            *chunked, was_streamed, _offers = refreshed(engine, provider, chunk, monkeypatch)
            assert chunked == whole
            if chunk == 1 and offers > 2:  # chunks of whole offers, the last one whole to the end
                assert was_streamed


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=events)
def test_a_streamed_refresh_equals_one_pass_on_random_histories(engine: Engine, monkeypatch: pytest.MonkeyPatch,
                                                               history) -> None:  # noqa: ANN001
    clear(engine)
    record(engine, history)
    with engine.connect() as conn:
        stored = sorted(set(labels.names(conn, "provider").values()) & {p for p, *_rest in history})
    assert_streamed_like_one_pass(engine, stored, monkeypatch)


def test_a_streamed_refresh_keeps_clouds_apart_and_fractions_out_of_the_index(engine: Engine,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An aggregator's offers through two clouds and its own, a fractional-GPU offer, two GPUs and
    two kinds, prices that change and offers that come and go over three days."""
    def offer(sku: str, gpu: str, count: float, price: float, via: str | None, kind: str = "on_demand") -> NormalisedOffer:
        return NormalisedOffer(provider="shadeform", sku=sku, region="r", kind=kind, term_months=0, gpu=gpu,
                               gpu_raw=gpu, gpu_count=count, price_per_hour=price * count, price_per_gpu_hour=price,
                               currency="USD", available=True, extra={"via": via} if via else {})

    at = T0
    for step in range(10):
        listed = [offer("a", "H100-SXM", 8, 2.0 + step % 3, "lambda"), offer("b", "H100-SXM", 1, 2.5, "runpod"),
                  offer("c", "H100-SXM", 0.5, 1.25 + step % 2, None), offer("d", "L4", 1, 0.5, None, "spot")]
        listed += [offer(f"e{step}", "H100-SXM", 1, 3.0 + step / 4, "lambda")] if step % 2 else []
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, "shadeform")
            store_stage.store_offers(s, "shadeform", listed[step % 2:], at, prov.last_attempt_at)
            prov.last_attempt_at = at
        at += timedelta(hours=7) + 13 * MIN
    with engine.connect() as conn:
        assert len(labels.names(conn, "provider")) >= 3  # the clouds' series keys
        assert conn.execute(text("SELECT COUNT(*) FROM price_interval")).scalar_one() > 10
    assert_streamed_like_one_pass(engine, ["shadeform"], monkeypatch)
