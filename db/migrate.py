"""Schema migrations with Alembic, driven from code (no alembic.ini to find).

``init_db`` brings any store to the newest schema as a command starts, so users never migrate
by hand; a store already current is recognised by one query without importing Alembic. It also
keeps ``gpu_model`` equal to the spec catalog (``sync_gpu_models``). To add a migration after
changing ``db/models.py``::

    python -m db.migrate revision "what changed"
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from sqlalchemy import bindparam, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, ProgrammingError

from db.direct import MIGRATIONS, at_head, catalog_changes, known_revisions
from db.engine import is_read_only, make_engine, mask_url, sqlite_path
from db.reader import in_transaction
from db.reads import gpu_model_rows, stored_revisions
from tracker.errors import ConfigError

#: A store made before migrations existed has exactly the baseline's tables and is adopted there;
#: one made from today's models (``create_all``) lacks only the views, which 0014 makes.
BASELINE = "0001"
MODELS_BASELINE = "0013"
#: Waiting longer than this for another process's migration is an error, not a hang.
MIGRATION_LOCK_TIMEOUT_S = 120.0
#: "gpu_mig": the advisory lock that serialises concurrent upgrades on PostgreSQL.
MIGRATION_LOCK_KEY = 0x6770755F6D6967
#: Alembic keeps its migration context in module globals: one migration per process at a time.
_IN_PROCESS = threading.Lock()


def run_command(engine: Engine, name: str, *args: Any, **kwargs: Any) -> None:
    """Run the Alembic command ``name`` in one transaction, holding PostgreSQL's migration lock."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
        cfg.attributes["connection"] = conn
        getattr(command, name)(cfg, *args, **kwargs)


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS)).get_current_head()


def _stored_revisions(engine: Engine) -> list[str] | None:
    """The store's ``alembic_version`` rows; ``None`` without that table (a new or pre-migration store)."""
    try:
        with engine.connect() as conn:
            return stored_revisions(in_transaction(conn))
    except (OperationalError, ProgrammingError):
        return None


def current_revision(engine: Engine) -> str | None:
    stored = _stored_revisions(engine)
    return stored[0] if stored else None


def is_current(engine: Engine) -> bool:
    """True when the database's ``alembic_version`` is the one head: nothing to migrate."""
    return at_head(_stored_revisions(engine))


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


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade to ``revision``; tables made without migrations are adopted at their revision first.
    Two processes starting at once on a new database (a leader and a standby) must not both
    create tables (see ``_migration_guard``)."""
    with _migration_guard(engine):
        tables = inspect(engine).get_table_names()
        if current_revision(engine) is None and "offer" in tables:
            run_command(engine, "stamp", MODELS_BASELINE if "price_interval_past" in tables else BASELINE)
        try:
            run_command(engine, "upgrade", revision)
        except Exception:
            if revision == "head" and is_current(engine):
                return  # someone else finished the same upgrade
            raise


def init_db(engine: Engine) -> None:
    """Bring the schema to the newest migration (idempotent; users never migrate by hand).

    A current store is only read (no lock file, no write: a read-only store opens). A store
    written by a newer gpu-tracker, or a read-only one that needs migrating, is a one-line
    ``ConfigError`` naming the masked URL rather than Alembic's "Can't locate revision"."""
    where = mask_url(engine.url)
    stored = _stored_revisions(engine)
    if at_head(stored):
        return
    unknown = [r for r in stored or [] if r not in known_revisions()]
    if unknown:
        raise ConfigError(f"database {where} has schema revision {unknown[0]!r}, which this gpu-tracker "
                          "does not know: it was written by a newer version; upgrade gpu-tracker to use it")
    if is_read_only(engine):
        raise ConfigError(f"database {where} is read-only and its schema is not current: open it once with "
                          "write access to migrate it")
    from filelock import Timeout  # migrating only: a current store never locks

    try:
        upgrade(engine)
    except Timeout:
        raise ConfigError(f"database {where}: another process has been migrating it for "
                          f"{MIGRATION_LOCK_TIMEOUT_S:g}s (its lock file is {where}.migrate.lock)") from None


def include_object(dialect: str) -> Callable[[object, str | None, str, bool, object], bool]:
    """Alembic's ``include_object`` on ``dialect``: tables this metadata does not own
    (APScheduler's job store, the leader row) are left alone, and an index declared for another
    dialect only (``db.models.for_dialect``) is not this store's."""

    def include(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
        if type_ == "table":
            return not (reflected and compare_to is None)
        declared = getattr(obj, "info", {}).get("dialect") if type_ == "index" and not reflected else None
        return declared in (None, dialect)

    return include


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
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "include_object": include_object(conn.dialect.name)})
        return list(compare_metadata(ctx, SQLModel.metadata))


def sync_gpu_models(conn: Connection, rows: Sequence[dict[str, Any]]) -> int:
    """Make ``gpu_model`` equal to the catalog rows (insert, update, delete); returns how many
    rows the catalog has (one per id). Every command that opens the store runs this, so it reads the table
    once and writes only what differs (usually nothing), without the ORM. Row keys are
    ``gpu_model`` columns (``tracker.catalog.specs.DB_FIELDS``)."""
    gone, new, changed = catalog_changes(gpu_model_rows(in_transaction(conn)), rows)
    if gone:
        conn.execute(text("DELETE FROM gpu_model WHERE id IN :ids").bindparams(bindparam("ids", expanding=True)),
                     {"ids": gone})
    if new:
        columns = list(new[0])
        conn.execute(text(f"INSERT INTO gpu_model ({', '.join(columns)}) "
                          f"VALUES ({', '.join(':' + c for c in columns)})"), new)
    if changed:
        sets = ", ".join(f"{c} = :{c}" for c in changed[0] if c != "id")
        conn.execute(text(f"UPDATE gpu_model SET {sets} WHERE id = :id"), changed)
    return len(rows)


if __name__ == "__main__":  # pragma: no cover - developer tool
    if len(sys.argv) != 3 or sys.argv[1] != "revision":
        sys.exit("usage: python -m db.migrate revision MESSAGE")
    scratch = make_engine("sqlite://")
    upgrade(scratch)
    run_command(scratch, "revision", message=sys.argv[2], autogenerate=True)
