"""Migrations build exactly the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from db.engine import make_engine
from db.migrate import current_revision, head_revision, init_db, schema_diff


def test_migrated_schema_matches_the_models(engine: Engine) -> None:
    assert current_revision(engine) == head_revision()
    assert schema_diff(engine) == []


def test_init_db_is_idempotent(engine: Engine) -> None:
    init_db(engine)
    init_db(engine)
    assert current_revision(engine) == head_revision()


def test_a_pre_migration_database_is_adopted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = make_engine(url)
    import db.models  # noqa: F401

    SQLModel.metadata.create_all(old)  # how databases were made before migrations existed
    assert current_revision(old) is None
    init_db(old)
    assert current_revision(old) == head_revision()
    assert "offer" in inspect(old).get_table_names()
    old.dispose()


def test_concurrent_first_starts_do_not_collide(db_url: str) -> None:
    """A leader and a standby starting together on a new database both come up."""
    from concurrent.futures import ThreadPoolExecutor

    def start() -> str | None:
        eng = make_engine(db_url)
        try:
            init_db(eng)
            return current_revision(eng)
        finally:
            eng.dispose()

    with ThreadPoolExecutor(4) as pool:
        revisions = list(pool.map(lambda _: start(), range(4)))
    assert revisions == [head_revision()] * 4


def test_the_quick_current_check_agrees_with_alembic(db_url: str) -> None:
    """``is_current`` (no Alembic import) reads the heads Alembic reads, and says False until migrated."""
    from db.direct import file_heads
    from db.migrate import is_current

    assert file_heads() == {head_revision()}
    eng = make_engine(db_url)
    try:
        assert not is_current(eng)
        init_db(eng)
        assert is_current(eng)
        with eng.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
        assert not is_current(eng)
    finally:
        eng.dispose()


@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index")
def test_each_backend_has_its_own_gpu_index_and_the_check_holds_it(engine: Engine) -> None:
    """SQLite's GPU index covers the reads of prices in effect, PostgreSQL's is the key alone
    (``db.models.GPU_INDEX``); the schema check holds each store to its own, and sees a change."""
    from db.models import GPU_INDEX, GPU_INDEX_KEY

    sqlite = engine.dialect.name == "sqlite"
    name = "ix_price_interval_past_gpu_covering" if sqlite else "ix_price_interval_past_gpu_last_first"
    indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("price_interval_past")}
    assert indexes[name] == list(GPU_INDEX if sqlite else GPU_INDEX[:GPU_INDEX_KEY])
    assert not {"ix_price_interval_past_gpu_covering", "ix_price_interval_past_gpu_last_first"} - {name} & set(indexes)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"DROP INDEX {name}")
        conn.exec_driver_sql(f"CREATE INDEX {name} ON price_interval_past (gpu_id, last_seen)")
    assert sorted(d[0] for d in schema_diff(engine)) == ["add_index", "remove_index"]


def test_postgresql_keeps_room_for_in_place_rewrites_of_the_tables_every_collection_rewrites(engine: Engine) -> None:
    """The offer table (``last_seen``) and the open intervals are stored with half-full pages on
    PostgreSQL, made from the migrations, so an hourly rewrite stays a heap-only update; SQLite
    has no such setting."""
    if engine.dialect.name != "postgresql":
        pytest.skip("a PostgreSQL storage setting")
    with engine.connect() as conn:
        options = dict(conn.exec_driver_sql(
            "SELECT relname, reloptions FROM pg_class WHERE relname IN ('offer', 'price_interval_open', "
            "'price_interval_past') AND relnamespace = to_regnamespace(current_schema())::oid").all())
    assert options == {"offer": ["fillfactor=50"], "price_interval_open": ["fillfactor=50"], "price_interval_past": None}
