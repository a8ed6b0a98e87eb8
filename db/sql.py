"""The SQL text of the read paths, with ``:name`` parameters (a list value is an ``IN`` list),
shared by the SQLAlchemy path (``text()`` with expanding parameters) and the DB-API path
(``db.reader.bind``), so a change of the schema or of a query is made once for both.

Nothing is imported here: the commands that start without SQLAlchemy read these strings too.
Intervals are read through the view ``price_interval`` and hourly runs through ``rollup_hour``
(``db.intervals``): every row holds its true values.
"""

from __future__ import annotations

#: ``{id: name}`` of one label space (``:s``).
LABEL_NAMES = "SELECT id, name FROM label WHERE space = :s"
#: Every label: ``(id, space, name)``.
ALL_LABELS = "SELECT id, space, name FROM label"
#: The message of a run written by an archive import begins with this, then names the archive.
IMPORT_NOTE = "import of "
#: Every stored provider's name, last status, last successful collection (for an imported provider, its
#: newest imported snapshot), collection interval, and when its newest successful collection ran (live
#: or replay; an import is not a collection).
PROVIDER_STATES = ("SELECT p.name, p.last_status, p.last_success_at, p.interval_s, "
                   "(SELECT MAX(r.started_at) FROM scrape_run r WHERE r.provider = p.name AND r.status = 'ok' "
                   "AND r.source <> 'import') "
                   "FROM provider p ORDER BY p.name")
#: Collection interval in seconds (NULL: the default) by provider label id.
PROVIDER_INTERVALS = "SELECT l.id, p.interval_s FROM provider p JOIN label l ON l.space = 'provider' AND l.name = p.name"
#: What ``gpu-tracker providers`` shows of each stored provider.
PROVIDER_ROWS = ("SELECT name, display_name, last_run_at, last_status, last_success_at, consecutive_failures "
                 "FROM provider")
#: Each provider's newest scrape run: its status and error message.
LATEST_RUNS = ("SELECT provider, status, error_message FROM scrape_run "
               "WHERE id IN (SELECT MAX(id) FROM scrape_run GROUP BY provider)")
#: Each provider's newest run written by an archive import: its provider and message.
LATEST_IMPORTS = ("SELECT provider, error_message FROM scrape_run WHERE id IN (SELECT MAX(id) FROM scrape_run "
                  "WHERE source = 'import' GROUP BY provider)")
#: Providers with a run written by an archive import.
IMPORTED_PROVIDERS = "SELECT DISTINCT provider FROM scrape_run WHERE source = 'import'"
#: The definitions of the rules added with ``alerts add``, oldest first.
ALERT_RULE_DEFINITIONS = "SELECT definition FROM alert_rule ORDER BY created_at"
#: What ``alerts list`` shows of each rule's stored state.
ALERT_STATES = ("SELECT rule, fingerprint, state, pending_count, last_value, last_evaluated_at, last_fired_at, "
                "last_resolved_at FROM alert_state")
#: ``store_meta`` key: epoch seconds before which raw intervals were pruned.
HORIZON_KEY = "raw_pruned_before"
#: Longest run of hours in one ``rollup_hour_run`` row: the runs of a range start at most this
#: many hours before it (one byte in SQLite).
MAX_RUN = 120
#: The id, provider and ``extra`` of the offers ``:ids`` (an aggregator's: ``db.via.offer_keys``).
OFFER_EXTRAS = "SELECT id, provider, extra FROM offer WHERE id IN :ids"
#: The provider and ``extra`` of every offer whose ``extra`` (as text) is ``LIKE :pattern`` (``db.via``).
OFFERS_EXTRA_LIKE = "SELECT provider, extra FROM offer WHERE CAST(extra AS TEXT) LIKE :pattern"
#: The longest any interval lasted (``last_seen - first_seen``; 0 when none is stored): the closed
#: ones' from their index (``ix_price_interval_past_span``), the open ones' (one per offer) read
#: through. An interval in effect at ``t`` (``first_seen <= t``) has ``last_seen <= t + longest``:
#: the bound that lets a read of a moment months back scan the intervals around it.
LONGEST_SPAN = ("SELECT COALESCE(MAX(s), 0) FROM (SELECT MAX(last_seen - first_seen) AS s FROM price_interval_past "
                "UNION ALL SELECT MAX(last_seen - first_seen) AS s FROM price_interval_open) spans")
#: ``store_meta`` value of ``:k``.
STORE_META = "SELECT value FROM store_meta WHERE key = :k"

#: The columns of a price row selected by ``PRICE_SELECT`` (``db.asof.PRICE_KEYS``), then a query's own.
PRICE_SELECT = (
    "SELECT o.provider, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.kind, o.term_months, o.region, "
    "o.country, o.sku, i.price_per_hour, i.price_per_gpu_hour, c.name, i.available, i.last_seen, i.first_seen, "
    "o.vcpus, o.ram_gb, "
)
#: Current prices: every offer's newest interval (``price_interval_open``); ``{where}`` is ``db.asof.current_condition``.
LATEST_PRICES = (PRICE_SELECT + "o.extra, i.available_count FROM price_interval_open i "
                 "JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id WHERE {where}")
#: Intervals that may be in effect at ``:t`` (``:lo``: the longest hold before it).
PRICES_AT = (PRICE_SELECT + "i.ends_at, i.provider_id, i.offer_id, o.extra FROM price_interval i "
             "JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id "
             "WHERE i.first_seen <= :t AND i.last_seen >= :lo")

#: The catalog as stored.
GPU_MODELS = "SELECT * FROM gpu_model"

#: ``db.rollups.RAW_COLUMNS`` in SQL, on the alias prefix ``{p}``.
RAW_COLUMNS_SQL = ("{p}id, {p}offer_id, {p}provider_id, {p}gpu_id, {p}kind_id, {p}price_per_gpu_hour, {p}first_seen, "
                   "{p}last_seen, {p}ends_at")
#: A raw interval as the analysis reads it, before its ``WHERE``.
RAW_SELECT = f"SELECT {RAW_COLUMNS_SQL.format(p='')} FROM price_interval"
#: "Last seen from ``:since`` on" on ``RAW_SELECT``'s rows (through the GPU index).
RAW_SEEN_SINCE = "last_seen >= :since"
#: The (gpu, provider, kind) series of the hourly runs, before their label terms.
ROLLUP_SERIES = "SELECT id, gpu_id, provider_id, kind_id FROM rollup_series WHERE gpu_id IN :gpus"
#: A run's columns, in both run tables and their view ``rollup_hour``.
RUN_FIELDS = "series_id, start, hours, min, median, max, offers"
#: Hourly runs of ``:sids`` overlapping hours ``:lo`` (``:a``: the earliest start that can) to ``:b``.
ROLLUP_RUNS = ("SELECT " + RUN_FIELDS + " FROM rollup_hour WHERE series_id IN :sids "
               "AND start >= :a AND start <= :b AND start + hours > :lo")
#: The day roll-up rows of ``:gpus`` of buckets ``:lo`` to ``:hi``, before their label terms.
DAY_ROWS_FROM = "FROM rollup_day WHERE gpu_id IN :gpus AND bucket >= :lo AND bucket <= :hi"
#: Day roll-up rows, before their label terms and order.
ROLLUP_DAYS = "SELECT gpu_id, bucket, provider_id, kind_id, min, median, max, offers " + DAY_ROWS_FROM
#: What a provider's day value is made of, per row (one per kind; ``db.plain_reads.provider_lows``
#: groups them).
DAY_LOWS = "SELECT gpu_id, bucket, provider_id, min, offers " + DAY_ROWS_FROM


def label_terms(column: str, name: str, ids: object, params: dict[str, object]) -> str:
    """`` AND column IN :name`` for an id list (``None``: no term; empty: matches nothing)."""
    if ids is None:
        return ""
    params[name] = list(ids) or [-1]  # type: ignore[call-overload]
    return f" AND {column} IN :{name}"


def region_terms(column: str, regions: object, params: dict[str, object]) -> str:
    """`` AND`` the offer ``column`` is in one of ``regions`` (``None``: no term)."""
    if not regions:
        return ""
    params["regions"] = list(regions)  # type: ignore[call-overload]
    return f" AND {column} IN (SELECT id FROM offer WHERE region IN :regions)"


def interval_terms(alias: str, params: dict[str, object], gpus: list[int], provider_ids: object, kind_ids: object,
                   usd: int | None, regions: object = None) -> str:
    """The ``WHERE`` of the intervals an analysis reads, on ``price_interval`` alias ``alias``
    (``""``: none): of ``gpus``, of the providers, kinds and regions given (``None``: all) and,
    with ``usd`` (the currency's label id), in USD only; fills ``params``."""
    p = f"{alias}." if alias else ""
    params["gpus"] = gpus or [-1]
    sql = f"{p}gpu_id IN :gpus"
    if usd is not None:
        sql += f" AND {p}currency_id = :usd"
        params["usd"] = usd
    return (sql + label_terms(f"{p}provider_id", "providers", provider_ids, params)
            + label_terms(f"{p}kind_id", "kinds", kind_ids, params) + region_terms(f"{p}offer_id", regions, params))


def raw_intervals(params: dict[str, object], gpus: list[int], since: int | None, until: int | None,
                  provider_ids: object, kind_ids: object, usd: int | None, regions: object = None) -> str:
    """``RAW_SELECT`` of the intervals of ``gpus`` with ``last_seen >= since`` and ``first_seen <=
    until`` (either ``None``: unbounded), of the providers, kinds and regions given (``None``: all)
    and, with ``usd`` (the currency's label id), in USD only; fills ``params``."""
    sql = RAW_SELECT + " WHERE " + interval_terms("", params, gpus, provider_ids, kind_ids, usd, regions)
    if since is not None:
        sql += f" AND {RAW_SEEN_SINCE}"
        params["since"] = since
    if until is not None:
        sql += " AND first_seen <= :until"
        params["until"] = until
    return sql
