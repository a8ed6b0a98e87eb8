"""The store's own integrity check, per engine: ``gpu-tracker db check`` and the collector's start.

* SQLite: ``PRAGMA integrity_check`` (every page, b-tree, index entry and constraint; the
  quick variant ``PRAGMA quick_check`` skips matching index contents to table rows and is
  O(size) but cheap) and ``PRAGMA foreign_key_check``.
* PostgreSQL: the server keeps its files consistent itself (WAL, optionally data checksums),
  so the check reads what a damaged store would fail on: ``amcheck``'s ``bt_index_check`` on
  every b-tree index of the store's tables when that extension is installed (it is never
  installed by this check), indexes left invalid by an interrupted ``CREATE INDEX``, and a
  full read of every table (a page failing its checksum, or unreadable, errors there). The
  quick variant only looks for invalid indexes.

Each returns a list of problems, empty when the store is sound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

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
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0][:200]
        result.problems.append(f"the check itself failed: {reason}")
    del result.problems[MAX_PROBLEMS:]
    return result


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
        invalid = conn.execute(text(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :s AND NOT i.indisvalid"), {"s": schema})
        result.problems += [f"index {name} is invalid (an interrupted CREATE INDEX): rebuild it with REINDEX"
                            for (name,) in invalid]
        if quick:
            return
        tables = inspect(conn).get_table_names(schema=schema)
        has_amcheck = conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'")).first() is not None
        if has_amcheck:
            result.checks.append("amcheck bt_index_check on every b-tree index")
            indexes = conn.execute(text(
                "SELECT c.relname, c.oid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam "
                "WHERE n.nspname = :s AND a.amname = 'btree' AND i.indisvalid"), {"s": schema}).all()
            for name, oid in indexes:
                try:
                    conn.execute(text("SELECT bt_index_check(:oid)"), {"oid": oid})
                except DBAPIError as exc:
                    conn.rollback()
                    result.problems.append(f"index {name}: {str(exc.orig).strip().splitlines()[0][:200]}")
        else:
            result.checks.append("amcheck not installed (CREATE EXTENSION amcheck adds index checks)")
        result.checks.append(f"a full read of {len(tables)} tables")
        for table in tables:
            try:
                conn.execute(text(f'SELECT count(*) FROM "{schema}"."{table}"')).scalar()
            except DBAPIError as exc:
                conn.rollback()
                result.problems.append(f"table {table}: {str(exc.orig).strip().splitlines()[0][:200]}")


def require_sound_store(engine: Engine) -> None:
    """Before a collector writes: raise ``StoreDamaged`` unless the quick check passes."""
    result = check_store(engine, quick=True)
    if not result.ok:
        where = mask_url(engine.url)
        raise StoreDamaged(f"database {where} failed its integrity quick check ({result.problems[0][:160]}); "
                           "nothing was written: run `gpu-tracker db check`, then restore a backup")


__all__ = ["CheckResult", "StoreDamaged", "check_store", "require_sound_store"]
