"""The read path that opens a store with its own driver (``db.direct``) and runs ``db.reads``'s
statements through ``db.reader``: the same answers as SQLAlchemy's path, and the full path
whenever the store needs anything done first."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import direct
from db.engine import make_engine
from db.reader import bind, in_transaction
from db.reads import latest_prices, provider_states
from db.spans import from_epoch, utcnow
from tests.conftest import run_main
from tracker.catalog.specs import catalog_rows_for_db, load_catalog


def test_bind_writes_the_drivers_markers_and_spreads_lists() -> None:
    sql = "SELECT x::bigint FROM t WHERE a = :a AND b IN :bs AND c LIKE '5%' AND t = '12:00' AND a2 = :a"
    assert bind(sql, {"a": 1, "bs": [2, 3]}, "?") == (
        "SELECT x::bigint FROM t WHERE a = ? AND b IN (?, ?) AND c LIKE '5%' AND t = '12:00' AND a2 = ?", (1, 2, 3, 1))
    assert bind(sql, {"a": 1, "bs": (2,)}, "%s") == (
        "SELECT x::bigint FROM t WHERE a = %s AND b IN (%s) AND c LIKE '5%%' AND t = '12:00' AND a2 = %s", (1, 2, 1))
    with pytest.raises(KeyError):
        bind("SELECT :missing", {}, "?")


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite+pysqlite:///x.db", "sqlite:///x.db?mode=ro",
                                 "sqlite:///a%20b.db", "mysql://u@h/db", "duckdb:///x.db"])
def test_url_forms_left_to_the_full_path(url: str) -> None:
    assert direct.open_reader(url, []) is None


def test_a_missing_file_is_left_to_the_full_path_and_not_created(tmp_path: Path) -> None:
    assert direct.open_reader(f"sqlite:///{tmp_path / 'new.db'}", []) is None
    assert not (tmp_path / "new.db").exists()
    (tmp_path / "empty.db").touch()
    assert direct.open_reader(f"sqlite:///{tmp_path / 'empty.db'}", []) is None  # no schema yet: migrate first


def test_answers_equal_sqlalchemys(replay_store: str) -> None:
    rows = catalog_rows_for_db(load_catalog())
    reader = direct.open_reader(replay_store, rows)
    assert reader is not None, "a current store opens directly"
    eng = make_engine(replay_store)
    try:
        with eng.connect() as conn:
            now = utcnow()  # one clock for both reads: each row's age is taken from it
            assert latest_prices(reader, now=now) == latest_prices(in_transaction(conn), now=now) and len(latest_prices(reader)) > 5
            assert latest_prices(reader, gpus=["H100-SXM", "H100-PCIe"], kinds=["on_demand"], now=now) == latest_prices(
                in_transaction(conn), gpus=["H100-SXM", "H100-PCIe"], kinds=["on_demand"], now=now)
            states = provider_states(reader)
            assert states == provider_states(in_transaction(conn)) and all(s.last_success_at.tzinfo is not None for s in states)
            at = max(s.last_success_at for s in states)
            assert latest_prices(reader, at=at, providers=["runpod"]) == latest_prices(in_transaction(conn), at=at,
                                                                                    providers=["runpod"])
            assert latest_prices(reader, at=from_epoch(0)) == []
    finally:
        reader.close()
        eng.dispose()


def test_a_store_behind_or_with_another_catalog_takes_the_full_path(engine: Engine) -> None:
    url = engine.url.render_as_string(hide_password=False)
    assert direct.open_reader(url, [{"id": "X1", "family": "X"}]) is None  # gpu_model must be synced first
    reader = direct.open_reader(url, [])
    assert reader is not None
    reader.close()
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    assert direct.open_reader(url, []) is None  # to be migrated by the full path


def test_prices_on_a_store_to_sync_syncs_it(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    url = engine.url.render_as_string(hide_password=False)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM gpu_model")).scalar() == 0
    code, out, err = run_main(capsys, "--db", url, "prices", "--format", "json")
    assert code == 0, err
    assert out.strip() == "[]"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM gpu_model")).scalar() == len(load_catalog())
    reader = direct.open_reader(url, catalog_rows_for_db(load_catalog()))
    assert reader is not None
    reader.close()


def test_a_direct_read_writes_nothing(replay_store: str) -> None:
    reader = direct.open_reader(replay_store, catalog_rows_for_db(load_catalog()))
    assert reader is not None
    try:
        with pytest.raises(Exception, match="(?i)read.only|readonly"):
            reader.rows("DELETE FROM label")
    finally:
        reader.close()
