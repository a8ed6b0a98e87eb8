"""Run read statements written once, with ``:name`` parameters, on any connection: a DB-API
connection opened straight from the store URL (``db.direct``) or SQLAlchemy's (a ``Connection``
or an ORM ``Session``).

The SQL text of a read is the same on both paths; only the parameter markers differ
(``?`` for sqlite3, ``%s`` for psycopg), and ``bind`` is the one place that rewrites them. A
list parameter (``gpu_id IN :gpus``) becomes one marker per element, as SQLAlchemy's
expanding parameters do. No SQLAlchemy is imported here: commands that start through
``db.direct`` must not pay for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

#: ``:name`` not preceded by another colon or a word character (so ``::bigint`` casts and
#: ``12:00`` inside the SQL are left alone).
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def bind(sql: str, params: Mapping[str, Any] | None, marker: str) -> tuple[str, tuple[Any, ...]]:
    """``sql`` with its ``:name`` parameters replaced by positional ``marker``s (``?`` or ``%s``)
    and the values in that order; a list or tuple value is spread over one marker per element, in parentheses (``IN :ids`` is
``IN (?, ?)``, as SQLAlchemy renders an expanding parameter)."""
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
        """Every row as a plain tuple."""
        return [tuple(r) for r in self._execute(*bind(sql, params, self.marker)).fetchall()]

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
        if self._close is not None:
            self._close()
            self._close = None


class _CoreCursor:
    """The part of a DB-API cursor ``Reader`` uses, over a SQLAlchemy result."""

    def __init__(self, result: Any) -> None:
        self._result = result
        self.description = [(k,) for k in result.keys()] if result.returns_rows else []

    def fetchall(self) -> Sequence[Any]:
        return self._result.fetchall()

    def fetchone(self) -> Any:
        row = self._result.fetchone()
        self._result.close()
        return row


def reader_of(source: Any, close: Callable[[], None] | None = None) -> Reader:
    """A ``Reader`` of ``source``: itself, or over a SQLAlchemy ``Connection`` (or an ORM
    ``Session``'s connection, inside its transaction), recognised without importing SQLAlchemy.
    ``close`` is what ``Reader.close`` calls (by default nothing: the connection's owner closes it)."""
    if isinstance(source, Reader):
        return source
    if not hasattr(source, "exec_driver_sql") and callable(getattr(source, "connection", None)):
        source = source.connection()  # an ORM Session
    conn = source
    marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"

    def execute(sql: str, values: tuple[Any, ...]) -> Any:
        return _CoreCursor(conn.exec_driver_sql(sql, values))

    return Reader(execute, marker, conn.dialect.name, close)


@contextmanager
def reading(source: Any) -> Iterator[Reader]:
    """A ``Reader`` of ``source`` for the length of a ``with``: a ``Reader``, a SQLAlchemy
    ``Connection`` or ``Session`` as they are (``reader_of``), or an ``Engine``, of which one
    driver connection is taken from its pool and given back (recognised without importing
    SQLAlchemy)."""
    if not isinstance(source, Reader) and hasattr(source, "raw_connection"):
        raw = source.raw_connection()  # the driver's own connection: no result objects per row
        postgres = source.dialect.name == "postgresql"

        def execute(sql: str, values: tuple[Any, ...]) -> Any:
            cursor = raw.cursor()
            cursor.execute(sql, (values or None) if postgres else values)
            return cursor

        try:
            yield Reader(execute, "?" if source.dialect.paramstyle == "qmark" else "%s", source.dialect.name)
        finally:
            raw.close()
        return
    yield reader_of(source)
