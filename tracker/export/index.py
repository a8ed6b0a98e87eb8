"""The rental index as a data set: CSV with its metadata beside it (``FILE.metadata.json``), or
Parquet with typed columns and the metadata in the file's key-value metadata. Both name the
method and its version (``index_method``, ``index_method_version``), the buckets, the kinds and
the range, so a published value can be traced to how it was computed."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tracker import __version__
from tracker.analysis.index import EWYLUDA, IndexResult
from tracker.cells import safe_row
from tracker.export.parquet import TS

METHOD_1_SCHEMA = pa.schema([
    ("time", TS), ("gpu", pa.string()), ("method", pa.string()), ("index", pa.float64()), ("providers", pa.int32()),
    ("thin", pa.bool_()), ("q1", pa.float64()), ("q3", pa.float64()), ("iqr", pa.float64()), ("min", pa.float64()),
    ("max", pa.float64()), ("offers", pa.int32()), ("kinds", pa.string()),
])
EWYLUDA_SCHEMA = pa.schema([
    ("time", TS), ("gpu", pa.string()), ("method", pa.string()), ("series", pa.string()), ("value", pa.float64()),
    ("providers", pa.int32()), ("carried", pa.string()),
])


def metadata(result: IndexResult) -> dict[str, str]:
    """What is written beside the values: the method and version, buckets, kinds, range, the tracker."""
    return {**result.metadata(), "index_source": result.source, "tracker_version": __version__,
            "created": datetime.now(UTC).isoformat(), "unit": "USD per GPU-hour"}


def write_csv(result: IndexResult, path: Path) -> Path:
    """``path`` with one row per bucket (and series), and ``path.metadata.json``; returns the latter."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(result.columns)
        for row in result.rows:
            writer.writerow(safe_row([_cell(row[c]) for c in result.columns]))
    meta = path.with_name(path.name + ".metadata.json")
    meta.write_text(json.dumps({**metadata(result), "columns": result.columns}, indent=2) + "\n")
    return meta


def _cell(v: Any) -> Any:
    return v.isoformat() if isinstance(v, datetime) else v


def table(result: IndexResult) -> pa.Table:
    schema = EWYLUDA_SCHEMA if result.method == EWYLUDA else METHOD_1_SCHEMA
    meta = {f"gpu_price_tracker.{k}".encode(): v.encode() for k, v in metadata(result).items()}
    meta[b"gpu_price_tracker.table"] = b"index"
    columns = {f.name: [r[f.name] for r in result.rows] for f in schema}
    return pa.Table.from_pydict(columns, schema=schema.with_metadata(meta))


def write_parquet(result: IndexResult, path: Path) -> int:
    t = table(result)
    pq.write_table(t, path)
    return t.num_rows
