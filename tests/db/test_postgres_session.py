"""PostgreSQL sessions the tracker opens run without JIT compilation (``db.direct.PG_NO_JIT``):
pooled connections of the engine (also once returned to the pool and taken again), read-only
engines and the direct read path alike. SQLite has no such setting."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from db import direct
from db.engine import make_engine


def test_postgres_sessions_run_without_jit(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("JIT compilation is PostgreSQL's")
    url = engine.url.render_as_string(hide_password=False)
    for _ in range(2):  # the second checkout reuses the pooled session, rolled back on return
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW jit").scalar() == "off"
    read_only = make_engine(url, read_only=True)
    try:
        with read_only.connect() as conn:
            assert conn.exec_driver_sql("SHOW jit").scalar() == "off"
            assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "on"
    finally:
        read_only.dispose()
    reader = direct.open_reader(url, [])
    assert reader is not None
    try:
        assert reader.scalar("SHOW jit") == "off"
    finally:
        reader.close()
