"""Where an offer's intervals are kept, and the writes that move them between the two tables.

An interval is a run of consecutive observations of one offer at one price (``db.models``).
Each offer's series of intervals has one open end, its newest interval, which the next
collection may lengthen (``last_seen``, ``observations``) or end (``ends_at``): it lives in
``price_interval_open`` (one row per priced offer, rewritten in place, so an hourly collection
touches a small table, whatever the length of the history); every earlier interval lives in
``price_interval_past``, written once when a newer one opens. The view ``price_interval`` reads
both, every row with its true values: a reader never needs to know where a row is kept. The
hourly roll-ups keep their runs the same way (``rollup_hour_run`` and ``rollup_hour_open``, read
through the view ``rollup_hour``).

The SQL text here is importable without SQLAlchemy; the writes take a connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from db.columns import IntervalFields

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

#: Every interval (the view), each offer's newest, and the earlier ones.
VIEW = "price_interval"
OPEN_TABLE = "price_interval_open"
PAST_TABLE = "price_interval_past"
#: An interval's columns besides its id, in both tables and the view.
COLUMNS = IntervalFields._fields
_ALL = "id, " + ", ".join(COLUMNS)
#: Where new ids come from, for intervals and for offers: PostgreSQL's sequence, and the tables
#: whose largest id SQLite continues after.
SEQUENCE = "price_interval_id_seq"
_ID_SOURCES = {"interval": (SEQUENCE, (PAST_TABLE, OPEN_TABLE)), "offer": ("offer_id_seq", ("offer",))}


def new_ids(conn: Connection, n: int, of: str = "interval") -> list[int]:
    """``n`` unused ids of intervals (or of offers: ``of="offer"``), ascending, taken before
    their rows are written so that a bulk insert need not read them back (the store's write
    transaction holds SQLite's lock, so nothing else takes the same ones there)."""
    if n <= 0:
        return []
    sequence, tables = _ID_SOURCES[of]
    if conn.dialect.name == "postgresql":
        rows = conn.exec_driver_sql(f"SELECT nextval('{sequence}') FROM generate_series(1, %s)", (n,)).all()
        return sorted(int(i) for (i,) in rows)
    top = conn.exec_driver_sql(f"SELECT MAX({', '.join(f'(SELECT COALESCE(MAX(id), 0) FROM {t})' for t in tables)}, 0)"
                               ).scalar_one()
    return list(range(int(top) + 1, int(top) + 1 + n))


def retire(conn: Connection, offer_ids: Iterable[int]) -> None:
    """Move the newest intervals of ``offer_ids`` to the past (a newer one is about to open, or an
    import re-cuts the offers' intervals)."""
    _move(conn, "offer_id", offer_ids, OPEN_TABLE, PAST_TABLE)


def promote(conn: Connection, interval_ids: Iterable[int]) -> None:
    """Make the given past intervals their offers' newest (the offers have none open: ``retire``)."""
    _move(conn, "id", interval_ids, PAST_TABLE, OPEN_TABLE)


def _move(conn: Connection, column: str, ids: Iterable[int], source: str, target: str) -> None:
    """Move the rows of ``source`` whose ``column`` is one of ``ids`` to ``target`` (same columns)."""
    wanted = sorted(set(ids))
    if not wanted:
        return
    where = in_ids(conn, column)
    param = (id_param(conn, wanted),)
    conn.exec_driver_sql(f"INSERT INTO {target} ({_ALL}) SELECT {_ALL} FROM {source} WHERE {where}", param)
    conn.exec_driver_sql(f"DELETE FROM {source} WHERE {where}", param)


def insert_new(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Write the intervals of offers that have none stored yet (tuples in ``COLUMNS`` order, each
    offer's oldest first): each offer's newest straight into the open table, the earlier ones
    into the past, in two bulk statements (no retire and promote: nothing of theirs is stored)."""
    if not rows:
        return
    ids = new_ids(conn, len(rows))
    is_open = set({row[0]: k for k, row in enumerate(rows)}.values())  # the last row of an offer is its newest
    insert_many(conn, OPEN_TABLE, ("id", *COLUMNS), [(ids[k], *rows[k]) for k in sorted(is_open)])
    insert_many(conn, PAST_TABLE, ("id", *COLUMNS),
                     [(i, *row) for k, (i, row) in enumerate(zip(ids, rows, strict=True)) if k not in is_open])


# ------------------------------------------------------------------------------------------------
# Driver-level bulk statements shared by the write paths: one tuple per row, no per-row
# SQLAlchemy work, the same SQL text on SQLite and PostgreSQL.
#
# A large set of ids goes in as one parameter (a JSON array read by ``json_each`` on SQLite, an
# array on PostgreSQL), so a set-based UPDATE over a whole collection is one statement whose
# size does not depend on how many rows it touches.


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
