"""Label snapshots: one read of the table for a reader's whole call, never outliving it."""

from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.engine import Engine

from db import labels


def test_a_snapshot_answers_from_one_read_and_ends_with_its_block(engine: Engine) -> None:
    with engine.begin() as conn:
        labels.ensure(conn, [("gpu", "H100-SXM"), ("gpu", "L40S"), ("kind", "on_demand")])
    statements: list[str] = []

    def count(conn, cursor, statement, *_args) -> None:  # noqa: ANN001
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        with engine.connect() as conn:
            with labels.snapshot(conn), labels.snapshot(conn):  # nested: the outer one holds
                read = len(statements)
                assert sorted(labels.names(conn, "gpu").values()) == ["H100-SXM", "L40S"]
                assert labels.lookup(conn, "kind", ["on_demand", "spot"]) == list(labels.names(conn, "kind"))
                assert labels.names(conn, "currency") == {}
                assert len(statements) == read == 1
            labels.ensure(conn, [("gpu", "MI300X")])  # after the block: the table again
            assert "MI300X" in labels.names(conn, "gpu").values()
            conn.rollback()
    finally:
        event.remove(engine, "before_cursor_execute", count)
