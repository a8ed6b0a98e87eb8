"""The hourly/daily roll-ups, built on the bucket rule of ``db.spans`` (the one rule for which
buckets an interval counts in, which the analysis' raw-interval path follows too, so the two
always agree).

Roll-ups hold, per (gpu, provider, kind, bucket), the min, median and max USD price per
GPU-hour over the intervals counting in the bucket and the number of distinct offers among
them: ``rollup_day`` one row per day, ``rollup_hour_run`` one row per run of consecutive hours
with equal figures (the history reads them as they are: ``db.reads.provider_low_runs``). They cover USD intervals of mapped GPUs (what the analysis
reads). The store refreshes a provider's buckets around each collection (``refresh``), and
``rebuild`` recomputes everything (after an import or a migration). Because a roll-up row is
one provider's, each provider's refresh is independent of the others; it reads only the
intervals of the days it touches and groups them with numpy on arrays of that size, so its
cost depends on a day of that provider's data, not on the length of the history. A window too
dense for one chunk (an import of millions of offers seen at one time) is read as a stream of
whole offers and tallied per bucket (``_refresh_streamed``): memory follows a chunk and the
distinct prices, not the window, and the figures are the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

from db import intervals, labels, reads
from db.columns import RollupDayFields, RunFields
from db.reader import bind, in_transaction
from db.spans import DAY, DEFAULT_INTERVAL_S, HOUR, NEVER, WEEK, floor, origin, span  # noqa: F401 - WEEK, floor: callers read them here

DAY_TABLE = "rollup_day"
RUN_TABLE = "rollup_hour_run"
#: Each series' newest run (``db.models.RollupHourOpen``).
OPEN_TABLE = "rollup_hour_open"
#: A run's columns, in both run tables and their view ``rollup_hour``.
RUN_FIELDS = ", ".join(RunFields._fields)
MAX_RUN = reads.MAX_RUN
#: Rebuilds work through time in windows of this length (bounded memory).
REBUILD_WINDOW = 31 * DAY

#: A day roll-up's columns (``rollup_day``).
COLUMNS = [f.name for f in fields(RollupDayFields)]

#: One bucket's figures: (min, median, max, offers).
Figures = tuple[float, float, float, int]


def ranges(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every integer of each range ``first[i]..last[i]`` (empty where ``last < first``): the
    range's position ``i`` and the integer, one element per integer."""
    counts = np.where(last >= first, last - first + 1, 0)
    idx = np.repeat(np.arange(len(counts)), counts)
    return idx, np.repeat(first, counts) + np.arange(len(idx)) - np.repeat(np.cumsum(counts) - counts, counts)


def _rows(conn: Connection, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A read (``:name`` parameters, lists spread) in the writer's transaction, through the one
    reader (``db.reader.in_transaction``): the driver's plain tuples, no statement objects."""
    return in_transaction(conn).rows(sql, params)


def gpu_ids(conn: Connection) -> list[int]:
    return sorted(labels.names(conn, "gpu"))


RAW_COLUMNS = ["interval_id", "offer_id", "provider_id", "gpu_id", "kind_id", "price",
               "first_seen", "last_seen", "ends_at"]


#: A provider's intervals of one currency that may count from ``:since`` to ``:until``, from each
#: table (``{table}``) by its provider index (the past ones' by provider and ``last_seen``, so a
#: refresh reads its own provider's intervals of the window, not every provider's).
_WINDOW_OF = (f"SELECT {reads.RAW_COLUMNS_SQL.format(p='')} FROM {{table}} WHERE gpu_id IN :gpus AND last_seen >= :since "
              "AND first_seen <= :until AND provider_id = :p AND currency_id = :usd")
_WINDOW_SQL = (f"{_WINDOW_OF.format(table=intervals.OPEN_TABLE)} UNION ALL "
               f"{_WINDOW_OF.format(table=intervals.PAST_TABLE)}")
#: The same of the past intervals only (the caller holds the newest ones: ``Current``).
_PAST_SQL = _WINDOW_OF.format(table=intervals.PAST_TABLE)


def next_seen(offer: np.ndarray, first_seen: np.ndarray) -> np.ndarray:
    """Per interval of arrays sorted by offer then ``first_seen``: the first observation of the
    same offer's next interval (NaN for an offer's last one)."""
    out = np.full(len(offer), np.nan)
    if len(offer) > 1:
        out[:-1] = np.where(offer[1:] == offer[:-1], first_seen[1:], np.nan)
    return out


class Intervals(NamedTuple):
    """One provider's USD intervals of mapped GPUs as arrays (``next_seen``: NaN when none loaded;
    ``key``: the label id of the series each rolls up under, ``db.reads``)."""

    offer: np.ndarray
    gpu: np.ndarray
    kind: np.ndarray
    price: np.ndarray
    first_seen: np.ndarray
    last_seen: np.ndarray
    ends_at: np.ndarray
    next_seen: np.ndarray
    key: np.ndarray

    def window(self, keep: np.ndarray) -> Intervals:
        return Intervals(*(a[keep] for a in self))


class Current(NamedTuple):
    """A provider's newest intervals (``price_interval_open``'s) as a caller that just wrote them
    holds them: ``RAW_COLUMNS`` tuples of those in USD of a mapped GPU; and the provider's offers
    renting a fraction of a GPU (``index_rollup.fractional`` of their ``gpu_count`` as stored now),
    which that caller knows of every offer, so the index roll-up need not read the offers again."""

    rows: list[tuple[Any, ...]]
    fractional: frozenset[int]


def _window_params(conn: Connection, provider_id: int, since: int, until: int) -> dict[str, Any]:
    return {"gpus": gpu_ids(conn) or [-1], "p": provider_id, "usd": labels.usd_id(conn), "since": since, "until": until}


def load(conn: Connection, provider_id: int, *, since: int | None = None, until: int | None = None,
         current: Current | None = None) -> Intervals:
    """``provider_id``'s intervals that may count in ``[since, until]`` (``since`` already
    widened by the hold; ``None``: unbounded) as numpy arrays (no per-row objects); ``current``:
    the provider's current intervals, when the caller holds them (a collection's store path), so
    only the past ones are read, through the provider index."""
    if current is None or since is None or until is None:
        rows = reads.raw_rows(in_transaction(conn), gpu_ids(conn), since, until, [provider_id], None, labels.usd_id(conn))
    else:
        past = _rows(conn, _PAST_SQL, _window_params(conn, provider_id, since, until))
        rows = [r for r in current.rows if r[7] >= since and r[6] <= until] + past
    return intervals_of(conn, provider_id, np.array(rows, dtype=float).reshape(-1, len(RAW_COLUMNS)))  # NULL -> NaN


def intervals_of(conn: Connection, provider_id: int, table: np.ndarray) -> Intervals:
    """``Intervals`` of a float array of ``RAW_COLUMNS`` rows (NULL ``ends_at``: NaN) of ``provider_id``."""
    ids, offer, gpu, kind, first_seen, last_seen = (table[:, c].astype(np.int64) for c in (0, 1, 3, 4, 6, 7))
    price, ends_at = table[:, 5], table[:, 8]
    order = np.lexsort((ids, first_seen, offer))
    offer, gpu, kind, price = offer[order], gpu[order], kind[order], price[order]
    first_seen, last_seen, ends_at = first_seen[order], last_seen[order], ends_at[order]
    return Intervals(offer, gpu, kind, price, first_seen, last_seen, ends_at, next_seen(offer, first_seen),
                     series_keys(conn, provider_id, offer))


def series_keys(conn: Connection, provider_id: int, offer: np.ndarray) -> np.ndarray:
    """Per interval (by its offer), the label id of the series it rolls up under: the provider's
    own, or for an aggregator's offer through a cloud, that pair's key (``db.reads``)."""
    names = labels.names(conn, "provider")
    if names.get(provider_id) not in reads.keys_of(names):  # no composite keys: no per-interval objects either
        return np.full(len(offer), provider_id, dtype=np.int64)
    keys = reads.offer_keys(in_transaction(conn), names, [(o, provider_id) for o in np.unique(offer).tolist()])
    if not keys:
        return np.full(len(offer), provider_id, dtype=np.int64)
    return np.array([keys.get(o, provider_id) for o in offer.tolist()], dtype=np.int64)


#: Rows converted to an array at a time (``_whole_offers``).
FETCH_CHUNK = 100_000


def span_arrays(iv: Intervals, interval_s: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """``span`` of every interval of ``iv`` at once (first and last bucket index), in arrays."""
    o = origin(step)
    first, observed = (iv.first_seen - o) // step, (iv.last_seen - o) // step
    if step >= interval_s:
        return first, observed
    ends, nxt = np.full(len(first), NEVER, dtype=np.int64), np.full(len(first), NEVER, dtype=np.int64)
    has_end, has_next = ~np.isnan(iv.ends_at), ~np.isnan(iv.next_seen)
    ends[has_end] = iv.ends_at[has_end].astype(np.int64)
    nxt[has_next] = (iv.next_seen[has_next].astype(np.int64) - o) // step
    held = (np.maximum(np.minimum(ends, iv.last_seen + interval_s), iv.last_seen + 1) - 1 - o) // step
    held = np.where((held > observed) & (nxt == held), held - 1, held)
    return first, np.maximum(held, observed)


class Summary(NamedTuple):
    """Figures per (gpu, kind, series key, bucket index) of one provider, sorted by gpu, kind, key, bucket."""

    gpu: np.ndarray
    kind: np.ndarray
    key: np.ndarray
    bucket: np.ndarray
    min: np.ndarray
    median: np.ndarray
    max: np.ndarray
    offers: np.ndarray


def summarise(iv: Intervals, step: int, interval_s: int, b_lo: int, b_hi: int,
              spans: tuple[np.ndarray, np.ndarray] | None = None) -> Summary:
    """Min, median, max and distinct offers per (gpu, kind, series key, bucket) over the intervals
    counting in buckets ``b_lo..b_hi`` (bucket indices of ``step``), with numpy sorts only
    (``spans``: ``span_arrays`` of ``iv``, when the caller has them)."""
    first, last = spans if spans is not None else span_arrays(iv, interval_s, step)
    first, last = np.maximum(first, b_lo), np.minimum(last, b_hi)
    idx, bucket = ranges(first, last)
    total = len(idx)
    gpu, kind, offer, price, key = iv.gpu[idx], iv.kind[idx], iv.offer[idx], iv.price[idx], iv.key[idx]
    by_price = np.lexsort((price, bucket, key, kind, gpu))
    g, k, s, b, p = gpu[by_price], kind[by_price], key[by_price], bucket[by_price], price[by_price]
    new = np.ones(total, dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (k[1:] != k[:-1]) | (s[1:] != s[:-1]) | (b[1:] != b[:-1])
    starts = np.flatnonzero(new)
    n = np.diff(np.append(starts, total))
    by_offer = np.lexsort((offer, bucket, key, kind, gpu))  # the same groups in the same order
    o, ob = offer[by_offer], np.zeros(total, dtype=bool)
    ob[:1] = True
    ob[1:] = new[1:] | (o[1:] != o[:-1])
    distinct = np.add.reduceat(ob.astype(np.int64), starts) if total else np.zeros(0, dtype=np.int64)
    median = (p[starts + (n - 1) // 2] + p[starts + n // 2]) / 2
    return Summary(g[starts], k[starts], s[starts], b[starts], p[starts], median, p[starts + n - 1], distinct)


def provider_keys(conn: Connection, provider_id: int) -> list[int]:
    """The label ids of every series key of ``provider_id``: its own and its composite ones (``db.reads``)."""
    return reads.expand(labels.names(conn, "provider"), [provider_id]) or [provider_id]


#: Bucket rows (an interval counted in one bucket) summarised at a time: a window where every
#: interval counts in many hours (an import of millions of offers, each seen over two days) is
#: summarised a few hours at a time, so its memory is that of this many rows.
SUMMARY_ROWS = 100_000


def summarise_bounded(iv: Intervals, step: int, interval_s: int, b_lo: int, b_hi: int) -> Summary:
    """``summarise`` over ``b_lo..b_hi`` in runs of buckets of at most ``SUMMARY_ROWS`` bucket rows
    (a bucket with more is a run of its own); the same figures, in another order."""
    first, last = span_arrays(iv, interval_s, step)
    lo, hi = np.maximum(first, b_lo), np.minimum(last, b_hi)
    counted = lo <= hi
    if int((hi - lo + 1)[counted].sum()) <= SUMMARY_ROWS:
        return summarise(iv, step, interval_s, b_lo, b_hi, (first, last))
    cover = np.zeros(b_hi - b_lo + 2, dtype=np.int64)  # intervals counting in each bucket
    np.add.at(cover, lo[counted] - b_lo, 1)
    np.add.at(cover, hi[counted] - b_lo + 1, -1)
    parts, start, rows = [], b_lo, 0
    for i, n in enumerate(np.cumsum(cover)[:-1].tolist()):
        if rows and rows + n > SUMMARY_ROWS:
            parts.append(summarise(iv, step, interval_s, start, b_lo + i - 1, (first, last)))
            start, rows = b_lo + i, 0
        rows += n
    parts.append(summarise(iv, step, interval_s, start, b_hi, (first, last)))
    return Summary(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _replace_days(conn: Connection, table: str, columns: Sequence[str], provider_ids: list[int], d_lo: int, d_hi: int,
                  values: list[tuple[Any, ...]]) -> int:
    """Replace the rows of ``provider_ids`` of days ``d_lo..d_hi`` (indices) in the day table ``table``
    (``rollup_day``, ``index_day``) by ``values`` (tuples in ``columns`` order). Deleted through the
    primary key: a bucket range per GPU (the tables are ordered by GPU first), not a scan."""
    conn.exec_driver_sql(*bind(  # the list parameters spread as for a read (``db.reader.bind``)
        f"DELETE FROM {table} WHERE gpu_id IN :gpus AND provider_id IN :p AND bucket >= :lo AND bucket <= :hi",
        {"gpus": gpu_ids(conn) or [-1], "p": provider_ids, "lo": d_lo * DAY, "hi": d_hi * DAY}, intervals.mark(conn)))
    if values:
        conn.exec_driver_sql(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({intervals.placeholders(conn, len(columns))})",
                             values)
    return len(values)


def _write_days(conn: Connection, provider_id: int, b_lo: int, b_hi: int, s: Summary) -> int:
    """Replace ``provider_id``'s day roll-ups (all its series keys) of days ``b_lo..b_hi`` (indices) by ``s``."""
    values = list(zip(s.gpu.tolist(), (s.bucket * DAY).tolist(), s.key.tolist(), s.kind.tolist(),
                      s.min.tolist(), s.median.tolist(), s.max.tolist(), s.offers.tolist(), strict=True))
    return _replace_days(conn, DAY_TABLE, COLUMNS, provider_keys(conn, provider_id), b_lo, b_hi, values)


def series_ids(conn: Connection, provider_id: int | None = None, wanted: Iterable[tuple[int, int, int]] = ()) -> dict[tuple[int, int, int], int]:
    """Ids of (gpu, series key, kind) series, creating the ``wanted`` ones that are missing;
    returns ``provider_id``'s series (all its keys, ``db.reads``; or every series) as
    ``{(gpu, key, kind): id}``."""
    keys = provider_keys(conn, provider_id) if provider_id is not None else None

    def stored() -> dict[tuple[int, int, int], int]:
        sql = "SELECT id, gpu_id, provider_id, kind_id FROM rollup_series"
        rows = _rows(conn, sql, {}) if keys is None else _rows(conn, sql + " WHERE provider_id IN :p", {"p": keys})
        return {(g, p, k): i for i, g, p, k in rows}

    have = stored()
    missing = sorted(set(wanted) - have.keys())
    if missing:
        conn.exec_driver_sql(f"INSERT INTO rollup_series (gpu_id, provider_id, kind_id) VALUES ({intervals.placeholders(conn, 3)}) "
                             "ON CONFLICT (gpu_id, provider_id, kind_id) DO NOTHING", missing)
        have = stored()
    return have


def encode(hours: Sequence[int], figures: Sequence[Figures]) -> list[tuple[int, int, Figures]]:
    """Runs ``(start, hours, figures)`` of ascending hours with their figures: consecutive hours
    with equal figures share a run of at most ``MAX_RUN`` hours."""
    runs: list[tuple[int, int, Figures]] = []
    for h, f in zip(hours, figures, strict=True):
        if runs:
            start, n, last = runs[-1]
            if h == start + n and f == last and n < MAX_RUN:
                runs[-1] = (start, n + 1, last)
                continue
        runs.append((h, 1, f))
    return runs


def write_runs(conn: Connection, rows: Iterable[tuple[int, int, int, Figures]], table: str = RUN_TABLE) -> int:
    """Insert ``(series_id, start, hours, figures)`` runs into ``table`` with one driver-level ``executemany``."""
    values = [(sid, start, n, *f) for sid, start, n, f in rows]
    if values:
        conn.exec_driver_sql(f"INSERT INTO {table} ({RUN_FIELDS}) "
                             f"VALUES ({intervals.placeholders(conn, 7)})", values)
    return len(values)


#: A series' earlier runs that overlap or touch hours ``:lo``.. (``:a``: the earliest start that can) to ``:b``.
_TOUCHING_RUNS = (f"SELECT {RUN_FIELDS} FROM {RUN_TABLE} WHERE series_id IN :sids "
                  "AND start >= :a AND start <= :b AND start + hours >= :lo")
#: The series' newest runs, wherever they lie.
_OPEN_RUNS = f"SELECT {RUN_FIELDS} FROM {OPEN_TABLE} WHERE series_id IN :sids"

#: A run as the write path compares them: (kept in the open table?, start, hours, figures).
_Placed = tuple[bool, int, int, Figures]


def _write_hours(conn: Connection, provider_id: int, h_lo: int, h_hi: int, s: Summary, *, open_runs: bool = True) -> int:
    """Replace ``provider_id``'s hourly figures of hours ``h_lo..h_hi`` by ``s``, merging them with
    the runs that overlap or touch that range; returns the number of runs written.

    Each series' newest run goes to ``OPEN_TABLE``, its others to ``RUN_TABLE``, and only runs that
    changed (or changed table) are written: an hour that lengthens a series' newest run rewrites one
    row of the small open table. ``open_runs=False`` writes every run to ``RUN_TABLE`` (the layout of
    the migrations before the open table, which call this through ``rebuild``)."""
    sids = series_ids(conn, provider_id, set(zip(s.gpu.tolist(), s.key.tolist(), s.kind.tolist(), strict=True)))
    if not sids:
        return 0
    a, b, lo = h_lo - MAX_RUN, h_hi + 1, h_lo
    params = {"sids": sorted(sids.values()), "a": a, "b": b, "lo": lo}
    values: dict[int, dict[int, Figures]] = {}
    before: dict[int, set[_Placed]] = {}
    elsewhere: dict[int, tuple[int, int, Figures]] = {}  # an open run that does not touch the range

    def take(sid: int, is_open: bool, start: int, n: int, f: Figures) -> None:
        before.setdefault(sid, set()).add((is_open, start, n, f))
        per = values.setdefault(sid, {})
        for h in range(start, start + n):
            if not h_lo <= h <= h_hi:
                per[h] = f

    for sid, start, n, mn, md, mx, offers in _rows(conn, _TOUCHING_RUNS, params):
        take(sid, False, start, n, (float(mn), float(md), float(mx), int(offers)))
    if open_runs:
        for sid, start, n, mn, md, mx, offers in _rows(conn, _OPEN_RUNS, params):
            f: Figures = (float(mn), float(md), float(mx), int(offers))
            if a <= start <= b and start + n >= lo:
                take(sid, True, start, n, f)
            else:
                elsewhere[sid] = (start, n, f)
    for g, k, key, h, mn, md, mx, offers in zip(*(arr.tolist() for arr in s), strict=True):
        values.setdefault(sids[(g, key, k)], {})[h] = (mn, md, mx, offers)
    gone: list[tuple[int, _Placed]] = []
    new: list[tuple[int, _Placed]] = []
    orphaned: list[int] = []  # series whose newest run went: an earlier one takes its place
    for sid, per in values.items():
        hours = sorted(per)
        runs = encode(hours, [per[h] for h in hours])
        old = before.get(sid, set())
        outside = elsewhere.get(sid)
        newest = max([*runs, *([outside] if outside else [])], key=lambda r: r[0], default=None) if open_runs else None
        after: set[_Placed] = {(r == newest, *r) for r in runs}
        if outside is not None and outside != newest:  # the range now holds a newer run
            old = old | {(True, *outside)}
            after.add((False, *outside))
        if after == old:
            continue
        gone += [(sid, r) for r in old - after]
        new += [(sid, r) for r in after - old]
        if open_runs and newest is None and any(r[0] for r in old):
            orphaned.append(sid)
    m = intervals.mark(conn)
    closed_gone = [(sid, r[1]) for sid, r in gone if not r[0]]
    open_gone = [(sid,) for sid, r in gone if r[0]]
    if closed_gone:
        conn.exec_driver_sql(f"DELETE FROM {RUN_TABLE} WHERE series_id = {m} AND start = {m}", closed_gone)
    if open_gone:
        conn.exec_driver_sql(f"DELETE FROM {OPEN_TABLE} WHERE series_id = {m}", open_gone)
    write_runs(conn, [(sid, *r[1:]) for sid, r in new if not r[0]])
    write_runs(conn, [(sid, *r[1:]) for sid, r in new if r[0]], table=OPEN_TABLE)
    for sid in orphaned:
        _promote(conn, sid)
    return len(new)


def _promote(conn: Connection, sid: int) -> None:
    """Move ``sid``'s newest earlier run into the open table (its newest run went)."""
    m = intervals.mark(conn)
    row = conn.exec_driver_sql(f"SELECT {RUN_FIELDS} FROM {RUN_TABLE} "
                               f"WHERE series_id = {m} ORDER BY start DESC LIMIT 1", (sid,)).first()
    if row is not None:
        conn.exec_driver_sql(f"DELETE FROM {RUN_TABLE} WHERE series_id = {m} AND start = {m}", (sid, row[1]))
        write_runs(conn, [(row[0], row[1], row[2], tuple(row[3:]))], table=OPEN_TABLE)


class _Sellers:
    """Who sells in the index roll-up (``db.index_rollup``): a provider's offers of whole GPUs (its
    fractional-GPU offers as the caller knows them, else read once, in one statement), an
    aggregator's per cloud it names."""

    def __init__(self, conn: Connection, provider_id: int, fractional: frozenset[int] | None = None) -> None:
        self.names, self.provider_id = labels.names(conn, "provider"), provider_id
        found = fractional if fractional is not None else reads.provider_fractional_offers(
            in_transaction(conn), self.names.get(provider_id, ""))
        self.fractional = np.array(sorted(found), dtype=np.int64)
        self.clouds: dict[str, int] = {"": 0}  # "": the provider's own offers

    def of(self, iv: Intervals) -> tuple[np.ndarray, np.ndarray]:
        """Which intervals of ``iv`` count (whole GPUs), and each one's cloud (its id in ``clouds``)."""
        keys, inverse = np.unique(iv.key, return_inverse=True)
        ids = [self.clouds.setdefault(c if k != self.provider_id and (c := reads.split(self.names.get(k, ""))[1]) else "",
                                      len(self.clouds)) for k in keys.tolist()]
        return ~np.isin(iv.offer, self.fractional), np.array(ids, dtype=np.int64)[inverse.reshape(-1)]

    def replace(self, conn: Connection, d_lo: int, d_hi: int, *figures: np.ndarray) -> int:
        """Replace the provider's index roll-up rows of days ``d_lo..d_hi`` by the (gpu, day index,
        kind, cloud id, median, offers) columns ``figures``: the figures of ``db.index_rollup.groups``
        and ``median_of``, computed on arrays of the intervals refreshed from (or tallied for a
        window too dense to hold)."""
        name = {i: c for c, i in self.clouds.items()}
        rows = [(g, b * DAY, self.provider_id, k, name[v], m, n)
                for g, b, k, v, m, n in zip(*(f.tolist() for f in figures), strict=True)]
        return _replace_days(conn, reads.INDEX_TABLE, reads.INDEX_COLUMNS, [self.provider_id], d_lo, d_hi, rows)


def _refresh_window(conn: Connection, iv: Intervals, provider_id: int, interval_s: int, lo: int, hi: int,
                    open_runs: bool = True, index: bool = True, fractional: frozenset[int] | None = None) -> int:
    """Rewrite ``provider_id``'s roll-ups of the buckets holding ``[lo, hi]`` from ``iv`` (``fractional``:
    the provider's fractional-GPU offers when the caller knows them, ``Current``)."""
    d_lo, d_hi, h_lo, h_hi = lo // DAY, hi // DAY, lo // HOUR, hi // HOUR  # bucket indices (from the epoch)
    written = _write_days(conn, provider_id, d_lo, d_hi, summarise_bounded(iv, DAY, interval_s, d_lo, d_hi))
    if index:  # the index roll-up of the same days, from the same intervals (``db.index_rollup``)
        sellers = _Sellers(conn, provider_id, fractional)
        whole, via = sellers.of(iv)
        s = summarise_bounded(iv.window(whole)._replace(key=via[whole]), DAY, interval_s, d_lo, d_hi)
        written += sellers.replace(conn, d_lo, d_hi, s.gpu, s.bucket, s.kind, s.key, s.median, s.offers)
    return written + _write_hours(conn, provider_id, h_lo, h_hi, summarise_bounded(iv, HOUR, interval_s, h_lo, h_hi),
                                  open_runs=open_runs)


#: Bucket indices are kept relative to the window's first one in keys of ``group * _SPAN + bucket``.
_SPAN = np.int64(1) << 32


def _net(group: np.ndarray, value: np.ndarray, bucket: np.ndarray, delta: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The changes ``delta`` summed per (group, value, bucket), sorted so, changes that cancel out dropped."""
    order = np.lexsort((bucket, value, group))
    g, v, b, d = group[order], value[order], bucket[order], delta[order]
    if not len(g):
        return g, v, b, d
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (v[1:] != v[:-1]) | (b[1:] != b[:-1])
    starts = np.flatnonzero(new)
    d = np.add.reduceat(d, starts)
    keep = d != 0
    return g[starts][keep], v[starts][keep], b[starts][keep], d[keep]


class _Tally:
    """Bucket figures of one grouping of intervals (a series, or an index seller) gathered chunk by
    chunk, so a dense window is never held whole: per (group, price) the buckets where its number
    of intervals changes (+1 where an interval starts counting, -1 after it stops), and per group
    where its number of distinct offers changes (the same of each offer's runs of buckets; chunks
    hold whole offers, so these add up). Its size follows the distinct (group, price, bucket)
    changes, not the intervals: a million offers at a hundred prices are a few thousand rows."""

    def __init__(self, b_lo: int, b_hi: int) -> None:
        self.b_lo, self.b_hi = b_lo, b_hi
        self.prices: list[tuple[np.ndarray, ...]] = []
        self.offers: list[tuple[np.ndarray, ...]] = []
        self.kept = self.pending = 0

    def add(self, group: np.ndarray, offer: np.ndarray, price: np.ndarray, first: np.ndarray, last: np.ndarray) -> None:
        """Intervals (their group id, offer, price and ``span_arrays`` buckets), whole offers only."""
        lo, hi = np.maximum(first, self.b_lo) - self.b_lo, np.minimum(last, self.b_hi) - self.b_lo
        counted = lo <= hi
        group, offer, price, lo, hi = group[counted], offer[counted], price[counted], lo[counted], hi[counted]
        ones = np.ones(len(group), dtype=np.int64)
        self.prices.append(_net(np.concatenate([group, group]), np.concatenate([price, price]),
                                np.concatenate([lo, hi + 1]), np.concatenate([ones, -ones])))
        # each offer's buckets as runs (its intervals' spans merged), so an offer counts once a bucket
        order = np.lexsort((lo, offer, group))
        g, o, lo, hi = group[order], offer[order], lo[order], hi[order]
        change = np.ones(len(g), dtype=bool)
        change[1:] = (g[1:] != g[:-1]) | (o[1:] != o[:-1])
        part = np.cumsum(change) - 1
        reach = np.maximum.accumulate(part * _SPAN + hi) - part * _SPAN  # furthest bucket so far in the offer
        run = change.copy()
        run[1:] |= lo[1:] > reach[:-1]
        starts = np.flatnonzero(run)
        ends = np.maximum.reduceat(hi, starts) if len(starts) else hi[:0]
        n = len(starts)
        self.offers.append(_net(np.concatenate([g[starts], g[starts]]), np.zeros(2 * n), np.concatenate([lo[starts], ends + 1]),
                                np.concatenate([np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)])))
        self.pending += len(group)
        if self.pending > max(self.kept, FETCH_CHUNK):
            self._compact()

    def _compact(self) -> None:
        self.prices = [_net(*(np.concatenate(c) for c in zip(*self.prices, strict=True)))]
        self.offers = [_net(*(np.concatenate(c) for c in zip(*self.offers, strict=True)))]
        self.kept, self.pending = len(self.prices[0][0]) + len(self.offers[0][0]), 0

    def figures(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per (group, bucket index) with intervals: group, bucket, min, median, max, offers (as ``summarise``)."""
        empty = (np.zeros(0, dtype=np.int64),) * 2 + (np.zeros(0),) * 3 + (np.zeros(0, dtype=np.int64),)
        if not self.prices:
            return empty
        self._compact()
        g, p, b, d = self.prices[0]
        live = np.flatnonzero(np.cumsum(d) > 0)  # a price's count holds from its change to the next (which exists)
        if not len(live):
            return empty
        sg, sp, s_lo, s_hi, sn = g[live], p[live], b[live], b[live + 1] - 1, np.cumsum(d)[live]
        og, _ov, ob, od = self.offers[0]
        okey, ocount = og * _SPAN + ob, np.cumsum(od)
        parts = []
        total = int((s_hi - s_lo + 1).sum())
        width = max(1, (self.b_hi - self.b_lo + 1) * SUMMARY_ROWS // max(total, 1))
        for start in range(0, self.b_hi - self.b_lo + 1, width):  # a few buckets at a time: bounded rows
            lo, hi = np.maximum(s_lo, start), np.minimum(s_hi, start + width - 1)
            idx, bucket = ranges(lo, hi)
            if len(idx):
                parts.append(self._bucket_figures(sg[idx], bucket, sp[idx], sn[idx], okey, ocount))
        if not parts:
            return empty
        return tuple(np.concatenate(c) for c in zip(*parts, strict=True))  # type: ignore[return-value]

    def _bucket_figures(self, group: np.ndarray, bucket: np.ndarray, price: np.ndarray, count: np.ndarray,
                        okey: np.ndarray, ocount: np.ndarray) -> tuple[np.ndarray, ...]:
        order = np.lexsort((price, bucket, group))
        group, bucket, price, count = group[order], bucket[order], price[order], count[order]
        new = np.ones(len(group), dtype=bool)
        new[1:] = (group[1:] != group[:-1]) | (bucket[1:] != bucket[:-1])
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], len(group))
        cum = np.cumsum(count)
        before = cum[starts] - count[starts]
        n = cum[ends - 1] - before
        low = price[np.searchsorted(cum, before + (n - 1) // 2, side="right")]
        high = price[np.searchsorted(cum, before + n // 2, side="right")]
        g, b = group[starts], bucket[starts]
        offers = ocount[np.searchsorted(okey, g * _SPAN + b, side="right") - 1]
        return g, b + self.b_lo, price[starts], (low + high) / 2, price[ends - 1], offers


class _Groups:
    """Small ids for the tuples that name a group (a series, an index seller), stable across chunks."""

    def __init__(self) -> None:
        self.ids: dict[tuple[Any, ...], int] = {}

    def of(self, *columns: np.ndarray) -> np.ndarray:
        if not len(columns[0]):
            return np.zeros(0, dtype=np.int64)
        keys, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
        ids = [self.ids.setdefault(tuple(k), len(self.ids)) for k in keys.tolist()]
        return np.array(ids, dtype=np.int64)[inverse.reshape(-1)]

    def columns(self, ids: np.ndarray, width: int) -> np.ndarray:
        named = np.zeros((len(self.ids), width), dtype=np.int64)
        for k, i in self.ids.items():
            named[i] = k
        return named[ids]


def _whole_offers(conn: Connection, provider_id: int, since: int, until: int) -> Iterator[np.ndarray]:
    """The window's intervals (``RAW_COLUMNS`` float rows) ordered by offer, about ``FETCH_CHUNK``
    at a time from a server-side cursor, each chunk ending with an offer's last interval (so the
    hold of each, which looks at the offer's next interval, is computed within a chunk)."""
    params = _window_params(conn, provider_id, since, until)
    sql, args = bind(_WINDOW_SQL + " ORDER BY offer_id, first_seen, id", params, intervals.mark(conn))
    # the driver's own cursor, server-side on PostgreSQL: plain tuples, a chunk in memory at a time
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor(name="rollup_window") if conn.dialect.name == "postgresql" else dbapi.cursor()

    def fetch() -> np.ndarray | None:  # each chunk's rows become an array at once
        rows = cursor.fetchmany(FETCH_CHUNK)
        return np.array(rows, dtype=float).reshape(-1, len(RAW_COLUMNS)) if rows else None

    try:
        cursor.execute(sql, args)
        table, ahead = fetch(), None
        while table is not None:
            if (ahead := fetch()) is None:
                yield table
                return
            cut = int(np.searchsorted(table[:, 1], table[-1, 1]))  # where the last offer's intervals begin
            if cut:
                yield table[:cut]
            table = np.concatenate([table[cut:], ahead])
    finally:
        cursor.close()


def _refresh_streamed(conn: Connection, provider_id: int, interval_s: int, lo: int, hi: int,
                      chunks: Iterable[np.ndarray]) -> int:
    """``_refresh_window`` of a window too dense to hold (an import of millions of offers): its
    intervals arrive a chunk of whole offers at a time and are tallied per bucket (``_Tally``), so
    memory follows a chunk and the distinct prices, not the window. The same figures."""
    d_lo, d_hi, h_lo, h_hi = lo // DAY, hi // DAY, lo // HOUR, hi // HOUR  # bucket indices (from the epoch)
    sellers = _Sellers(conn, provider_id)
    days, hours, index = _Tally(d_lo, d_hi), _Tally(h_lo, h_hi), _Tally(d_lo, d_hi)
    series, sold = _Groups(), _Groups()
    for table in chunks:
        iv = intervals_of(conn, provider_id, table)
        group = series.of(iv.gpu, iv.kind, iv.key)
        day_spans = span_arrays(iv, interval_s, DAY)
        days.add(group, iv.offer, iv.price, *day_spans)
        hours.add(group, iv.offer, iv.price, *span_arrays(iv, interval_s, HOUR))
        whole, via = sellers.of(iv)
        index.add(sold.of(iv.gpu[whole], iv.kind[whole], via[whole]), iv.offer[whole], iv.price[whole],
                  day_spans[0][whole], day_spans[1][whole])
    written = 0
    for step, tally, b_lo, b_hi in ((DAY, days, d_lo, d_hi), (HOUR, hours, h_lo, h_hi)):
        g, b, mn, md, mx, offers = tally.figures()
        gpu, kind, key = series.columns(g, 3).T
        s = Summary(gpu, kind, key, b, mn, md, mx, offers)
        written += (_write_days(conn, provider_id, b_lo, b_hi, s) if step == DAY else
                    _write_hours(conn, provider_id, b_lo, b_hi, s))
    g, b, _mn, md, _mx, offers = index.figures()
    gpu, kind, via = sold.columns(g, 3).T
    return written + sellers.replace(conn, d_lo, d_hi, gpu, b, kind, via, md, offers)


def refresh(conn: Connection, provider_id: int, lo: int, hi: int, intervals: dict[int, int] | None = None,
            *, current: Current | None = None) -> int:
    """Recompute ``provider_id``'s hourly and daily roll-ups for the buckets holding ``[lo, hi]``
    (before the raw-retention horizon only where the provider has no roll-ups yet: see
    ``_kept_before``).

    Reads only the provider's intervals of the days holding ``[lo, hi]``, and of those only the
    ones that are no offer's current interval when the caller gives the current ones
    (``current``: the store, which has just written them). Returns the number of roll-up rows
    written."""
    with labels.snapshot(conn):  # the label table read once (a refresh writes no label)
        interval_s = (intervals if intervals is not None else reads.provider_intervals(in_transaction(conn))).get(provider_id, DEFAULT_INTERVAL_S)
        horizon = reads.raw_horizon(in_transaction(conn))
        if lo < horizon and _kept_before(conn, provider_id, lo, horizon):
            lo = horizon
        if hi < lo:
            return 0
        since, until = floor(lo, DAY) - interval_s, floor(hi, DAY) + DAY - 1
        if current is not None:  # a collection: a small window, the newest intervals at hand
            return _refresh_window(conn, load(conn, provider_id, since=since, until=until, current=current),
                                   provider_id, interval_s, lo, hi, fractional=current.fractional)
        chunks = _whole_offers(conn, provider_id, since, until)
        first = next(chunks, None)
        second = next(chunks, None)
        if second is None:  # the window fits in one chunk: summarised at once
            table = first if first is not None else np.zeros((0, len(RAW_COLUMNS)))
            return _refresh_window(conn, intervals_of(conn, provider_id, table), provider_id, interval_s, lo, hi)
        return _refresh_streamed(conn, provider_id, interval_s, lo, hi, itertools.chain([first, second], chunks))


def _kept_before(conn: Connection, provider_id: int, lo: int, horizon: int) -> bool:
    """Whether ``provider_id`` has day roll-ups between ``lo``'s day and the raw-retention horizon:
    buckets whose raw intervals were pruned, all that is left of them, which a refresh from raw
    data would wipe. Where it has none (an archive imported from before the horizon), nothing
    was pruned there and the imported intervals are the whole of it: they are rolled up."""
    return bool(_rows(
        conn, f"SELECT 1 FROM {DAY_TABLE} WHERE gpu_id IN :gpus AND bucket >= :lo AND bucket < :h AND provider_id IN :p LIMIT 1",
        {"gpus": gpu_ids(conn) or [-1], "p": provider_keys(conn, provider_id), "lo": floor(lo, DAY), "h": horizon}))


def rebuild(conn: Connection, provider_ids: Iterable[int] | None = None, *, open_runs: bool = True,
            index: bool = True) -> int:
    """Recompute every roll-up (of ``provider_ids``, or all) from the stored intervals.

    Roll-ups of buckets before the raw-retention horizon (``prune``) are kept as they are:
    only the range that raw data still covers whole is recomputed. Each provider's intervals
    are read once and worked through in windows of ``REBUILD_WINDOW`` (bounded memory).
    ``open_runs=False``: for the migrations before the open table (see ``_write_hours``);
    ``index=False``: for the migrations before the index roll-up."""
    holds = reads.provider_intervals(in_transaction(conn))
    horizon = reads.raw_horizon(in_transaction(conn))
    # fresh statistics: a provider's whole history is best read by one pass over the table, which
    # a planner without them (a store just imported or migrated) would do through the GPU index
    inspector = inspect(conn)
    for table in [t for t in (intervals.PAST_TABLE, intervals.OPEN_TABLE) if inspector.has_table(t)] or [intervals.VIEW]:
        conn.execute(text(f"ANALYZE {table}"))  # (the one table of the migrations before 0014, which call this)
    labels.ensure(conn, reads.stored_key_labels(in_transaction(conn)))  # an aggregator's clouds as their own series
    pids = list(provider_ids) if provider_ids is not None else sorted(
        p for (p,) in _rows(conn, "SELECT DISTINCT provider_id FROM price_interval", {})
    )
    written = 0
    for pid in pids:
        iv = load(conn, pid)
        if not len(iv.offer):
            continue
        interval_s = holds.get(pid, DEFAULT_INTERVAL_S)
        lo = max(int(iv.first_seen.min()), horizon)
        hi = int(iv.last_seen.max()) + interval_s
        start = floor(lo, DAY)
        while start <= hi:
            end = min(start + REBUILD_WINDOW - 1, hi)
            near = (iv.last_seen >= start - interval_s) & (iv.first_seen <= end)
            written += _refresh_window(conn, iv.window(near), pid, interval_s, max(start, lo), end, open_runs, index)
            start += REBUILD_WINDOW
    return written


def prune(conn: Connection, before: int) -> int:
    """Delete raw intervals that count in no bucket from the day holding ``before`` on (every
    day and hour they could count in is before it), keeping each offer's current interval;
    the roll-ups keep their buckets. Returns how many intervals were deleted.

    The horizon is rounded down to a day and only moves forward: buckets from it on still have
    all their intervals, so roll-up and raw answers there stay equal, and a rebuild never
    recomputes a bucket that lost intervals."""
    cutoff = max(floor(before, DAY), reads.raw_horizon(in_transaction(conn)))
    longest = max([*reads.provider_intervals(in_transaction(conn)).values(), DEFAULT_INTERVAL_S])
    # a price holds at most one collection interval after last_seen (and never past ends_at);
    # each offer's newest interval stays
    deleted = conn.execute(text(
        f"DELETE FROM {intervals.PAST_TABLE} WHERE last_seen + :longest < :cutoff "
        "AND (ends_at IS NULL OR ends_at <= :cutoff)"), {"cutoff": cutoff, "longest": longest}).rowcount
    updated = conn.execute(text("UPDATE store_meta SET value = :v WHERE key = :k"), {"v": str(cutoff), "k": reads.HORIZON_KEY}).rowcount
    if not updated:
        conn.execute(text("INSERT INTO store_meta (key, value) VALUES (:k, :v)"), {"v": str(cutoff), "k": reads.HORIZON_KEY})
    return int(deleted or 0)
