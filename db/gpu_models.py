"""The ``gpu_model`` table kept equal to the spec catalog, in SQLAlchemy Core.

Every command that opens the store runs this, so it reads the table once and writes only
what differs (usually nothing), without the ORM: see ``db.asof`` on why start-up paths stay
off it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection


def sync_gpu_models(conn: Connection, rows: Iterable[dict[str, Any]]) -> int:
    """Make ``gpu_model`` equal to the catalog rows (insert, update, delete); returns how many
    rows the catalog has. Row keys are ``gpu_model`` columns (``tracker.catalog.specs.DB_FIELDS``)."""
    wanted = {r["id"]: r for r in rows}
    existing = {row["id"]: row for row in conn.execute(text("SELECT * FROM gpu_model")).mappings()}
    gone = sorted(set(existing) - set(wanted))
    if gone:
        conn.execute(text("DELETE FROM gpu_model WHERE id IN :ids").bindparams(bindparam("ids", expanding=True)),
                     {"ids": gone})
    new = [r for gpu_id, r in wanted.items() if gpu_id not in existing]
    changed = [r for gpu_id, r in wanted.items()
               if gpu_id in existing and any(existing[gpu_id][k] != v for k, v in r.items())]
    for batch, sql in ((new, _insert), (changed, _update)):
        if batch:
            conn.execute(text(sql(list(batch[0]))), batch)
    return len(wanted)


def _insert(columns: list[str]) -> str:
    return f"INSERT INTO gpu_model ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"


def _update(columns: list[str]) -> str:
    sets = ", ".join(f"{c} = :{c}" for c in columns if c != "id")
    return f"UPDATE gpu_model SET {sets} WHERE id = :id"
