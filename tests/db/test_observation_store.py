"""The set-based store: continuity needs the previous attempt; counts tell new, changed and returned apart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db import labels, reads
from db.engine import session_scope
from db.models import Offer
from db.reader import in_transaction
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def offers(s: Session) -> dict[tuple[str, str, str, int], Offer]:
    """Provider ``p``'s stored offers by identity."""
    return {(o.sku, o.region, o.kind, o.term_months): o for o in s.exec(select(Offer).where(Offer.provider == "p")).all()}


def offer(sku: str, price: float = 2.0) -> NormalisedOffer:
    return NormalisedOffer(provider="p", sku=sku, region="r", kind="on_demand", term_months=0, gpu="H100-SXM",
                           gpu_raw="H100 SXM", gpu_count=1, price_per_hour=price, price_per_gpu_hour=price,
                           currency="USD", available=True)


class Provider:
    """A provider's collection attempts, recorded the way the collector records them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def ok(self, at: datetime, *offers: NormalisedOffer, max_gap: timedelta | None = None) -> labels.StoreStats:
        with session_scope(self.engine) as s:
            prov = labels.ensure_provider(s, "p")
            stats = store_stage.store_observation(s, "p", list(offers), at, prov.last_attempt_at, max_gap=max_gap)
            prov.last_attempt_at = prov.last_success_at = at
            prov.last_status = "ok"
            return stats

    def failed(self, at: datetime) -> int:
        with session_scope(self.engine) as s:
            prov = labels.ensure_provider(s, "p")
            closed = store_stage.record_failed_attempt(s, "p", at)
            prov.last_attempt_at, prov.last_status = at, "failed"
            return closed

    def intervals(self, sku: str | None = None) -> list[tuple[float, datetime, datetime, datetime | None]]:
        with Session(self.engine) as s:
            ids = {o.id for o in offers(s).values() if sku is None or o.sku == sku}
            return [(r.price_per_hour, r.first_seen, r.last_seen, r.ends_at) for r in reads.interval_rows(in_transaction(s.connection()))
                    if r.offer_id in ids]


def test_a_failed_collection_ends_the_interval_even_at_the_same_price(engine: Engine) -> None:
    p = Provider(engine)
    p.ok(T0, offer("a"))
    p.ok(T0 + HOUR, offer("a"))
    assert p.failed(T0 + 2 * HOUR) == 1
    stats = p.ok(T0 + 3 * HOUR, offer("a"))
    assert p.intervals() == [(2.0, T0, T0 + HOUR, T0 + 2 * HOUR), (2.0, T0 + 3 * HOUR, T0 + 3 * HOUR, None)]
    assert (stats.new_offers, stats.prices_changed, stats.returned, stats.unchanged) == (0, 0, 1, 0)


def test_a_missing_collection_longer_than_the_gap_allows_is_a_gap(engine: Engine) -> None:
    p = Provider(engine)
    p.ok(T0, offer("a"))
    stats = p.ok(T0 + 6 * HOUR, offer("a"), max_gap=2 * HOUR)
    assert stats.returned == 1 and len(p.intervals()) == 2
    assert p.ok(T0 + 7 * HOUR, offer("a"), max_gap=2 * HOUR).unchanged == 1


def test_counts_tell_new_changed_and_returned_apart(engine: Engine) -> None:
    p = Provider(engine)
    first = p.ok(T0, offer("a"), offer("b"), offer("c"))
    assert (first.new_offers, first.prices_changed, first.returned) == (3, 0, 0)
    second = p.ok(T0 + HOUR, offer("a"), offer("b", 1.5))  # c is gone: its interval ends here
    assert (second.new_offers, second.prices_changed, second.returned, second.unchanged) == (0, 1, 0, 1)
    assert p.intervals("c") == [(2.0, T0, T0, T0 + HOUR)]
    third = p.ok(T0 + 2 * HOUR, offer("a"), offer("b", 1.5), offer("c"), offer("d"))
    assert (third.new_offers, third.prices_changed, third.returned, third.unchanged) == (1, 0, 1, 2)


def test_previous_prices_and_current_list_come_from_the_current_state(engine: Engine) -> None:
    p = Provider(engine)
    p.ok(T0, offer("a", 3.0), offer("b"))
    p.ok(T0 + HOUR, offer("a", 2.5))
    with Session(engine) as s:
        assert store_stage.previous_prices(s.connection(), store_stage.provider_state(s.connection(), "p")) == {("a", "r", "on_demand", 0): 2.5, ("b", "r", "on_demand", 0): 2.0}
        assert [r["sku"] for r in reads.latest_prices(in_transaction(s.connection()), include_stale=True)] == ["a"]
    p.failed(T0 + 2 * HOUR)
    with Session(engine) as s:  # held: the last good list still shows while the provider fails
        assert [(r["sku"], r["price_per_hour"]) for r in reads.latest_prices(in_transaction(s.connection()), include_stale=True)] == [("a", 2.5)]


def test_market_medians_are_the_current_usd_prices_per_gpu(engine: Engine) -> None:
    p = Provider(engine)
    p.ok(T0, offer("a", 1.0), offer("b", 2.0), offer("c", 9.0), offer("gone", 50.0))
    p.ok(T0 + HOUR, offer("a", 1.0), offer("b", 3.0), offer("c", 9.0))  # "gone" is no longer listed
    with Session(engine) as s:
        assert reads.market_medians(in_transaction(s.connection()), 3) == {"H100-SXM": 3.0}
        assert reads.market_medians(in_transaction(s.connection()), 4) == {}
        current = [r["price_per_gpu_hour"] for r in reads.latest_prices(in_transaction(s.connection()), include_unmapped=False, include_stale=True)]
        assert sorted(current) == [1.0, 3.0, 9.0]


def test_offer_rows_written_in_bulk_read_back_like_orm_rows(engine: Engine) -> None:
    """The store writes offers with driver-level statements; times and ``extra`` must read back
    as the ORM writes them, and a changed attribute or ``extra`` is updated in place."""
    p = Provider(engine)
    tagged = NormalisedOffer(**{**{f: getattr(offer("a"), f) for f in NormalisedOffer.__dataclass_fields__},
                                "extra": {"note": "x", "n": [1, 2]}})
    p.ok(T0, tagged, offer("b"))
    with Session(engine) as s:
        rows = offers(s)
        a, b = rows[("a", "r", "on_demand", 0)], rows[("b", "r", "on_demand", 0)]
        assert (a.first_seen, a.last_seen, a.extra, b.extra) == (T0, T0, {"note": "x", "n": [1, 2]}, {})
    moved = NormalisedOffer(**{**{f: getattr(offer("a"), f) for f in NormalisedOffer.__dataclass_fields__},
                               "gpu_raw": "H100 SXM5 80GB", "vcpus": 26.0})
    stats = p.ok(T0 + HOUR, moved, offer("b"))
    assert stats.unchanged == 2  # attributes are not part of the price: the intervals continue
    with Session(engine) as s:
        rows = offers(s)
        a = rows[("a", "r", "on_demand", 0)]
        assert (a.gpu_raw, a.vcpus, a.extra, a.first_seen, a.last_seen) == ("H100 SXM5 80GB", 26.0, {}, T0, T0 + HOUR)
        assert rows[("b", "r", "on_demand", 0)].last_seen == T0 + HOUR
        assert [r[1:] for r in p.intervals("a")] == [(T0, T0 + HOUR, None)]
