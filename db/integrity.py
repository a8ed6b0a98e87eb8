"""The store's own integrity check, per engine: ``gpu-tracker db check`` and the collector's start.

SQLite checks its pages itself (``PRAGMA integrity_check`` and ``foreign_key_check``, or the
cheaper ``quick_check`` that does not match indexes to rows). A PostgreSQL server keeps its
files consistent, so the check reads what a damaged store would fail on: indexes left invalid
by an interrupted ``CREATE INDEX`` (all the quick variant looks at), ``amcheck`` on every b-tree
index when that extension is installed (never by this check), and every table in full.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import TextClause

from db.engine import mask_url
from tracker.errors import TrackerError

#: At most this many problems are reported (a badly damaged file yields thousands).
MAX_PROBLEMS = 20


class StoreDamaged(TrackerError):
    """The store failed its integrity check: nothing may be written to it."""


@dataclass
class CheckResult:
    backend: str
    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_store(engine: Engine, *, quick: bool = False) -> CheckResult:
    """Run the engine's integrity check (see the module docstring)."""
    backend = engine.url.get_backend_name()
    result = CheckResult(backend)
    engine.connect().close()  # not reachable at all: the driver's error, no check to speak of
    try:
        if backend == "sqlite":
            _sqlite(engine, result, quick)
        elif backend == "postgresql":
            _postgres(engine, result, quick)
        else:
            result.checks.append(f"no integrity check for the {backend} backend")
    except DBAPIError as exc:
        result.problems.append(f"the check itself failed: {_reason(exc)}")
    del result.problems[MAX_PROBLEMS:]
    return result


def _reason(exc: DBAPIError) -> str:
    return str(exc.orig or exc).strip().splitlines()[0][:200]


def _sqlite(engine: Engine, result: CheckResult, quick: bool) -> None:
    pragma = "quick_check" if quick else "integrity_check"
    result.checks.append(f"PRAGMA {pragma}")
    with engine.connect() as conn:
        lines = [line.strip() for r in conn.exec_driver_sql(f"PRAGMA {pragma}({MAX_PROBLEMS})")
                 for line in str(r[0]).splitlines()]
        if lines != ["ok"]:
            result.problems += [line for line in lines if line and not line.startswith("*** in database")]
        elif not quick:
            result.checks.append("PRAGMA foreign_key_check")
            for table, rowid, parent, _fk in conn.exec_driver_sql("PRAGMA foreign_key_check").fetchmany(MAX_PROBLEMS):
                result.problems.append(f"{table} row {rowid} points at a missing {parent} row")


def _postgres(engine: Engine, result: CheckResult, quick: bool) -> None:
    with engine.connect() as conn:
        schema = conn.execute(text("SELECT current_schema()")).scalar() or "public"
        result.checks.append(f"invalid indexes in schema {schema}")
        indexes = conn.execute(text(
            "SELECT c.relname, c.oid, i.indisvalid, a.amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam WHERE n.nspname = :s"),
            {"s": schema}).all()
        result.problems += [f"index {name} is invalid (an interrupted CREATE INDEX): rebuild it with REINDEX"
                            for name, _oid, valid, _method in indexes if not valid]
        if quick:
            return
        if conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'")).first() is not None:
            result.checks.append("amcheck bt_index_check on every b-tree index")
            for name, oid, valid, method in indexes:
                if valid and method == "btree":
                    _read(conn, result, f"index {name}", text("SELECT bt_index_check(:oid)").bindparams(oid=oid))
        else:
            result.checks.append("amcheck not installed (CREATE EXTENSION amcheck adds index checks)")
        tables = inspect(conn).get_table_names(schema=schema)
        result.checks.append(f"a full read of {len(tables)} tables")
        for table in tables:
            _read(conn, result, f"table {table}", text(f'SELECT count(*) FROM "{schema}"."{table}"'))


def _read(conn: Connection, result: CheckResult, what: str, statement: TextClause) -> None:
    """Run one statement of the check: its error is a problem of ``what``, and the check goes on."""
    try:
        conn.execute(statement).all()
    except DBAPIError as exc:
        conn.rollback()
        result.problems.append(f"{what}: {_reason(exc)}")


def require_sound_store(engine: Engine) -> None:
    """Before a collector writes: raise ``StoreDamaged`` unless the quick check passes."""
    result = check_store(engine, quick=True)
    if not result.ok:
        where = mask_url(engine.url)
        raise StoreDamaged(f"database {where} failed its integrity quick check ({result.problems[0][:160]}); "
                           "nothing was written: run `gpu-tracker db check`, then restore a backup")

