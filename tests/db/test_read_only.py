"""``make_engine(read_only=True)``: the database itself refuses writes, on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from db.engine import make_engine
from tracker.errors import ConfigError


def test_reads_work_and_writes_are_refused(engine: Engine, db_url: str) -> None:
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO label (space, name) VALUES ('gpu', 'written-before')"))
    ro = make_engine(db_url, read_only=True)
    try:
        with ro.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM label WHERE name = 'written-before'")).scalar_one() == 1
        for statement in ("INSERT INTO label (space, name) VALUES ('gpu', 'written-after')", "DELETE FROM label",
                          "CREATE TABLE intruder (x INTEGER)"):
            with ro.connect() as conn, pytest.raises(DBAPIError, match="(?i)read.?only"):
                conn.execute(text(statement))
                conn.commit()
    finally:
        ro.dispose()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM label WHERE name = 'written-after'")).scalar_one() == 0


def test_a_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "none.db"
    with pytest.raises(ConfigError, match="does not exist"):
        make_engine(f"sqlite:///{path}", read_only=True)
    assert not path.parent.exists()
