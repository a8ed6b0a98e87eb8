"""The price store: intervals extend on unchanged prices, open on changes, keep gaps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db import labels, reads
from db.engine import mask_url, session_scope
from db.models import Offer, Provider
from db.reader import in_transaction
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def offer(sku: str = "a", price: float = 2.0, count: float = 1, available: bool | None = True, gpu: str | None = "H100-SXM") -> NormalisedOffer:
    return NormalisedOffer(
        provider="p", sku=sku, region="r", kind="on_demand", term_months=0, gpu=gpu, gpu_raw="H100 SXM",
        gpu_count=count, price_per_hour=price, price_per_gpu_hour=price / count, currency="USD", available=available,
    )


def scrape(engine: Engine, at: datetime, *offers: NormalisedOffer) -> labels.StoreStats:
    with session_scope(engine) as s:
        prov = labels.ensure_provider(s, "p")
        stats = store_stage.store_offers(s, "p", list(offers), at, prov.last_success_at)
        prov.last_success_at = at
        return stats


def intervals(engine: Engine) -> list[tuple[float, datetime, datetime, int]]:
    with Session(engine) as s:
        return [(r.price_per_hour, r.first_seen, r.last_seen, r.observations) for r in reads.interval_rows(in_transaction(s.connection()))]


def test_unchanged_price_extends_the_interval(engine: Engine) -> None:
    for i in range(5):
        stats = scrape(engine, T0 + i * HOUR, offer())
    assert stats.unchanged == 1 and stats.prices_changed == 0
    assert intervals(engine) == [(2.0, T0, T0 + 4 * HOUR, 5)]


def test_changed_price_opens_a_new_interval(engine: Engine) -> None:
    scrape(engine, T0, offer(price=2.0))
    stats = scrape(engine, T0 + HOUR, offer(price=1.8))
    scrape(engine, T0 + 2 * HOUR, offer(price=1.8))
    assert stats.prices_changed == 1
    assert intervals(engine) == [(2.0, T0, T0, 1), (1.8, T0 + HOUR, T0 + 2 * HOUR, 2)]


def test_availability_change_opens_a_new_interval(engine: Engine) -> None:
    scrape(engine, T0, offer(available=True))
    scrape(engine, T0 + HOUR, offer(available=False))
    assert len(intervals(engine)) == 2


def test_absence_leaves_a_gap(engine: Engine) -> None:
    scrape(engine, T0, offer("a"), offer("b"))
    scrape(engine, T0 + HOUR, offer("b"))  # a not listed
    scrape(engine, T0 + 2 * HOUR, offer("a"), offer("b"))  # back at the same price
    with Session(engine) as s:
        a_id = s.exec(select(Offer.id).where(Offer.sku == "a")).one()
        a = reads.interval_rows(in_transaction(s.connection()), offer_id=a_id)
    assert [(i.first_seen, i.last_seen) for i in a] == [(T0, T0), (T0 + 2 * HOUR, T0 + 2 * HOUR)]


def test_latest_prices_show_only_what_the_last_good_scrape_listed(engine: Engine) -> None:
    scrape(engine, T0, offer("a", 3.0), offer("b", 16.0, count=8))
    scrape(engine, T0 + HOUR, offer("b", 16.0, count=8))
    with Session(engine) as s:
        rows = reads.latest_prices(in_transaction(s.connection()), include_stale=True)
        assert [(r["sku"], r["price_per_gpu_hour"], r["observed_at"]) for r in rows] == [("b", 2.0, T0 + HOUR)]
        assert reads.latest_prices(in_transaction(s.connection()), gpus=["A100-SXM-80GB"], include_stale=True) == []
        assert rows[0]["observed_at"].tzinfo is not None


def test_unmapped_names_are_kept_and_counted(engine: Engine) -> None:
    scrape(engine, T0, offer("x", gpu=None), offer("y", gpu=None), offer("z"))
    with Session(engine) as s:
        assert reads.unmapped_gpu_names(in_transaction(s.connection())) == [{"gpu_raw": "H100 SXM", "offers": 2, "example_provider": "p"}]


def test_storage_stays_small_for_a_year_of_stable_hourly_scrapes(sqlite_engine: Engine) -> None:
    """8,760 hourly scrapes of an unchanged price are one row, not 8,760."""
    at = T0
    with session_scope(sqlite_engine) as s:
        prov = labels.ensure_provider(s, "p")
        for _ in range(24 * 30):
            store_stage.store_offers(s, "p", [offer()], at, prov.last_success_at)
            prov.last_success_at = at
            at += HOUR
    assert len(intervals(sqlite_engine)) == 1


def test_naive_datetimes_are_refused(sqlite_engine: Engine) -> None:
    with pytest.raises(Exception, match="timezone-aware"):
        with session_scope(sqlite_engine) as s:
            s.add(Provider(name="n", last_run_at=datetime(2026, 1, 1)))


def test_mask_url_hides_the_password() -> None:
    assert mask_url("postgresql+psycopg://u:hunter2@db:5432/x") == "postgresql+psycopg://u:***@db:5432/x"


def test_a_sqlite_store_logs_ahead_and_checkpoints_every_ten_thousand_pages(sqlite_engine: Engine) -> None:
    from db.engine import WAL_CHECKPOINT_PAGES

    with sqlite_engine.connect() as conn:
        settings = {p: conn.exec_driver_sql(f"PRAGMA {p}").scalar() for p in ("journal_mode", "wal_autocheckpoint",
                                                                              "synchronous", "foreign_keys")}
    assert settings == {"journal_mode": "wal", "wal_autocheckpoint": WAL_CHECKPOINT_PAGES, "synchronous": 1,
                        "foreign_keys": 1}
    assert WAL_CHECKPOINT_PAGES == 10_000
