"""Small integer ids for provider, GPU, kind and currency names (the ``label`` table).

Every interval and roll-up row carries these ids instead of repeating the strings. Ids are
handed out on first use and never change; the table stays tiny (tens of rows), so it is
read whole rather than cached across transactions (a cache would outlive a rolled-back
insert). A read-only analysis that looks names up many times reads them once for its own
duration (``snapshot``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import Connection

from db import reads
from db.reader import in_transaction

SPACES = ("provider", "gpu", "kind", "currency")
_SNAPSHOT = "labels.snapshot"


def all_labels(conn: Connection) -> dict[tuple[str, str], int]:
    """Every label as ``{(space, name): id}``, as ``conn``'s transaction sees them."""
    return reads.all_labels(in_transaction(conn))


@contextmanager
def snapshot(conn: Connection) -> Iterator[None]:
    """Within the block, ``names`` and ``lookup`` on ``conn`` answer from one read of the table.

    For readers only (an analysis asks for the same names dozens of times; each is a round
    trip to the server): a label inserted on ``conn`` inside the block is not seen."""
    if _SNAPSHOT in conn.info:  # nested: the outer snapshot holds
        yield
        return
    table: dict[str, dict[int, str]] = {}
    for (space, name), i in all_labels(conn).items():
        table.setdefault(space, {})[i] = name
    conn.info[_SNAPSHOT] = table
    try:
        yield
    finally:
        del conn.info[_SNAPSHOT]


def names(conn: Connection, space: str) -> dict[int, str]:
    """``{id: name}`` of one space."""
    table = conn.info.get(_SNAPSHOT)
    if table is not None:
        return dict(table.get(space, {}))
    return reads.label_names(in_transaction(conn), space)


def ensure(conn: Connection, wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Ids of ``(space, name)`` pairs, creating the missing ones; returns every label."""
    have = all_labels(conn)
    missing = sorted({w for w in wanted if w not in have})
    if missing:
        for space, _name in missing:
            if space not in SPACES:
                raise ValueError(f"label space {space!r} is not one of {', '.join(SPACES)}")
        conn.execute(
            text("INSERT INTO label (space, name) VALUES (:s, :n) ON CONFLICT (space, name) DO NOTHING"),
            [{"s": s, "n": n} for s, n in missing],
        )
        have = all_labels(conn)
    return have


def usd_id(conn: Connection) -> int:
    """The id of the currency label ``USD`` (what the analysis reads), or -1 when no price in USD
    was ever stored: a value that matches no row."""
    found = lookup(conn, "currency", ["USD"])
    return found[0] if found else -1


def lookup(conn: Connection, space: str, values: Iterable[str]) -> list[int]:
    """Ids of existing names of ``space`` (names never stored are left out)."""
    have = names(conn, space)
    inverse = {n: i for i, n in have.items()}
    return [inverse[v] for v in values if v in inverse]
