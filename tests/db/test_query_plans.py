"""The hot questions are answered through indexes, not table scans (the engines' own plans):
a GPU's intervals over a range, a GPU's roll-ups over a range, a provider's current state."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db.migrate import init_db

HOT = {
    "intervals of a GPU in effect during a range":
        "SELECT id, price_per_gpu_hour FROM price_interval WHERE gpu_id IN (1, 2) AND last_seen >= 100 AND first_seen <= 200",
    "a GPU's daily roll-ups over a range":
        "SELECT bucket, min FROM rollup_day WHERE gpu_id IN (1, 2) AND bucket >= 0 AND bucket <= 86400",
    "a GPU's hourly roll-ups over a range":
        "SELECT bucket, min FROM rollup_hour WHERE gpu_id = 1 AND bucket >= 0 AND bucket <= 86400",
    "a provider's current offers":
        "SELECT offer_id, interval_id FROM offer_state WHERE provider_id = 3",
    "one offer's current state":
        "SELECT interval_id FROM offer_state WHERE offer_id = 7",
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
        assert not found.startswith("SCAN"), found
    else:
        assert "Index" in found and "Seq Scan" not in found, found
