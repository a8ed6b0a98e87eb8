"""One collecting scheduler per database: the leader lease, its write fence, and the
``scheduler_leader`` row.

The **lease** decides who collects. It is one row (``scheduler_lease``, ``id = 1``) in the
store itself, so every path that reaches the same database -- a symlink to the SQLite file,
another host on the same PostgreSQL schema -- meets the same row, and stores in other
PostgreSQL schemas have their own. The row holds the owner, an ``epoch`` that grows with
every change of leader, and ``expires_at``:

* a standby takes the lease by compare-and-set on the epoch once it has expired, at once when
  its owner is a dead process on this host (``kill -9``), or when it was let go;
* the leader renews it every heartbeat (``UPDATE ... WHERE epoch = mine``); a renewal that
  finds another epoch means it lost the lead;
* **fencing**: a leader frozen past its lease (``SIGSTOP``, a suspended VM) and woken again
  must not write as leader before it notices. Every commit that wrote on the collector's
  engine first checks, in the same transaction, that the lease row still carries this
  process's epoch and has not expired (and that this process renewed it within the lease by
  its own monotonic clock); otherwise the commit is refused and rolled back. On SQLite the
  check holds the write lock, on PostgreSQL the row lock, so a take-over cannot slip between
  the check and the commit.

Lease times are taken from each host's clock: hosts sharing a PostgreSQL store need clocks
closer than the lease (NTP does this). In-memory SQLite has nothing to share: ``NoLock``.

The row ``scheduler_leader`` only *tells* (``gpu-tracker status``) who leads and since when:
pid, host, since and a heartbeat. A scheduler whose heartbeat is older than two heartbeat
periods, or that set ``stopped_at``, is not active.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import MetaData, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from db import reads
from db.engine import engine_reader, make_engine, sqlite_path
from db.columns import LeaderRow, LeaseRow
from db.models import declared_table
from db.reader import in_transaction
from db.spans import utcnow
from tracker.errors import TrackerError

log = logging.getLogger("tracker.service.leader")

LEADER_TABLE = "scheduler_leader"
LEASE_TABLE = "scheduler_lease"
#: Default lease: this many heartbeats, at least ``MIN_LEASE_S``.
LEASE_HEARTBEATS = 3
MIN_LEASE_S = 5.0

metadata = MetaData()
leader_table = declared_table(LEADER_TABLE, metadata, LeaderRow)
lease_table = declared_table(LEASE_TABLE, metadata, LeaseRow)


class LeadershipLost(TrackerError):
    """A write of a scheduler that no longer holds the lease (it was frozen past it)."""


class LeaderLock(Protocol):
    """What the scheduler needs from a lock: try without waiting, renew and check, let go."""

    description: str

    def try_acquire(self) -> bool: ...

    def held(self) -> bool: ...

    def release(self) -> None: ...


def unwritable_reason(exc: BaseException) -> str | None:
    """Why the store cannot be written, when ``exc`` says so: a full disk (SQLite's SQLITE_FULL,
    PostgreSQL's disk_full 53100 or "No space left on device") or a read-only store; else None
    (another trouble: the database is away, a lock, a bug)."""
    orig = getattr(exc, "orig", exc)
    text = str(orig).lower()
    code = getattr(orig, "sqlite_errorname", "") or getattr(orig, "sqlstate", "") or ""
    if code in ("SQLITE_FULL", "53100") or "disk is full" in text or "no space left" in text \
            or "could not extend file" in text:
        return "the disk holding the store is full"
    if code in ("SQLITE_READONLY", "25006") or "readonly database" in text or "read-only" in text:
        return "the store is read-only"
    return None


def default_lease(heartbeat_s: float) -> float:
    return max(MIN_LEASE_S, LEASE_HEARTBEATS * heartbeat_s)


class LeaseLock:
    """The lease row (see the module docstring), on an engine of its own so that renewals never
    wait behind the collector's pool and are not fenced themselves."""

    def __init__(self, engine: Engine, lease_s: float) -> None:
        self.lease_s = float(lease_s)
        self._engine = make_engine(engine.url.render_as_string(hide_password=False))
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"[:255]
        self.epoch: int | None = None
        self._renewed = 0.0  # time.monotonic() just before the last successful renewal
        self.description = f"lease in {LEASE_TABLE} ({self.lease_s:g}s)"
        self._ready = False
        #: Why the last ``try_acquire`` could not even ask (an exception, e.g. the disk is full),
        #: or None when it asked and another scheduler holds the lease.
        self.error: str | None = None
        #: Whether the lease was last taken from a holder that never let go (killed, frozen,
        #: lost its database): its in-flight runs are orphans.
        self.took_over = False

    def _ensure_table(self) -> None:
        if not self._ready:
            metadata.create_all(self._engine, tables=[lease_table], checkfirst=True)
            self._ready = True

    def try_acquire(self) -> bool:
        if self.epoch is not None:
            return self.held()
        t0 = time.monotonic()
        try:
            self._ensure_table()
            epoch = self._take()
        except SQLAlchemyError as exc:  # the caller says why (once) and tries again later
            self.error = unwritable_reason(exc) or f"could not ask for the scheduler lease: {type(exc).__name__}"
            log.debug("could not ask for the scheduler lease", exc_info=True)
            return False
        self.error = None
        if epoch is None:
            return False
        self.epoch, self._renewed = epoch, t0
        self.description = f"lease epoch {epoch} in {LEASE_TABLE} ({self.lease_s:g}s)"
        return True

    def _take(self) -> int | None:
        now = utcnow()
        mine = {"owner": self.owner, "pid": os.getpid(), "host": socket.gethostname(), "acquired_at": now,
                "renewed_at": now, "expires_at": now + timedelta(seconds=self.lease_s), "released_at": None}
        try:
            with self._engine.begin() as conn:
                row = reads.lease(in_transaction(conn), LEASE_TABLE)
                if row is None:
                    conn.execute(lease_table.insert().values(id=1, epoch=1, **mine))
                    self.took_over = False
                    return 1
                if not _free(row, now, self.owner):
                    return None
                self.took_over = row.released_at is None and row.owner != self.owner
                done = conn.execute(lease_table.update()
                                    .where(lease_table.c.id == 1, lease_table.c.epoch == row.epoch)
                                    .values(epoch=row.epoch + 1, **mine))
                return int(row.epoch) + 1 if done.rowcount == 1 else None
        except IntegrityError:  # another standby inserted the first row at the same moment
            return None

    def held(self) -> bool:
        """Renew the lease; False once another scheduler holds it (then this one must stop)."""
        if self.epoch is None:
            return False
        t0 = time.monotonic()
        now = utcnow()
        try:
            with self._engine.begin() as conn:
                done = conn.execute(
                    lease_table.update()
                    .where(lease_table.c.id == 1, lease_table.c.epoch == self.epoch, lease_table.c.owner == self.owner)
                    .values(renewed_at=now, expires_at=now + timedelta(seconds=self.lease_s))
                )
        except SQLAlchemyError as exc:  # the database is away: nobody else can take over meanwhile either
            log.warning("could not renew the scheduler lease: %s", type(exc).__name__)
            return self.valid()
        if done.rowcount != 1:
            self.epoch = None
            return False
        self._renewed = t0
        return True

    def valid(self) -> bool:
        """Held, by this process's own clock: renewed less than the lease ago (minus a margin)."""
        margin = min(1.0, self.lease_s / 4)
        return self.epoch is not None and time.monotonic() - self._renewed < self.lease_s - margin

    def check_in(self, conn: Connection) -> None:
        """Inside a writing transaction: raise ``LeadershipLost`` unless the lease is still ours.

        The UPDATE takes the write (SQLite) or row (PostgreSQL) lock, so no take-over can
        commit between this check and the caller's commit."""
        epoch = self.epoch
        if epoch is None or not self.valid():
            raise LeadershipLost("this scheduler's lease expired (was the process frozen?); not writing")
        now = utcnow()
        done = conn.execute(
            lease_table.update()
            .where(lease_table.c.id == 1, lease_table.c.epoch == epoch, lease_table.c.owner == self.owner,
                   lease_table.c.expires_at > now)
            .values(renewed_at=now)
        )
        if done.rowcount != 1:
            self.epoch = None
            raise LeadershipLost("another scheduler took over the lease; not writing")

    def release(self) -> None:
        if self.epoch is not None:
            try:
                with self._engine.begin() as conn:
                    conn.execute(lease_table.update()
                                 .where(lease_table.c.id == 1, lease_table.c.epoch == self.epoch,
                                        lease_table.c.owner == self.owner)
                                 .values(expires_at=utcnow(), released_at=utcnow()))
            except SQLAlchemyError:  # it expires on its own
                pass
        self.epoch = None
        self._engine.dispose()


def _free(row: reads.LeaseRow, now: datetime, owner: str) -> bool:
    if row.owner == owner or row.expires_at <= now or row.released_at is not None:
        return True
    return row.host == socket.gethostname() and not _pid_alive(int(row.pid))


class NoLock:
    """For a private in-memory database: nobody else can see it."""

    description = "no lock (in-memory database)"

    def try_acquire(self) -> bool:
        return True

    def held(self) -> bool:
        return True

    def release(self) -> None:
        return None


def leader_lock(engine: Engine, lease_s: float = MIN_LEASE_S) -> LeaderLock:
    """The lease for ``engine``'s store (``NoLock`` for in-memory SQLite)."""
    backend = engine.url.get_backend_name()
    if backend == "sqlite" and sqlite_path(engine.url) is None:
        return NoLock()
    return LeaseLock(engine, lease_s)


def install_fence(engine: Engine, lock: LeaderLock, active: Any) -> None:
    """Refuse every commit on ``engine`` that wrote while ``active()`` says this process leads
    and ``lock`` no longer holds the lease (see the module docstring)."""
    if not isinstance(lock, LeaseLock):
        return

    @event.listens_for(engine, "before_cursor_execute")
    def _note_write(conn: Connection, _cursor: Any, statement: str, *_args: Any) -> None:
        if not conn.info.get("fence_checking") and statement.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
            conn.info["fence_wrote"] = True

    @event.listens_for(engine, "commit")
    def _fence(conn: Connection) -> None:
        if not conn.info.pop("fence_wrote", False) or not active():
            return
        conn.info["fence_checking"] = True
        try:
            lock.check_in(conn)
        finally:
            conn.info.pop("fence_checking", None)

    @event.listens_for(engine, "rollback")
    def _forget(conn: Connection) -> None:
        conn.info.pop("fence_wrote", None)


# --- the leader row -----------------------------------------------------------------------


class LeaderInfo(reads.LeaderRow):
    """The leader row as ``db.reads`` reads it, and whether its scheduler still runs."""

    __slots__ = ()

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
    with engine_reader(engine) as reader:
        row = reads.leader(reader, LEADER_TABLE)
    return None if row is None else LeaderInfo(*row)
