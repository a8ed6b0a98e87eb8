"""The names the store writes: small integer ids for provider, GPU, kind and currency names
(the ``label`` table), and the provider rows themselves (``ensure_provider``), with the figures a
provider's store reports (``StoreStats``).

Every interval and roll-up row carries these ids instead of repeating the strings. Ids are
handed out on first use and never change; the table stays tiny (tens of rows), so it is
read whole rather than cached across transactions (a cache would outlive a rolled-back
insert). A read-only analysis that looks names up many times reads them once for its own
duration (``snapshot``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection
from sqlmodel import Session

from db import reads
from db.models import Provider
from db.reader import in_transaction

SPACES = ("provider", "gpu", "kind", "currency")
_SNAPSHOT = "labels.snapshot"


@contextmanager
def snapshot(conn: Connection) -> Iterator[None]:
    """Within the block, ``names`` and ``lookup`` on ``conn`` answer from one read of the table.

    For readers only (an analysis asks for the same names dozens of times; each is a round
    trip to the server): a label inserted on ``conn`` inside the block is not seen."""
    if _SNAPSHOT in conn.info:  # nested: the outer snapshot holds
        yield
        return
    conn.info[_SNAPSHOT] = reads.Labels(in_transaction(conn))
    try:
        yield
    finally:
        del conn.info[_SNAPSHOT]


def names(conn: Connection, space: str) -> dict[int, str]:
    """``{id: name}`` of one space."""
    table = conn.info.get(_SNAPSHOT)
    if table is not None:
        return table.names(space)
    return reads.label_names(in_transaction(conn), space)


def ensure(conn: Connection, wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Ids of ``(space, name)`` pairs, creating the missing ones; returns every label."""
    have = reads.all_labels(in_transaction(conn))
    missing = sorted({w for w in wanted if w not in have})
    if missing:
        if unknown := [space for space, _name in missing if space not in SPACES]:
            raise ValueError(f"label space {unknown[0]!r} is not one of {', '.join(SPACES)}")
        conn.execute(
            text("INSERT INTO label (space, name) VALUES (:s, :n) ON CONFLICT (space, name) DO NOTHING"),
            [{"s": s, "n": n} for s, n in missing],
        )
        have = reads.all_labels(in_transaction(conn))
    return have


def usd_id(conn: Connection) -> int:
    """``db.reads.Labels.usd`` as ``conn``'s transaction sees it (or its open ``snapshot``)."""
    return (conn.info.get(_SNAPSHOT) or reads.Labels(in_transaction(conn))).usd


def lookup(conn: Connection, space: str, values: Iterable[str]) -> list[int]:
    """Ids of existing names of ``space`` (names never stored are left out)."""
    return reads.ids_of(names(conn, space), values)


# ------------------------------------------------------------------------------------------------
# The writes the application makes through the ORM (its reads are ``db.reads``'s).
#
# Writers take an open ``Session`` and never commit: the caller owns the transaction, so one
# provider's batch is all-or-nothing.


PRICE_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class StoreStats:
    offers_seen: int
    new_offers: int
    prices_changed: int
    unchanged: int
    unpriced: int
    #: Offers seen before, but not by the previous collection attempt (back after a gap).
    returned: int = 0


def ensure_provider(session: Session, name: str, display_name: str = "") -> Provider:
    provider = session.get(Provider, name)
    if provider is None:
        provider = Provider(name=name, display_name=display_name or name)
        session.add(provider)
        session.flush()
    elif display_name and provider.display_name != display_name:
        provider.display_name = display_name
    return provider


def ensure_providers(session: Session, display_names: Mapping[str, str]) -> None:
    """``ensure_provider`` of several providers (name -> display name) in two or three statements,
    for a cycle that starts them all at once."""
    table = Provider.__table__  # type: ignore[attr-defined]
    conn = session.connection()
    stored = {n: p.display_name for n, p in reads.providers(in_transaction(conn)).items()}
    new = [{"name": n, "display_name": d or n} for n, d in display_names.items() if n not in stored]
    if new:
        conn.execute(table.insert(), new)
    renamed = [{"b_name": n, "display_name": d} for n, d in display_names.items() if d and n in stored and stored[n] != d]
    if renamed:
        conn.execute(table.update().where(table.c.name == bindparam("b_name")).values(display_name=bindparam("display_name")),
                     renamed)
