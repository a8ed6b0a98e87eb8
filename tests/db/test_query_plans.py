"""The hot questions are answered through indexes, not table scans (the engines' own plans):
a GPU's intervals over a range, a GPU's roll-ups over a range, a provider's current state, and
every statement one collection and one roll-up refresh run."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine

from db import labels, reads, rollups
from db.engine import session_scope
from db.migrate import init_db
from db.reader import in_transaction
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

HOT = {
    "intervals of a GPU in effect during a range":
        "SELECT id, price_per_gpu_hour FROM price_interval WHERE gpu_id IN (1, 2) AND last_seen >= 100 AND first_seen <= 200",
    "a GPU's daily roll-ups over a range":
        "SELECT bucket, min FROM rollup_day WHERE gpu_id IN (1, 2) AND bucket >= 0 AND bucket <= 86400",
    "a GPU's hourly roll-up runs over a range":
        "SELECT start, hours, min FROM rollup_hour WHERE series_id IN (1, 2) AND start >= -119 AND start <= 24 "
        "AND start + hours > 0",
    "a provider's current offers":
        "SELECT offer_id, id FROM price_interval_open WHERE provider_id = 3",
    "one offer's current state":
        "SELECT id FROM price_interval_open WHERE offer_id = 7",
    "the GPUs' first open price":
        reads.FIRST_OPEN_OF_GPUS.replace(":g", "(1, 2)"),
    "a provider's fractional-GPU offers":
        reads.FRACTIONAL_OFFERS.replace(":p", "'vastai'"),
}


def plan(engine: Engine, sql: str) -> str:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            return " | ".join(str(r[-1]) for r in conn.execute(text("EXPLAIN QUERY PLAN " + sql)))
        conn.execute(text("SET enable_seqscan = off"))  # empty tables: ask whether an index can serve it
        return " | ".join(str(r[0]) for r in conn.execute(text("EXPLAIN " + sql)))


@pytest.mark.parametrize("question", sorted(HOT))
def test_hot_questions_use_an_index(engine: Engine, question: str) -> None:
    init_db(engine)
    found = plan(engine, HOT[question])
    if engine.dialect.name == "sqlite":
        assert "USING" in found and "INDEX" in found.upper() or "PRIMARY KEY" in found, found
        assert not re.search(r"(^|\| )SCAN ", found), found  # no table of a view read whole either
    else:
        assert "Index" in found and "Seq Scan" not in found, found


#: The big tables and the aliases the store's SQL gives them (SQLite's plans name the alias).
BIG_TABLES = {"price_interval_past", "price_interval_open", "offer", "rollup_hour_run", "rollup_day", "i", "o"}


def _full_scans(engine: Engine, conn: Connection, statement: str, params: Any) -> list[str]:
    """Plan lines of ``statement`` that read a whole big table."""
    if engine.dialect.name == "sqlite":
        rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
        return [str(r[-1]) for r in rows if re.match(r"SCAN (\w+)", str(r[-1]))
                and re.match(r"SCAN (\w+)", str(r[-1])).group(1) in BIG_TABLES]  # type: ignore[union-attr]
    rows = conn.exec_driver_sql("EXPLAIN " + statement, params).all()
    return [str(r[0]) for r in rows if re.search(r"Seq Scan on (\w+)", str(r[0]))
            and re.search(r"Seq Scan on (\w+)", str(r[0])).group(1) in BIG_TABLES]  # type: ignore[union-attr]


def test_no_statement_of_a_collection_scans_a_big_table(engine: Engine) -> None:
    """Every statement one collection runs (the validate stage's reads, the store's reads and
    writes, and the roll-up refresh it ends with, which takes the current intervals from the store
    and reads the others of its window) finds its rows through a key or an index, so its cost
    follows the collection's size, not the history's length; no whole read of
    ``price_interval_open`` either (a refresh on its own has its test below)."""
    init_db(engine)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def offer(sku: str, price: float) -> NormalisedOffer:
        return NormalisedOffer(provider="p", sku=sku, region="r", kind="on_demand", term_months=0, gpu="H100-SXM",
                               gpu_raw="H100", gpu_count=1, price_per_hour=price, price_per_gpu_hour=price, currency="USD")

    def collect(at: datetime, offers: list[NormalisedOffer]) -> None:
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, "p")
            known = store_stage.provider_state(s.connection(), "p")  # read once, as a collection reads it
            store_stage.previous_prices(s.connection(), known, {o.identity: o.currency for o in offers})
            reads.pending_jumps(in_transaction(s.connection()), "p")
            reads.market_medians(in_transaction(s.connection()))
            store_stage.store_observation(s, "p", offers, at, prov.last_attempt_at, known=known)
            prov.last_attempt_at = prov.last_success_at = at
            prov.last_status = "ok"

    collect(t0, [offer(f"o{k}", 1.0 + k) for k in range(20)])
    ran: list[tuple[str, Any]] = []

    def remember(_conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, executemany: bool) -> None:
        if not executemany and statement.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE",
                                                                      "INSERT INTO PRICE_INTERVAL")):
            ran.append((statement, params))

    event.listen(engine, "before_cursor_execute", remember)
    try:  # a steady collection: one price changed, one offer gone, one new
        collect(t0 + timedelta(hours=1), [offer(f"o{k}", 1.0 + k + (k == 3)) for k in range(1, 21)])
    finally:
        event.remove(engine, "before_cursor_execute", remember)
    writes = [sql.lstrip() for sql, _ in ran if sql.lstrip().startswith("UPDATE")]
    # the store's were seen: the extension and the close (the changed price, the offer gone)
    # rewrite open rows in place; a past interval is never rewritten, only written once (the
    # changed price's previous interval moves there)
    assert any(sql.startswith("UPDATE price_interval_open SET last_seen") for sql in writes), writes
    assert any(sql.startswith("UPDATE price_interval_open SET ends_at") for sql in writes), writes
    assert not [sql for sql in writes if "price_interval_past" in sql.split(" SET ")[0]], writes
    assert any(sql.lstrip().startswith("INSERT INTO price_interval_past") for sql, _ in ran), "the move ran"
    assert any("rollup_hour_run" in sql for sql, _ in ran), "the refresh ran"
    with engine.connect() as conn:
        if engine.dialect.name != "sqlite":
            conn.exec_driver_sql("SET enable_seqscan = off")  # small tables: ask whether an index can serve it
        scans = {sql: found for sql, params in ran if (found := _full_scans(engine, conn, sql, params))}
    assert not scans, scans


def test_no_statement_of_a_rollup_refresh_scans_a_big_table(engine: Engine) -> None:
    """Every statement a refresh runs (reading the day's intervals, replacing day rows and hour
    runs) finds its rows through a key or an index: its cost follows the day's data, not the
    history's length."""
    init_db(engine)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for h in range(3):
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, "p")
            offers = [NormalisedOffer(provider="p", sku=f"o{k}", region="r", kind=("on_demand", "spot")[k % 2],
                                      term_months=0, gpu=("H100-SXM", "L40S")[k % 3 == 0], gpu_raw="x", gpu_count=1,
                                      price_per_hour=1.0 + k + h * (k == 2), price_per_gpu_hour=1.0 + k + h * (k == 2),
                                      currency="USD") for k in range(8)]
            store_stage.store_observation(s, "p", offers, t0 + timedelta(hours=h), prov.last_attempt_at)
            prov.last_attempt_at = prov.last_success_at = t0 + timedelta(hours=h)
    ran: list[tuple[str, Any]] = []

    def remember(_conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, executemany: bool) -> None:
        ran.append((statement, params[0] if executemany else params))

    t = int((t0 + timedelta(hours=2)).timestamp())
    with engine.begin() as conn:
        pid = labels.lookup(conn, "provider", ["p"])[0]
        event.listen(engine, "before_cursor_execute", remember)
        try:
            written = rollups.refresh(conn, pid, t - 7200, t + 3600)
        finally:
            event.remove(engine, "before_cursor_execute", remember)
    assert written > 0 and any("rollup_hour_run" in sql for sql, _ in ran)
    with engine.connect() as conn:
        if engine.dialect.name != "sqlite":
            conn.exec_driver_sql("SET enable_seqscan = off")  # small tables: ask whether an index can serve it
        scans = {sql: found for sql, params in ran if (found := _full_scans(engine, conn, sql, params))}
    assert not scans, scans
    if engine.dialect.name == "postgresql":
        # Right after a large first collection PostgreSQL's statistics still describe empty
        # tables: a statement joining interval tables could be planned as a nested loop growing
        # with the square of the collection. The refresh reads each table alone, by its own index.
        with engine.connect() as conn:
            joined = [sql for sql, params in ran if "price_interval" in sql and re.search(
                r"Nested Loop|Hash Join|Merge Join|SubPlan",
                " | ".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + sql, params).all()))]
        assert not joined, joined


def test_history_reads_of_day_rollups_use_the_key(engine: Engine) -> None:
    """A history's whole days (``reads.provider_lows``) are read through the roll-up key's
    GPU and day range."""
    init_db(engine)
    ran: list[tuple[str, Any]] = []

    def remember(_conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, _executemany: bool) -> None:
        ran.append((statement, params))

    with engine.connect() as conn:
        event.listen(engine, "before_cursor_execute", remember)
        try:
            reads.provider_lows(in_transaction(conn), rollups.DAY, gpu_ids=[1, 2], lo=0, hi=30 * rollups.DAY, kind_ids=[3])
        finally:
            event.remove(engine, "before_cursor_execute", remember)
        day_reads = [(sql, params) for sql, params in ran if "rollup_day" in sql]
        assert len(day_reads) == 1, ran
        sql, params = day_reads[0]
        if engine.dialect.name == "sqlite":
            found = " | ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params))
            assert "USING PRIMARY KEY" in found and not found.startswith("SCAN"), found
        else:
            conn.exec_driver_sql("SET enable_seqscan = off")  # empty tables: ask whether an index can serve it
            found = " | ".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + sql, params))
            assert "rollup_day_pkey" in found and "Seq Scan" not in found and "Sort" not in found, found


def test_trends_read_of_daily_lows_uses_the_key(engine: Engine) -> None:
    """The all-time low's daily lows (grouped rows) are read through the roll-up key's GPU range (SQLite groups in key order, without
    a temporary B-tree)."""
    from tracker.analysis import trends
    from tracker.analysis.grid import Filters

    init_db(engine)
    ran: list[tuple[str, Any]] = []

    def remember(_conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, _executemany: bool) -> None:
        ran.append((statement, params))

    with engine.connect() as conn:
        event.listen(engine, "before_cursor_execute", remember)
        try:
            trends._Reads(in_transaction(conn), Filters(), None).day_lows(30 * rollups.DAY)
        finally:
            event.remove(engine, "before_cursor_execute", remember)
        reads = [(sql, params) for sql, params in ran if "rollup_day" in sql]
        assert len(reads) == 1, ran
        sql, params = reads[0]
        if engine.dialect.name == "sqlite":
            found = " | ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params))
            assert "USING PRIMARY KEY" in found and "TEMP B-TREE" not in found, found
        else:
            conn.exec_driver_sql("SET enable_seqscan = off")  # empty tables: ask whether an index can serve it
            found = " | ".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + sql, params))
            assert "rollup_day_pkey" in found and "Seq Scan" not in found, found
