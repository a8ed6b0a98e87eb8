"""GPUs free now: stored per offer as the newest count only, so counts that move every collection
never split a price interval, and the current price rows say them (both backends)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import labels, reads
from db.engine import session_scope
from db.reader import in_transaction
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def offer(sku: str, count: int | None, price: float = 2.0) -> NormalisedOffer:
    return NormalisedOffer(provider="p", sku=sku, region="r", kind="on_demand", term_months=0, gpu="H100-SXM",
                           gpu_raw="H100 SXM", gpu_count=1, price_per_hour=price, price_per_gpu_hour=price,
                           currency="USD", available=None if count is None else count > 0, available_count=count)


def collect(engine: Engine, at: datetime, *offers: NormalisedOffer) -> None:
    with session_scope(engine) as s:
        prov = labels.ensure_provider(s, "p")
        store_stage.store_observation(s, "p", list(offers), at, prov.last_attempt_at)
        prov.last_attempt_at = prov.last_success_at = at
        prov.last_status = "ok"


def now_rows(engine: Engine, at: datetime) -> dict[str, tuple[bool | None, int | None]]:
    with Session(engine) as s:
        return {r["sku"]: (r["available"], r["available_count"]) for r in reads.latest_prices(in_transaction(s.connection()), now=at)}


def intervals(engine: Engine) -> list[tuple[int, bool | None]]:
    """(first seen, available) of every interval, oldest first."""
    with Session(engine) as s:
        return [(r.first_seen, r.available) for r in sorted(reads.interval_rows(in_transaction(s.connection())), key=lambda r: r.first_seen)]


def test_a_moving_count_keeps_one_interval_and_shows_the_newest(engine: Engine) -> None:
    for hour, count in enumerate((9, 12, 8, 16)):
        collect(engine, T0 + hour * HOUR, offer("a", count), offer("b", None))
    assert now_rows(engine, T0 + 3 * HOUR) == {"a": (True, 16), "b": (None, None)}
    assert len(intervals(engine)) == 2  # one per offer: four counts, one interval


def test_sold_out_splits_the_interval_and_a_count_can_go_unstated(engine: Engine) -> None:
    collect(engine, T0, offer("a", 4))
    collect(engine, T0 + HOUR, offer("a", 0))
    assert now_rows(engine, T0 + HOUR) == {"a": (False, 0)}
    collect(engine, T0 + 2 * HOUR, offer("a", 3, price=2.5))  # a new interval (new price): the count follows
    assert now_rows(engine, T0 + 2 * HOUR) == {"a": (True, 3)}
    collect(engine, T0 + 3 * HOUR, replace(offer("a", None, price=2.5), available=True))
    assert now_rows(engine, T0 + 3 * HOUR) == {"a": (True, None)}  # no count stated: unknown, not the old 3
    assert [a for _, a in intervals(engine)] == [True, False, True]


def test_a_past_moment_has_no_count(engine: Engine) -> None:
    collect(engine, T0, offer("a", 5))
    collect(engine, T0 + HOUR, offer("a", 6))
    with Session(engine) as s:
        rows = reads.latest_prices(in_transaction(s.connection()), at=T0 + HOUR)
    assert [(r["available"], r["available_count"]) for r in rows] == [(True, None)]


def test_an_older_observation_never_overwrites_a_newer_count(engine: Engine) -> None:
    """``store_counts`` (the one writer, for collections and imports alike) writes a count only
    from the offer's newest observation: an import of older snapshots leaves today's count."""
    collect(engine, T0 + 2 * HOUR, offer("a", 5))
    with session_scope(engine) as s:
        conn = s.connection()
        [(oid,)] = conn.exec_driver_sql("SELECT offer_id FROM price_interval_open").all()
        store_stage.store_counts(conn, [(9, oid, int(T0.timestamp()))])  # seen two hours before
    assert now_rows(engine, T0 + 2 * HOUR) == {"a": (True, 5)}
    with session_scope(engine) as s:
        store_stage.store_counts(s.connection(), [(7, oid, int((T0 + 2 * HOUR).timestamp()))])
    assert now_rows(engine, T0 + 2 * HOUR) == {"a": (True, 7)}
