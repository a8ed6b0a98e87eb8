"""The roll-ups a collection's store path leaves equal a rebuild from the raw intervals.

The store refreshes a provider's roll-ups from the current intervals it has just written (held in
memory, not read back) plus the provider's other intervals of the window; a rebuild reads every
interval from the database. On random histories of collections, partial observations, failed
attempts, price, currency, GPU and availability changes (SQLite and PostgreSQL), both leave the
same day rows and the same hourly runs after every event, each series' newest run kept apart.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from db import labels, rollups
from db.engine import session_scope
from tests.analysis.test_rollup_equivalence import MIN, PROVIDERS, SKUS, T0, clear
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

# (sku, kind, gpu or None: unmapped, currency, price, available)
listing = st.lists(
    st.tuples(st.sampled_from(SKUS), st.sampled_from(("on_demand", "spot")), st.sampled_from(("H100-SXM", "L4", None)),
              st.sampled_from(("USD", "USD", "EUR")), st.sampled_from((1.0, 1.5, 2.25)), st.booleans()),
    min_size=1, max_size=5,
)
# (provider, minutes since the previous event, what happened, listing; None: the provider's previous
# one again, so that intervals are extended as often as they are opened and closed). "partial": an
# observation of part of the list (an import of the provider's own CSV), which leaves the others open
events = st.lists(
    st.tuples(st.sampled_from(sorted(PROVIDERS)), st.sampled_from((0, 30, 60, 90, 1500)),
              st.sampled_from(("ok", "ok", "partial", "failed")), st.none() | listing),
    min_size=1, max_size=12,
)


def record(engine: Engine, history: list[tuple[str, int, str, list[tuple[Any, ...]] | None]],
           after_each: Callable[[], None] = lambda: None) -> datetime:
    at = T0
    previous: dict[str, list[tuple[Any, ...]]] = {}
    for provider, minutes, outcome, given_listing in history:
        listed = previous.get(provider, []) if given_listing is None else given_listing
        previous[provider] = listed
        at += minutes * MIN + MIN
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, provider)
            if outcome != "failed":
                offers = [NormalisedOffer(provider=provider, sku=sku, region="r", kind=kind, term_months=0, gpu=gpu,
                                          gpu_raw=gpu or "unknown card", gpu_count=1, price_per_hour=price,
                                          price_per_gpu_hour=price, currency=currency, available=available)
                          for sku, kind, gpu, currency, price, available in listed]
                if outcome == "partial":  # an import of the provider's own CSV: no interval given
                    store_stage.store_offers(s, provider, offers, at, prov.last_attempt_at)
                else:  # the provider's first collection after such an import changes its interval
                    store_stage.store_observation(s, provider, offers, at, prov.last_attempt_at,
                                                  interval_s=PROVIDERS[provider])
            else:
                store_stage.record_failed_attempt(s, provider, at)
            prov.last_attempt_at = at
        after_each()
    return at


def rollup_rows(conn: Connection) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    days = [tuple(r) for r in conn.execute(text(
        "SELECT gpu_id, bucket, provider_id, kind_id, min, median, max, offers FROM rollup_day "
        "ORDER BY gpu_id, bucket, provider_id, kind_id"))]
    hours = [tuple(r) for r in conn.execute(text(
        "SELECT s.gpu_id, s.provider_id, s.kind_id, r.start, r.hours, r.min, r.median, r.max, r.offers "
        "FROM rollup_hour r "
        "JOIN rollup_series s ON s.id = r.series_id ORDER BY s.gpu_id, s.provider_id, s.kind_id, r.start"))]
    return days, hours


def assert_newest_runs_apart(conn: Connection) -> None:
    """``rollup_hour_open`` holds each series' newest run and only that: no run in both tables."""
    newest = dict(conn.execute(text("SELECT series_id, MAX(start) FROM rollup_hour GROUP BY series_id")).all())
    assert dict(conn.execute(text("SELECT series_id, start FROM rollup_hour_open")).all()) == newest


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=events)
# a daily provider known from an import (no interval: the default hour) is collected: its interval
# becomes a day, and the hours its imported prices hold change with it
@example(history=[("daily", 0, "partial", [("a", "on_demand", "H100-SXM", "USD", 1.0, False)]),
                  ("daily", 60, "failed", None), ("daily", 1500, "partial", None), ("daily", 0, "ok", None)])
def test_the_store_leaves_the_rollups_a_rebuild_computes(engine: Engine, history) -> None:  # noqa: ANN001
    clear(engine)

    def same_as_a_rebuild() -> None:  # after every event: a later refresh may cover an earlier one's mistake
        with engine.connect() as conn:
            stored = rollup_rows(conn)
            assert_newest_runs_apart(conn)
            conn.execute(text("DELETE FROM rollup_day"))
            conn.execute(text("DELETE FROM rollup_hour_run"))
            conn.execute(text("DELETE FROM rollup_hour_open"))
            rollups.rebuild(conn)
            rebuilt = rollup_rows(conn)
            conn.rollback()
        assert rebuilt == stored

    record(engine, history, same_as_a_rebuild)
