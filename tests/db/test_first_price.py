"""``db.reads.first_price_at`` reads the oldest start of the past and the open intervals apart
(each through its own index) and takes the smaller: the answer is the view's ``MIN`` (SQLite
and PostgreSQL), for one GPU, several, or every one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from db import labels, reads
from db.engine import session_scope
from db.migrate import init_db
from db.reader import in_transaction
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _offer(sku: str, gpu: str, price: float) -> NormalisedOffer:
    return NormalisedOffer(provider="p", sku=sku, region="r", kind="on_demand", term_months=0, gpu=gpu,
                           gpu_raw=gpu, gpu_count=1, price_per_hour=price, price_per_gpu_hour=price, currency="USD")


def _collect(engine: Engine, at: datetime, offers: list[NormalisedOffer]) -> None:
    with session_scope(engine) as s:
        prov = labels.ensure_provider(s, "p")
        store_stage.store_observation(s, "p", offers, at, prov.last_attempt_at)
        prov.last_attempt_at = prov.last_success_at = at


def test_first_price_is_the_oldest_start_of_past_and_open_intervals(engine: Engine) -> None:
    init_db(engine)
    # H100's first price moves to the past table when it changes; B200 appears later and only
    # ever has its open interval
    _collect(engine, T0, [_offer("a", "H100-SXM", 2.0)])
    _collect(engine, T0 + timedelta(hours=1), [_offer("a", "H100-SXM", 2.5)])
    _collect(engine, T0 + timedelta(hours=2), [_offer("a", "H100-SXM", 2.5), _offer("b", "B200", 5.0)])
    with engine.connect() as conn:
        reader = in_transaction(conn)
        assert reader.scalar("SELECT COUNT(*) FROM price_interval_past") == 1
        view_min = reader.scalar("SELECT MIN(first_seen) FROM price_interval")
        assert reads.first_price_at(reader, ["H100-SXM"]) == T0
        assert reads.first_price_at(reader, ["B200"]) == T0 + timedelta(hours=2)
        assert reads.first_price_at(reader, ["B200", "H100-SXM"]) == T0
        assert reads.first_price_at(reader) == T0 and int(view_min) == int(T0.timestamp())
        assert reads.first_price_at(reader, ["MI300X"]) is None
