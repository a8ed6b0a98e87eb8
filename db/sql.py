"""The SQL text of the read paths, with ``:name`` parameters (a list value is an ``IN`` list),
shared by the SQLAlchemy path (``text()`` with expanding parameters) and the DB-API path
(``db.reader.bind``), so a change of the schema or of a query is made once for both.

Nothing is imported here but ``db.open_intervals`` (itself import-free: an interval's true
``last_seen``): the commands that start without SQLAlchemy read these strings too.
"""

from __future__ import annotations

from db.open_intervals import LAST_SEEN, seen_since

#: ``{id: name}`` of one label space (``:s``).
LABEL_NAMES = "SELECT id, name FROM label WHERE space = :s"
#: Every label: ``(id, space, name)``.
ALL_LABELS = "SELECT id, space, name FROM label"
#: Every stored provider's name, last status and last successful collection.
PROVIDER_STATES = "SELECT name, last_status, last_success_at FROM provider ORDER BY name"
#: Collection interval in seconds (NULL: the default) by provider label id.
PROVIDER_INTERVALS = "SELECT l.id, p.interval_s FROM provider p JOIN label l ON l.space = 'provider' AND l.name = p.name"
#: ``store_meta`` value of ``:k``.
STORE_META = "SELECT value FROM store_meta WHERE key = :k"

#: The columns of a price row selected by ``PRICE_SELECT`` (``db.asof.PRICE_KEYS``), then a query's own.
PRICE_SELECT = (
    "SELECT o.provider, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.kind, o.term_months, o.region, "
    f"o.country, o.sku, i.price_per_hour, i.price_per_gpu_hour, c.name, i.available, {LAST_SEEN}, i.first_seen, "
)
#: Current prices: every offer's newest interval (``offer_state``); ``{where}`` is ``db.asof.current_condition``.
LATEST_PRICES = (PRICE_SELECT + "o.extra FROM offer_state s JOIN price_interval i ON i.id = s.interval_id "
                 "JOIN offer o ON o.id = s.offer_id JOIN label c ON c.id = i.currency_id WHERE {where}")
#: Intervals that may be in effect at ``:t`` (``:lo``: the longest hold before it).
PRICES_AT = (PRICE_SELECT + "i.ends_at, i.provider_id, i.offer_id, o.extra FROM price_interval i "
             "JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id "
             f"WHERE i.first_seen <= :t AND {seen_since('i', ':lo')}")

#: The catalog as stored.
GPU_MODELS = "SELECT * FROM gpu_model"
