"""The intervals the availability summary reads (``tracker.analysis.availability``): per interval of
the GPUs asked, its provider, region, whether it was available (NULL: not stated) and its times,
as plain tuples over a ``db.reader.Reader`` (the store's own driver or SQLAlchemy alike).

``available`` is part of an interval's identity (a change opens a new interval), so the raw
intervals hold the whole availability history; the count of GPUs free is current-only
(``price_interval_open.available_count``) and is not read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from db import sql as q
from db.reader import Reader

#: What ``availability_rows`` selects, in order.
COLUMNS = ("provider_id", "region", "offer_id", "available", "first_seen", "last_seen", "ends_at")
_SELECT = ("SELECT i.provider_id, o.region, i.offer_id, i.available, i.first_seen, i.last_seen, i.ends_at "
           "FROM price_interval i JOIN offer o ON o.id = i.offer_id WHERE ")


def availability_rows(reader: Reader, gpus: list[int], since: int, until: int, *, provider_ids: Sequence[int] | None = None,
                      kind_ids: Sequence[int] | None = None, regions: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
    """``COLUMNS`` tuples of the intervals of ``gpus`` (label ids) in effect some time in
    ``[since, until]`` (last seen from ``since``, first seen by ``until``), of the providers, kinds and
    regions given (``None``: all); through the GPU index like every interval read."""
    params: dict[str, Any] = {"since": since, "until": until}
    sql = _SELECT + q.interval_terms("i", params, gpus, provider_ids, kind_ids, None)
    sql += " AND i.last_seen >= :since AND i.first_seen <= :until"
    if regions:
        sql += " AND o.region IN :regions"
        params["regions"] = list(regions)
    return reader.rows(sql, params)
