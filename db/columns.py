"""Query results as numpy columns, without a Python object per value.

Reads of tens of thousands of rows (a year of daily roll-ups of a GPU family) spend most of
their time in the driver making a tuple and a number object per value, then in turning those
back into arrays. Here:

* on PostgreSQL the engine packs each column into one binary string (``string_agg`` of
  ``int8send``/``float8send``: big-endian 8-byte values, every column cast to ``bigint`` or
  ``double precision``) that numpy reads as it is: one result row however many rows matched;
* on SQLite (whose driver has no such shortcut) the rows become one structured array in a
  single pass, then a column each.

Every column read this way must be NOT NULL: an aggregate skips NULLs, which would shift the
packed values of that column against the others. Rows come in no particular order (sort the
arrays).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection

#: A column to read: its SQL expression and whether it holds integers or floats.
Column = tuple[str, Literal["int", "float"]]

_PG = {"int": ("int8send", "bigint", ">i8"), "float": ("float8send", "double precision", ">f8")}


def select_sql(dialect: str, columns: Sequence[Column], rest: str) -> str:
    """The statement ``read`` runs: ``SELECT`` of ``columns`` (packed on PostgreSQL) then ``rest``
    (``FROM ... WHERE ...``, no ``GROUP BY``/``ORDER BY``: rows are packed in whatever order)."""
    if dialect == "postgresql":
        packed = ", ".join(f"string_agg({_PG[kind][0]}(({expr})::{_PG[kind][1]}), ''::bytea)" for expr, kind in columns)
        return f"SELECT {packed} {rest}"
    return f"SELECT {', '.join(expr for expr, _ in columns)} {rest}"


def read(conn: Connection, columns: Sequence[Column], rest: str, params: dict[str, Any] | None = None,
         binds: Sequence[Any] = ()) -> list[np.ndarray]:
    """One array per column (``int64`` or ``float64``) of ``SELECT columns rest``, rows in no
    particular order. ``rest`` is SQLAlchemy ``text`` with named parameters (``params``;
    ``binds``: their ``bindparam`` declarations, e.g. expanding lists)."""
    statement = text(select_sql(conn.dialect.name, columns, rest)).bindparams(*binds)
    result = conn.execute(statement, params or {})
    try:
        rows = result.cursor.fetchall() if result.cursor is not None else []
    finally:
        result.close()
    if conn.dialect.name == "postgresql":
        packed = rows[0] if rows else (None,) * len(columns)
        return [np.frombuffer(b if b is not None else b"", dtype=_PG[kind][2]).astype(np.int64 if kind == "int" else float)
                for b, (_, kind) in zip(packed, columns, strict=True)]
    table = np.fromiter(rows, dtype=np.dtype([(f"c{k}", "i8" if kind == "int" else "f8")
                                               for k, (_, kind) in enumerate(columns)]), count=len(rows))
    return [np.ascontiguousarray(table[f"c{k}"]) for k in range(len(columns))]
