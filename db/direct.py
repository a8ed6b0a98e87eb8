"""Open a store for reading with its DB-API driver straight from the URL (sqlite3, psycopg),
without SQLAlchemy: what a read-only command such as ``gpu-tracker prices`` pays to start is
mostly imports, and SQLAlchemy is the largest. So is finding the URL (``default_database_url``).

Only a store that needs nothing done to it opens this way: an existing SQLite file this process
may write, or a PostgreSQL database, at the newest schema revision and holding the catalog as
given. Anything else gets ``None``, and the caller takes the full path
(``tracker.pipeline.opening.open_store``), which migrates, creates, syncs and reports errors.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import platformdirs

from db import reads
from db.reader import Reader, over_driver

APP_NAME = "gpu-price-tracker"
DB_ENV = "GPU_TRACKER_DB"

#: How long a SQLite reader waits for a writer's lock (``db.engine`` opens its connections with it too).
SQLITE_BUSY_TIMEOUT_S = 30.0
#: PostgreSQL: give up connecting after this many seconds (an unreachable host is an error, not a
#: hang; ``db.engine`` too).
PG_CONNECT_TIMEOUT_S = 10
#: Run every PostgreSQL session without JIT compilation (``db.engine``'s and this path's): the
#: tracker's queries run for milliseconds through indexes, yet the planner's generous cost of a
#: read of the intervals in effect at a past time passed ``jit_above_cost`` and compiling took a
#: second of a ``trends`` whose statements take tens of milliseconds.
PG_NO_JIT = "SET jit = off"
#: What a session that must never write runs first, on SQLite and on PostgreSQL (``db.engine``'s
#: read-only engines and this path's).
SQLITE_READ_ONLY = "PRAGMA query_only=ON"
PG_READ_ONLY = "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"
_POSTGRES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def default_database_url() -> str:
    """``$GPU_TRACKER_DB`` or a SQLite file in the user's data directory."""
    if os.environ.get(DB_ENV):
        return os.environ[DB_ENV]
    return f"sqlite:///{default_data_dir() / 'tracker.db'}"


def sqlite_file(url: str) -> Path | None:
    """The file of a plain ``sqlite:///path`` URL (``sqlite:////abs`` for an absolute path), or
    ``None`` for any other form (in-memory, a driver name, query options, escapes): those are
    left to SQLAlchemy's own parsing on the full path."""
    if not url.startswith("sqlite:///"):
        return None
    rest = url[len("sqlite:///"):]
    if not rest or rest == ":memory:" or any(c in rest for c in "?%#"):
        return None
    return Path(rest)


def _open_sqlite(path: Path) -> Reader | None:
    if not path.is_file() or not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return None
    conn = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_S)
    conn.execute(SQLITE_READ_ONLY)
    return over_driver(conn, "sqlite", conn.close)


def _open_postgres(url: str) -> Reader:
    import psycopg

    conninfo = "postgresql://" + url.split("://", 1)[1]
    kwargs: dict[str, Any] = {} if "connect_timeout=" in conninfo else {"connect_timeout": PG_CONNECT_TIMEOUT_S}
    # autocommit: no transaction left open between statements (its locks would hold up DDL
    # of other sessions for as long as the command runs); the session itself refuses writes
    conn = psycopg.connect(conninfo, autocommit=True, **kwargs)
    conn.execute(PG_READ_ONLY)
    conn.execute(PG_NO_JIT)
    return over_driver(conn, "postgresql", conn.close)


def _is_current(reader: Reader) -> bool:
    try:
        return at_head(reads.stored_revisions(reader))
    except (sqlite3.Error, _pg_error()):  # no version table: a new or pre-migration store
        return False


def _pg_error() -> type[Exception]:
    """psycopg's base error when it is loaded (a SQLite store never imports it)."""
    import sys

    module = sys.modules.get("psycopg")
    return module.Error if module is not None else sqlite3.Error


def catalog_changes(stored: Iterable[dict[str, Any]], wanted: Iterable[dict[str, Any]]
                    ) -> tuple[list[Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """What makes ``gpu_model`` rows (``stored``) equal to the catalog's (``wanted``): the ids to
    delete, the rows to insert and the rows to update (``db.migrate.sync_gpu_models`` writes
    them; a store needing none opens here)."""
    have = {r["id"]: r for r in stored}
    want = {r["id"]: r for r in wanted}
    missing = object()
    changed = [row for i, row in want.items() if i in have and any(have[i].get(k, missing) != v for k, v in row.items())]
    return sorted(set(have) - set(want)), [row for i, row in want.items() if i not in have], changed


def open_reader(url: str, catalog_rows: Iterable[dict[str, Any]]) -> Reader | None:
    """A ``Reader`` on the store at ``url`` when it can be read as it is (see the module
    docstring), else ``None``. ``catalog_rows``: the ``gpu_model`` rows the store must hold."""
    path = sqlite_file(url)
    if path is not None:
        reader = _open_sqlite(path)
    elif url.startswith(_POSTGRES):
        reader = _open_postgres(url)
    else:
        return None
    if reader is None:
        return None
    try:
        if _is_current(reader) and not any(catalog_changes(reads.gpu_model_rows(reader), catalog_rows)):
            return reader
    except BaseException:
        reader.close()
        raise
    reader.close()
    return None


# ------------------------------------------------------------------------------------------------
# The newest schema revision, read from the migration files' headers without Alembic or
# SQLAlchemy: both opening paths (``db.migrate.is_current`` and ``db.direct``) compare a store's
# ``alembic_version`` with it.


MIGRATIONS = Path(__file__).parent / "migrations"

_HEADER = re.compile(r"^(revision|down_revision)\b[^=]*=\s*['\"]?([\w-]+)", re.MULTILINE)


def _headers(key: str) -> frozenset[str]:
    """The values of the migration files' ``key`` lines (``revision`` or ``down_revision``)."""
    return frozenset(value for path in (MIGRATIONS / "versions").glob("*.py")
                     for k, value in _HEADER.findall(path.read_text()) if k == key)


@cache
def file_heads() -> frozenset[str]:
    """The revisions no migration revises (Alembic's own templates; a test holds this equal to
    Alembic's heads)."""
    return known_revisions() - _headers("down_revision")


def known_revisions() -> frozenset[str]:
    """Every revision this version's migrations define."""
    return _headers("revision")


def at_head(stored: list[str] | None) -> bool:
    """Whether the revisions a store's version table holds (``None``: it has none) are exactly the one head."""
    heads = file_heads()
    return len(heads) == 1 and stored == list(heads)
