"""One collecting scheduler per database: the leader lock and the ``scheduler_leader`` row.

The lock decides who collects; the row only *tells* (``gpu-tracker status``) who does and
since when.

* PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) held on a dedicated
  connection for as long as the process leads. The key is derived from a constant and the
  connection's ``current_schema()``, so two stores in different schemas of one database do
  not block each other. When the process dies its session ends and the server drops the lock.
* SQLite: an exclusive ``flock`` on ``<database file>.lock`` next to the database; the
  kernel drops it when the process dies. (``filelock`` on systems without ``fcntl``.)
* In-memory SQLite: nothing to share, the lock is always granted.

The row (``scheduler_leader``, a single row with ``id = 1``) holds pid, host, since and a
heartbeat the leader refreshes every few seconds. A scheduler whose heartbeat is older than
two heartbeat periods, or that set ``stopped_at``, is not active.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import (
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from db.engine import sqlite_path
from db.types import UTCDateTime, utcnow

log = logging.getLogger("tracker.service.leader")

LOCK_NAMESPACE = "gpu-price-tracker/scheduler"
LEADER_TABLE = "scheduler_leader"

metadata = MetaData()
leader_table = Table(
    LEADER_TABLE,
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("pid", Integer, nullable=False),
    Column("host", String(255), nullable=False),
    Column("since", UTCDateTime(), nullable=False),
    Column("heartbeat_at", UTCDateTime(), nullable=False),
    Column("heartbeat_every_s", Float, nullable=False),
    Column("stopped_at", UTCDateTime(), nullable=True),
    Column("lock", String(255), nullable=False, default=""),
)


class LeaderLock(Protocol):
    """What the scheduler needs from a lock: try without waiting, check, let go."""

    description: str

    def try_acquire(self) -> bool: ...

    def held(self) -> bool: ...

    def release(self) -> None: ...


def advisory_key(schema: str) -> int:
    """A stable signed 64-bit advisory-lock key for the store living in ``schema``."""
    digest = hashlib.sha256(f"{LOCK_NAMESPACE}/{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresAdvisoryLock:
    """``pg_try_advisory_lock`` on a connection of its own (not pooled: closing it ends the session)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = create_engine(engine.url, poolclass=NullPool)
        self._conn: Connection | None = None
        self._key: int | None = None
        self._held = False
        self.description = "PostgreSQL advisory lock"

    def _connection(self) -> Connection:
        if self._conn is None:
            conn = self._engine.connect()
            schema = conn.execute(text("SELECT current_schema()")).scalar() or "public"
            conn.commit()
            self._key = advisory_key(schema)
            self.description = f"PostgreSQL advisory lock {self._key} (schema {schema})"
            self._conn = conn
        return self._conn

    def try_acquire(self) -> bool:
        if self._held:
            return True
        try:
            conn = self._connection()
            got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self._key}).scalar())
            conn.commit()  # the lock is session-level: it outlives the transaction
        except Exception:  # noqa: BLE001 - a standby just tries again later
            log.warning("could not ask PostgreSQL for the scheduler lock", exc_info=log.isEnabledFor(logging.DEBUG))
            self._drop()
            return False
        self._held = got
        return got

    def held(self) -> bool:
        if not self._held or self._conn is None:
            return False
        try:
            self._conn.execute(text("SELECT 1")).scalar()
            self._conn.commit()
        except Exception:  # noqa: BLE001 - the session is gone, and the lock with it
            log.error("lost the connection that holds the scheduler lock")
            self._drop()
            return False
        return True

    def _drop(self) -> None:
        self._held = False
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None

    def release(self) -> None:
        if self._held and self._conn is not None:
            try:
                self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self._key})
                self._conn.commit()
            except Exception:  # noqa: BLE001 - closing the session releases it anyway
                pass
        self._drop()
        self._engine.dispose()


class FileLock:
    """An exclusive, non-blocking lock on ``path`` that the OS drops when the process dies."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.description = f"lock file {path}"
        self._fd: int | None = None
        self._fallback: Any = None

    def try_acquire(self) -> bool:
        if self._fd is not None or self._fallback is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            import filelock

            lock = filelock.FileLock(str(self.path), timeout=0)
            try:
                lock.acquire()
            except filelock.Timeout:
                return False
            self._fallback = lock
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        self._fd = fd
        return True

    def held(self) -> bool:
        if self._fallback is not None:  # pragma: no cover - Windows
            return bool(self._fallback.is_locked)
        if self._fd is None:
            return False
        try:  # someone deleting the file would let a second leader lock a new one
            mine, there = os.fstat(self._fd), os.stat(self.path)
        except OSError:
            return False
        return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)

    def release(self) -> None:
        if self._fallback is not None:  # pragma: no cover - Windows
            self._fallback.release()
            self._fallback = None
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock; the file stays for the next leader
            self._fd = None


class NoLock:
    """For a private in-memory database: nobody else can see it."""

    description = "no lock (in-memory database)"

    def try_acquire(self) -> bool:
        return True

    def held(self) -> bool:
        return True

    def release(self) -> None:
        return None


def leader_lock(engine: Engine) -> LeaderLock:
    """The right lock for ``engine``'s backend."""
    backend = engine.url.get_backend_name()
    if backend == "postgresql":
        return PostgresAdvisoryLock(engine)
    if backend == "sqlite":
        path = sqlite_path(engine.url.render_as_string(hide_password=False))
        if path is None:
            return NoLock()
        return FileLock(path.with_name(path.name + ".lock"))
    raise NotImplementedError(f"no scheduler lock for the {backend} backend")


# --- the leader row -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeaderInfo:
    pid: int
    host: str
    since: datetime
    heartbeat_at: datetime
    heartbeat_every_s: float
    stopped_at: datetime | None
    lock: str

    def active(self, now: datetime | None = None) -> bool:
        """Running and heard from within two heartbeat periods (plus a little slack)."""
        if self.stopped_at is not None:
            return False
        now = now or utcnow()
        if now - self.heartbeat_at > timedelta(seconds=2 * self.heartbeat_every_s + 5):
            return False
        if self.host == socket.gethostname() and not _pid_alive(self.pid):
            return False
        return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def ensure_table(engine: Engine) -> None:
    metadata.create_all(engine, tables=[leader_table], checkfirst=True)


def record_leader(engine: Engine, heartbeat_every_s: float, lock_description: str = "") -> datetime:
    """Write this process as the leader; returns ``since``."""
    ensure_table(engine)
    now = utcnow()
    row = {"id": 1, "pid": os.getpid(), "host": socket.gethostname(), "since": now, "heartbeat_at": now,
           "heartbeat_every_s": heartbeat_every_s, "stopped_at": None, "lock": lock_description[:255]}
    with engine.begin() as conn:
        conn.execute(leader_table.delete().where(leader_table.c.id == 1))
        conn.execute(leader_table.insert().values(**row))
    return now


def heartbeat(engine: Engine) -> bool:
    """Refresh this process's heartbeat; False when the row is no longer ours."""
    with engine.begin() as conn:
        result = conn.execute(
            leader_table.update()
            .where(leader_table.c.id == 1, leader_table.c.pid == os.getpid(),
                   leader_table.c.host == socket.gethostname())
            .values(heartbeat_at=utcnow())
        )
        return bool(result.rowcount)


def record_stopped(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            leader_table.update()
            .where(leader_table.c.id == 1, leader_table.c.pid == os.getpid(),
                   leader_table.c.host == socket.gethostname())
            .values(stopped_at=utcnow())
        )


def read_leader(engine: Engine) -> LeaderInfo | None:
    """The last recorded leader, or None when no scheduler ever ran on this database."""
    if not inspect(engine).has_table(LEADER_TABLE):
        return None
    with engine.connect() as conn:
        row = conn.execute(select(leader_table).where(leader_table.c.id == 1)).mappings().first()
    if row is None:
        return None
    return LeaderInfo(pid=row["pid"], host=row["host"], since=row["since"], heartbeat_at=row["heartbeat_at"],
                      heartbeat_every_s=row["heartbeat_every_s"], stopped_at=row["stopped_at"], lock=row["lock"])
