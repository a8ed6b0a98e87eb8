"""The writes the application makes through the ORM (its reads are ``db.reads``'s).

Writers take an open ``Session`` and never commit: the caller owns the transaction, so one
provider's batch is all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import bindparam
from sqlmodel import Session

from db import reads
from db.models import Provider
from db.reader import in_transaction

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
