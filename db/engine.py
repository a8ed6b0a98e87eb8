"""Engine and session set-up: SQLite by default (WAL, busy timeout), PostgreSQL by URL.

Core only at import (no ORM, no ``db.models``): opening the store is on every command's start-up path."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError

from db.direct import (
    PG_CONNECT_TIMEOUT_S,
    PG_NO_JIT,
    PG_READ_ONLY,
    SQLITE_BUSY_TIMEOUT_S,
    SQLITE_READ_ONLY,
    default_data_dir,
    default_database_url,
)
from db.reader import Reader, over_driver
from tracker.errors import ConfigError

if TYPE_CHECKING:
    from sqlmodel import Session

#: Engines this process may not write through carry this execution option.
READ_ONLY_OPTION = "tracker_read_only"


def is_read_only(engine: Engine) -> bool:
    """Opened read-only: asked for, or a SQLite file this process cannot write."""
    return bool(engine.get_execution_options().get(READ_ONLY_OPTION))


def _prepare_sqlite_file(path: Path, read_only: bool) -> bool:
    """Check ``path`` fast and say whether it can only be read.

    A file that exists must be a readable file; one that does not is created, in an existing
    directory only (a mistyped directory is an error; the default data directory is made on
    its own). Unusable places (``/proc/x.db``, a directory, no permission) are a one-line
    ``ConfigError`` at once, never a lock waited for.
    """
    if path.exists():
        if not path.is_file():
            raise ConfigError(f"database: {path} is not a file")
        try:
            with path.open("rb"):
                pass
        except OSError as exc:
            raise ConfigError(f"database: cannot read {path} ({exc.strerror})") from None
        return read_only or not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))
    if read_only:
        raise ConfigError(f"database: {path} does not exist (run `gpu-tracker scrape` to create the store)")
    parent = path.parent
    if not parent.is_dir():
        default = default_data_dir()
        if parent.absolute() != default.absolute():
            raise ConfigError(f"database: directory {parent} does not exist (create it first; only the default "
                              f"data directory {default} is created on its own)")
        parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644))  # an empty file is an empty database
    except FileExistsError:
        pass
    except OSError as exc:
        raise ConfigError(f"database: cannot create {path} ({exc.strerror or exc})") from None
    return False


def mask_url(url: str | URL) -> str:
    """The URL with any password replaced by ``***``: the only form that may be shown."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


#: Pages the write-ahead log holds before a commit copies them into the database (SQLite's default
#: is 1,000, 4 MB). A collection cycle commits each provider apart, and each commit writes again
#: the pages they share (the roll-ups' and the past intervals' index pages): a cycle of a
#: 20,000-offer market writes about 24 MB of log. Checkpointed every 4 MB, the shared pages were
#: copied back six times a cycle, each time with the syncs around it; every 40 MB, once in about
#: two cycles (the cycle's commits: 140 ms against 90, checkpoints included).
WAL_CHECKPOINT_PAGES = 10_000


def sqlite_path(url: str | URL) -> Path | None:
    """The file behind a SQLite URL, or ``None`` for other backends and in-memory databases."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


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
    url = url or default_database_url()
    if url.startswith(("postgresql://", "postgres://")):  # what users write; psycopg 3 is the driver we ship
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(f"database: {mask_url(url)} is not a database URL") from None
    backend = parsed.get_backend_name()
    path = sqlite_path(parsed)
    if path is not None:
        read_only = _prepare_sqlite_file(path, read_only)
    if backend == "sqlite":
        kwargs.setdefault("connect_args", {"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})
        statements = [f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000:.0f}", "PRAGMA foreign_keys=ON",
                      "PRAGMA synchronous=NORMAL", f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}"]
    else:
        kwargs.setdefault("pool_pre_ping", True)
        statements = [PG_NO_JIT] if backend == "postgresql" else []
    if backend == "postgresql" and "connect_timeout" not in parsed.query:
        kwargs.setdefault("connect_args", {"connect_timeout": PG_CONNECT_TIMEOUT_S})
    if path is not None and read_only:
        # mode=ro: never write, nor create -wal/-shm where the directory is not ours;
        # immutable when it cannot be written at all (read-only media, another user's store)
        target = f"file:{quote(str(path.absolute()))}?mode=ro" + ("" if os.access(path.parent, os.W_OK) else "&immutable=1")
        kwargs.setdefault("creator", lambda: sqlite3.connect(target, uri=True, check_same_thread=False,
                                                             timeout=SQLITE_BUSY_TIMEOUT_S))
    if read_only:
        kwargs.setdefault("execution_options", {READ_ONLY_OPTION: True})
        statements.append(SQLITE_READ_ONLY if backend == "sqlite" else PG_READ_ONLY)
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _set_up_session(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        for statement in statements:
            cur.execute(statement)
        if path is not None and not read_only:
            _enable_wal(cur)
        cur.close()
        dbapi_conn.commit()

    return engine


def another_writer(url: str) -> bool:
    """Whether another connection holds a SQLite store's write lock right now (so a write would
    wait for it, up to the busy timeout). Asked without waiting; PostgreSQL writers lock rows,
    not the store, so it is never "locked" there."""
    path = sqlite_path(url)
    if path is None or not path.is_file():
        return False
    try:
        probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    finally:
        probe.close()


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error.

    The ORM is imported here, not with the module: commands that only read through Core
    (``db.reads``) start without it."""
    from sqlmodel import Session

    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def engine_reader(engine: Engine) -> Reader:
    """A ``Reader`` on one driver connection of ``engine``'s pool (the store's own driver, no
    SQLAlchemy result per row), given back to the pool when the reader is closed (``with``)."""
    raw = engine.raw_connection()
    return over_driver(raw, engine.dialect.name, raw.close)

