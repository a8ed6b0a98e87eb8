"""Driver-level bulk statements shared by the write paths: one tuple per row, no per-row
SQLAlchemy work, the same SQL text on SQLite and PostgreSQL.

A large set of ids goes in as one parameter (a JSON array read by ``json_each`` on SQLite, an
array on PostgreSQL), so a set-based UPDATE over a whole collection is one statement whose
size does not depend on how many rows it touches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.engine import Connection


def mark(conn: Connection) -> str:
    """The driver's positional parameter marker."""
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


def placeholders(conn: Connection, n: int) -> str:
    """``?, ?, ...`` (or ``%s, ...``) for ``n`` positional parameters."""
    return ", ".join([mark(conn)] * n)


def in_ids(conn: Connection, column: str) -> str:
    """SQL testing ``column`` against one id-list parameter (see ``id_param``)."""
    if conn.dialect.name == "sqlite":
        return f"{column} IN (SELECT value FROM json_each(?))"
    return f"{column} = ANY(%s::bigint[])"


def id_param(conn: Connection, ids: Iterable[int]) -> Any:
    """The parameter ``in_ids`` expects for ``ids``."""
    if conn.dialect.name == "sqlite":
        return "[" + ",".join(map(str, ids)) + "]"
    return list(ids)


def insert_many(conn: Connection, table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` (tuples in ``columns`` order): one driver ``executemany`` on SQLite, ``COPY``
    on PostgreSQL (several times faster there than any ``INSERT``), in the caller's transaction."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        driver = conn.connection.driver_connection
        assert driver is not None
        with driver.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    conn.exec_driver_sql(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders(conn, len(columns))})",
                         list(rows))
