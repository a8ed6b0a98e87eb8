"""Schema migrations with Alembic, driven from code (no alembic.ini to find).

``upgrade(engine)`` brings any database to the newest schema: an empty one is built by the
migrations, an existing one is moved forward. ``gpu-tracker`` calls it on start, so users
never run migrations by hand; a database already at the newest revision is recognised by one
query and the migration files' headers, without importing Alembic (``is_current``). The
``gpu_model`` table is kept equal to the spec catalog here too (``sync_gpu_models``). To add a migration after changing ``db/models.py``::

    python -m db.migrate revision "what changed"
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, ProgrammingError

if TYPE_CHECKING:
    from alembic.config import Config

from db.direct import MIGRATIONS, at_head, file_heads
from db.engine import is_read_only, make_engine, mask_url, sqlite_path
from db.reader import in_transaction
from db.reads import gpu_model_rows, stored_revisions
from tracker.errors import ConfigError

__all__ = ["MIGRATIONS", "file_heads", "init_db", "upgrade"]


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_current(engine: Engine) -> bool:
    """True when the database's ``alembic_version`` is the one head: nothing to migrate."""
    if len(file_heads()) != 1:
        return False
    try:
        with engine.connect() as conn:
            stored = stored_revisions(in_transaction(conn))
    except (OperationalError, ProgrammingError):  # no version table yet: a new or pre-migration database
        return False
    return at_head(stored)


BASELINE = "0001"
#: A database made from today's models without migrations (``create_all``) has every table but
#: the views over them: it is adopted at the revision before 0014, which makes them.
MODELS_BASELINE = "0013"


def refuse_newer_schema(engine: Engine, where: str) -> None:
    """A store whose schema revision this version does not know was written by a newer
    gpu-tracker: a one-line ``ConfigError`` rather than Alembic's "Can't locate revision"."""
    from db.direct import known_revisions

    try:
        with engine.connect() as conn:
            stored = stored_revisions(in_transaction(conn))
    except (OperationalError, ProgrammingError):
        return
    unknown = [r for r in stored if r not in known_revisions()]
    if unknown:
        raise ConfigError(f"database {where} has schema revision {unknown[0]!r}, which this gpu-tracker "
                          "does not know: it was written by a newer version; upgrade gpu-tracker to use it")


#: Waiting longer than this for another process's migration is an error, not a hang.
MIGRATION_LOCK_TIMEOUT_S = 120.0
#: Alembic keeps its migration context in module globals: one migration per process at a time.
_IN_PROCESS = threading.Lock()


@contextmanager
def _migration_guard(engine: Engine) -> Iterator[None]:
    """Serialise migrations: threads of this process, and (SQLite, whose DDL commits
    statement by statement) other processes through a lock file next to the database.
    PostgreSQL's other processes are serialised by an advisory lock inside the transaction."""
    from filelock import FileLock

    path = sqlite_path(engine.url)
    lock = FileLock(f"{path}.migrate.lock", timeout=MIGRATION_LOCK_TIMEOUT_S) if path is not None else nullcontext()
    with _IN_PROCESS, lock:
        yield


def upgrade_or_adopt(engine: Engine) -> None:
    """Bring the database to head; a pre-migration database (tables, no version) is adopted
    at the baseline first, since its tables are exactly the baseline's."""
    from alembic import command

    with _migration_guard(engine):
        names = inspect(engine).get_table_names()
        if current_revision(engine) is None and "offer" in names:
            cfg = alembic_config(engine)
            with engine.begin() as conn:
                cfg.attributes["connection"] = conn
                command.stamp(cfg, MODELS_BASELINE if "price_interval_past" in names else BASELINE)
        _upgrade(engine)


def schema_diff(engine: Engine) -> list[object]:
    """Differences between the database and ``db.models`` (empty when migrations are complete)."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from sqlmodel import SQLModel

    import db.models  # noqa: F401

    with engine.connect() as conn, warnings.catch_warnings():
        # SQLite's reflection skips an index of an expression (``ix_price_interval_past_span``),
        # and so does the comparison (the README's schema, from a fresh store, lists it: tests/test_schema_doc.py)
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
        warnings.filterwarnings("ignore", "autogenerate skipping metadata-specified expression-based index")
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "include_object": _include_object})
        return list(compare_metadata(ctx, SQLModel.metadata))


def _include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    return not (type_ == "table" and (reflected and compare_to is None or name == "alembic_version"))


MIGRATION_LOCK_KEY = 0x6770755F6D6967  # "gpu_mig": serialises concurrent upgrades on PostgreSQL


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade to ``revision``. Two processes starting at once on a new database (a leader and
    a standby) must not both create tables (see ``_migration_guard``)."""
    with _migration_guard(engine):
        _upgrade(engine, revision)


def _upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    cfg = alembic_config(engine)
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    except Exception:
        if revision == "head" and current_revision(engine) == head_revision():
            return  # someone else finished the same upgrade
        raise


def init_db(engine: Engine) -> None:
    """Bring the schema to the newest migration (idempotent; users never migrate by hand).

    A current store is only read (no lock file, no write: a read-only store opens); a read-only
    store that needs migrating is a one-line ``ConfigError`` naming the masked URL (a store that
    cannot be opened at all raises the driver's error, which the CLI describes in one line)."""
    where = mask_url(engine.url)
    if is_current(engine):
        return
    refuse_newer_schema(engine, where)
    from filelock import Timeout  # migrating only: a current store never locks

    try:
        if is_read_only(engine):
            raise ConfigError(f"database {where} is read-only and its schema is not current: open it once with "
                              "write access to migrate it")
        upgrade_or_adopt(engine)
    except Timeout:
        raise ConfigError(f"database {where}: another process has been migrating it for "
                          f"{MIGRATION_LOCK_TIMEOUT_S:g}s (its lock file is {where}.migrate.lock)") from None


def make_revision(engine: Engine, message: str) -> None:
    from alembic import command

    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True)


def sync_gpu_models(conn: Connection, rows: Iterable[dict[str, Any]]) -> int:
    """Make ``gpu_model`` equal to the catalog rows (insert, update, delete); returns how many
    rows the catalog has. Every command that opens the store runs this, so it reads the table
    once and writes only what differs (usually nothing), without the ORM. Row keys are
    ``gpu_model`` columns (``tracker.catalog.specs.DB_FIELDS``)."""
    wanted = {r["id"]: r for r in rows}
    existing = {row["id"]: row for row in gpu_model_rows(in_transaction(conn))}
    gone = sorted(set(existing) - set(wanted))
    if gone:
        conn.execute(text("DELETE FROM gpu_model WHERE id IN :ids").bindparams(bindparam("ids", expanding=True)),
                     {"ids": gone})
    new = [r for gpu_id, r in wanted.items() if gpu_id not in existing]
    changed = [r for gpu_id, r in wanted.items()
               if gpu_id in existing and any(existing[gpu_id][k] != v for k, v in r.items())]
    for batch, sql in ((new, _insert_gpu_models), (changed, _update_gpu_models)):
        if batch:
            conn.execute(text(sql(list(batch[0]))), batch)
    return len(wanted)


def _insert_gpu_models(columns: list[str]) -> str:
    return f"INSERT INTO gpu_model ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"


def _update_gpu_models(columns: list[str]) -> str:
    sets = ", ".join(f"{c} = :{c}" for c in columns if c != "id")
    return f"UPDATE gpu_model SET {sets} WHERE id = :id"


if __name__ == "__main__":  # pragma: no cover - developer tool
    if len(sys.argv) != 3 or sys.argv[1] != "revision":
        sys.exit("usage: python -m db.migrate revision MESSAGE")
    scratch = make_engine("sqlite://")
    upgrade(scratch)
    make_revision(scratch, sys.argv[2])
