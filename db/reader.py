"""The one way a read runs: a ``Reader`` executes ``db.reads``' statements, written once with
``:name`` parameters, on the store's own driver connection (sqlite3 or psycopg: ``over_driver``,
opened from the store URL by ``db.direct`` or taken from an engine's pool by
``db.engine.engine_reader``), or, for the reads of a writer inside its transaction, on that
transaction's SQLAlchemy ``Connection`` (``in_transaction``).

The SQL text of a read is the same on every path; only the parameter markers differ
(``?`` for sqlite3, ``%s`` for psycopg), and ``bind`` is the one place that rewrites them. A
list parameter (``gpu_id IN :gpus``) becomes one marker per element, as SQLAlchemy's
expanding parameters do. No SQLAlchemy is imported here: commands that start through
``db.direct`` must not pay for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

#: ``:name`` not preceded by another colon or a word character (so ``::bigint`` casts and
#: ``12:00`` inside the SQL are left alone).
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def bind(sql: str, params: Mapping[str, Any] | None, marker: str) -> tuple[str, tuple[Any, ...]]:
    """``sql`` with its ``:name`` parameters replaced by positional ``marker``s (``?`` or ``%s``)
    and the values in that order; a list or tuple value is spread over one marker per element."""
    values: list[Any] = []
    given = params or {}

    def one(match: re.Match[str]) -> str:
        value = given[match.group(1)]
        if isinstance(value, list | tuple):
            values.extend(value)
            return "(" + ", ".join([marker] * len(value)) + ")"
        values.append(value)
        return marker

    if marker == "%s":
        sql = sql.replace("%", "%%")
    return _PARAM.sub(one, sql), tuple(values)


def utc_datetime(value: Any) -> datetime | None:
    """A stored ``UTCDateTime`` as an aware UTC datetime, from either driver: psycopg gives
    datetimes, sqlite3 the text SQLAlchemy wrote (naive UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Reader:
    """Read statements (``:name`` parameters) on one connection.

    ``execute(sql, values) -> cursor-like`` runs driver SQL with positional values; ``marker``
    is the driver's positional marker; ``dialect`` is ``"sqlite"`` or ``"postgresql"``."""

    def __init__(self, execute: Callable[[str, tuple[Any, ...]], Any], marker: str, dialect: str,
                 close: Callable[[], None] | None = None) -> None:
        self._execute = execute
        self.marker = marker
        self.dialect = dialect
        self._close = close

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Every row as a plain tuple: both drivers' own rows are tuples already (a long read, such
        as an hourly year's runs, is not copied row by row again); any other row is copied into one."""
        rows = self._execute(*bind(sql, params, self.marker)).fetchall()
        return rows if not rows or type(rows[0]) is tuple else [tuple(r) for r in rows]

    def mappings(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every row as ``{column: value}``."""
        cur = self._execute(*bind(sql, params, self.marker))
        keys = [d[0] for d in cur.description]
        return [dict(zip(keys, r, strict=True)) for r in cur.fetchall()]

    def scalar(self, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row, or ``None``."""
        row = self._execute(*bind(sql, params, self.marker)).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        """Close the connection when this reader opened it (else its owner does)."""
        if self._close is not None:
            self._close()
            self._close = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def over_driver(conn: Any, dialect: str, close: Callable[[], None] | None = None) -> Reader:
    """A ``Reader`` on a DB-API connection of the store's own driver (``dialect`` ``"sqlite"``:
    sqlite3; ``"postgresql"``: psycopg), or a pool's proxy of one: no result objects per row.
    ``close``: what ``Reader.close`` calls (``None``: the connection's owner closes it).

    psycopg is asked for results in PostgreSQL's binary format: the same values (the store's
    columns are integers, double precision, text, booleans, timestamps with time zone and JSON,
    each loaded to the type its text gives), read several times faster than parsed from text and
    sent without the server writing each number out (an hourly year's 56,000 roll-up runs: 5 ms
    of loading instead of 20)."""
    if dialect == "sqlite":
        return Reader(conn.execute, "?", dialect, close)

    def execute(sql: str, values: tuple[Any, ...]) -> Any:
        return conn.execute(sql, values or None, binary=True)  # no values: psycopg leaves the text as it is

    return Reader(execute, "%s", dialect, close)


def in_transaction(conn: Connection) -> Reader:
    """A ``Reader`` on a SQLAlchemy ``Connection`` inside a writer's transaction: the writer reads
    what it has written so far. Its owner closes it."""
    marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    return Reader(lambda sql, values: conn.exec_driver_sql(sql, values).cursor, marker, conn.dialect.name)


