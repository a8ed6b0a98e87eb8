"""What ``gpu-tracker alerts list`` reads of the store: the rules added with ``alerts add`` and
every rule's stored state, in ``db.sql``'s text.

Every function takes a ``db.reader.Reader`` (``db.direct``: the store's own driver), a Core
``Connection`` or an ORM ``Session``, like ``db.asof``: listing the rules of a current store
imports neither SQLAlchemy nor the ORM models.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from db import sql as q
from db.reader import reader_of, utc_datetime

if TYPE_CHECKING:
    from db.asof import Source


class StateRow(NamedTuple):
    """The columns of an ``alert_state`` row the listing shows (``db.models.AlertState``'s names)."""

    rule: str
    fingerprint: str
    state: str
    pending_count: int
    last_value: float | None
    last_evaluated_at: datetime | None
    last_fired_at: datetime | None
    last_resolved_at: datetime | None


def _json(value: Any) -> Any:
    """A JSON column's value: SQLite gives its text, psycopg the decoded value."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def added_rule_tables(source: Source) -> list[dict[str, Any]]:
    """The ``[[alerts]]``-like tables of the rules added with ``alerts add``, oldest first
    (``tracker.alerts.store.stored_rule_tables``)."""
    return [dict(_json(d)) for (d,) in reader_of(source).rows(q.ALERT_RULE_DEFINITIONS)]


def alert_states(source: Source) -> dict[str, StateRow]:
    """Every stored rule state, by rule name."""
    return {rule: StateRow(rule, fingerprint, state, int(pending), None if value is None else float(value),
                           utc_datetime(evaluated), utc_datetime(fired), utc_datetime(resolved))
            for rule, fingerprint, state, pending, value, evaluated, fired, resolved in reader_of(source).rows(q.ALERT_STATES)}
