"""Where an open interval keeps its moving parts, and the one way to read an interval's true
``last_seen`` and ``observations``.

Every collection extends each unchanged offer's current interval: a new ``last_seen`` and one
more observation. Written into ``price_interval``, that dirties one table page per offer per
collection, and after a year those pages are scattered over the whole table (an interval
opened months ago can still be open), so a collection's commit grew with the history. So an
interval's row is written when it opens and when it stops being its offer's open interval, and
in between the moving parts live in the offer's ``offer_state`` row (keyed by offer id, one
per priced offer, rewritten in place):

* while an interval is its offer's current one (``offer_state.interval_id``) and open, its
  row holds ``last_seen = OPEN`` (a far-future epoch, so every "last seen from ``a`` on" range
  of the ``(gpu_id, last_seen, first_seen)`` index still holds it) and the observations it had
  when the row was written; the true ``last_seen`` and ``observations`` are ``offer_state``'s;
* ``settle`` writes the true values into the row when it closes (with its ``ends_at``) or when
  the offer's state moves to another interval while it is still open; ``seal`` hands the
  current open intervals of some offers back to ``offer_state`` (after an import re-cut).

The SQL text is importable without SQLAlchemy (``db.sql`` reads it on the direct read path);
the writes import ``db.bulk`` when they run.

Readers never see ``OPEN``: every statement reading ``price_interval.last_seen`` or
``observations`` reads ``last_seen(alias)`` / ``observations(alias)`` (an expression whose
lookup in ``offer_state`` runs only for rows holding ``OPEN``, by primary key) and filters "seen
from ``a`` on" with ``seen_since`` (the raw column for the index, the true value for the answer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

#: ``price_interval.last_seen`` of an offer's current open interval: 9999-12-31T23:59:59Z.
OPEN = 253_402_300_799


def _state(alias: str, column: str, state: str) -> str:
    return f"(SELECT os.{column} FROM {state} os WHERE os.offer_id = {alias}.offer_id AND os.interval_id = {alias}.id)"


def last_seen(alias: str = "i", state: str = "offer_state") -> str:
    """SQL for the true ``last_seen`` of the ``price_interval`` row ``alias`` (``state``: the
    ``offer_state`` table's name, e.g. schema-qualified)."""
    return f"(CASE WHEN {alias}.last_seen = {OPEN} THEN {_state(alias, 'last_seen', state)} ELSE {alias}.last_seen END)"


def observations(alias: str = "i", state: str = "offer_state") -> str:
    """SQL for the true ``observations`` of the ``price_interval`` row ``alias``."""
    return (f"(CASE WHEN {alias}.last_seen = {OPEN} THEN {_state(alias, 'observations', state)} "
            f"ELSE {alias}.observations END)")


def last_seen_of(alias: str, state: str) -> str:
    """SQL for the true ``last_seen`` of the ``price_interval`` row ``alias`` in a statement that
    already joins its offer's ``offer_state`` row as ``state`` (no lookup per row)."""
    return f"(CASE WHEN {alias}.last_seen = {OPEN} THEN {state}.last_seen ELSE {alias}.last_seen END)"


def resolve(rows: Iterable[Sequence[Any]], state_last_seen: Mapping[int, int], at: int) -> list[tuple[Any, ...]]:
    """``rows`` (tuples: an interval id first, its row's ``last_seen`` at ``at``) with the true
    ``last_seen``, for a read that fetched its intervals' ``offer_state`` already
    (``state_last_seen``: interval id -> the state's ``last_seen``) and their plain columns."""
    return [tuple(r) if r[at] != OPEN else (*r[:at], state_last_seen[r[0]], *r[at + 1:]) for r in rows]


def seen_since(alias: str, bound: str) -> str:
    """SQL: the row ``alias`` was last seen at ``bound`` or later. The raw term is the range the
    GPU index answers (``OPEN`` is above any bound); the true one drops an open interval whose
    last observation is older."""
    return f"{alias}.last_seen >= {bound} AND {last_seen(alias)} >= {bound}"


#: The true values on the usual alias ``i``.
LAST_SEEN = last_seen("i")
OBSERVATIONS = observations("i")

#: ``UPDATE`` writing the true values of ``offer_state`` into the rows of an id list (``{ids}``)
#: that are their offer's current interval; ``{ends}``: the ``ends_at`` assignment.
_SETTLE = ("UPDATE price_interval AS i SET last_seen = s.last_seen, observations = s.observations{ends} "
           "FROM offer_state AS s WHERE s.offer_id = i.offer_id AND s.interval_id = i.id AND {ids}")


def settle(conn: Connection, interval_ids: Iterable[int], ends_at: int | None = None) -> None:
    """Write the true ``last_seen``/``observations`` (from ``offer_state``) into the given current
    intervals, and their ``ends_at`` when given: one statement by id list (a close, or an open
    interval its offer's state is about to leave)."""
    from db import bulk

    ids = list(interval_ids)
    if not ids:
        return
    m = bulk.mark(conn)
    if ends_at is None:
        conn.exec_driver_sql(_SETTLE.format(ends="", ids=bulk.in_ids(conn, "i.id")), (bulk.id_param(conn, ids),))
    else:
        conn.exec_driver_sql(_SETTLE.format(ends=f", ends_at = {m}", ids=bulk.in_ids(conn, "i.id")),
                             (ends_at, bulk.id_param(conn, ids)))


def settle_offers(conn: Connection, offer_ids: Iterable[int]) -> None:
    """``settle`` the current intervals of ``offer_ids`` that are open (before their state is rewritten)."""
    from db import bulk

    ids = list(offer_ids)
    if not ids:
        return
    open_ids = [i for (i,) in conn.exec_driver_sql(
        f"SELECT s.interval_id FROM offer_state s JOIN price_interval i ON i.id = s.interval_id "
        f"WHERE {bulk.in_ids(conn, 's.offer_id')} AND i.last_seen = {OPEN}", (bulk.id_param(conn, ids),)).all()]
    settle(conn, open_ids)


def seal(conn: Connection, offer_ids: Iterable[int]) -> None:
    """Hand the current open intervals of ``offer_ids`` to ``offer_state`` (whose ``last_seen``
    and ``observations`` must be the true ones): their rows take ``OPEN``."""
    from db import bulk

    ids = list(offer_ids)
    if not ids:
        return
    conn.exec_driver_sql(
        f"UPDATE price_interval SET last_seen = {OPEN} WHERE ends_at IS NULL AND id IN "
        f"(SELECT interval_id FROM offer_state WHERE {bulk.in_ids(conn, 'offer_id')})", (bulk.id_param(conn, ids),))
