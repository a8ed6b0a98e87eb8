"""Roll-up and raw-interval reads as plain tuples over a ``db.reader.Reader`` (the statements
of ``db.sql``), without pandas or numpy, for the history and trends (``tracker.analysis``); and
the store's row counts (``info``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from db import sql as q
from db.reader import Reader
from db.spans import HOUR, Piece, Run, lows


#: The tables ``info`` counts, in the order it shows them.
COUNTED_TABLES = ("provider", "gpu_model", "offer", "price_interval", "scrape_run", "quarantine")


def row_counts(reader: Reader) -> dict[str, int]:
    """Rows of each of ``COUNTED_TABLES``."""
    return {table: int(reader.scalar(f"SELECT COUNT(*) FROM {table}")) for table in COUNTED_TABLES}


class Labels:
    """The label table read once: names by id and ids by (space, name)."""

    def __init__(self, reader: Reader) -> None:
        self.by_space: dict[str, dict[int, str]] = {}
        for i, space, name in reader.rows(q.ALL_LABELS):
            self.by_space.setdefault(space, {})[int(i)] = name

    def names(self, space: str) -> dict[int, str]:
        return dict(self.by_space.get(space, {}))

    def lookup(self, space: str, values: Iterable[str]) -> list[int]:
        """Ids of the stored names of ``space`` among ``values`` (``db.labels.lookup``)."""
        inverse = {n: i for i, n in self.by_space.get(space, {}).items()}
        return [inverse[v] for v in values if v in inverse]


def raw_horizon(reader: Reader) -> int:
    """``db.rollups.raw_horizon``."""
    value = reader.scalar(q.STORE_META, {"k": q.HORIZON_KEY})
    return int(value) if value is not None else 0


def raw_rows(reader: Reader, gpus: list[int], since: int | None, until: int | None, provider_ids: list[int] | None,
             kind_ids: list[int] | None, usd: int | None, regions: Iterable[str] | None = None) -> list[tuple[Any, ...]]:
    """``db.rollups.RAW_COLUMNS`` tuples (``db.sql.raw_intervals``)."""
    params: dict[str, Any] = {}
    return reader.rows(q.raw_intervals(params, gpus, since, until, provider_ids, kind_ids, usd, regions), params)


def provider_low_runs(reader: Reader, step: int, *, gpu_ids: list[int], lo: int, hi: int,
                      provider_ids: list[int] | None = None,
                      kind_ids: list[int] | None = None) -> dict[tuple[int, int], list[Run]]:
    """Per (gpu id, provider id), the provider's value over the buckets starting in ``[lo, hi]``
    across the kinds asked for, as runs of bucket indices (bucket start = index * ``step``;
    ``db.spans.lows``): the lowest price and the offers. Day rows (one per kind) and hourly runs
    (one per kind) are combined as they are, never expanded into hours."""
    pieces: dict[tuple[int, int], list[Piece]] = {}
    if not gpu_ids:
        return {}
    if step != HOUR:
        params: dict[str, Any] = {"gpus": gpu_ids, "lo": lo, "hi": hi}
        sql = (q.DAY_LOWS
               + q.label_terms("provider_id", "providers", provider_ids, params)
               + q.label_terms("kind_id", "kinds", kind_ids, params))
        for g, b, p, low, offers in reader.rows(sql, params):
            day = int(b) // step
            pieces.setdefault((int(g), int(p)), []).append((day, day, float(low), int(offers)))
        return {key: lows(ps) for key, ps in pieces.items()}
    params = {"gpus": gpu_ids}
    sql = (q.ROLLUP_SERIES + q.label_terms("provider_id", "providers", provider_ids, params)
           + q.label_terms("kind_id", "kinds", kind_ids, params))
    series = {int(i): (int(g), int(p)) for i, g, p, _k in reader.rows(sql, params)}
    h_lo, h_hi = -(-lo // HOUR), hi // HOUR
    if not series or h_hi < h_lo:
        return {}
    runs = reader.rows(q.ROLLUP_RUNS, {"sids": sorted(series), "a": h_lo - q.MAX_RUN + 1, "b": h_hi, "lo": h_lo})
    by_series: dict[int, list[Piece]] = {sid: [] for sid in series}
    for sid, start, hours, mn, _md, _mx, offers in runs:  # integers and floats from both drivers
        end = start + hours - 1
        by_series[sid].append((start if start > h_lo else h_lo, end if end < h_hi else h_hi, mn, offers))
    for sid, key in series.items():
        pieces.setdefault(key, []).extend(by_series[sid])
    return {key: lows(ps) for key, ps in pieces.items() if ps}


def provider_lows(reader: Reader, step: int, *, gpu_ids: list[int], lo: int, hi: int,
                  provider_ids: list[int] | None = None,
                  kind_ids: list[int] | None = None) -> list[tuple[int, int, int, float, int]]:
    """``provider_low_runs`` one bucket at a time: sorted tuples (gpu id, bucket start, provider
    id, lowest price, offers)."""
    runs = provider_low_runs(reader, step, gpu_ids=gpu_ids, lo=lo, hi=hi, provider_ids=provider_ids, kind_ids=kind_ids)
    return sorted((g, i * step, p, v, n) for (g, p), rs in runs.items() for a, b, v, n in rs for i in range(a, b + 1))
