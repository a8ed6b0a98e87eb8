"""Every read of the store: each ``SELECT`` and the function that runs it on a ``db.reader.Reader``
(the store's own driver, or a writer's transaction through ``db.reader.in_transaction``), so a
query is read in one place and run one way, as datasette's ``Database.execute``. Statements use
``:name`` parameters (a list value is an ``IN`` list); intervals are read through the view
``price_interval`` and hourly runs through ``rollup_hour`` (``db.intervals``).

The prices on sale now or as of a moment follow the analysis' "price at t" rule: an interval is in
effect from its first observation until its provider's next collection attempt
(``db.spans.hold_end``). What a provider listed last answers "now" while its collection is no
older than ``STALE_AFTER_INTERVALS`` of its collection intervals (``ProviderState.fresh``, the
alerts' staleness rule); anything older is history, shown only when asked.

Neither SQLAlchemy, ``db.models``, numpy nor pandas is imported here: importing them is most of
what a read command pays to start, and ``prices`` needs none of it.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import groupby
from operator import itemgetter
from types import NoneType, UnionType
from typing import Any, NamedTuple, TypeVar, Union, get_args, get_origin, get_type_hints

from db.columns import (
    AlertStateRow,
    DigestStateRow,
    EventRow,
    FailureRow,
    IndexDayFields,
    LeaderRow,
    LeaseRow,
    OutboxRow,
    ProviderRow,
    RunRow,
)
from db.reader import Reader, utc_datetime
from db.spans import (
    DEFAULT_INTERVAL_S,
    HOUR,
    Piece,
    Run,
    epoch,
    from_epoch,
    hold_end,
    joined,
    lows,
    utcnow,
)

#: The message of a run written by an archive import begins with this, then names the archive.
IMPORT_NOTE = "import of "
#: A successful collection's run (live or replayed): an import says so in ``source``, not by its message.
OK_COLLECTION = "status = 'ok' AND source <> 'import'"
#: ``store_meta`` key: epoch seconds before which raw intervals were pruned.
HORIZON_KEY = "raw_pruned_before"
#: Longest run of hours in one ``rollup_hour_run`` row: the runs of a range start at most this
#: many hours before it (one byte in SQLite).
MAX_RUN = 120
#: The id, provider and ``extra`` of the offers ``:ids``.
OFFER_EXTRAS = "SELECT id, provider, extra FROM offer WHERE id IN :ids"
#: The longest any interval lasted (0 when none is stored): the closed ones' from their index
#: (``ix_price_interval_past_span``), the open ones' (one per offer) read through. An interval in
#: effect at ``t`` has ``last_seen <= t + longest``: the bound that lets a read of a moment months
#: back scan only the intervals around it.
LONGEST_SPAN = ("SELECT COALESCE(MAX(s), 0) FROM (SELECT MAX(last_seen - first_seen) AS s FROM price_interval_past "
                "UNION ALL SELECT MAX(last_seen - first_seen) AS s FROM price_interval_open) spans")

#: The columns of a price row, then a query's own.
PRICE_SELECT = (
    "SELECT o.provider, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.kind, o.term_months, o.region, "
    "o.country, o.sku, i.price_per_hour, i.price_per_gpu_hour, c.name, i.available, i.last_seen, i.first_seen, "
    "o.vcpus, o.ram_gb, "
)
#: The names of ``PRICE_SELECT``'s columns.
PRICE_KEYS = ("provider", "gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "kind", "term_months", "region", "country",
              "sku", "price_per_hour", "price_per_gpu_hour", "currency", "available", "observed_at", "price_since",
              "vcpus", "ram_gb")
#: Current prices: every offer's newest interval; ``{where}`` is ``current_condition``.
LATEST_PRICES = (PRICE_SELECT + "o.extra, i.available_count FROM price_interval_open i "
                 "JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id WHERE {where}")
#: Intervals that may be in effect at ``:t`` (``:lo``: the longest hold before it).
PRICES_AT = (PRICE_SELECT + "i.ends_at, i.provider_id, i.offer_id, o.extra FROM price_interval i "
             "JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id "
             "WHERE i.first_seen <= :t AND i.last_seen >= :lo")

#: ``db.rollups.RAW_COLUMNS`` in SQL, on the alias prefix ``{p}``.
RAW_COLUMNS_SQL = ("{p}id, {p}offer_id, {p}provider_id, {p}gpu_id, {p}kind_id, {p}price_per_gpu_hour, {p}first_seen, "
                   "{p}last_seen, {p}ends_at")
#: The (gpu, provider, kind) series of the hourly runs, before their label terms.
ROLLUP_SERIES = "SELECT id, gpu_id, provider_id, kind_id FROM rollup_series WHERE gpu_id IN :gpus"
#: Joins naming an interval's (``i``) offer ``o``, provider ``lp``, GPU ``lg`` and kind ``lk``:
#: left joins on primary keys (every interval has all four), so both backends leave out those a
#: read's columns and terms do not name.
_NAMED_INTERVALS = ("FROM price_interval i LEFT JOIN offer o ON o.id = i.offer_id "
                    "LEFT JOIN label lp ON lp.id = i.provider_id LEFT JOIN label lg ON lg.id = i.gpu_id "
                    "LEFT JOIN label lk ON lk.id = i.kind_id WHERE ")
#: The hourly runs of ``:sids`` overlapping hours ``:lo`` (``:a``: the earliest start that can) to
#: ``:b`` as a provider's value takes them (``provider_low_runs``): first and last hour, lowest
#: price and offers, in order of series and start. That order is the run table's key, so each
#: side of the view is read along it (no sort), and a series' runs come as ``db.spans.joined``
#: takes them.
LOW_RUNS = ("SELECT series_id, start, start + hours - 1, min, offers FROM rollup_hour WHERE series_id IN :sids "
            "AND start >= :a AND start <= :b AND start + hours > :lo ORDER BY series_id, start")


def series_terms(params: dict[str, Any], provider_ids: object, kind_ids: object, alias: str = "") -> str:
    """`` AND`` the ``provider_id`` and ``kind_id`` (prefixed ``alias``) are among the ids given
    (``None``: no term; empty: matches nothing); fills ``params``."""
    sql = ""
    for column, name, ids in (("provider_id", "providers", provider_ids), ("kind_id", "kinds", kind_ids)):
        if ids is not None:
            params[name] = list(ids) or [-1]  # type: ignore[call-overload]
            sql += f" AND {alias}{column} IN :{name}"
    return sql


def interval_terms(alias: str, params: dict[str, object], gpus: list[int], provider_ids: object, kind_ids: object,
                   usd: int | None, regions: object = None, *, since: int | None = None,
                   until: int | None = None) -> str:
    """The ``WHERE`` of the intervals an analysis reads, on ``price_interval`` alias ``alias``
    (``""``: none): of ``gpus``, of the providers, kinds and regions given (``None``: all), with
    ``usd`` (the currency's label id) in USD only, last seen from ``since`` and first seen by
    ``until`` (``None``: unbounded); fills ``params``."""
    p = f"{alias}." if alias else ""
    params["gpus"] = gpus or [-1]
    sql = f"{p}gpu_id IN :gpus"
    if usd is not None:
        sql += f" AND {p}currency_id = :usd"
        params["usd"] = usd
    sql += series_terms(params, provider_ids, kind_ids, p)
    if regions:
        sql += f" AND {p}offer_id IN (SELECT id FROM offer WHERE region IN :regions)"
        params["regions"] = list(regions)  # type: ignore[call-overload]
    if since is not None:
        sql += f" AND {p}last_seen >= :since"
        params["since"] = since
    if until is not None:
        sql += f" AND {p}first_seen <= :until"
        params["until"] = until
    return sql


def all_labels(reader: Reader) -> dict[tuple[str, str], int]:
    """Every label as ``{(space, name): id}``."""
    return {(s, n): int(i) for i, s, n in reader.rows("SELECT id, space, name FROM label")}


def label_names(reader: Reader, space: str) -> dict[int, str]:
    """``{id: name}`` of one label space (``db.labels``)."""
    return {int(i): n for i, n in reader.rows("SELECT id, name FROM label WHERE space = :s", {"s": space})}


#: An offer's attribute columns, in the order ``provider_offer_state`` selects them (and the
#: collection writer inserts and updates them).
OFFER_FIELDS = ("gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "vcpus", "ram_gb", "country")
_OFFER_STATE = (
    f"SELECT o.sku, o.region, o.kind, o.term_months, o.id, {', '.join('o.' + f for f in OFFER_FIELDS)}, "
    "CAST(o.extra AS TEXT), i.id, i.gpu_id, i.kind_id, i.currency_id, i.price_per_hour, i.price_per_gpu_hour, "
    "i.available, i.first_seen, i.last_seen, i.ends_at, i.available_count FROM offer o LEFT JOIN price_interval_open i "
    "ON i.offer_id = o.id AND i.provider_id = (SELECT id FROM label WHERE space = 'provider' AND name = :p) "
    "WHERE o.provider = :p"
)


def provider_offer_state(reader: Reader, provider: str) -> list[tuple[Any, ...]]:
    """Every offer of ``provider`` with its newest interval (``NULL``s when it has none), one
    indexed read: what a collection's writer compares with. The open intervals are narrowed to
    the provider's too, by the provider index: else PostgreSQL joins them by scanning all of them,
    every provider's (at market scale, half of the read's time). Columns: sku, region, kind,
    term_months, offer id, ``OFFER_FIELDS``, ``extra`` as JSON text, then the interval's id, gpu,
    kind, currency, prices, availability, first_seen, last_seen, ends_at and available_count."""
    return reader.rows(_OFFER_STATE, {"p": provider})


def newest_seen(reader: Reader, where: str, params: dict[str, Any]) -> int | None:
    """The newest observation of the open intervals (alias ``i``) matching ``where``
    (``interval_terms``): each offer's newest interval is kept in ``price_interval_open``."""
    value = reader.scalar(f"SELECT MAX(i.last_seen) FROM price_interval_open i WHERE {where}", params)
    return None if value is None else int(value)


def first_seen(reader: Reader, where: str, params: dict[str, Any], until: int) -> int | None:
    """When the first interval (alias ``i``) matching ``where`` (``interval_terms``) and first
    seen by ``until`` was first seen."""
    value = reader.scalar(f"SELECT MIN(i.first_seen) FROM price_interval i WHERE {where} AND i.first_seen <= :until",
                          {**params, "until": until})
    return None if value is None else int(value)


def longest_span(reader: Reader) -> int:
    """The longest any stored interval lasted (``LONGEST_SPAN``)."""
    return int(reader.scalar(LONGEST_SPAN))


#: How many closed intervals a read of "in effect at t" takes from the span index
#: (``ix_price_interval_past_span``) rather than from the GPU index (``split_span``).
LONG_INTERVALS = 1000


def split_span(reader: Reader) -> int:
    """The span (``last_seen - first_seen``) at most ``LONG_INTERVALS`` closed intervals exceed
    (-1 when fewer are stored), from the span index: a read of the intervals in effect at ``t``
    takes the closed ones last seen by ``t + split_span`` from the GPU index, and the few longer
    ones from the span index, so it walks neither the longest interval's span of the GPU index
    nor more than ``LONG_INTERVALS`` entries of the span index, whatever the longest interval."""
    value = reader.scalar("SELECT last_seen - first_seen FROM price_interval_past "
                          "ORDER BY last_seen - first_seen DESC LIMIT 1 OFFSET :k", {"k": LONG_INTERVALS})
    return -1 if value is None else int(value)


def _in_effect_at(where: str, params: dict[str, Any], times: Sequence[int], hold: int, split: int,
                  columns: str, holds: Mapping[int, int] | None = None, per_gpu: bool = False) -> str:
    """The rows (``columns`` of alias ``i``, ``t`` first) of the intervals matching ``where``
    (``interval_terms``: it names the GPUs, the first column of the GPU index) that may be in
    effect at each of ``times``: first seen by ``t``, last seen from ``t - hold`` (``hold``: the
    longest any price holds). The closed ones last seen by ``t + split`` (``split_span``) are
    found in the (gpu, last_seen, first_seen) index, a range per time; the longer ones in the span
    index and the open ones in their own small table, each read once for every time. With
    ``holds`` (each provider id's collection interval; missing: ``DEFAULT_INTERVAL_S``), only
    those in effect (``db.spans.hold_end``: last seen at ``t`` or later, or held past ``t`` by
    their provider's interval and not ended by ``ends_at``). ``{t}`` in ``columns`` is the time; ``per_gpu``:
    ``columns`` aggregate, grouped per time and GPU in each branch (the GPU index gives a range's
    rows in GPU order: no sort). Fills ``params``."""
    effect = ""
    if holds is not None:
        every = " ".join(f"WHEN {int(p)} THEN {int(s)}" for p, s in sorted(holds.items()))
        interval = f"CASE i.provider_id {every} ELSE {DEFAULT_INTERVAL_S} END" if every else str(DEFAULT_INTERVAL_S)
        effect = (" AND (i.last_seen >= {t} OR ((i.ends_at IS NULL OR i.ends_at > {t}) AND i.last_seen + "
                  f"{interval} > {{t}}))")
    params |= {"hold": hold, "split": split}
    branches = [(f"SELECT {{t}} AS t, {columns} FROM price_interval_past i WHERE {where} AND i.first_seen <= {{t}} "
                 f"AND i.last_seen >= {int(t) - hold} AND i.last_seen <= {int(t) + split}{effect}"
                 + (" GROUP BY i.gpu_id" if per_gpu else "")).replace("{t}", str(int(t))) for t in times]
    moments = "(" + " UNION ALL ".join(f"SELECT {int(t)} AS t" for t in times) + ") m"
    joined = (f"SELECT m.t, {columns} FROM {{}} i CROSS JOIN {moments} WHERE i.first_seen <= m.t AND {{}}{effect}"
              + (" GROUP BY m.t, i.gpu_id" if per_gpu else "")).replace("{t}", "m.t")
    branches += [joined.format("long", "i.last_seen > m.t + :split"),
                 joined.format("price_interval_open", f"{where} AND i.last_seen >= m.t - :hold")]
    return ("WITH long AS MATERIALIZED (SELECT * FROM price_interval_past i WHERE i.id IN (SELECT p.id FROM "
            f"price_interval_past p WHERE p.last_seen - p.first_seen > :split) AND {where}) " + " UNION ALL ".join(branches))


def interval_rows_at(reader: Reader, where: str, params: dict[str, Any], times: Sequence[int], hold: int,
                     split: int) -> list[tuple[Any, ...]]:
    """The intervals (alias ``i``) matching ``where`` that may be in effect at each of ``times``
    (``_in_effect_at``): (t, gpu id, provider id, offer id, price, first_seen, last_seen, ends_at)."""
    params = dict(params)
    sql = _in_effect_at(where, params, times, hold, split, "i.gpu_id, i.provider_id, i.offer_id, i.price_per_gpu_hour, "
                        "i.first_seen, i.last_seen, i.ends_at")
    return reader.rows(sql, params)


def interval_lows_at(reader: Reader, where: str, params: dict[str, Any], times: Sequence[int], hold: int, split: int,
                     holds: Mapping[int, int]) -> list[tuple[int, int, float, bool]]:
    """The lowest price in effect at each of ``times`` per GPU, over the intervals (alias ``i``)
    matching ``where`` in effect then (``_in_effect_at`` with ``holds``), in a few groups per
    (t, gpu id): (t, gpu id, lowest price, whether one of them is held past its last observation
    with no ``ends_at``). Only such an interval can share its offer with another in effect then:
    an offer's observations make disjoint runs, so of two such intervals the older was last seen
    before ``t``, and a newer one begun by ``t`` began at a collection attempt, which its
    ``ends_at`` (the next attempt) would not be after. The lowest is ``MIN``, as ``float``
    orders them: a NaN above every price."""
    params = dict(params)
    sql = _in_effect_at(where, params, times, hold, split, "i.gpu_id, MIN(i.price_per_gpu_hour), "
                        "MAX(CASE WHEN i.last_seen < {t} AND i.ends_at IS NULL THEN 1 ELSE 0 END)", holds, per_gpu=True)
    return [(int(t), int(g), float(low), bool(held)) for t, g, low, held in reader.rows(sql, params)]


def first_at_lows(reader: Reader, where: str, params: dict[str, Any], lows: Sequence[tuple[int, float, int, int, int | None]],
                  span: int) -> list[tuple[int, int, str]]:
    """(gpu id, first_seen, provider name) of the intervals (alias ``i``) matching ``where`` at a
    GPU's low, in one query: per (gpu id, low, first day, last time, end or ``None``) of ``lows``,
    those at price ``low`` that started between the day and the last time and were last seen
    before ``end``: the range of ``last_seen`` the (gpu, last_seen, first_seen) index walks ends
    there, or by the longest interval (``span``) after the last time."""
    params = dict(params)
    terms = []
    for k, (gpu_id, low, day, hi, end) in enumerate(lows):
        terms.append(f"(i.gpu_id = :g{k} AND i.last_seen >= :lo{k} AND i.last_seen <= :to{k} AND i.first_seen >= :lo{k} "
                     f"AND i.first_seen <= :hi{k} AND i.price_per_gpu_hour = :low{k})")
        to = hi + span if end is None else min(hi + span, end - 1)
        params |= {f"g{k}": gpu_id, f"lo{k}": day, f"hi{k}": hi, f"to{k}": to, f"low{k}": low}
    rows = reader.rows("SELECT i.gpu_id, i.first_seen, l.name FROM price_interval i JOIN label l ON l.id = i.provider_id "
                       f"WHERE {where} AND ({' OR '.join(terms)})", params)
    return [(int(g), int(t), str(n)) for g, t, n in rows]


def day_lows(reader: Reader, gpu_ids: list[int], provider_ids: list[int] | None, kind_ids: list[int] | None,
             before: int) -> list[tuple[int, int, float]]:
    """Per (gpu id, day) before ``before``, the day roll-ups' lowest price."""
    params: dict[str, Any] = {"gpus": gpu_ids or [-1], "before": before}
    sql = ("SELECT r.gpu_id, r.bucket, MIN(r.min) FROM rollup_day r WHERE r.gpu_id IN :gpus AND r.bucket < :before"
           + series_terms(params, provider_ids, kind_ids, "r.") + " GROUP BY r.gpu_id, r.bucket")
    return [(int(g), int(b), float(low)) for g, b, low in reader.rows(sql, params)]


#: The columns of an interval the exports' frames read (``tracker.analysis.frames``): id, offer,
#: provider, GPU and kind names, term, region, sku, gpu count, per-GPU and whole price,
#: available, first_seen, last_seen, ends_at and provider id.
FRAME_COLUMNS = ("i.id, i.offer_id, lp.name, lg.name, lk.name, o.term_months, o.region, o.sku, o.gpu_count, "
                 "i.price_per_gpu_hour, i.price_per_hour, i.available, i.first_seen, i.last_seen, i.ends_at, i.provider_id")
#: The columns of an interval availability reads (``tracker.analysis.availability``). ``available``
#: is part of an interval's identity, so the raw intervals hold the whole availability history;
#: the count of GPUs free is kept for the newest interval only and is not read.
AVAILABILITY_COLUMNS = "i.provider_id, o.region, i.offer_id, i.available, i.first_seen, i.last_seen, i.ends_at"


def named_intervals(reader: Reader, columns: str, gpu_ids: list[int], provider_ids: Sequence[int] | None,
                    kind_ids: Sequence[int] | None, usd: int | None, *, regions: Sequence[str] | None = None,
                    since: int | None = None, until: int | None = None,
                    min_gpu_count: float | None = None) -> list[tuple[Any, ...]]:
    """``columns`` (SQL over ``price_interval i``, its offer ``o`` and labels ``lp`` provider, ``lg``
    GPU and ``lk`` kind) of the intervals filtered as ``interval_terms`` says, of offers in
    ``regions`` with at least ``min_gpu_count`` GPUs (``None`` or empty: any)."""
    params: dict[str, Any] = {}
    where = interval_terms("i", params, gpu_ids, provider_ids, kind_ids, usd, since=since, until=until)
    if min_gpu_count is not None:
        where += " AND o.gpu_count >= :min_count"
        params["min_count"] = min_gpu_count
    if regions:
        where += " AND o.region IN :regions"
        params["regions"] = list(regions)
    return reader.rows(f"SELECT {columns} {_NAMED_INTERVALS}{where}", params)


def row_counts(reader: Reader) -> dict[str, int]:
    """Rows of each table ``info`` counts, in the order it shows them."""
    tables = ("provider", "gpu_model", "offer", "price_interval", "scrape_run", "quarantine")
    return {table: int(reader.scalar(f"SELECT COUNT(*) FROM {table}")) for table in tables}


class Labels:
    """The label table read once: names by id and ids by (space, name)."""

    def __init__(self, reader: Reader) -> None:
        self.by_space: dict[str, dict[int, str]] = {}
        for (space, name), i in all_labels(reader).items():
            self.by_space.setdefault(space, {})[i] = name
        #: The currency label ``USD``'s id (what the analysis reads), or -1 (matches no row) without one.
        self.usd = (self.lookup("currency", ["USD"]) or [-1])[0]

    def names(self, space: str) -> dict[int, str]:
        return dict(self.by_space.get(space, {}))

    def lookup(self, space: str, values: Iterable[str] | None) -> list[int]:
        """Ids of the stored names of ``space`` among ``values`` (``db.labels.lookup``), or all of them (``None``)."""
        names = self.by_space.get(space, {})
        return sorted(names) if values is None else ids_of(names, values)


def ids_of(names: Mapping[int, str], values: Iterable[str]) -> list[int]:
    """The ids (of ``{id: name}``) of those of ``values`` that are stored, in their order."""
    inverse = {n: i for i, n in names.items()}
    return [inverse[v] for v in values if v in inverse]


def raw_horizon(reader: Reader) -> int:
    """Epoch seconds (a day boundary) before which raw intervals were pruned (0: never)."""
    value = reader.scalar("SELECT value FROM store_meta WHERE key = :k", {"k": HORIZON_KEY})
    return int(value) if value is not None else 0


def raw_rows(reader: Reader, gpus: list[int], since: int | None, until: int | None, provider_ids: list[int] | None,
             kind_ids: list[int] | None, usd: int | None, regions: Iterable[str] | None = None) -> list[tuple[Any, ...]]:
    """The raw intervals as the analysis reads them (``db.rollups.RAW_COLUMNS`` tuples), filtered as
    ``interval_terms`` says."""
    params: dict[str, Any] = {}
    where = interval_terms("", params, gpus, provider_ids, kind_ids, usd, regions, since=since, until=until)
    return reader.rows(f"SELECT {RAW_COLUMNS_SQL.format(p='')} FROM price_interval WHERE {where}", params)


def provider_low_runs(reader: Reader, step: int, *, gpu_ids: list[int], lo: int, hi: int,
                      provider_ids: list[int] | None = None,
                      kind_ids: list[int] | None = None) -> dict[tuple[int, int], list[Run]]:
    """Per (gpu id, provider id), the provider's lowest price and offers over the buckets starting
    in ``[lo, hi]`` across the kinds asked for, as runs of bucket indices (start = index *
    ``step``; ``db.spans.lows``). Day rows and hourly runs (one per kind) are combined as they
    are, never expanded into hours; the hourly runs are read with the columns a low takes, in
    order, so a provider with one series (one kind) is a pass over its runs with no sweep."""
    if not gpu_ids:
        return {}
    params: dict[str, Any] = {"gpus": gpu_ids, "lo": lo, "hi": hi}
    terms = series_terms(params, provider_ids, kind_ids)
    if step != HOUR:
        pieces: dict[tuple[int, int], list[Piece]] = {}
        # integers and floats from both drivers
        for g, b, p, low, offers in reader.rows("SELECT gpu_id, bucket, provider_id, min, offers FROM rollup_day "
                                                "WHERE gpu_id IN :gpus AND bucket >= :lo AND bucket <= :hi" + terms, params):
            day = b // step
            pieces.setdefault((g, p), []).append((day, day, low, offers))
        return {key: lows(ps) for key, ps in pieces.items()}
    series = {int(i): (int(g), int(p)) for i, g, p, _k in reader.rows(ROLLUP_SERIES + terms, params)}
    h_lo, h_hi = -(-lo // HOUR), hi // HOUR
    if not series or h_hi < h_lo:
        return {}
    rows = reader.rows(LOW_RUNS, {"sids": sorted(series), "a": h_lo - MAX_RUN + 1, "b": h_hi, "lo": h_lo})
    parts: dict[tuple[int, int], list[list[Run]]] = {}
    for sid, group in groupby(rows, itemgetter(0)):  # integers and floats from both drivers
        parts.setdefault(series[sid], []).append(_series_lows(list(group), h_lo, h_hi))
    keys = dict.fromkeys(series.values())  # the order the series were read in
    return {key: ps[0] if len(ps) == 1 else lows(r for p in ps for r in p)
            for key in keys if (ps := parts.get(key))}


#: A ``LOW_RUNS`` row's piece (first hour, last hour, lowest price, offers), taken in C: an hourly
#: year is 56,000 rows.
_PIECE = itemgetter(1, 2, 3, 4)


def _series_lows(rows: list[tuple[Any, ...]], h_lo: int, h_hi: int) -> list[Run]:
    """One series' lows over hours ``h_lo`` to ``h_hi`` from its ``LOW_RUNS`` rows: its runs
    joined as they come (``db.spans.joined``), then the first and last cut to the range; a
    series whose runs overlap takes the sweep, each run cut first."""
    runs = joined(map(_PIECE, rows))
    if runs is None:
        return lows((max(h_lo, a), min(h_hi, b), low, n) for _sid, a, b, low, n in rows)
    a, b, low, n = runs[0]
    runs[0] = (max(h_lo, a), b, low, n)
    a, b, low, n = runs[-1]
    runs[-1] = (a, min(h_hi, b), low, n)
    return runs


def provider_lows(reader: Reader, step: int, *, gpu_ids: list[int], lo: int, hi: int,
                  provider_ids: list[int] | None = None,
                  kind_ids: list[int] | None = None) -> list[tuple[int, int, int, float, int]]:
    """``provider_low_runs`` one bucket at a time: sorted tuples (gpu id, bucket start, provider
    id, lowest price, offers)."""
    runs = provider_low_runs(reader, step, gpu_ids=gpu_ids, lo=lo, hi=hi, provider_ids=provider_ids, kind_ids=kind_ids)
    return sorted((g, i * step, p, v, n) for (g, p), rs in runs.items() for a, b, v, n in rs for i in range(a, b + 1))


#: The staleness limit, in collection intervals of a provider: a provider whose newest data is
#: older counts as stale (the alerts' freshness, ``tracker.alerts.data``; this read's note).
STALE_AFTER_INTERVALS = 3
#: Collection intervals are at most a week: the SQL bound before the exact filter.
_MAX_HOLD_S = 7 * 86_400


class ProviderState(NamedTuple):
    """What the read path needs of a ``provider`` row."""

    name: str
    last_status: str | None
    last_success_at: datetime | None
    interval_s: int = DEFAULT_INTERVAL_S
    #: When its newest successful collection ran (live, or a replay of recordings); None when
    #: everything it has came from imported archives.
    collected_at: datetime | None = None

    def fresh(self, now: datetime) -> bool:
        """Whether what it listed last still answers "now": its newest collection ran (or, for
        a provider known only from imports, its newest snapshot was taken) no longer than
        ``STALE_AFTER_INTERVALS`` of its collection intervals ago."""
        basis = self.collected_at or self.last_success_at
        return basis is not None and now - basis <= timedelta(seconds=STALE_AFTER_INTERVALS * self.interval_s)


def provider_states(reader: Reader) -> list[ProviderState]:
    """Every stored provider's state; an import is not a collection, a replay is (``OK_COLLECTION``)."""
    rows = reader.rows("SELECT p.name, p.last_status, p.last_success_at, p.interval_s, (SELECT MAX(r.started_at) "
                       f"FROM scrape_run r WHERE r.provider = p.name AND {OK_COLLECTION}) FROM provider p ORDER BY p.name")
    return [ProviderState(name, status, utc_datetime(at), int(every) if every else DEFAULT_INTERVAL_S,
                          utc_datetime(ran))
            for name, status, at, every, ran in rows]


def provider_intervals(reader: Reader) -> dict[int, int]:
    """Collection interval in seconds by provider label id (default one hour)."""
    rows = reader.rows("SELECT l.id, p.interval_s FROM provider p JOIN label l ON l.space = 'provider' AND l.name = p.name")
    return {pid: int(s) if s else DEFAULT_INTERVAL_S for pid, s in rows}


def _json(value: Any) -> Any:
    """A JSON column's value: SQLite gives its text, psycopg the decoded value."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def extra_dict(extra: Any) -> dict[str, Any]:
    """An offer's ``extra`` as a dict (``{}`` when it is none or not JSON)."""
    try:
        extra = _json(extra)
    except ValueError:
        return {}
    return extra if isinstance(extra, dict) else {}


#: Price-row fields of a price converted to USD (``tracker.pipeline.normalise``): the price as
#: listed, its currency, the rate and the day it was read. ``None`` for a price listed in USD.
CONVERSION_KEYS = ("original_price_per_hour", "original_currency", "usd_rate", "usd_rate_date")


def conversions(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, float | None, str | None, int]]:
    """(currency, rate, rate date, prices) of each conversion the price rows carry, for a note
    beside them: a converted price is never shown without its rate and date."""
    seen = Counter((r["original_currency"], r.get("usd_rate"), r.get("usd_rate_date"))
                   for r in rows if r.get("original_currency"))
    return [(c, rate, on, n) for (c, rate, on), n in sorted(seen.items(), key=lambda kv: (kv[0][0], str(kv[0][2])))]


def price_source(row: dict[str, Any], imported: str | None = None) -> str:
    """Where a price row came from, as every surface shows it: ``live``; ``replay 2025-06-21``
    (the recording's date), ``replay (handmade)``; ``import <archive>`` for a provider known only
    from an imported archive (``imported``: its newest import's label)."""
    if imported is not None:
        return f"import {imported}"
    if not row.get("replay"):
        return "live"
    if row.get("fixture") not in (None, "recording"):
        return f"replay ({row['fixture']})"
    return f"replay {row['recorded']}" if row.get("recorded") else "replay (undated)"


def imported_sources(reader: Reader, states: Sequence[ProviderState] | None = None) -> dict[str, str]:
    """``{provider: archive}`` for the providers whose data all came from imports (no collection
    run), with the label of each one's newest import (``import of <label> (...)``)."""
    states = provider_states(reader) if states is None else states
    collected = {p.name for p in states if p.collected_at is not None}
    rows = reader.rows("SELECT provider, error_message FROM scrape_run WHERE id IN "
                       "(SELECT MAX(id) FROM scrape_run WHERE source = 'import' GROUP BY provider)")
    return {provider: message.removeprefix(IMPORT_NOTE).split(" (", 1)[0]
            for provider, message in rows if provider not in collected and message}


def _price_row(values: Sequence[Any], extra: Any, imported: dict[str, str], now: datetime,
               available_count: int | None = None) -> dict[str, Any]:
    d = dict(zip(PRICE_KEYS, values, strict=True))
    d["available"] = _bool(d["available"])
    # GPUs free now: the store keeps the newest count only, so a past moment (``_prices_at``) has none
    d["available_count"] = None if available_count is None else int(available_count)
    d["observed_at"], d["price_since"] = from_epoch(d["observed_at"]), from_epoch(d["price_since"])
    e = extra_dict(extra)
    d[VIA_KEY] = via_of(e)
    d.update({k: e.get(k) if e.get("original_currency") else None for k in CONVERSION_KEYS})
    # a replayed recording marks its offers' ``extra`` (``tracker.pipeline.replay``); a live collection drops it
    mark = e.get("replay") if isinstance(e.get("replay"), dict) else None
    d["replay"] = mark is not None
    d["recorded"], d["fixture"] = (mark.get("recorded"), mark.get("fixture")) if mark is not None else (None, None)
    d["source"] = price_source(d, imported.get(d["provider"]))
    d["age_s"] = max(0, int((now - d["observed_at"]).total_seconds())) if d["observed_at"] is not None else None
    return d


def _offer_terms(gpus: Sequence[str] | None, kinds: Sequence[str] | None, regions: Sequence[str] | None,
                 params: dict[str, Any], providers: Sequence[str] | None, include_unmapped: bool) -> str:
    """``AND`` terms on the ``offer`` alias ``o`` (an empty ``gpus`` list matches nothing; without
    ``gpus``, ``include_unmapped`` keeps the offers of no known GPU)."""
    sql = "" if gpus is not None or include_unmapped else " AND o.gpu IS NOT NULL"
    for column, values, name in (("o.gpu", gpus, "gpus"), ("o.provider", providers, "providers"),
                                 ("o.kind", kinds, "kinds"), ("o.region", regions, "regions")):
        if values is not None and (values or name == "gpus"):
            sql += f" AND {column} IN :{name}"
            params[name] = list(values) or [""]
    return sql


def current_condition(reader: Reader, providers: Sequence[str] | None = None, *, now: datetime | None = None,
                      include_stale: bool = False,
                      states: Sequence[ProviderState] | None = None) -> tuple[str, dict[str, Any]]:
    """SQL matching ``price_interval_open`` rows (alias ``i``) listed by their provider's latest
    successful collection, if that collection still answers "now" (``ProviderState.fresh``) or
    ``include_stale``."""
    now = now or utcnow()
    ids = {n: i for i, n in label_names(reader, "provider").items()}
    parts, params = [], {}
    for k, p in enumerate(provider_states(reader) if states is None else states):
        if p.last_success_at is None or p.name not in ids or (providers and p.name not in providers):
            continue
        if not include_stale and not p.fresh(now):
            continue
        # after a complete collection, what it listed is open; after a failed one, the last good
        # list was closed by the failure and is still shown (held); after a partial one
        # (``tracker.pipeline.partial``), the last complete list with what was seen since
        if p.last_status in ("failed", "skipped", "partial"):
            parts.append(f"(i.provider_id = :p{k} AND i.last_seen >= :t{k})")
        else:
            parts.append(f"(i.provider_id = :p{k} AND i.last_seen = :t{k} AND i.ends_at IS NULL)")
        params[f"p{k}"], params[f"t{k}"] = ids[p.name], epoch(p.last_success_at)
    return ("(" + " OR ".join(parts) + ")" if parts else "1 = 0"), params


def latest_prices(
    reader: Reader,
    *,
    at: datetime | None = None,
    gpus: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    include_unmapped: bool = True,
    now: datetime | None = None,
    include_stale: bool = False,
) -> list[dict[str, Any]]:
    """Current price of every offer its provider's latest successful collection listed, cheapest
    per GPU-hour first: the one answer to "what does it cost now" every surface gives. An offer
    missing from that collection is no longer on sale; a stale provider answers nothing unless
    ``include_stale`` (a year-old imported price is history). Each row says its ``source`` and
    ``age_s`` (seconds since observed). With ``at``, the prices in effect then (``_prices_at``)."""
    if at is not None:
        params: dict[str, Any] = {}
        return _prices_at(reader, at, _offer_terms(gpus, kinds, regions, params, providers, include_unmapped), params)
    now = now or utcnow()
    states = provider_states(reader)  # read once: the "now" rule and the rows' sources both need them
    where, params = current_condition(reader, providers, now=now, include_stale=include_stale, states=states)
    sql = LATEST_PRICES.format(where=where) + _offer_terms(gpus, kinds, regions, params, None, include_unmapped)
    sql += " ORDER BY i.price_per_gpu_hour, o.provider, o.sku, o.region, o.id"  # ties in a stated order on both backends
    rows = reader.rows(sql, params)
    imported = imported_sources(reader, states)
    return [_price_row(row[:18], row[18], imported, now, row[19]) for row in rows]


def _prices_at(reader: Reader, at: datetime, terms: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every offer's price in effect at ``at`` among the offers ``terms`` (``_offer_terms``)
    match, cheapest per GPU-hour first; ``observed_at`` is the last observation at or before
    ``at`` that the interval vouches for."""
    t = epoch(at)
    rows = reader.rows(PRICES_AT + terms, params | {"t": t, "lo": t - _MAX_HOLD_S})
    intervals = provider_intervals(reader)
    newest: dict[int, tuple[Any, ...]] = {}
    for r in rows:
        last_seen, ends_at, pid, offer_id = int(r[14]), r[18], int(r[19]), int(r[20])
        if t >= hold_end(last_seen, ends_at, intervals.get(pid, DEFAULT_INTERVAL_S)):
            continue
        have = newest.get(offer_id)
        if have is None or int(r[15]) > int(have[15]):
            newest[offer_id] = tuple(r)
    imported = imported_sources(reader)
    out = [_price_row((*r[:14], min(int(r[14]), t), *r[15:18]), r[21], imported, at) for r in newest.values()]
    out.sort(key=lambda d: (d["price_per_gpu_hour"] is None, d["price_per_gpu_hour"] or 0.0, d["provider"], d["sku"]))
    return out


def stale_note(reader: Reader, *, providers: Sequence[str] | None = None, now: datetime | None = None) -> str | None:
    """A note when no provider (of ``providers``) answers "now" although data is stored, naming
    the newest data's date and the options that show it, else ``None``."""
    now = now or utcnow()
    states = [p for p in provider_states(reader) if not providers or p.name in providers]
    dated = [p for p in states if p.last_success_at is not None]
    if not dated or any(p.fresh(now) for p in states):
        return None
    p = max(dated, key=lambda p: p.last_success_at)  # type: ignore[arg-type,return-value]
    when: datetime = p.last_success_at  # type: ignore[assignment]
    hours = (now - when).total_seconds() / 3600
    old = f"{hours / 24:.0f} days" if hours >= 48 else f"{hours:.0f} hours"
    return (f"the newest data is from {when:%Y-%m-%d %H:%M} UTC ({p.name}, {old} old; older than "
            f"{STALE_AFTER_INTERVALS} collection intervals): nothing is current. Ask about that time with "
            f"--at {when:%Y-%m-%dT%H:%M}Z, show the last prices anyway with --include-stale, or collect "
            "fresh prices with `gpu-tracker scrape`")


def imported_providers(reader: Reader) -> set[str]:
    """The providers an archive import wrote runs for."""
    return {name for (name,) in reader.rows("SELECT DISTINCT provider FROM scrape_run WHERE source = 'import'")}


def stored_key_labels(reader: Reader) -> set[tuple[str, str]]:
    """``key_labels`` of every stored offer: what a roll-up rebuild ensures first, so a store
    written before composite keys existed gets them."""
    rows = reader.rows("SELECT provider, extra FROM offer WHERE CAST(extra AS TEXT) LIKE :pattern",
                       {"pattern": f'%"{VIA_KEY}"%'})
    return {lab for provider, extra in rows for lab in key_labels(provider, [extra])}


def offer_keys(reader: Reader, provider_names: Mapping[int, str], rows: Iterable[tuple[int, int]]) -> dict[int, int]:
    """``{offer id: key label id}`` of the offers among ``rows`` (``(offer id, provider id)``
    pairs, as intervals carry them) that roll up under a composite key: those of aggregators
    naming a cloud; every other offer rolls up under its provider's own id. Reads only those
    offers, so the cost follows the rows at hand, never the length of the history."""
    by_provider = keys_of(provider_names)
    if not by_provider:
        return {}
    aggregators = {i for i, name in provider_names.items() if name in by_provider}
    wanted = sorted({int(offer) for offer, provider in rows if int(provider) in aggregators})
    out: dict[int, int] = {}
    for start in range(0, len(wanted), 500):  # bounded parameter lists
        for oid, provider, extra in reader.rows(OFFER_EXTRAS, {"ids": wanted[start:start + 500]}):
            key = by_provider.get(provider, {}).get(via_of(extra) or "")
            if key is not None:
                out[int(oid)] = key
    return out


#: The index roll-up's table (``db.index_rollup``) and the columns of a row, in the order ``index_rows``
#: returns them.
INDEX_TABLE = "index_day"
INDEX_COLUMNS = tuple(f.name for f in fields(IndexDayFields))
#: A provider's offers renting a fraction of a GPU, found through the offer identity's key (it
#: starts with ``provider``): PostgreSQL plans an ``id IN (...)`` list of a few hundred ids as a
#: scan of the whole ``offer`` table per list.
FRACTIONAL_OFFERS = "SELECT id FROM offer WHERE provider = :p AND CAST(gpu_count AS INTEGER) <> gpu_count"


def fractional_offers(reader: Reader, offers: Iterable[tuple[int, int]]) -> set[int]:
    """The offers among ``offers`` (``(offer id, provider label id)`` pairs) renting a fraction of
    a GPU: one statement per provider, whatever the number of offers (fractional ones are few)."""
    by_provider: dict[int, set[int]] = {}
    for offer_id, provider_id in offers:
        by_provider.setdefault(int(provider_id), set()).add(int(offer_id))
    if not by_provider:
        return set()
    names = label_names(reader, "provider")
    return {o for provider_id, ids in sorted(by_provider.items()) if provider_id in names
            for o in provider_fractional_offers(reader, names[provider_id]) & ids}


def provider_fractional_offers(reader: Reader, provider: str) -> set[int]:
    """Every offer of ``provider`` renting a fraction of a GPU (``FRACTIONAL_OFFERS``)."""
    return {int(i) for (i,) in reader.rows(FRACTIONAL_OFFERS, {"p": provider})}


def index_rows(reader: Reader, gpu_ids: Sequence[int], lo: int, hi: int, kind_ids: Sequence[int] | None = None
               ) -> list[tuple[Any, ...]]:
    """Index roll-up rows (``INDEX_COLUMNS``) of days starting in ``[lo, hi]`` of ``gpu_ids``
    (``kind_ids``: None for every kind), by a primary-key range per GPU."""
    if not gpu_ids:
        return []
    params: dict[str, Any] = {"gpus": list(gpu_ids), "lo": lo, "hi": hi}
    sql = (f"SELECT {', '.join(INDEX_COLUMNS)} FROM {INDEX_TABLE} "
           "WHERE gpu_id IN :gpus AND bucket >= :lo AND bucket <= :hi")
    return reader.rows(sql + series_terms(params, None, kind_ids), params)


def first_index_day(reader: Reader, gpu_ids: Sequence[int]) -> int | None:
    """The first day with an index roll-up row for ``gpu_ids`` (None: none)."""
    if not gpu_ids:
        return None
    value = reader.scalar(f"SELECT MIN(bucket) FROM {INDEX_TABLE} WHERE gpu_id IN :gpus", {"gpus": list(gpu_ids)})
    return None if value is None else int(value)


def stored_revisions(reader: Reader) -> list[str]:
    """The schema revisions a store's version table holds (no such table, an error of the driver:
    a new or pre-migration store)."""
    return [row[0] for row in reader.rows("SELECT version_num FROM alembic_version")]


def gpu_model_rows(reader: Reader) -> list[dict[str, Any]]:
    """The catalog as stored (``gpu_model``), a mapping per row."""
    return reader.mappings("SELECT * FROM gpu_model")


# ------------------------------------------------------------------------------------------------
# Series keys of an aggregator's offers. An aggregator (GetDeploying, Shadeform, Compute Pulse)
# stores other clouds' offers under its own name, with the cloud in ``offer.extra["via"]``; market
# figures count such a row as that cloud's when we collect the cloud directly
# (``tracker.analysis.aggregators``), so the roll-ups must not blend an aggregator's clouds. Each
# (aggregator, cloud) pair rolls up under a provider label ``<aggregator>/<cloud>``, created with
# the offer's other labels; raw intervals keep the provider's own id, and ``offer_keys`` says which
# key each offer rolls up under.


#: Between the aggregator's and the cloud's name in a series key (provider names are plain words).
SEP = "/"
#: ``offer.extra`` key naming the cloud an aggregator's offer is rented from.
VIA_KEY = "via"


def split(key: str) -> tuple[str, str | None]:
    """``(provider, via)`` of a series key (``via`` is ``None`` for a provider's own key)."""
    provider, sep, via = key.partition(SEP)
    return (provider, via) if sep and via else (key, None)


def via_of(extra: Any) -> str | None:
    """The cloud an offer's ``extra`` (a dict or its JSON text) names, if any."""
    via = extra_dict(extra).get(VIA_KEY)
    return via if isinstance(via, str) and via else None


def key_labels(provider: str, extras: Iterable[Any]) -> set[tuple[str, str]]:
    """The ``label`` rows (space, name) of the composite keys that offers of ``provider`` with
    these ``extra`` go to: what a writer ensures beside the offers' other labels."""
    return {("provider", f"{provider}{SEP}{v}") for e in extras if (v := via_of(e)) and v != provider}


def keys_of(provider_names: Mapping[int, str]) -> dict[str, dict[str, int]]:
    """Per aggregator with composite keys, ``{via: key label id}``, from the provider labels."""
    out: dict[str, dict[str, int]] = {}
    for i, name in provider_names.items():
        provider, via = split(name)
        if via is not None:
            out.setdefault(provider, {})[via] = i
    return out


def owners(provider_names: Mapping[int, str]) -> dict[int, int]:
    """Each composite key's id -> its aggregator's label id (keys whose aggregator has no label are left out)."""
    ids = {name: i for i, name in provider_names.items()}
    return {key: ids[p] for p, keys in keys_of(provider_names).items() if p in ids for key in keys.values()}


def expand(provider_names: Mapping[int, str], provider_ids: Iterable[int] | None) -> list[int] | None:
    """A provider filter's label ids with each provider's composite keys added (roll-up reads
    filter on keys); ``None`` (no filter) stays ``None``."""
    if provider_ids is None:
        return None
    wanted = list(provider_ids)
    keys = keys_of(provider_names)
    extra = {key for i in wanted if i in provider_names for key in keys.get(provider_names[i], {}).values()}
    return wanted + sorted(extra - set(wanted))


# ------------------------------------------------------------------------------------------------
# The application's reads (collection, alerts, service, imports, web). Rows come back as named
# tuples (a table's own are its declaration in ``db.columns``), times as aware UTC datetimes.


Identity = tuple[str, str, str, int]
Row = TypeVar("Row", bound=tuple[Any, ...])


def _bool(value: Any) -> bool | None:
    """A stored flag as a bool (SQLite's driver gives 0 or 1)."""
    return None if value is None else bool(value)


def _cast(hint: Any) -> Callable[[Any], Any] | None:
    """How a column of type ``hint`` is read from either driver: a datetime as aware UTC, a dict
    from JSON text, a bool from SQLite's 0/1; anything else as the driver gives it."""
    types = set(get_args(hint)) - {NoneType} if get_origin(hint) in (Union, UnionType) else {hint}  # NULL aside
    if datetime in types:
        return utc_datetime
    if any(get_origin(t) is dict for t in types):
        return _json
    return _bool if bool in types else None


@cache
def _casts(cls: type) -> tuple[Callable[[Any], Any] | None, ...]:
    """``_cast`` of each of ``cls``'s fields, from its declared types (``db.columns``)."""
    hints = get_type_hints(cls)
    return tuple(_cast(hints[f]) for f in cls._fields)  # type: ignore[attr-defined]


def _select(reader: Reader, cls: type[Row], table: str, tail: str = "",
            params: Mapping[str, Any] | None = None) -> list[Row]:
    """``cls``'s columns (its field names) of ``table``'s rows ``tail`` selects, as ``cls``."""
    casts = _casts(cls)
    sql = f"SELECT {', '.join(cls._fields)} FROM {table} {tail}"  # type: ignore[attr-defined]
    return [cls(*(c(v) if c else v for c, v in zip(casts, r, strict=True)))
            for r in reader.rows(sql, params)]


def _first(reader: Reader, cls: type[Row], table: str, tail: str = "",
           params: Mapping[str, Any] | None = None) -> Row | None:
    """The first row ``_select`` reads, or ``None``."""
    return next(iter(_select(reader, cls, table, tail, params)), None)


def stored_time(reader: Reader, at: datetime) -> Any:
    """``at`` as a ``UTCDateTime`` column holds it, to compare with one: naive UTC text in SQLite."""
    at = at.astimezone(UTC)
    return at.replace(tzinfo=None).isoformat(" ", "microseconds") if reader.dialect == "sqlite" else at


def ping(reader: Reader) -> None:
    """Raise the driver's error when the store cannot answer a statement (health checks)."""
    reader.scalar("SELECT 1")


# --- providers and runs ------------------------------------------------------------------------


def providers(reader: Reader) -> dict[str, ProviderRow]:
    """Every stored provider by name."""
    return {p.name: p for p in _select(reader, ProviderRow, "provider")}


def recent_runs(reader: Reader, *, limit: int = 50, providers: Sequence[str] | None = None,
                statuses: Sequence[str] | None = None) -> list[RunRow]:
    """The newest scrape runs first (optionally of some providers / with some statuses)."""
    where, params = "WHERE 1 = 1", {"limit": limit, "p": list(providers or ()), "s": list(statuses or ())}
    where += " AND provider IN :p" if providers else ""
    where += " AND status IN :s" if statuses else ""
    return _select(reader, RunRow, "scrape_run", where + " ORDER BY id DESC LIMIT :limit", params)


def latest_run_per_provider(reader: Reader) -> dict[str, RunRow]:
    """Each provider's newest scrape run."""
    return {r.provider: r for r in _select(reader, RunRow, "scrape_run",
                                           "WHERE id IN (SELECT MAX(id) FROM scrape_run GROUP BY provider)")}


def first_run_at(reader: Reader) -> dict[str, datetime]:
    """When each provider's first run started."""
    rows = reader.rows("SELECT provider, MIN(started_at) FROM scrape_run GROUP BY provider")
    return {p: utc_datetime(t) for p, t in rows}  # type: ignore[misc]


def running_runs(reader: Reader, started_before: datetime | None = None, *, providers: Sequence[str] | None = None,
                 started_since: datetime | None = None) -> list[RunRow]:
    """Runs still marked ``running`` (of ``providers``; started in the range given)."""
    where, params = "WHERE status = 'running'", {"p": list(providers or ())}
    if providers is not None:
        where += " AND provider IN :p"
    if started_before is not None:
        where, params["b"] = where + " AND started_at < :b", stored_time(reader, started_before)
    if started_since is not None:
        where, params["a"] = where + " AND started_at >= :a", stored_time(reader, started_since)
    return _select(reader, RunRow, "scrape_run", where, params)


def collected_ok(reader: Reader, provider: str, *, besides: int | None = None) -> bool:
    """Whether a real (or replayed) scrape of ``provider`` ever succeeded (``OK_COLLECTION``; ``besides``: a run left out)."""
    return reader.scalar(f"SELECT id FROM scrape_run WHERE provider = :p AND {OK_COLLECTION} "
                         "AND id <> :b LIMIT 1", {"p": provider, "b": -1 if besides is None else besides}) is not None


def ok_collection_times(reader: Reader, since: datetime, until: datetime,
                        providers: Sequence[str] | None = None) -> list[datetime]:
    """When each successful collection (``OK_COLLECTION``: not an import) in ``[since, until]`` started."""
    sql = (f"SELECT started_at FROM scrape_run WHERE {OK_COLLECTION} "
           "AND started_at >= :a AND started_at <= :b" + (" AND provider IN :p" if providers else ""))
    rows = reader.rows(sql, {"a": stored_time(reader, since), "b": stored_time(reader, until), "p": list(providers or ())})
    return [utc_datetime(t) for (t,) in rows]  # type: ignore[misc]


def failed_runs(reader: Reader, until: datetime) -> list[tuple[str, datetime]]:
    """(provider, started_at) of the failed or skipped runs started by ``until``."""
    rows = reader.rows("SELECT provider, started_at FROM scrape_run WHERE status IN ('failed', 'skipped') "
                       "AND started_at <= :b", {"b": stored_time(reader, until)})
    return [(p, utc_datetime(t)) for p, t in rows]  # type: ignore[misc]


# --- offers and prices -------------------------------------------------------------------------


def pending_jumps(reader: Reader, provider: str, marker: str = "held until a second scrape confirms it") -> dict[Identity, float]:
    """Prices held for confirmation (reason ending in ``marker``) in the provider's latest good
    run, found by walking the (provider, started_at) index backwards: it runs in every
    collection's write transaction."""
    rows = reader.rows(
        "SELECT sku, region, kind, term_months, price_per_hour, reason FROM quarantine WHERE run_id = "
        "(SELECT id FROM scrape_run WHERE provider = :p AND status IN ('ok', 'partial') ORDER BY started_at DESC, id DESC LIMIT 1) "
        "AND price_per_hour IS NOT NULL", {"p": provider})
    return {(sku, region, kind, term): price for sku, region, kind, term, price, reason in rows
            if (reason or "").endswith(marker)}


def market_medians(reader: Reader, min_offers: int = 3) -> dict[str, float]:
    """Median current USD price per GPU-hour of every GPU with at least ``min_offers`` offers,
    read as two columns since every provider's validation asks for it. Stale providers count:
    this is a plausibility check on what the market last listed, not an answer to "now"."""
    where, params = current_condition(reader, include_stale=True)
    by_gpu: dict[str, list[float]] = {}
    for gpu, price in reader.rows(
            "SELECT o.gpu, i.price_per_gpu_hour FROM price_interval_open i "
            f"JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id WHERE {where} "
            "AND o.gpu IS NOT NULL AND c.name = 'USD'", params):
        by_gpu.setdefault(gpu, []).append(price)
    return {gpu: statistics.median(ps) for gpu, ps in by_gpu.items() if len(ps) >= min_offers}


def current_offer_counts(reader: Reader) -> dict[str, int]:
    """Per provider: priced offers listed by its latest successful scrape, however old (the
    providers view shows it beside the collection's age)."""
    where, params = current_condition(reader, include_stale=True)
    return {p: int(n) for p, n in reader.rows(
        "SELECT l.name, COUNT(*) FROM price_interval_open i JOIN label l ON l.id = i.provider_id "
        f"WHERE {where} GROUP BY l.name", params)}


def offer_extra_field(reader: Reader, providers: Sequence[str], field: Mapping[str, str],
                      gpus: Sequence[str] | None = None) -> dict[tuple[str, str, str, str, int], Any]:
    """``field[provider]`` of each offer's ``extra``, keyed like a ``latest_prices`` row
    (provider, sku, region, kind, term_months); offers without the field are left out."""
    if not providers:
        return {}
    sql = "SELECT provider, sku, region, kind, term_months, extra FROM offer WHERE provider IN :p"
    if gpus is not None:
        sql += " AND gpu IN :g"
    out: dict[tuple[str, str, str, str, int], Any] = {}
    for provider_, sku, region, kind, term, extra in reader.rows(sql, {"p": list(providers), "g": list(gpus or [""])}):
        value = (_json(extra) or {}).get(field.get(provider_, ""))
        if value is not None:
            out[(provider_, sku, region, kind, term)] = value
    return out


def unmapped_gpu_names(reader: Reader) -> list[dict[str, Any]]:
    """Raw GPU names stored without a canonical id, with how many offers carry each."""
    rows = reader.rows("SELECT gpu_raw, COUNT(*), MIN(provider) FROM offer WHERE gpu IS NULL "
                       "GROUP BY gpu_raw ORDER BY COUNT(*) DESC, gpu_raw")
    return [{"gpu_raw": raw, "offers": int(n), "example_provider": p} for raw, n, p in rows]


def offer_mapping_counts(reader: Reader) -> tuple[int, int]:
    """(offers without a canonical GPU, all offers): the unmapped share ``catalog --unmapped`` reports."""
    unmapped, total = reader.rows("SELECT COUNT(CASE WHEN gpu IS NULL THEN 1 END), COUNT(*) FROM offer")[0]
    return int(unmapped), int(total)


#: The GPUs' oldest open interval start: one row per priced offer, found by the GPU index.
FIRST_OPEN_OF_GPUS = "SELECT MIN(first_seen) FROM price_interval_open WHERE gpu_id IN :g"


def first_price_at(reader: Reader, gpus: Sequence[str] | None = None) -> datetime | None:
    """When the oldest stored price (of ``gpus``, when given) was first seen (roll-ups count:
    raw intervals past the retention time are gone, their buckets are not)."""
    ids = Labels(reader).lookup("gpu", gpus)
    if not ids:
        return None
    # one step down the (gpu_id, first_seen) index per GPU: a MIN over the view reads every interval
    past = [reader.scalar("SELECT first_seen FROM price_interval_past WHERE gpu_id = :g ORDER BY first_seen LIMIT 1",
                          {"g": g}) for g in ids]
    raw = min([v for v in [*past, reader.scalar(FIRST_OPEN_OF_GPUS, {"g": ids})] if v is not None], default=None)
    rolled = reader.scalar("SELECT MIN(bucket) FROM rollup_day WHERE gpu_id IN :g", {"g": ids})
    if raw is None and rolled is None:
        return None
    if raw is not None and (rolled is None or raw - rolled < 86_400):
        return from_epoch(raw)  # the day's roll-up starts at midnight; the raw time is exact
    return from_epoch(rolled)


@dataclass(frozen=True, slots=True)
class IntervalRow:
    """One stored interval as people read it (inspection, exports and tests): the ``price_interval``
    columns of the same names, except that provider, GPU, kind and currency are the names of the
    ``<field>_id`` columns' labels and the times datetimes of the columns' epoch seconds
    (``interval_rows``)."""

    id: int
    offer_id: int
    provider: str
    gpu: str | None
    kind: str
    currency: str
    price_per_hour: float
    price_per_gpu_hour: float
    available: bool | None
    first_seen: datetime
    last_seen: datetime
    ends_at: datetime | None
    observations: int


#: ``IntervalRow``'s columns (``_NAMED_INTERVALS`` and the currency's label ``lc``), then a read's terms.
_INTERVAL_ROWS = ("SELECT i.id, i.offer_id, lp.name, lg.name, lk.name, lc.name, i.price_per_hour, i.price_per_gpu_hour, "
                  "i.available, i.first_seen, i.last_seen, i.ends_at, i.observations "
                  + _NAMED_INTERVALS.replace(" WHERE ", " LEFT JOIN label lc ON lc.id = i.currency_id WHERE 1 = 1"))


def interval_rows(reader: Reader, *, provider: str | None = None, offer_id: int | None = None) -> list[IntervalRow]:
    """Stored intervals in id order (of one provider or offer when given)."""
    sql = (_INTERVAL_ROWS + (" AND lp.name = :p" if provider is not None else "")
           + (" AND i.offer_id = :o" if offer_id is not None else "") + " ORDER BY i.id")
    return [IntervalRow(*r, _bool(available), from_epoch(first), from_epoch(last),
                        None if ends is None else from_epoch(ends), n)
            for *r, available, first, last, ends, n in reader.rows(sql, {"p": provider, "o": offer_id})]


# --- alerts -----------------------------------------------------------------------------------


def alert_state(reader: Reader, rule: str) -> AlertStateRow | None:
    """Rule ``rule``'s stored state, or ``None``."""
    return _first(reader, AlertStateRow, "alert_state", "WHERE rule = :r", {"r": rule})


def added_rule_tables(reader: Reader) -> list[dict[str, Any]]:
    """The ``[[alerts]]``-like tables of the rules added with ``alerts add``, oldest first
    (``tracker.alerts.store.stored_rule_tables``)."""
    return [dict(_json(d)) for (d,) in reader.rows("SELECT definition FROM alert_rule ORDER BY created_at")]


def alert_states(reader: Reader) -> dict[str, AlertStateRow]:
    """Every stored rule state, by rule name."""
    return {s.rule: s for s in _select(reader, AlertStateRow, "alert_state")}


def alert_events(reader: Reader, *, rule: str | None = None, limit: int = 50) -> list[EventRow]:
    """Recent events, newest first (of ``rule`` when given)."""
    return _select(reader, EventRow, "alert_event", ("WHERE rule = :r " if rule else "")
                   + "ORDER BY created_at DESC, id DESC LIMIT :limit", {"r": rule, "limit": limit})


def events_by_id(reader: Reader, ids: Sequence[int]) -> dict[int, EventRow]:
    """The events ``ids`` by id."""
    return {e.id: e for e in _select(reader, EventRow, "alert_event", "WHERE id IN :i", {"i": list(ids)})} if ids else {}


def outbox_rows(reader: Reader, *, event_ids: Sequence[int] | None = None, row_id: int | None = None,
                statuses: Sequence[str] | None = None, rule: str | None = None,
                limit: int | None = None) -> list[OutboxRow]:
    """Outbox rows: of some events (oldest first), one row, or the newest first (of some
    statuses / one rule)."""
    params: dict[str, Any] = {"e": list(event_ids or ()), "i": row_id, "s": list(statuses or ()), "r": rule, "limit": limit}
    where = "WHERE 1 = 1" + (" AND event_id IN :e" if event_ids is not None else "") + (
        " AND id = :i" if row_id is not None else "") + (" AND status IN :s" if statuses else "") + (
        " AND rule = :r" if rule else "")
    if event_ids is not None and not event_ids:
        return []
    order = " ORDER BY id" if limit is None else " ORDER BY created_at DESC, id DESC LIMIT :limit"
    return _select(reader, OutboxRow, "outbox", where + order, params)


def delivery_counts(reader: Reader) -> dict[str, int]:
    """How many outbox rows are in each status (present ones only)."""
    return {s: int(n) for s, n in reader.rows("SELECT status, COUNT(*) FROM outbox GROUP BY status")}


def due_outbox_ids(reader: Reader, now: datetime, limit: int) -> list[int]:
    """Pending outbox rows due at ``now`` and not claimed by a sender, oldest first."""
    t = stored_time(reader, now)
    return [i for (i,) in reader.rows(
        "SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= :t "
        "AND (claimed_until IS NULL OR claimed_until < :t) ORDER BY id LIMIT :limit", {"t": t, "limit": limit})]


def digest_states(reader: Reader, names: Sequence[str]) -> list[DigestStateRow]:
    """The stored states of the digests ``names``."""
    return _select(reader, DigestStateRow, "digest_state", "WHERE name IN :n", {"n": list(names)}) if names else []


# --- imports ----------------------------------------------------------------------------------


def offers_of_skus(reader: Reader, provider: str, skus: Sequence[str]) -> list[tuple[Identity, dict[str, Any], datetime]]:
    """(identity, ``extra``, last seen) of the stored offers of ``provider`` with these SKUs, read
    in one statement whatever their number, the SKUs as one JSON array, and by index whatever
    the table's size (PostgreSQL plans a list of thousands of markers slowly, and a join with
    the array as a scan of the provider's offers: ``OFFSET 0`` keeps it one lookup per SKU)."""
    if not skus:
        return []
    columns = "sku, region, kind, term_months, extra, last_seen"
    sql = (f"SELECT {columns} FROM offer WHERE provider = :p AND sku IN (SELECT value FROM json_each(:s))"
           if reader.dialect == "sqlite" else
           f"SELECT o.* FROM jsonb_array_elements_text(CAST(:s AS jsonb)) AS w(sku) CROSS JOIN LATERAL "
           f"(SELECT {columns} FROM offer WHERE provider = :p AND sku = w.sku OFFSET 0) AS o")
    return [((sku, region, kind, term), _json(extra), utc_datetime(seen)) for sku, region, kind, term, extra, seen
            in reader.rows(sql, {"p": provider, "s": json.dumps(sorted(skus))})]


def snapshot_times(reader: Reader, offer_ids: Sequence[int], lo: int, hi: int) -> list[int]:
    """Snapshot times in ``[lo, hi]`` (epoch seconds, oldest first, once each) of the imported
    series the offers ``offer_ids`` belong to."""
    # the rule of what names a series; SQLAlchemy is loaded by then
    from db.series import series_of

    ids = sorted(set(offer_ids))
    names = sorted({s for _i, _p, extra in (reader.rows(OFFER_EXTRAS, {"ids": ids}) if ids else [])
                    if (s := series_of(extra)) is not None})
    return [int(t) for (t,) in reader.rows("SELECT DISTINCT at FROM snapshot_time WHERE series IN :s "
                                           "AND at >= :lo AND at <= :hi ORDER BY at",
                                           {"s": names, "lo": lo, "hi": hi})] if names else []


def offer_sightings(reader: Reader, offer_id: int) -> tuple[int, int] | None:
    """The first and last sighting of an offer by its stored intervals (epoch seconds), or
    ``None`` when it has none: what an offer takes once a snapshot that set them is replaced."""
    rows = reader.rows("SELECT MIN(first_seen), MAX(last_seen) FROM price_interval WHERE offer_id = :o", {"o": offer_id})
    first, last = rows[0]
    return None if first is None else (int(first), int(last))


def recut_intervals(reader: Reader, offer_ids: Sequence[int], columns: Sequence[str]) -> list[dict[str, Any]]:
    """Every interval (``id`` and ``columns``) of the offers ``offer_ids``, in one statement
    whatever their number (one id-list parameter: ``json_each`` on SQLite, an array on
    PostgreSQL); ``available`` as a bool (or ``None``) on both drivers."""
    listed = ",".join(str(int(i)) for i in offer_ids)  # one text value: ``bind`` spreads a list over markers
    if reader.dialect == "sqlite":
        term, ids = "offer_id IN (SELECT value FROM json_each(:ids))", f"[{listed}]"
    else:
        term, ids = "offer_id = ANY(:ids::bigint[])", f"{{{listed}}}"
    rows = reader.mappings(f"SELECT id, {', '.join(columns)} FROM price_interval WHERE {term}", {"ids": ids})
    for r in rows:
        if "available" in r:
            r["available"] = _bool(r["available"])
    return rows


# --- the scheduler ----------------------------------------------------------------------------


def has_table(reader: Reader, name: str) -> bool:
    """Whether table ``name`` exists (on PostgreSQL: on the search path)."""
    if reader.dialect == "sqlite":
        return reader.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :t", {"t": name}) is not None
    return reader.scalar("SELECT to_regclass(CAST(:t AS text)) IS NOT NULL", {"t": name}) is True


def scheduler_jobs(reader: Reader, table: str, prefix: str) -> list[tuple[str, float | None, bytes]]:
    """(id, next run as epoch seconds, pickled state) of the jobs of the job store ``table`` whose
    id starts with ``prefix`` (none when no scheduler ever made the table)."""
    if not has_table(reader, table):
        return []
    return [(i, t, bytes(s)) for i, t, s in reader.rows(f"SELECT id, next_run_time, job_state FROM {table} "
                                                        "WHERE id LIKE :p", {"p": prefix + "%"})]


def lease(reader: Reader, table: str) -> LeaseRow | None:
    """The scheduler lease of ``table``, or ``None`` before the first scheduler took it."""
    return _first(reader, LeaseRow, table, "WHERE id = 1")


def leader(reader: Reader, table: str) -> LeaderRow | None:
    """The last recorded scheduler of ``table``, or ``None`` when none ever ran (or no table)."""
    return _first(reader, LeaderRow, table, "WHERE id = 1") if has_table(reader, table) else None


# --- collection -------------------------------------------------------------------------------


def collected(reader: Reader, source: str) -> bool:
    """Whether a collection from ``source`` (``live`` or ``replay``) ever stored prices."""
    return reader.scalar("SELECT id FROM scrape_run WHERE source = :s AND status IN ('ok', 'partial') LIMIT 1",
                         {"s": source}) is not None


def recent_sizes(reader: Reader, provider: str, small: str, limit: int) -> list[int]:
    """Offers seen by the provider's ``limit`` latest complete collections (``OK_COLLECTION``) or partial
    ones by ``error_class`` ``small``, walking the (provider, started_at) index backwards."""
    return [int(n) for (n,) in reader.rows(
        f"SELECT offers_seen FROM scrape_run WHERE provider = :p AND (({OK_COLLECTION}) "
        "OR (status = 'partial' AND error_class = :small)) ORDER BY started_at DESC, id DESC LIMIT :n",
        {"p": provider, "small": small, "n": limit})]


def unseen_offers(reader: Reader, provider_id: int, since: int, t: int) -> int:
    """How many offers of the provider's current list, seen from ``since`` on, were not seen at ``t``."""
    return int(reader.scalar("SELECT COUNT(*) FROM price_interval_open WHERE provider_id = :p "
                             "AND last_seen >= :since AND last_seen < :t", {"p": provider_id, "since": since, "t": t}))


def latest_failure(reader: Reader, provider: str) -> FailureRow | None:
    """The newest kept parse failure of ``provider``, or ``None``."""
    return _first(reader, FailureRow, "parse_failure", "WHERE provider = :p ORDER BY captured_at DESC, id DESC LIMIT 1",
                  {"p": provider})


def failures_kept(reader: Reader, provider: str) -> int:
    """How many parse failures of ``provider`` are kept."""
    return int(reader.scalar("SELECT COUNT(*) FROM parse_failure WHERE provider = :p", {"p": provider}))
