"""Migration 0003 moves an existing database to the compact layout without losing a row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import MetaData, insert
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import reads
from db.engine import make_engine, session_scope
from db.migrate import current_revision, head_revision, upgrade
from db.reader import in_transaction
from db.spans import epoch
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 3, 1, 10, 0, 0, 250_000, tzinfo=UTC)  # sub-second, as real scrape times are
HOUR = timedelta(hours=1)


def _old_database(url: str) -> Engine:
    """A database at revision 0002 (the layout before), holding a little of everything."""
    eng = make_engine(url)
    upgrade(eng, "0002")
    meta = MetaData()
    meta.reflect(bind=eng)
    t = meta.tables
    runs = [("alpha", T0 + i * HOUR, "ok") for i in range(4)] + [("alpha", T0 + 4 * HOUR, "failed")]
    runs += [("beta", T0 + i * HOUR, "ok") for i in range(2)]
    with eng.begin() as c:
        c.execute(insert(t["provider"]), [
            {"name": "alpha", "display_name": "Alpha", "last_success_at": T0 + 3 * HOUR, "consecutive_failures": 1,
             "last_run_at": T0 + 4 * HOUR, "last_status": "failed"},
            {"name": "beta", "display_name": "Beta", "last_success_at": T0 + HOUR, "consecutive_failures": 0,
             "last_run_at": T0 + HOUR, "last_status": "ok"},
        ])
        c.execute(insert(t["scrape_run"]), [
            {"provider": p, "started_at": at, "status": st, "replay": False, "offers_seen": 0, "new_offers": 0,
             "prices_changed": 0, "quarantined": 0, "unmapped": 0} for p, at, st in runs])
        offers = [("alpha", "a1", "on_demand", "H100-SXM"), ("alpha", "a2", "spot", "A100-SXM-80GB"),
                  ("alpha", "eu", "on_demand", "L40S"), ("beta", "b1", "on_demand", None)]
        c.execute(insert(t["offer"]), [
            {"id": i + 1, "provider": p, "sku": sku, "region": "r", "kind": kind, "term_months": 0, "gpu": gpu,
             "gpu_raw": gpu or "mystery", "gpu_count": 1.0, "extra": {}, "first_seen": T0, "last_seen": T0 + 3 * HOUR}
            for i, (p, sku, kind, gpu) in enumerate(offers)])
        rows = [
            # id, offer, provider, gpu, kind, price, currency, available, first, last, observations
            (1, 1, "alpha", "H100-SXM", "on_demand", 2.5, "USD", True, T0, T0 + HOUR, 2),
            (2, 1, "alpha", "H100-SXM", "on_demand", 2.2, "USD", True, T0 + 2 * HOUR, T0 + 3 * HOUR, 2),
            (3, 2, "alpha", "A100-SXM-80GB", "spot", 1.1, "USD", None, T0, T0 + 3 * HOUR, 4),
            (4, 3, "alpha", "L40S", "on_demand", 0.9, "EUR", False, T0, T0, 1),
            (5, 4, "beta", None, "on_demand", 4.0, "USD", True, T0, T0 + HOUR, 2),
        ]
        c.execute(insert(t["price_interval"]), [
            {"id": i, "offer_id": o, "provider": p, "gpu": g, "kind": k, "price_per_hour": price,
             "price_per_gpu_hour": price, "currency": cur, "available": av, "first_seen": f, "last_seen": last,
             "observations": n} for i, o, p, g, k, price, cur, av, f, last, n in rows])
    assert current_revision(eng) == "0002"
    return eng


def test_every_interval_survives_the_move(db_url: str) -> None:
    eng = _old_database(db_url)
    try:
        upgrade(eng)
        assert current_revision(eng) == head_revision()
        with Session(eng) as s:
            got = [(r.id, r.offer_id, r.provider, r.gpu, r.kind, r.currency, r.price_per_hour, r.available,
                    r.first_seen, r.last_seen, r.ends_at, r.observations) for r in reads.interval_rows(in_transaction(s.connection()))]
            sec = lambda d: d.replace(microsecond=0)  # noqa: E731 - times are whole seconds now
            assert got == [
                (1, 1, "alpha", "H100-SXM", "on_demand", "USD", 2.5, True, sec(T0), sec(T0 + HOUR),
                 sec(T0 + 2 * HOUR), 2),  # closed by the next attempt (the price changed)
                (2, 1, "alpha", "H100-SXM", "on_demand", "USD", 2.2, True, sec(T0 + 2 * HOUR), sec(T0 + 3 * HOUR),
                 sec(T0 + 4 * HOUR), 2),  # closed by the failed attempt after it
                (3, 2, "alpha", "A100-SXM-80GB", "spot", "USD", 1.1, None, sec(T0), sec(T0 + 3 * HOUR),
                 sec(T0 + 4 * HOUR), 4),
                (4, 3, "alpha", "L40S", "on_demand", "EUR", 0.9, False, sec(T0), sec(T0), sec(T0 + HOUR), 1),
                (5, 4, "beta", None, "on_demand", "USD", 4.0, True, sec(T0), sec(T0 + HOUR), None, 2),  # current
            ]
            # what is on sale now is unchanged: alpha's last good list is held after its failure
            # (eu was not in it), beta's unmapped offer is listed
            assert [(r["sku"], r["price_per_hour"]) for r in reads.latest_prices(in_transaction(s.connection()), include_stale=True)] == [
                ("a2", 1.1), ("a1", 2.2), ("b1", 4.0)]
            known = store_stage.provider_state(s.connection(), "alpha")
            assert store_stage.previous_prices(s.connection(), known) == {("a1", "r", "on_demand", 0): 2.2,
                                                          ("a2", "r", "spot", 0): 1.1, ("eu", "r", "on_demand", 0): 0.9}
        # roll-ups were computed: alpha's H100 daily bucket saw both prices
        with eng.connect() as c:
            day = c.exec_driver_sql("SELECT min, max, offers FROM rollup_day r JOIN label l ON l.id = r.gpu_id "
                                    "WHERE l.name = 'H100-SXM'").all()
        assert [tuple(r) for r in day] == [(2.2, 2.5, 1)]
        # and the store carries on from the migrated state: beta's next scrape extends its interval
        with session_scope(eng) as s:
            o = NormalisedOffer(provider="beta", sku="b1", region="r", kind="on_demand", term_months=0, gpu=None,
                                gpu_raw="mystery", gpu_count=1.0, price_per_hour=4.0, price_per_gpu_hour=4.0,
                                currency="USD", available=True)
            stats = store_stage.store_observation(s, "beta", [o], T0 + 2 * HOUR, T0 + HOUR)
        assert stats.unchanged == 1
        with Session(eng) as s:
            beta = reads.interval_rows(in_transaction(s.connection()), provider="beta")
        assert [(r.id, epoch(r.last_seen), r.observations) for r in beta] == [(5, epoch(T0 + 2 * HOUR), 3)]
    finally:
        eng.dispose()


def test_the_migrated_schema_is_the_models(db_url: str) -> None:
    from db.migrate import schema_diff

    eng = _old_database(db_url)
    try:
        upgrade(eng)
        assert schema_diff(eng) == []
    finally:
        eng.dispose()
