"""Engine and session set-up: SQLite by default (WAL, busy timeout), PostgreSQL by URL."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import event, inspect
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlmodel import Session, create_engine

from tracker.errors import ConfigError

APP_NAME = "gpu-price-tracker"
DB_ENV = "GPU_TRACKER_DB"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def default_database_url() -> str:
    """``$GPU_TRACKER_DB`` or a SQLite file in the user's data directory."""
    if os.environ.get(DB_ENV):
        return os.environ[DB_ENV]
    data_dir = Path(platformdirs.user_data_dir(APP_NAME))
    return f"sqlite:///{data_dir / 'tracker.db'}"


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***``: the only form that may be shown."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL, or ``None`` for other backends and in-memory databases."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _normalise_url(url: str) -> str:
    # Users write postgresql://; psycopg 3 is the driver we ship.
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _enable_wal(cur: Any, attempts: int = 50) -> None:
    """Switch a database file to WAL once. Switching needs the file to itself and SQLite
    answers "database is locked" at once, busy timeout or not, while another connection
    is writing (two processes opening a new database together), so it is retried."""
    for attempt in range(attempts):
        try:
            if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                return
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05 + 0.01 * attempt)


def make_engine(url: str | None = None, *, read_only: bool = False, **kwargs: Any) -> Engine:
    """Create an engine; SQLite gets WAL, a busy timeout, foreign keys, and its directory.

    ``read_only`` has the database itself refuse every write on every connection (SQLite
    ``PRAGMA query_only``, PostgreSQL read-only transactions), for readers that must never
    change the store whatever code runs; a read-only SQLite file must already exist.
    """
    url = _normalise_url(url or default_database_url())
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(f"database: {mask_url(url)} is not a database URL") from None
    if parsed.get_backend_name() == "sqlite":
        path = sqlite_path(url)
        if path is not None and read_only and not path.is_file():
            raise ConfigError(f"database: {path} does not exist (run `gpu-tracker scrape` to create the store)")
        if path is not None and not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        kwargs.setdefault("connect_args", {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False})
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            if read_only:
                cur.execute("PRAGMA query_only=ON")
            elif path is not None:
                _enable_wal(cur)
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    engine = create_engine(url, **kwargs)
    if read_only:
        @event.listens_for(engine, "connect")
        def _read_only_session(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            cur.close()
            dbapi_conn.commit()

    return engine


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def table_names(engine: Engine) -> list[str]:
    return sorted(inspect(engine).get_table_names())
